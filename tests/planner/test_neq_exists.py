"""``[NOT] EXISTS`` correlated by equalities and one ``inner <> outer`` (TPC-H Q21) as a join on a
per-key MIN/MAX summary, and SEMI/ANTI joins with a residual condition on a right side unique on
its keys as one join and a filter (docs/design.md §Subqueries).  DuckDB is the oracle: NULL keys
and values, all-equal groups, empty subqueries, strings, NaN and signed zeros."""
from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dodb
from dodb.planner.logical import AddRowId
from dodb.planner.logical import Aggregate, Join, walk

from ..operators.util import assert_same_rows, twin_connections

QUERIES = [
    "SELECT id FROM o WHERE EXISTS (SELECT * FROM i WHERE i.k = o.k AND i.x <> o.x)",
    "SELECT id FROM o WHERE NOT EXISTS (SELECT * FROM i WHERE i.k = o.k AND i.x <> o.x)",
    "SELECT id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE o.x <> i.x AND o.k = i.k AND i.w > 0)",
    "SELECT id FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE o.x <> i.x AND o.k = i.k AND i.w > 0)",
    # two keys; the outer value an expression
    "SELECT id FROM o WHERE EXISTS (SELECT * FROM i WHERE i.k = o.k AND i.w = o.w AND i.x <> o.x)",
    "SELECT count(*) FROM o WHERE NOT EXISTS (SELECT * FROM i WHERE i.k = o.k AND i.s <> o.s || '')",
    # both at once, as in Q21, and over a join inside the subquery
    "SELECT id FROM o WHERE EXISTS (SELECT * FROM i WHERE i.k = o.k AND i.s <> o.s) "
    "AND NOT EXISTS (SELECT * FROM i i2 WHERE i2.k = o.k AND i2.s <> o.s AND i2.w > 0)",
    "SELECT id FROM o WHERE EXISTS (SELECT * FROM i, i i2 WHERE i.k = o.k AND i.id = i2.id AND i2.x <> o.x)",
    # a residual that is not <> on a right side unique on its key (one join and a filter)
    "SELECT id FROM o WHERE EXISTS (SELECT * FROM i WHERE i.id = o.k AND i.x > o.x)",
    "SELECT id FROM o WHERE NOT EXISTS (SELECT * FROM i WHERE i.id = o.k AND i.x > o.x)",
    # a condition TRUE on NULLs: a row that matched nothing is still kept by NOT EXISTS
    "SELECT id FROM o WHERE NOT EXISTS (SELECT * FROM i WHERE i.id = o.k AND (i.x > o.x OR i.s IS NULL))",
    "SELECT id FROM o WHERE EXISTS (SELECT * FROM i WHERE i.id = o.k AND (i.x > o.x OR i.s IS NULL))",
]

X = [None, 0.0, -0.0, 1.0, 2.5, math.nan, -1.0]
S = [None, "", "a", "b", "ab", "é"]


def _tables(outer: list, inner: list) -> dict[str, pa.Table]:
    def t(rows):
        return pa.table({"id": pa.array(range(len(rows)), pa.int64()),
                         "k": pa.array([r[0] for r in rows], pa.int64()),
                         "w": pa.array([r[1] for r in rows], pa.int64()),
                         "x": pa.array([r[2] for r in rows], pa.float64()),
                         "s": pa.array([r[3] for r in rows], pa.string())})
    return {"o": t(outer), "i": t(inner)}


def _databases(outer: list, inner: list, private_inner: bool = True):
    raw, con = twin_connections(**_tables(outer, inner))
    db = dodb.attach(con, seed=5, allow_insecure=True)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("o", "id", max_contributions=1, widths={"s": 4})
    if private_inner:
        db.protect("i", "id", max_contributions=1, widths={"s": 4})
    return raw, db


ROW = st.tuples(st.sampled_from([None, 0, 1, 2]), st.sampled_from([None, 0, 1]), st.sampled_from(X),
                st.sampled_from(S))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(outer=st.lists(ROW, max_size=12), inner=st.lists(ROW, max_size=12), private_inner=st.booleans())
def test_answers_equal_duckdb(outer, inner, private_inner):
    raw, db = _databases(outer, inner, private_inner)
    try:
        for sql in QUERIES:
            assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), raw.sql(sql).to_arrow_table())
    finally:
        db.close()


FIXED_OUTER = [(1, 0, 1.0, "a"), (1, 1, 2.5, "b"), (2, 0, math.nan, "a"), (None, 0, 1.0, "a"),
               (2, None, None, None), (0, 1, -0.0, ""), (3, 0, 1.0, "é")]
FIXED_INNER = [(1, 0, 1.0, "a"), (1, 1, 1.0, "a"), (2, 0, math.nan, "b"), (2, 1, None, None),
               (0, 0, 0.0, ""), (0, 1, None, "x"), (None, 0, 5.0, "z"), (1, 1, None, "a")]


def test_fixed_cases_equal_duckdb():
    """NaN equal to NaN, -0.0 equal to 0.0, all-equal groups, NULL-only groups, NULL keys."""
    raw, db = _databases(FIXED_OUTER, FIXED_INNER)
    try:
        for sql in QUERIES:
            assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), raw.sql(sql).to_arrow_table())
    finally:
        db.close()


def _nodes(db, sql):
    return list(walk(db.plan(sql, epsilon=1.0).root))


def test_neq_correlation_is_a_join_on_a_unique_summary_without_row_ids():
    raw, db = _databases(FIXED_OUTER, FIXED_INNER)
    try:
        for sql in QUERIES[:2]:
            nodes = _nodes(db, sql)
            assert not any(isinstance(n, AddRowId) for n in nodes), sql
            aggs = [n for n in nodes if isinstance(n, Aggregate)]
            assert [sorted(a.func for a in g.aggs) for g in aggs] == [["max", "min"]], sql
            joins = [n for n in nodes if isinstance(n, Join)]
            assert [(j.how, j.right_degree) for j in joins] == [("inner" if "NOT" not in sql else "left", 1)], sql
        # a residual on a right side that is not unique keeps the row-id path
        nodes = _nodes(db, "SELECT id FROM o WHERE EXISTS (SELECT * FROM i WHERE i.k = o.k AND i.x > o.x)")
        assert any(isinstance(n, AddRowId) for n in nodes)
    finally:
        db.close()


@pytest.mark.parametrize("sql", QUERIES[8:])
def test_residual_on_a_unique_right_side_is_one_join(sql):
    raw, db = _databases(FIXED_OUTER, FIXED_INNER)
    try:
        nodes = _nodes(db, sql)
        assert not any(isinstance(n, AddRowId) for n in nodes)
        assert len([n for n in nodes if isinstance(n, Join)]) == 1
    finally:
        db.close()
