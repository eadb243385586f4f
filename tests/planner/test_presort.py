"""Join sides sorted at their scan (planner/presort.py): a private side reached through
projections and filters is sorted at its scan, its filters only mark rows, and the answer
is DuckDB's — for every join type, over random tables with NULLs, duplicates, empty
tables and dummy slots; a side whose key is computed, or a scan read twice, is sorted at
the join as before.  A planted bug (a side announced sorted but not sorted) is caught."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import dodb
from dodb.compare import snapshot
from dodb.planner.execute import Executor

from ..operators.util import assert_same_rows
from .query_grammar import build_database, databases

_SETTINGS = settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                            HealthCheck.filter_too_much])

# (join clause over aliases a, b; the columns compared) — keys of several types
JOINS = [
    "SELECT a.id AS c0, a.k AS c1, b.n AS c2 FROM t1 a JOIN t2 b ON a.{c} = b.{c} WHERE a.n > {v} AND b.f <= 1",
    "SELECT a.id AS c0, b.id AS c1 FROM t1 a LEFT JOIN (SELECT * FROM t2 WHERE n < {v}) b ON a.{c} = b.{c} WHERE a.f >= 0",
    "SELECT a.id AS c0, b.id AS c1 FROM (SELECT * FROM t1 WHERE n > {v}) a FULL JOIN (SELECT * FROM t2 WHERE b) b ON a.{c} = b.{c}",
    "SELECT a.id AS c0 FROM t1 a WHERE a.{c} IN (SELECT b.{c} FROM t2 b WHERE b.n > {v}) AND a.b",
    "SELECT a.id AS c0 FROM t1 a WHERE NOT EXISTS (SELECT 1 FROM t2 b WHERE b.{c} = a.{c} AND b.n > {v})",
    "SELECT x.kk AS c0, count(*) AS c1 FROM (SELECT {c} AS kk, n FROM t1 WHERE n <> {v}) x JOIN t2 b ON x.kk = b.{c} GROUP BY 1",
]


def _private_both(specs) -> bool:
    return all(s.protection is not None for s in specs[:2])


@_SETTINGS
@given(specs=databases(names=("t1", "t2"), max_rows=20), join=st.sampled_from(JOINS),
       column=st.sampled_from(["k", "s", "d", "id"]), v=st.integers(-2, 2))
def test_joins_of_sides_sorted_at_the_scan_answer_as_duckdb(specs, join, column, v):
    db = build_database(specs)
    try:
        sql = join.format(c=column, v=v)
        note(sql)
        want = db.oracle.sql(sql).to_arrow_table()
        plan = db.plan(sql, epsilon=1.0)
        text = plan.explain()
        if specs[0].protection is not None and "JOIN t2 b ON a." in sql:
            # a private left side through a filter: sorted at its scan, the filter only marks
            assert "sorted at the scan" in text, text
        got = db.sql(sql, epsilon=1.0).arrow()
        assert_same_rows(got, want)
    finally:
        db.close()


def _db(rows_a: int = 40, rows_b: int = 12) -> dodb.Database:
    db = dodb.connect(seed=3, allow_insecure=True)
    db.con.execute(f"CREATE TABLE a AS SELECT i AS id, (i * 7) % 11 AS k, i % 3 AS f FROM range({rows_a}) t(i)")
    db.con.execute(f"CREATE TABLE b AS SELECT i AS id, (i * 5) % 13 AS k FROM range({rows_b}) t(i)")
    db.oracle = snapshot(db.con)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("a", "id", max_contributions=1, max_degree={"k": None})
    db.protect("b", "id", max_contributions=1, max_degree={"k": None})
    return db


SQL = "SELECT a.id, b.id FROM a JOIN b ON a.k = b.k WHERE a.f = 1 ORDER BY 1, 2"


def test_filters_of_a_side_sorted_at_the_scan_release_nothing():
    db = _db()
    try:
        plan = db.plan(SQL, epsilon=1.0)
        assert "left and right sorted at the scan" in plan.explain()
        assert [e.operator.split("#")[0] for e in plan.events] == ["Join"]
        assert db.sql(SQL, epsilon=1.0).fetchall() == db.oracle.sql(SQL).fetchall()
    finally:
        db.close()


@pytest.mark.parametrize("sql", [
    # a computed key: the scan is not sorted by it
    "SELECT a.id, b.id FROM a JOIN b ON a.k + 0 = b.k WHERE a.f = 1",
    # one scan read by two operators (a CTE read twice): its other reader expects its slots
    "WITH x AS (SELECT * FROM a WHERE f = 1) SELECT x.id, y.id FROM x JOIN x AS y ON x.k = y.id",
])
def test_a_side_that_cannot_be_sorted_at_its_scan_is_sorted_at_the_join(sql):
    db = _db()
    try:
        plan = db.plan(sql, epsilon=1.0)
        text = plan.explain()
        assert "left sorted at the scan" not in text and "left and right" not in text, text
        assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), db.oracle.sql(sql).to_arrow_table())
    finally:
        db.close()


def test_planted_side_announced_sorted_but_not_sorted_is_caught(monkeypatch):
    """The answer comparison notices a side that reaches the join unsorted."""
    db = _db()
    try:
        want = db.oracle.sql(SQL).fetchall()
        assert db.sql(SQL, epsilon=1.0).fetchall() == want
        monkeypatch.setattr(Executor, "_sorted_scan", lambda self, node, t: t.with_arrays(t.arrays()))
        db.catalog.slot_cache.clear()
        assert db.sql(SQL, epsilon=1.0).fetchall() != want
    finally:
        db.close()
