"""``x NOT IN (subquery)`` with SQL's NULL semantics (issue 14 item 7): TRUE over an empty
subquery, dropped when ``x`` is NULL or the subquery holds a NULL, else an anti join —
never NOT EXISTS's answer.  DuckDB is the oracle; private and public subqueries."""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dodb

from ..operators.util import assert_same_rows

QUERIES = [
    "SELECT id FROM outer_t WHERE x NOT IN (SELECT v FROM inner_t)",
    "SELECT count(*) FROM outer_t WHERE x NOT IN (SELECT v FROM inner_t WHERE w > 0)",
    "SELECT id FROM outer_t WHERE x NOT IN (SELECT v FROM inner_t) AND id > 1",
    "SELECT id FROM inner_t WHERE v NOT IN (SELECT x FROM outer_t)",
]


def _run(outer: list, inner: list, private_inner: bool) -> None:
    o = pa.table({"id": pa.array(range(len(outer)), pa.int64()), "x": pa.array(outer, pa.int64())})
    i = pa.table({"id": pa.array(range(len(inner)), pa.int64()), "v": pa.array(inner, pa.int64()),
                  "w": pa.array([k % 3 for k in range(len(inner))], pa.int64())})
    raw, con = duckdb.connect(), duckdb.connect()
    for c in (raw, con):
        c.execute("CREATE TABLE outer_t AS SELECT * FROM o")
        c.execute("CREATE TABLE inner_t AS SELECT * FROM i")
    db = dodb.attach(con, seed=4)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("outer_t", "id", max_contributions=1)
    if private_inner:
        db.protect("inner_t", "id", max_contributions=1)
    for sql in QUERIES:
        assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), raw.sql(sql).to_arrow_table())


@pytest.mark.parametrize("outer, inner", [
    ([1, 2, None, 4], [2, 3]),            # x NULL: dropped (the subquery is not empty)
    ([1, 2, None, 4], [2, None]),         # a NULL in the subquery: nothing survives
    ([1, 2, None, 4], []),                # empty subquery: every row, the NULL one too
    ([None, None], [None]),
    ([], [1, None]),
    ([5, 6], [1, 2]),                     # no NULLs at all: the plain anti join
])
@pytest.mark.parametrize("private_inner", [True, False])
def test_not_in_follows_sql_null_semantics(outer, inner, private_inner):
    _run(outer, inner, private_inner)


def test_not_in_differs_from_not_exists_and_matches_duckdb():
    raw = duckdb.connect()
    raw.execute("CREATE TABLE a AS SELECT * FROM (VALUES (1), (NULL), (3)) t(x)")
    raw.execute("CREATE TABLE b AS SELECT * FROM (VALUES (3)) t(y)")
    not_in = raw.sql("SELECT count(*) FROM a WHERE x NOT IN (SELECT y FROM b)").fetchall()
    not_exists = raw.sql("SELECT count(*) FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE y = x)").fetchall()
    assert not_in == [(1,)] and not_exists == [(2,)]  # why NOT EXISTS is not a rewrite of NOT IN
    _run([1, None, 3], [3], True)


@settings(max_examples=10)
@given(st.lists(st.integers(0, 4) | st.none(), max_size=8), st.lists(st.integers(0, 4) | st.none(), max_size=6),
       st.booleans())
def test_random_not_in(outer, inner, private_inner):
    _run(outer, inner, private_inner)


def test_errors_quote_the_sql_as_written():
    from dodb.errors import UnsupportedQueryError
    from dodb.planner.sourcetext import quote_source

    sql = "SELECT a\nFROM t\nWHERE   Foo_Bar(a,   1) > 2"
    err = quote_source(UnsupportedQueryError("function FOO_BAR", "line 3, col 15"), sql)
    assert str(err) == "unsupported SQL: function FOO_BAR (at line 3, col 9: 'Foo_Bar(a, 1) > 2')"
    same = UnsupportedQueryError("x")
    assert quote_source(same, sql) is same                      # no position: unchanged
