"""SUM of integers is DuckDB's HUGEINT, not the DECIMAL(38, 0) its Arrow type suggests: ``//``
truncates, casts to BIGINT fail out of range, through derived tables, HAVING, GROUP BY and
windows (``Column.huge``; planner/optimize.py ``duckdb_annotate_types`` keeps the casts that
sqlglot would drop as redundant).  DuckDB is the oracle, errors included."""
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
    "SELECT sum(x) // 2 AS a, sum(x) // -3 AS b, sum(x) % 5 AS c, sum(x) / 2 AS d FROM t",
    "SELECT g, sum(x) // 4 AS a FROM t GROUP BY g",
    "SELECT s // 2 AS a FROM (SELECT sum(x) AS s FROM t) d",
    "SELECT g FROM t GROUP BY g HAVING sum(x) // 2 > 1",
    "SELECT sum(q) // 3 AS a FROM t",
    "SELECT sum(q)::BIGINT AS a FROM t",
    "SELECT g, CAST(sum(q) AS BIGINT) AS a FROM t GROUP BY g",
    "SELECT CAST(sum(x) + 1 AS INTEGER) AS a FROM t",
    "SELECT id, sum(x) OVER (PARTITION BY g) // 2 AS a FROM t",
    "SELECT max(s) // 2 AS a FROM (SELECT g, sum(x) AS s FROM t GROUP BY g) d",
]

BIG = 2**63 - 1


def _databases(rows: list):
    raw, con = twin_connections(t=pa.table({"id": pa.array(range(len(rows)), pa.int32()),
                                            "g": pa.array([r[0] for r in rows], pa.int32()),
                                            "x": pa.array([r[1] for r in rows], pa.int32()),
                                            "q": pa.array([r[2] for r in rows], pa.int64())}))
    db = dodb.attach(con, seed=9, allow_insecure=True)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("t", "id", max_contributions=1)
    return raw, db


_same = assert_same_answer_or_error


ROW = st.tuples(st.sampled_from([None, 1, 2]), st.one_of(st.none(), st.integers(-20, 20)),
                st.one_of(st.none(), st.sampled_from([0, 1, -1, 3, BIG, -BIG - 1, 2**62])))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(ROW, max_size=8))
def test_answers_and_errors_equal_duckdb(rows):
    raw, db = _databases(rows)
    try:
        for sql in QUERIES:
            _same(db, raw, sql)
    finally:
        db.close()


@pytest.mark.parametrize("sql, want", [
    ("SELECT sum(x) // 2 FROM t", [(3,)]),           # 7 // 2: truncation, not 3.5 rounded to 4
    ("SELECT sum(x) // -2 FROM t", [(-3,)]),
    ("SELECT sum(q) // 3 FROM t", [(7686143364045646506,)]),  # exact beyond 2^53
    ("SELECT sum(q)::BIGINT FROM t", "Conversion Error"),
])
def test_fixed_cases(sql, want):
    raw, db = _databases([(1, 7, BIG), (1, None, BIG), (2, None, 2**62)])
    try:
        if isinstance(want, str):
            with pytest.raises(DodbError, match=want):
                db.sql(sql, epsilon=1.0).fetchall()
        else:
            assert db.sql(sql, epsilon=1.0).fetchall() == want == raw.sql(sql).fetchall()
    finally:
        db.close()


def test_hugeint_columns_of_tables_keep_integer_semantics():
    """A HUGEINT column arrives from Arrow as DECIMAL(38, 0): scans mark it, private or public."""
    def make(con):
        con.execute("CREATE TABLE h (id INTEGER, v HUGEINT)")
        con.execute("INSERT INTO h VALUES (1, 7), (2, -7), (3, NULL), (4, 170141183460469231731687303715884105727)")
        con.execute("CREATE TABLE p (v HUGEINT)")
        con.execute("INSERT INTO p VALUES (7), (-7)")
    raw, con = duckdb.connect(), duckdb.connect()
    make(raw)
    make(con)
    db = dodb.attach(con, seed=9, allow_insecure=True)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("h", "id", max_contributions=1)
    try:
        for sql in ["SELECT id, v // 2 AS a, v % 3 AS b FROM h", "SELECT h.id, p.v // 2 AS a FROM h, p WHERE h.id = 1",
                    "SELECT id, v + 1 AS a FROM h", "SELECT sum(v) // 2 AS a FROM h WHERE id < 4"]:
            _same(db, raw, sql)
    finally:
        db.close()
