"""A correlated scalar subquery selecting a plain value (``(SELECT v FROM i WHERE i.k = o.k)``)
answers like DuckDB: the row's value, NULL over no row, and DuckDB's "More than one row
returned by a subquery" error exactly when an outer row that reaches the SELECT list finds
several rows (docs/design.md §Subqueries; sqlglot alone answers MAX silently).  In WHERE, where
DuckDB's check depends on its plan and column statistics, it is refused by name.  DuckDB is the
oracle: NULL keys and values, duplicate values, strings, filters before the SELECT list."""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dodb
from dodb.errors import DodbError

from ..operators.util import assert_same_answer_or_error, twin_connections

QUERIES = [
    "SELECT id, (SELECT v FROM i WHERE i.k = o.k) AS w FROM o",
    "SELECT id, (SELECT v FROM i WHERE i.k = o.k) FROM o WHERE o.x > 0",
    "SELECT id, (SELECT s FROM i WHERE i.k = o.k AND i.v > 1) AS w FROM o",
    "SELECT id, (SELECT DISTINCT v FROM i WHERE i.k = o.k) AS w FROM o",
    "SELECT id, (SELECT v + 1 FROM i WHERE i.k = o.k) * 2 AS w, COALESCE((SELECT s FROM i WHERE i.k = o.k), '?') FROM o",
    "SELECT id, (SELECT v FROM i WHERE i.k = o.k AND i.j = o.x) AS w FROM o",
    "SELECT o.k, count(*) AS n, (SELECT v FROM i WHERE i.k = o.k) AS w FROM o GROUP BY o.k",
    # DuckDB checks every row reaching the SELECT list, whatever surrounds the subquery
    "SELECT id, CASE WHEN o.x > 0 THEN 0 ELSE (SELECT v FROM i WHERE i.k = o.k) END AS w FROM o",
    "SELECT id, COALESCE(o.x, (SELECT v FROM i WHERE i.k = o.k)) AS w FROM o",
]


def _databases(outer: list, inner: list, private_inner: bool):
    raw, con = twin_connections(
        o=pa.table({"id": pa.array(range(len(outer)), pa.int64()),
                    "k": pa.array([r[0] for r in outer], pa.int64()),
                    "x": pa.array([r[1] for r in outer], pa.int64())}),
        i=pa.table({"id": pa.array(range(len(inner)), pa.int64()),
                    "k": pa.array([r[0] for r in inner], pa.int64()),
                    "j": pa.array([r[1] for r in inner], pa.int64()),
                    "v": pa.array([r[2] for r in inner], pa.int64()),
                    "s": pa.array([r[3] for r in inner], pa.string())}))
    db = dodb.attach(con, seed=7, allow_insecure=True)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("o", "id", max_contributions=1)
    if private_inner:
        db.protect("i", "id", max_contributions=1, widths={"s": 3})
    return raw, db


_same = assert_same_answer_or_error


OUTER = st.tuples(st.sampled_from([None, 0, 1, 2, 3]), st.sampled_from([None, -1, 0, 1, 2]))
INNER = st.tuples(st.sampled_from([None, 0, 1, 2, 3, 4]), st.sampled_from([None, 0, 1, 2]),
                  st.sampled_from([None, 0, 1, 2, 5]), st.sampled_from([None, "", "a", "bc"]))


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(outer=st.lists(OUTER, max_size=10), inner=st.lists(INNER, max_size=10), private_inner=st.booleans())
def test_answers_and_errors_equal_duckdb(outer, inner, private_inner):
    raw, db = _databases(outer, inner, private_inner)
    try:
        for sql in QUERIES:
            _same(db, raw, sql)
    finally:
        db.close()


FIXED_OUTER = [(1, 1), (2, 1), (3, -1), (None, 1), (0, 2)]
FIXED_INNER = [(1, 0, 5, "a"), (2, 0, 7, "bc"), (2, 1, 7, "bc"), (3, 0, 1, None), (3, 1, 2, "a"), (None, 0, 9, "z")]


@pytest.mark.parametrize("sql, want", [
    # key 2 has two rows, key 3 too: every outer row reaching the SELECT list is checked
    ("SELECT id, (SELECT v FROM i WHERE i.k = o.k) FROM o", "error"),
    # the rows with several partners filtered out first: no error
    ("SELECT id, (SELECT v FROM i WHERE i.k = o.k) FROM o WHERE o.k IN (0, 1)", [(0, 5), (4, None)]),
    # key 2's two rows hold one distinct value; key 3 is filtered out
    ("SELECT id, (SELECT DISTINCT v FROM i WHERE i.k = o.k) FROM o WHERE o.x > 0", [(0, 5), (1, 7), (3, None), (4, None)]),
    # a second key picks one row per (k, j)
    ("SELECT id, (SELECT s FROM i WHERE i.k = o.k AND i.j = o.x) FROM o", [(0, None), (1, "bc"), (2, None), (3, None),
                                                                          (4, None)]),
])
def test_fixed_cases(sql, want):
    raw, db = _databases(FIXED_OUTER, FIXED_INNER, True)
    try:
        if want == "error":
            with pytest.raises(DodbError, match="More than one row returned by a subquery"):
                db.sql(sql, epsilon=1.0).fetchall()
            with pytest.raises(duckdb.Error, match="More than one row returned by a subquery"):
                raw.sql(sql).fetchall()
        else:
            assert sorted(db.sql(sql, epsilon=1.0).fetchall(), key=repr) == sorted(want, key=repr)
            assert sorted(raw.sql(sql).fetchall(), key=repr) == sorted(want, key=repr)
    finally:
        db.close()


@pytest.mark.parametrize("sql", [
    "SELECT id FROM o WHERE o.x > 0 AND (SELECT v FROM i WHERE i.k = o.k) > 1",
    "SELECT id FROM o WHERE (SELECT s FROM i WHERE i.k = o.k) IS NULL",
])
def test_in_where_refused_by_name_charging_nothing(sql):
    """DuckDB answers [] on inner values (NULL, 0) and fails on (NULL, NULL) for the first query:
    its check there depends on its plan and statistics, so no rewrite matches it everywhere."""
    raw, db = _databases(FIXED_OUTER, FIXED_INNER, True)
    try:
        before = db.budget["spent"]
        with pytest.raises(DodbError, match="scalar subquery in WHERE"):
            db.sql(sql, epsilon=1.0)
        assert db.budget["spent"] == before
    finally:
        db.close()


def test_error_function_in_the_analysts_text_is_refused():
    """The rewrite's error() is the only one: the guard refuses it in a query."""
    raw, db = _databases(FIXED_OUTER, FIXED_INNER, True)
    try:
        with pytest.raises(DodbError, match="error"):
            db.sql("SELECT id, CASE WHEN x > 1 THEN error('x') ELSE x END FROM o", epsilon=1.0)
    finally:
        db.close()
