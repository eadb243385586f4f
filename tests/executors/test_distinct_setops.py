"""DISTINCT and set operations on the workers (docs/distributed.md §Set operations).

With ``cluster="inline:2"`` on TPC-H data: a DISTINCT over sharded rows and over a keyed join,
UNION, INTERSECT and EXCEPT of sharded inputs, an INTERSECT of two keyed aggregates (already
partitioned alike: no exchange) and a UNION ALL of two keyed aggregates run on the workers
through exchanges by all their columns (the count asserted), equal DuckDB's and the
single-process answers, and move within 10% of the cost model; columns of two types (cast to a
common one) fall back to the driver.  The coupled-neighbour audit (3 workers) is identical, a
set operation's exchange cut to its exact counts is caught in the exchange log, and a planted
DISTINCT over rows partitioned by other columns, run without its exchange, is caught by the
answer comparison.  INTERSECT ALL and EXCEPT ALL are not supported by dodb at all.
"""
from __future__ import annotations

import pytest

from dodb.audit import audit
from dodb.planner import placement
from dodb.planner.logical import Distinct, Exchange, SetOp, walk

from ..operators.util import assert_same_rows
from .cluster_db import assert_audit_identical, assert_stages_within_cost_model, assert_wrong_answer_with
from .planted import plant_exact_size_exchange

JOIN = "FROM orders JOIN lineitem ON o_orderkey = l_suppkey"
# (query, exchanges planned)
CASES = [
    ("SELECT DISTINCT o_orderpriority, o_orderstatus FROM orders", 1),
    (f"SELECT DISTINCT l_suppkey, o_orderstatus {JOIN}", 2),  # partitioned by l_suppkey already
    (f"SELECT DISTINCT o_orderstatus {JOIN} WHERE l_quantity > 40", 3),
    ("SELECT o_custkey FROM orders WHERE o_totalprice > 100000 "
     "INTERSECT SELECT c_custkey FROM customer WHERE c_acctbal > 0", 2),
    ("SELECT o_custkey FROM orders EXCEPT SELECT c_custkey FROM customer WHERE c_acctbal > 0", 2),
    ("SELECT l_suppkey, l_linenumber FROM lineitem WHERE l_quantity < 5 "
     "UNION SELECT o_custkey, o_shippriority FROM orders", 2),
    ("SELECT k FROM (SELECT o_custkey AS k, count(*) FROM orders GROUP BY o_custkey) "
     "INTERSECT SELECT k FROM (SELECT l_suppkey AS k, sum(l_quantity) FROM lineitem GROUP BY l_suppkey)", 2),
    ("SELECT o_custkey AS k, count(*) AS n FROM orders GROUP BY o_custkey "
     "UNION ALL SELECT l_suppkey, count(*) FROM lineitem GROUP BY l_suppkey", 2),
]


@pytest.mark.parametrize("sql,exchanges", CASES)
def test_on_the_workers_equal_duckdb(db2, sql, exchanges, monkeypatch):
    res = db2.sql(sql, epsilon=1.0, delta=1e-6)
    plan, pl = res.plan, res.plan.placement
    want = db2.oracle.sql(sql).to_arrow_table()
    assert_same_rows(res.arrow(), want)
    assert len(pl.exchanges) == exchanges
    ops = [n for n in walk(plan.root) if isinstance(n, (Distinct, SetOp))]
    assert ops and all(n.node_id in pl.keyed for n in ops) and len(pl.gathers) == 1
    assert_stages_within_cost_model(plan)
    monkeypatch.setattr(db2, "executor", None)  # the same database in one process
    assert_same_rows(db2.sql(sql, epsilon=1.0, delta=1e-6).arrow(), want)


def test_set_operation_sides_are_exchanged_by_all_columns(db2):
    plan = db2.sql(CASES[5][0], epsilon=1.0, delta=1e-6).plan
    (op,) = [n for n in walk(plan.root) if isinstance(n, SetOp)]
    assert op.op == "union" and op.copartitioned
    assert isinstance(op.left, Exchange) and op.left.keys == op.left.child.columns
    assert isinstance(op.right, Exchange) and op.right.keys == op.right.child.columns
    text = db2.explain(CASES[5][0])
    assert "SetOp UNION" in text and "on 2 workers, by key, gathered to the driver" in \
        next(x for x in text.splitlines() if "SetOp UNION" in x)


def test_columns_of_two_types_are_combined_on_the_driver(db2):
    """A DECIMAL against an INTEGER is compared in a common type: the sides' hashes of equal
    values would differ, so the query is planned again without the set operation's exchanges."""
    sql = "SELECT l_quantity FROM lineitem INTERSECT SELECT o_custkey FROM orders"
    res = db2.sql(sql, epsilon=1.0, delta=1e-6)
    assert not res.plan.placement.exchanges
    assert not any(isinstance(n, SetOp) and n.copartitioned for n in walk(res.plan.root))
    assert_same_rows(res.arrow(), db2.oracle.sql(sql).to_arrow_table())


def test_planted_distinct_without_its_exchange_is_caught(db2, monkeypatch):
    """A DISTINCT above rows partitioned by the join key, taken as covered by it: each worker
    keeps its own copy of every status."""
    monkeypatch.setattr(placement, "covers", lambda parts, keys: True)
    assert_wrong_answer_with(db2, f"SELECT DISTINCT o_orderstatus {JOIN}", 2)


def test_cluster_audit_is_identical_on_coupled_neighbours(three):
    assert_audit_identical(three, [CASES[0][0], CASES[1][0], CASES[4][0], CASES[5][0], CASES[7][0]])


def test_planted_exact_size_set_operation_exchange_is_caught(three, monkeypatch):
    plant_exact_size_exchange(monkeypatch)
    report = audit(three, [CASES[4][0]], pairs=2, seed=1)
    assert not report.ok and report.identical == 0
    assert all(p.difference.startswith("moves item") for p in report.queries[0].pairs), report.lines()
