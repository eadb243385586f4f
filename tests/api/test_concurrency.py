"""Sharing one dataset (docs/design.md §Concurrency): threads, several Databases, processes, read_only."""
from __future__ import annotations

import math
import os
import pathlib
import subprocess
import sys
import threading

import pytest

import dodb

ROOT = pathlib.Path(__file__).resolve().parents[2]
GROUPED = "SELECT g, count(*) AS n FROM t GROUP BY g ORDER BY g"
WANT = [(0, 4), (1, 3), (2, 3)]


def _make(path: str) -> None:
    db = dodb.connect(path)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(10)")
    db.con.execute("CREATE TABLE pub AS SELECT range AS k FROM range(4)")
    db.set_budget(epsilon=100.0, delta=1e-5)
    db.protect("t", "id", max_contributions=1, capacity=16)
    db.close()


def test_six_threads_share_one_database(tmp_path):
    path = str(tmp_path / "th.duckdb")
    _make(path)
    db = dodb.connect(path)
    results, errors = [], []

    def worker(i: int) -> None:
        for j in range(6):
            try:
                if j % 3 == 2:
                    results.append(db.sql("SELECT count(*) FROM pub", epsilon=0.5).fetchall() == [(4,)])
                else:
                    results.append(db.sql(GROUPED, epsilon=0.5).fetchall() == WANT)
                db.budget  # noqa: B018 - reading the budget concurrently with queries
            except Exception as e:  # noqa: BLE001 - collected and reported below
                errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and results == [True] * 36
    hist = db.history()
    assert len(hist) == 24 and {r["status"] for r in hist} == {"completed"}
    assert db.budget["spent"][0] == pytest.approx(math.fsum(r["epsilon"] for r in hist))
    db.close()


def test_several_databases_on_one_file_in_one_process(tmp_path):
    path = str(tmp_path / "two.duckdb")
    _make(path)
    a, b = dodb.connect(path), dodb.connect(path)
    assert a.sql(GROUPED, epsilon=0.5).fetchall() == WANT
    assert b.sql(GROUPED, epsilon=0.5).fetchall() == WANT
    assert len(a.history()) == len(b.history()) == 2  # one ledger
    spent = a.con.sql("SELECT dodb_budget_spent()").fetchall()[0][0]
    assert spent == pytest.approx(b.budget["spent"][0])
    a.close()  # the SQL functions stay while another Database on the instance is open
    assert b.con.sql("SELECT dodb_budget_spent()").fetchall()[0][0] == pytest.approx(spent)
    c = dodb.connect(path)
    c.close()
    b.close()
    d = dodb.connect(path)  # and come back for a new session
    assert d.con.sql("SELECT dodb_budget_spent()").fetchall()[0][0] == pytest.approx(spent)
    d.close()


def _cli(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), DODB_ALLOW_SEED="1")
    return subprocess.Popen([sys.executable, "-m", "dodb", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def test_several_processes_take_turns_on_one_file(tmp_path):
    path = str(tmp_path / "procs.duckdb")
    _make(path)
    procs = [_cli("query", path, GROUPED, "--epsilon", "0.5", "--json") for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1] for o in outs]
    db = dodb.connect(path)
    assert len(db.history()) == 3
    db.close()


def test_a_held_file_is_a_clear_error(tmp_path):
    path = str(tmp_path / "held.duckdb")
    _make(path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); "
         "time.sleep(60)", path], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(dodb.DatabaseBusyError, match="in use by another process.*dodb serve"):
            dodb.connect(path, wait=0.3)
    finally:
        holder.kill()
        holder.wait()
    dodb.connect(path, wait=5).close()  # released: opens


def test_read_only_sessions_inspect_but_do_not_charge(tmp_path):
    path = str(tmp_path / "ro.duckdb")
    _make(path)
    rw = dodb.connect(path)
    rw.sql(GROUPED, epsilon=0.5)
    before = rw.budget
    rw.close()
    ro = dodb.connect(path, read_only=True)
    assert ro.read_only and ro.budget["spent"] == before["spent"]
    assert "Aggregate" in ro.explain(GROUPED, epsilon=0.5)
    assert len(ro.history()) == 1
    assert ro.sql("SELECT count(*) FROM pub", epsilon=0.5).fetchall() == [(4,)]  # public: nothing to charge
    with pytest.raises(dodb.ReadOnlyError, match="read_only=True.*ledger"):
        ro.sql(GROUPED, epsilon=0.5)
    with pytest.raises(dodb.ReadOnlyError):
        ro.set_budget(epsilon=1000.0, delta=1e-5)
    with pytest.raises(dodb.ReadOnlyError):
        ro.protect("pub", "k", max_contributions=1)
    ro.close()
    rw = dodb.connect(path)
    assert rw.budget["spent"] == before["spent"] and len(rw.history()) == 1
    rw.close()
    with pytest.raises(dodb.DodbError, match="no database file"):
        dodb.connect(str(tmp_path / "missing.duckdb"), create=False)


def test_budget_shown_for_uncharged_queries_follows_every_charge(tmp_path):
    """Ledger.standing reuses its answer only while the budget row's version is unchanged:
    a charge made by another Database on the same file shows up at once."""
    path = str(tmp_path / "standing.duckdb")
    _make(path)
    a, b = dodb.connect(path), dodb.connect(path)
    public = "SELECT 1 AS one"
    first = a.sql(public, epsilon=0.5).privacy
    assert a.sql(public, epsilon=0.5).privacy.spent == first.spent  # nothing charged in between
    b.sql(GROUPED, epsilon=0.5)
    again = a.sql(public, epsilon=0.5).privacy
    assert again.spent[0] > first.spent[0]
    st = b.ledger.status()
    assert (again.spent, again.remaining) == (tuple(st["spent"]), tuple(st["remaining"]))
    a.close()
    b.close()
