"""Analyst sessions with fixed budgets (docs/design.md §Analyst sessions; paper 001)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import dodb
from dodb.accountant import BudgetExceededError, LedgerError
from dodb.errors import DodbError, InvalidParameterError
from tests.api.test_partitions import ALL_CUSTOMERS, CUSTOMER_Q, _db


@pytest.fixture()
def db():
    return _db(epsilon=2.0)


def test_a_session_refuses_what_exceeds_its_own_budget(db):
    s = db.session(epsilon=0.5, delta=1e-4, name="alice")
    assert db.budget["spent"][0] == pytest.approx(0.5)  # the session's whole budget, charged once
    n = len(db.history())
    with pytest.raises(BudgetExceededError, match="session 'alice'"):
        s.sql(ALL_CUSTOMERS, epsilon=0.6)
    assert len(db.history()) == n
    assert db.budget["remaining"][0] > 1.0  # the dataset still has budget left
    r = s.sql(ALL_CUSTOMERS, epsilon=0.3)
    assert r.privacy.session == "alice"
    assert s.budget["spent"][0] == pytest.approx(0.3)
    assert db.budget["spent"][0] == pytest.approx(0.5)  # queries inside a session do not charge the dataset again
    with pytest.raises(BudgetExceededError):
        s.sql(ALL_CUSTOMERS, epsilon=0.3)
    s.sql(ALL_CUSTOMERS, epsilon=0.2)
    assert [h["sql"] for h in s.history()] == [ALL_CUSTOMERS, ALL_CUSTOMERS]


def test_sessions_compose_against_the_dataset_budget(db):
    db.session(epsilon=1.2, delta=1e-4, name="a")
    n = len(db.history())
    with pytest.raises(BudgetExceededError):
        db.session(epsilon=0.9, delta=1e-4, name="b")
    assert len(db.history()) == n and [s["name"] for s in db.sessions()] == ["a"]  # nothing recorded
    db.session(epsilon=0.8, delta=1e-4, name="b")
    with pytest.raises(BudgetExceededError):
        db.sql(ALL_CUSTOMERS, epsilon=0.1)  # the dataset's own queries share the same budget


def test_closing_and_resuming(db):
    s = db.session(epsilon=0.5, delta=1e-4, name="carol")
    assert db.session(name="carol").name == "carol"
    with pytest.raises(InvalidParameterError, match="fixed when it opens"):
        db.session(epsilon=0.7, delta=1e-4, name="carol")
    with pytest.raises(InvalidParameterError, match="already exists"):
        db.ledger.open_session("carol", 0.5, 1e-4)
    db.close_session("carol")
    with pytest.raises(LedgerError, match="closed"):
        s.sql(ALL_CUSTOMERS, epsilon=0.1)
    with pytest.raises(DodbError, match="closed"):
        db.session(name="carol")
    assert db.sessions()[0]["status"] == "closed"
    assert db.budget["spent"][0] == pytest.approx(0.5)  # closing refunds nothing
    assert [a["action"] for a in db.ledger.owner_actions()][-2:] == ["open_session", "close_session"]


@pytest.mark.parametrize("kwargs, error", [
    ({"epsilon": 0.5, "delta": 1e-4}, InvalidParameterError),          # no name
    ({"epsilon": 0.5, "delta": 1e-4, "name": "bad name!"}, InvalidParameterError),
    ({"epsilon": -1.0, "delta": 1e-4, "name": "x"}, InvalidParameterError),
    ({"name": "nobody"}, InvalidParameterError),
])
def test_bad_sessions_are_refused_before_anything_is_charged(db, kwargs, error):
    n = len(db.history())
    with pytest.raises(error):
        db.session(**kwargs)
    assert len(db.history()) == n


def test_partitions_inside_a_session(db):
    s = db.session(epsilon=1.0, delta=1e-4, name="dave")
    for k in range(5):
        s.sql(CUSTOMER_Q.format(k=k), epsilon=0.8)
    assert s.budget["spent"][0] == pytest.approx(0.8)
    with pytest.raises(BudgetExceededError):
        s.sql(ALL_CUSTOMERS, epsilon=0.5)


def test_sessions_from_two_processes_compose_in_one_ledger(tmp_path):
    path = str(tmp_path / "shared.duckdb")
    db = _db(path=path)
    db.close()
    script = textwrap.dedent(f"""
        import sys, dodb
        from dodb.oblivious.rng import enable_seeding
        enable_seeding()
        db = dodb.connect({path!r}, wait=30)
        try:
            db.session(epsilon=float(sys.argv[1]), delta=1e-4, name=sys.argv[2])
            print("opened")
        except dodb.DodbError as e:
            print("refused", type(e).__name__)
        db.close()
    """)
    run = [sys.executable, "-c", script]
    out1 = subprocess.run(run + ["1.2", "p1"], capture_output=True, text=True, timeout=300)
    out2 = subprocess.run(run + ["1.2", "p2"], capture_output=True, text=True, timeout=300)
    out3 = subprocess.run(run + ["0.7", "p3"], capture_output=True, text=True, timeout=300)
    assert out1.stdout.strip() == "opened", out1.stderr
    assert out2.stdout.strip() == "refused BudgetExceededError", out2.stderr
    assert out3.stdout.strip() == "opened", out3.stderr
    db = dodb.connect(path)
    try:
        assert [s["name"] for s in db.sessions()] == ["p1", "p3"]
        s = db.session(name="p1")  # resumed in a third process
        s.sql(ALL_CUSTOMERS, epsilon=1.0)
        assert db.session(name="p1").budget["spent"][0] == pytest.approx(1.0)
    finally:
        db.close()
