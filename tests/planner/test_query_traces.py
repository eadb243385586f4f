"""Whole-query traces are simulatable from public information plus the leaked values."""
from __future__ import annotations

import pytest

from dodb.datasets import tpch_query
from dodb.oblivious.rng import new_rng
from dodb.planner.simulate import simulate_plan

from ..tpch_fixture import tpch_database


@pytest.fixture(scope="module")
def db():
    d = tpch_database(0.002)
    yield d
    d.close()


def _leaked(trace):
    return [e.sizes[0] for e in trace.events if e.kind.startswith("leak:")]


@pytest.mark.parametrize("mode", ["do", "oblivious"])
@pytest.mark.parametrize("q", [1, 3, 4, 5, 10, 12, 13, 18, 22])
def test_tpch_trace_is_simulatable(db, q, mode):
    p = db.plan(tpch_query(q), epsilon=1.0, delta=1e-6, mode=mode)
    p.execute(rng=new_rng(q))
    assert len(p.trace) > 0
    sim = simulate_plan(p, _leaked(p.trace))
    assert sim == p.trace


def test_simulation_detects_a_different_leak(db):
    p = db.plan(tpch_query(3), epsilon=1.0, delta=1e-6)
    p.execute(rng=new_rng(0))
    leaked = _leaked(p.trace)
    leaked[0] += 1
    assert simulate_plan(p, leaked) != p.trace


def test_oblivious_traces_equal_across_databases():
    """Two different databases with equal public sizes give identical oblivious traces."""
    traces = []
    for seed in (1, 2):
        # same true sizes and noise seed (so the same capacities), different private contents
        d = tpch_database(0.002, prepare=lambda con: con.execute(
            "UPDATE orders SET o_orderpriority = '1-URGENT' WHERE o_orderkey % ? = 0", [seed + 1]))
        p = d.plan(tpch_query(4), epsilon=1.0, delta=1e-6, mode="oblivious")
        p.execute()
        traces.append(p.trace)
        d.close()
    assert traces[0] == traces[1]


WINDOW_SQL = [
    "SELECT * FROM (SELECT o_custkey, o_orderkey, row_number() OVER (PARTITION BY o_custkey ORDER BY o_totalprice "
    "DESC, o_orderkey) AS rn FROM orders) t WHERE rn <= 2",
    "SELECT c_nationkey, count(*) AS n FROM customer GROUP BY c_nationkey QUALIFY rank() OVER (ORDER BY count(*) DESC) "
    "<= 5",
    # frame lookups (a sparse table, lookups by sort) and an INTERVAL frame (window_frames.py)
    "SELECT * FROM (SELECT o_custkey, o_orderkey, min(o_totalprice) OVER (PARTITION BY o_custkey ORDER BY o_orderdate "
    "RANGE BETWEEN INTERVAL 1 MONTH PRECEDING AND CURRENT ROW) AS m, last_value(o_orderkey) OVER (ORDER BY o_orderkey "
    "GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS l FROM orders) t WHERE m > 1000",
]


@pytest.mark.parametrize("mode", ["do", "oblivious"])
@pytest.mark.parametrize("sql", WINDOW_SQL)
def test_window_query_trace_is_simulatable(db, sql, mode):
    p = db.plan(sql, epsilon=1.0, delta=1e-6, mode=mode)
    p.execute(rng=new_rng(1))
    assert any(e.kind == "window:scan" for e in p.trace.events)
    assert simulate_plan(p, _leaked(p.trace)) == p.trace


SUBQUERY_SQL = [
    # EXISTS / NOT EXISTS over a join, EXISTS OR EXISTS, a correlated COUNT, a quantified comparison
    "SELECT o_orderpriority, count(*) FROM orders WHERE EXISTS (SELECT * FROM lineitem, part "
    "WHERE l_partkey = p_partkey AND p_size < 20 AND l_orderkey = o_orderkey) GROUP BY o_orderpriority",
    "SELECT count(*) FROM customer WHERE NOT EXISTS (SELECT * FROM orders, lineitem WHERE o_orderkey = l_orderkey "
    "AND l_quantity > 30 AND o_custkey = c_custkey) AND (EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey "
    "AND o_totalprice > 100000) OR EXISTS (SELECT * FROM orders, nation WHERE o_custkey = c_custkey "
    "AND o_orderstatus = 'F' AND n_nationkey = o_shippriority))",
    "SELECT c_custkey FROM customer WHERE (SELECT count(*) FROM orders WHERE o_custkey = c_custkey) > 2",
    "SELECT count(*) FROM orders WHERE o_totalprice > ALL (SELECT c_acctbal * 50 FROM customer WHERE c_nationkey = 3)",
]


@pytest.mark.parametrize("mode", ["do", "oblivious"])
@pytest.mark.parametrize("sql", SUBQUERY_SQL)
def test_subquery_trace_is_simulatable(db, sql, mode):
    p = db.plan(sql, epsilon=1.0, delta=1e-6, mode=mode)
    p.execute(rng=new_rng(2))
    assert len(p.trace) > 0
    assert simulate_plan(p, _leaked(p.trace)) == p.trace
