"""A LEFT join under a WHERE that rejects its right side's NULLs runs as an inner join
(planner/rules/null_rejecting_joins.py): one release instead of two and a smaller
sensitivity, with DuckDB's answers — also where the rule must not apply (an OR, IS NULL,
COALESCE keep the unmatched rows)."""
from __future__ import annotations

import pytest

from dodb.compare import same_answer
from dodb.datasets import tpch_query
from dodb.planner.logical import Join, walk

from ..tpch_fixture import tpch_database


@pytest.fixture(scope="module")
def dbs():
    db = tpch_database(0.002, seed=5)
    yield db, db.oracle
    db.close()


def _hows(db, sql: str) -> list[str]:
    return [n.how for n in walk(db.plan(sql, epsilon=1.0).root) if isinstance(n, Join)]


@pytest.mark.parametrize("q", [17, 20])
def test_decorrelated_scalar_subqueries_join_inner(dbs, q):
    db, _ = dbs
    hows = _hows(db, tpch_query(q))
    assert "left" not in hows and "inner" in hows


CORRELATED = ("SELECT count(*), sum(o.o_totalprice) FROM orders o WHERE o.o_totalprice > "
              "(SELECT 0.5 * avg(o2.o_totalprice) FROM orders o2 WHERE o2.o_custkey = o.o_custkey)")


def test_the_inner_join_releases_one_size_at_the_inner_sensitivity(dbs):
    db, _ = dbs
    plan = db.plan(CORRELATED, epsilon=1.0)
    (join,) = [n for n in walk(plan.root) if isinstance(n, Join)]
    assert join.how == "inner"
    sl, sr = join.left.stability, join.right.stability
    assert sl > 0 and sr > 0
    if not join.same_unit:  # s_L·deg_R + s_R·deg_L, not the LEFT join's s_L·max(deg_R, 1) + 2·s_R·deg_L
        assert join.stability == sl * join.right_degree + sr * join.left_degree
    assert [name for n, name, *_ in plan.event_nodes if n.node_id == join.node_id] == ["output_size"]


KEEP_LEFT = [
    "SELECT count(*) FROM customer LEFT JOIN orders ON c_custkey = o_custkey WHERE o_totalprice > 1000 OR c_acctbal > 0",
    "SELECT count(*) FROM customer LEFT JOIN orders ON c_custkey = o_custkey WHERE o_totalprice IS NULL",
    "SELECT count(*) FROM customer LEFT JOIN orders ON c_custkey = o_custkey WHERE coalesce(o_totalprice, 0) < 50000",
]
MAKE_INNER = [
    "SELECT count(*), sum(o_totalprice) FROM customer LEFT JOIN orders ON c_custkey = o_custkey "
    "WHERE o_totalprice > c_acctbal * 20",
    "SELECT c_nationkey, count(*) FROM customer LEFT JOIN orders ON c_custkey = o_custkey "
    "WHERE o_orderstatus = 'F' GROUP BY 1 ORDER BY 1",
    tpch_query(17), tpch_query(20), CORRELATED,
]


@pytest.mark.parametrize("sql", KEEP_LEFT + MAKE_INNER)
def test_answers_equal_duckdb(dbs, sql):
    db, oracle = dbs
    got = db.sql(sql, epsilon=1.0).arrow()
    want = oracle.sql(sql).to_arrow_table()
    assert same_answer(got, want, ordered="order by" in sql.lower())


@pytest.mark.parametrize("sql", KEEP_LEFT)
def test_a_where_that_keeps_null_rows_keeps_the_left_join(dbs, sql):
    db, _ = dbs
    assert "left" in _hows(db, sql)


@pytest.mark.parametrize("sql", MAKE_INNER[:2])
def test_a_comparison_with_a_right_column_makes_it_inner(dbs, sql):
    db, _ = dbs
    assert "left" not in _hows(db, sql)
