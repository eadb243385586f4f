"""A SELECT without FROM (a scalar subquery's value, a UNION's constant branch, a derived
constant) reads one public row (rules/one_row_source.py, a OneRow node) and answers like
DuckDB; a query with no private table still goes to DuckDB whole (docs/design.md §Public
queries).  Traces are simulatable and coupled neighbours give identical views."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dodb
from dodb.audit import audit
from dodb.planner.logical import OneRow, walk
from dodb.planner.simulate import simulate_plan

from ..operators.util import assert_same_rows, twin_connections

QUERIES = [
    "SELECT (SELECT count(*) FROM t) AS n",
    "SELECT (SELECT max(x) FROM t) + 1 AS m, 'a' AS s, 2.5 AS d",
    "SELECT (SELECT count(*) FROM t WHERE x > 1) AS a, (SELECT sum(x) FROM t) AS b, (SELECT min(s) FROM t) AS c",
    "SELECT x FROM t UNION SELECT 99",
    "SELECT s FROM t UNION ALL SELECT 'zz' UNION ALL SELECT NULL",
    "SELECT count(*) AS n WHERE (SELECT count(*) FROM t) > 2",
    "SELECT EXISTS (SELECT * FROM t WHERE x > 1) AS e",
    "SELECT t.x, c.v FROM t, (SELECT 7 AS v) AS c WHERE t.x < c.v",
    "WITH c AS (SELECT 3 AS v) SELECT x + v AS y FROM t, c",
    "SELECT x FROM t EXCEPT SELECT 1",
    "SELECT x, (SELECT 5) AS five FROM t",
    # two derived constants in one FROM (each its own one-row source)
    "SELECT q.a, r.b, count(*) AS n FROM (SELECT 1 AS a) q, (SELECT 5 AS b) r, t WHERE t.x <= r.b GROUP BY q.a, r.b",
]


def _databases(rows: list):
    raw, con = twin_connections(t=pa.table({"id": pa.array(range(len(rows)), pa.int64()),
                                            "x": pa.array([r[0] for r in rows], pa.int64()),
                                            "s": pa.array([r[1] for r in rows], pa.string())}))
    db = dodb.attach(con, seed=3, allow_insecure=True)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("t", "id", max_contributions=1, widths={"s": 3})
    return raw, db


ROW = st.tuples(st.sampled_from([None, 0, 1, 2, 7, 99]), st.sampled_from([None, "", "a", "zz"]))


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(ROW, max_size=10))
def test_answers_equal_duckdb(rows):
    raw, db = _databases(rows)
    try:
        for sql in QUERIES:
            assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), raw.sql(sql).to_arrow_table())
    finally:
        db.close()


def test_the_one_row_source_is_planned_and_public_queries_stay_with_duckdb():
    raw, db = _databases([(1, "a"), (2, None)])
    try:
        plan = db.plan(QUERIES[0], epsilon=1.0)
        assert any(isinstance(n, OneRow) for n in walk(plan.root))
        assert "OneRow" in plan.explain()
        assert db.sql("SELECT 42 AS x, 'a' || 'b' AS y", epsilon=1.0).fetchall() == [(42, "ab")]
        assert plan.public_sql is None and db.plan("SELECT 42 AS x", epsilon=1.0).public_sql is not None
    finally:
        db.close()


@pytest.mark.parametrize("sql", [QUERIES[0], QUERIES[3], QUERIES[5]])
def test_trace_is_simulatable(sql):
    raw, db = _databases([(1, "a"), (2, None), (7, "zz")])
    try:
        plan = db.plan(sql, epsilon=1.0)
        plan.execute()
        assert simulate_plan(plan, plan.trace.leaked_values()) == plan.trace
    finally:
        db.close()


def test_coupled_neighbours_have_identical_views():
    raw, db = _databases([(i % 5, "ab"[i % 2]) for i in range(12)])
    try:
        report = audit(db, [QUERIES[0], QUERIES[3], QUERIES[5]], pairs=2, seed=4)
        assert report.ok, "\n".join(report.lines())
    finally:
        db.close()
