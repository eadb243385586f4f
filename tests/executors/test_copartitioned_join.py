"""Joins that are not along the unit path, through the exchange (docs/distributed.md §Joins).

An equi-join of two sharded private relations on a key that is not the unit runs as an
Exchange of each side by its join keys and the local join on every worker.  On TPC-H data
with ``cluster="inline:2"``: answers equal DuckDB's and the single-process engine's, EXPLAIN
shows the placement, keys of two types fall back to the driver, the coupled-neighbour audit
is identical, and a join exchange whose blocks are cut to their exact counts is caught.
"""
from __future__ import annotations

import pytest

from dodb.audit import audit
from dodb.planner.logical import Exchange, Join, walk

from ..operators.util import assert_same_rows
from .cluster_db import tpch_cluster_db
from .planted import plant_exact_size_exchange

# orders meet lines by a key that is not the unit's (an order key against a supplier key),
# an outer join, and a semi join
JOINS = [
    "SELECT o_orderpriority, count(*) FROM orders JOIN lineitem ON o_orderkey = l_suppkey GROUP BY o_orderpriority",
    "SELECT o_orderkey, l_partkey FROM orders LEFT JOIN lineitem ON o_orderkey = l_partkey "
    "WHERE o_totalprice < 5000",
    "SELECT o_orderpriority, count(*) FROM orders WHERE o_orderkey IN (SELECT l_suppkey FROM lineitem "
    "WHERE l_quantity > 45) GROUP BY o_orderpriority",
]


def _db(neighbour: str, workers: int, scale: float):
    return tpch_cluster_db(neighbour, workers, scale, seed=6)


@pytest.fixture(scope="module")
def db():
    d = _db("add_remove", 2, 0.01)
    yield d
    d.close()


def _copartitioned(plan) -> list[Join]:
    pl = plan.placement
    return [n for n in walk(plan.root) if isinstance(n, Join) and n.node_id in pl.keyed]


@pytest.mark.parametrize("sql", JOINS)
def test_answers_equal_duckdb_and_the_single_process_engine(db, sql, monkeypatch):
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    joins = _copartitioned(res.plan)
    assert joins and all(isinstance(j.left, Exchange) and isinstance(j.right, Exchange) for j in joins)
    assert [j.left.keys for j in joins] == [j.left_keys for j in joins]
    assert [j.right.keys for j in joins] == [j.right_keys for j in joins]
    want = db.oracle.sql(sql).to_arrow_table()
    assert_same_rows(res.arrow(), want)
    assert any(m.stage.startswith("exchange") for m in res.plan.moves)
    monkeypatch.setattr(db, "executor", None)  # the same database in one process
    assert_same_rows(db.sql(sql, epsilon=1.0, delta=1e-6).arrow(), want)


def test_explain_shows_the_join_on_the_workers_by_key(db):
    text = db.explain(JOINS[0])
    assert "Exchange by [orders.o_orderkey] to 2 workers" in text
    assert "Exchange by [lineitem.l_suppkey] to 2 workers" in text
    line = next(x for x in text.splitlines() if "Join INNER ON orders.o_orderkey = lineitem.l_suppkey" in x)
    assert "on 2 workers, by key" in line
    assert text.count("moves (exchange") == 3  # and the GROUP BY above it: a third round (§Rounds)
    agg = next(x for x in text.splitlines() if "Aggregate by [orders.o_orderpriority]" in x)
    assert "on 2 workers, by key" in agg
    assert text.count("by key, for round 2") == 2 and text.count("by key, for round 3") == 1


def test_keys_of_two_types_are_joined_on_the_driver(db):
    """An integer key against a decimal one is joined on a cast: the two sides' hashes of
    equal values would differ, so the planner does not exchange them."""
    sql = "SELECT count(*) FROM orders JOIN lineitem ON o_orderkey = l_quantity WHERE o_orderkey < 60"
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert not _copartitioned(res.plan)
    assert not any(isinstance(n, Exchange) for n in walk(res.plan.root))
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table())


@pytest.fixture(scope="module")
def small():
    d = _db("add_remove", 3, 0.002)
    yield d
    d.close()


def test_cluster_audit_is_identical_on_coupled_neighbours(small):
    report = audit(small, JOINS, pairs=2, seed=1)
    assert report.ok, "\n".join(report.lines())


def test_planted_exact_size_join_exchange_is_caught(small, monkeypatch):
    plant_exact_size_exchange(monkeypatch)
    report = audit(small, JOINS[1:2], pairs=2, seed=1)
    assert not report.ok and report.identical == 0
    assert all(p.difference.startswith("moves item") for p in report.queries[0].pairs), report.lines()
