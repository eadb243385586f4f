"""Joins along privacy-unit paths get the tighter stability; others keep the generic one."""
from __future__ import annotations

import dodb
from dodb.datasets.tpch import TPCH_WIDTHS
from dodb.datasets import generate_tpch, tpch_query
from dodb.planner.logical import Join, walk

from ..tpch_fixture import tpch_database


def _joins(plan):
    return {(tuple(n.left_keys), tuple(n.right_keys), n.how): n for n in walk(plan.root) if isinstance(n, Join)}


def test_unit_path_joins_are_recognised():
    db = tpch_database(0.002)
    p = db.plan(tpch_query(3), epsilon=1.0, delta=1e-6)
    joins = list(_joins(p).values())
    by_keys = {frozenset(j.left_keys + j.right_keys): j for j in joins}
    co = by_keys[frozenset({"customer.c_custkey", "orders.o_custkey"})]
    ol = by_keys[frozenset({"orders.o_orderkey", "lineitem.l_orderkey"})]
    assert co.same_unit and ol.same_unit
    s_orders = db.catalog.stability("orders")
    assert co.stability == min(co.left.stability * co.right_degree, co.right.stability * co.left_degree)
    assert co.stability <= s_orders
    assert "privacy-unit path" in p.explain()
    # a self-join of lineitem on l_orderkey is along the path too
    self_join = db.plan("SELECT count(*) FROM lineitem l1 JOIN lineitem l2 ON l1.l_orderkey = l2.l_orderkey "
                        "WHERE l1.l_suppkey <> l2.l_suppkey", epsilon=1.0, delta=1e-6)
    assert any(j.same_unit and j.left_keys == ["l1.l_orderkey"] and j.right_keys == ["l2.l_orderkey"]
               for j in walk(self_join.root) if isinstance(j, Join))
    # and so are Q21's joins with its per-order summaries of l2 and l3 (rules/unnest_exists.py)
    # (at this scale no supplier is in SAUDI ARABIA: the public supplier-nation join, done first,
    # is then empty and so provably is everything after it; a nation with a supplier keeps it real)
    p21 = db.plan(tpch_query(21).replace("SAUDI ARABIA", "FRANCE"), epsilon=1.0, delta=1e-6)
    summaries = [j for j in walk(p21.root) if isinstance(j, Join) and j.left_keys == ["l1.l_orderkey"]
                 and j.right_keys[0].endswith("._k0")]
    assert len(summaries) == 2 and all(j.same_unit and j.right_degree == 1 for j in summaries)


def test_unrelated_unit_columns_are_not_assumed_equal():
    """Two tables with *direct* unit columns: their units may be different kinds."""
    db = dodb.connect()
    generate_tpch(db.con, 0.002)
    db.set_budget(epsilon=100.0, delta=1e-3)
    db.protect("customer", "c_custkey", max_contributions=1, keys=[["c_custkey"]], widths=TPCH_WIDTHS["customer"])
    db.protect("orders", "o_custkey", max_contributions=40, keys=[["o_orderkey"]],  # direct, not via customer
               widths=TPCH_WIDTHS["orders"])
    p = db.plan("SELECT count(*) FROM customer JOIN orders ON c_custkey = o_custkey", epsilon=1.0, delta=1e-6)
    (j,) = [n for n in walk(p.root) if isinstance(n, Join)]
    assert not j.same_unit
    assert j.stability == j.left.stability * j.right_degree + j.right.stability * j.left_degree


def test_join_with_public_table_is_not_a_unit_join():
    db = tpch_database(0.002)
    p = db.plan("SELECT count(*) FROM lineitem JOIN part ON l_partkey = p_partkey", epsilon=1.0, delta=1e-6)
    (j,) = [n for n in walk(p.root) if isinstance(n, Join)]
    assert not j.same_unit and j.stability == j.left.stability * 1
