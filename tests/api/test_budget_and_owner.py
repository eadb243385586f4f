"""Budget a user can reason about (default δ, spent/remaining, refusals) and recorded owner actions."""
from __future__ import annotations

import math

import pytest

import dodb
from dodb.accountant.records import DEFAULT_HORIZON

GROUPED = "SELECT g, count(*) AS n FROM t GROUP BY g"


def _tiny(budget=(1e6, 0.5), capacity=16):
    db = dodb.connect()
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(10)")
    db.set_budget(epsilon=budget[0], delta=budget[1])
    db.protect("t", "id", max_contributions=1, capacity=capacity)
    return db


def _sums(db):
    h = db.history()
    return math.fsum(r["epsilon"] for r in h), math.fsum(r["delta"] for r in h)


def test_thousand_grouped_queries_fit_the_default_delta():
    """Budget (ε=1e6, δ=0.5), default δ: 1,000 grouped queries at ε=1 are all admitted
    (issue 12 done-when); the first ones run end to end, the rest go through the same
    admission (the ledger) with the same plan, which keeps the test fast."""
    db = _tiny()
    b = db.budget
    assert b["horizon"] == DEFAULT_HORIZON and b["default_delta"] == pytest.approx(0.5 / 3 / DEFAULT_HORIZON)
    for _ in range(10):
        res = db.sql(GROUPED, epsilon=1.0)
        assert sorted(res.fetchall()) == [(0, 4), (1, 3), (2, 3)]
        assert res.privacy.delta == pytest.approx(b["default_delta"])
    p = db.plan(GROUPED, epsilon=1.0)
    assert p.delta == pytest.approx(b["default_delta"])
    for i in range(990):
        db.ledger.admit(p.events, sql=GROUPED, delta=p.delta, neighbour=p.neighbour)
    after = db.budget
    assert after["queries"] == 1000
    spent_eps, spent_delta = _sums(db)
    assert after["spent"] == pytest.approx((spent_eps, spent_delta), rel=1e-12)  # reconciles with the history
    assert spent_eps <= 1000 * (1 + 1e-6) and spent_delta == pytest.approx(1000 * b["default_delta"])
    eps_left, delta_left = after["remaining"]
    assert eps_left > 1e6 - 2000 and delta_left > 0  # ε, not δ, is what the next query is limited by
    res = db.sql(GROUPED, epsilon=1.0)  # and the 1,001st still runs
    assert res.privacy.spent == pytest.approx(_sums(db), rel=1e-12)


def test_explain_and_sql_share_the_default_delta():
    db = _tiny(budget=(5.0, 1e-5))
    d = db.explain(GROUPED, epsilon=0.5, as_dict=True)
    res = db.sql(GROUPED, epsilon=0.5)
    assert d["delta"] == res.privacy.delta == pytest.approx(1e-5 / 3 / DEFAULT_HORIZON)
    db.set_budget(epsilon=5.0, delta=1e-5, horizon=100)  # the owner sizes δ for fewer queries
    assert db.budget["default_delta"] == pytest.approx(1e-5 / 3 / 100)
    assert db.explain(GROUPED, epsilon=0.5, as_dict=True)["delta"] == pytest.approx(1e-5 / 300)


def test_refusal_says_which_of_epsilon_or_delta_ran_out():
    db = _tiny(budget=(2.0, 1e-6))
    with pytest.raises(dodb.BudgetExceededError, match="ε ran out") as e:
        db.sql(GROUPED, epsilon=5.0)
    assert e.value.exhausted == "epsilon" and "nothing was charged" in str(e.value)
    with pytest.raises(dodb.BudgetExceededError, match="δ ran out") as e:
        db.sql(GROUPED, epsilon=0.5, delta=9e-7)  # more δ than any part of the filter has for queries
    assert e.value.exhausted == "delta"
    assert db.budget["spent"] == (0.0, 0.0) and db.history() == []
    assert "\n" not in str(e.value)


def test_budget_changes_are_recorded_and_lowering_below_spent_needs_force():
    db = _tiny(budget=(2.0, 1e-6))
    db.sql(GROUPED, epsilon=1.0)
    spent = db.budget["spent"]
    db.set_budget(epsilon=3.0, delta=1e-6)  # raising: a recorded owner action
    with pytest.raises(dodb.LedgerError, match="below what was already spent.*force=True"):
        db.set_budget(epsilon=0.5, delta=1e-6)
    assert db.budget["budget"] == (3.0, 1e-6)  # refused: nothing changed
    db.set_budget(epsilon=0.5, delta=1e-6, force=True)
    assert db.budget["remaining"] == (0.0, 0.0) and db.budget["spent"] == spent
    with pytest.raises(dodb.BudgetExceededError):
        db.sql(GROUPED, epsilon=0.1)
    acts = [a for a in db.ledger.owner_actions() if a["action"] == "set_budget"]
    assert [(a["old_value"] or {}).get("epsilon") for a in acts] == [None, 2.0, 3.0]
    assert [a["new_value"]["epsilon"] for a in acts] == [2.0, 3.0, 0.5]
    assert acts[-1]["forced"] and "below what was already spent" in acts[-1]["forced"][0]
    assert acts[0]["forced"] is None and acts[0]["acted_at"] is not None
    timeline = db.history(owner_actions=True)
    kinds = [r["type"] for r in timeline]
    assert kinds.count("query") == 1 and kinds.count("owner action") == len(db.ledger.owner_actions())
    assert [r["at"] for r in timeline] == sorted(r["at"] for r in timeline)


def test_unprotect_after_charges_needs_force_and_is_recorded():
    db = _tiny(budget=(2.0, 1e-6))
    with pytest.raises(dodb.CatalogError, match="unknown table"):
        db.unprotect("t_missing")
    db.sql(GROUPED, epsilon=0.5)
    with pytest.raises(dodb.CatalogError, match="force=True"):
        db.unprotect("t")
    assert db.catalog.table("t").private
    db.unprotect("t", force=True)
    assert not db.catalog.table("t").private
    assert sorted(db.con.sql("SELECT g, count(*) FROM t GROUP BY g").fetchall()) == [(0, 4), (1, 3), (2, 3)]
    act = db.ledger.owner_actions()[-1]
    assert act["action"] == "unprotect" and act["target"] == "t" and act["forced"]
    assert act["old_value"]["max_contributions"] == 1 and act["new_value"] is None
    res = db.sql("SELECT count(*) FROM t", epsilon=0.5)  # public now: free
    assert res.fetchall() == [(10,)] and res.privacy.charged_epsilon == 0


def test_unprotect_before_any_charge_and_children_first():
    db = dodb.connect()
    db.con.execute("CREATE TABLE p AS SELECT range AS id FROM range(5)")
    db.con.execute("CREATE TABLE c AS SELECT range AS cid, range % 5 AS pid FROM range(10)")
    db.protect("p", "id", max_contributions=1, keys=[["id"]], capacity=8)
    db.protect("c", "pid", parent=("p", "id"), max_contributions=2, capacity=16)
    with pytest.raises(dodb.CatalogError, match="parent of"):
        db.unprotect("p")
    db.unprotect("c")
    db.unprotect("p")  # nothing was charged: no force needed
    assert db.con.sql("SELECT count(*) FROM c").fetchall() == [(10,)]
    assert [a["forced"] for a in db.ledger.owner_actions() if a["action"] == "unprotect"] == [None, None]
