"""Join sides and GROUP BY inputs sorted at their scan (planner/presort.py): a private
input reached through projections and filters is sorted at its scan, its filters only
mark rows, and the answer is DuckDB's — for every join type and the presortable
aggregates, over random tables with NULLs, duplicates, empty tables and dummy slots; a
side whose key is computed, a scan read twice, a floating-point or FD-reduced group key
and COUNT(DISTINCT) are sorted at the operator as before.  Planted bugs (a side announced
sorted but not sorted; a group whose run ends on a marked row dropped) are caught."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import dodb
from dodb.compare import snapshot
from dodb.operators import aggregate
from dodb.planner.execute import Executor

from ..operators.util import assert_same_rows
from .query_grammar import build_database, databases

_SETTINGS = settings(max_examples=int(os.environ.get("DODB_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
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


def _compare(specs, sql: str, shows: str | None = None) -> None:
    """``sql`` over the drawn tables answers as DuckDB does (and its plan shows ``shows``)."""
    db = build_database(specs)
    try:
        note(sql)
        text = db.plan(sql, epsilon=1.0).explain()
        note(text)
        assert shows is None or shows in text, text
        assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), db.oracle.sql(sql).to_arrow_table())
    finally:
        db.close()


@_SETTINGS
@given(specs=databases(names=("t1", "t2"), max_rows=20), join=st.sampled_from(JOINS),
       column=st.sampled_from(["k", "s", "d", "id"]), v=st.integers(-2, 2))
def test_joins_of_sides_sorted_at_the_scan_answer_as_duckdb(specs, join, column, v):
    sql = join.format(c=column, v=v)
    # both sides private (a sort-based join, never a lookup), the left one a filtered scan:
    # sorted at its scan, the filter only marks
    sorted_left = all(t.protection is not None for t in specs[:2]) and "JOIN t2 b ON a." in sql
    _compare(specs, sql, "sorted at the scan" if sorted_left else None)


def _db(rows_a: int = 40, rows_b: int = 12) -> dodb.Database:
    db = dodb.connect(seed=3, allow_insecure=True)
    db.con.execute(f"CREATE TABLE a AS SELECT i AS id, (i * 7) % 11 AS k, i % 3 AS f, CAST(i % 4 AS DOUBLE) - 1.5 AS g "
                   f"FROM range({rows_a}) t(i)")
    db.con.execute(f"CREATE TABLE b AS SELECT i AS id, (i * 5) % 13 AS k FROM range({rows_b}) t(i)")
    db.oracle = snapshot(db.con)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("a", "id", max_contributions=1, max_degree={"k": None})
    db.protect("b", "id", max_contributions=1, max_degree={"k": None})
    return db


@pytest.fixture
def db():
    db = _db()
    yield db
    db.close()


SQL = "SELECT a.id, b.id FROM a JOIN b ON a.k = b.k WHERE a.f = 1 ORDER BY 1, 2"


def test_filters_of_a_side_sorted_at_the_scan_keep_its_order(db):
    plan = db.plan(SQL, epsilon=1.0)
    assert "left and right sorted at the scan" in plan.explain()
    assert sorted(e.operator.split("#")[0] for e in plan.events) == ["Filter", "Join"]
    assert db.sql(SQL, epsilon=1.0).fetchall() == db.oracle.sql(SQL).fetchall()


def test_planted_compacted_side_with_dummy_keys_out_of_order_is_caught(monkeypatch, db):
    """After its filter compacts, a side sorted at its scan is in key order only once the
    slots after the real rows get NULL keys (planner/execute.py ``_dummy_keys_last``)."""
    from dodb.planner import execute

    want = db.oracle.sql(SQL).fetchall()
    assert db.sql(SQL, epsilon=1.0).fetchall() == want
    monkeypatch.setattr(execute, "_dummy_keys_last", lambda t, keys: t)
    assert db.sql(SQL, epsilon=1.0).fetchall() != want


@pytest.mark.parametrize("sql", [
    # a computed key: the scan is not sorted by it
    "SELECT a.id, b.id FROM a JOIN b ON a.k + 0 = b.k WHERE a.f = 1",
    # one scan read by two operators (a CTE read twice): its other reader expects its slots
    "WITH x AS (SELECT * FROM a WHERE f = 1) SELECT x.id, y.id FROM x JOIN x AS y ON x.k = y.id",
])
def test_a_side_that_cannot_be_sorted_at_its_scan_is_sorted_at_the_join(sql, db):
    plan = db.plan(sql, epsilon=1.0)
    text = plan.explain()
    assert "left sorted at the scan" not in text and "left and right" not in text, text
    assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), db.oracle.sql(sql).to_arrow_table())


def test_planted_side_announced_sorted_but_not_sorted_is_caught(monkeypatch, db):
    """The answer comparison notices a side that reaches the join unsorted."""
    want = db.oracle.sql(SQL).fetchall()
    assert db.sql(SQL, epsilon=1.0).fetchall() == want
    monkeypatch.setattr(Executor, "_sorted_scan", lambda self, node, t: t.with_arrays(t.arrays()))
    db.catalog.slot_cache.clear()
    assert db.sql(SQL, epsilon=1.0).fetchall() != want


GROUPS = [
    "SELECT {c} AS c0, count(*) AS c1, sum(n) AS c2, min(s) AS c3, max(d) AS c4 FROM t1 WHERE n > {v} GROUP BY 1",
    "SELECT {c} AS c0, k AS c1, avg(n) AS c2, count(f) AS c3 FROM t1 WHERE b GROUP BY 1, 2",
    "SELECT x.g AS c0, sum(x.m) AS c1 FROM (SELECT {c} AS g, n * 2 AS m FROM t1 WHERE f <> {v}) x GROUP BY 1",
    "SELECT {c} AS c0, count(*) AS c1 FROM t1 GROUP BY 1 HAVING count(*) > 1",
]


@_SETTINGS
@given(specs=databases(names=("t1", "t2"), max_rows=25), group=st.sampled_from(GROUPS),
       column=st.sampled_from(["k", "s", "d", "id", "n", "b"]), v=st.integers(-2, 2))
def test_group_by_over_a_scan_sorted_at_the_scan_answers_as_duckdb(specs, group, column, v):
    # one key: always sorted at the scan when t1 is private (two keys may be reduced to a
    # declared key that determines the other, read as payload: sorted at the GROUP BY then)
    one_key = "GROUP BY 1," not in group
    _compare(specs, group.format(c=column, v=v),
             "input sorted at the scan" if specs[0].protection is not None and one_key else None)


@pytest.mark.parametrize("sql", [
    "SELECT g, count(*) FROM a WHERE f = 1 GROUP BY 1",          # a floating-point key
    "SELECT k, count(DISTINCT f) FROM a WHERE f > 0 GROUP BY 1",  # a second sorted pass
])
def test_a_group_by_that_cannot_use_a_sorted_scan_sorts_as_before(sql, db):
    text = db.plan(sql, epsilon=1.0).explain()
    assert "input sorted at the scan" not in text, text
    assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), db.oracle.sql(sql).to_arrow_table())


def test_planted_group_ending_on_a_marked_row_dropped_is_caught(monkeypatch, db):
    """A presorted GROUP BY must keep a group whose run ends on a row its filter marked."""
    sql = "SELECT k, count(*) FROM a WHERE f <> 1 GROUP BY 1 ORDER BY 1"  # 2/3 pass: kept marked
    want = db.oracle.sql(sql).fetchall()
    assert "input sorted at the scan" in db.plan(sql, epsilon=1.0).explain()
    assert db.sql(sql, epsilon=1.0).fetchall() == want
    # the rule of (dummy, keys) order, where a run's last row is real if it is a group
    monkeypatch.setattr(aggregate, "_group_rows", lambda kern, real, starts, ends, presorted: ends & real)
    assert db.sql(sql, epsilon=1.0).fetchall() != want


ORDERED = [
    # t1 keyed on id (when the draw declares it): a unique side, its columns constant per key
    "SELECT t2.id AS c0, t1.s AS c1, sum(t2.n) AS c2, count(*) AS c3 FROM t1 JOIN t2 ON t1.id = t2.id "
    "GROUP BY 1, 2",
    "SELECT t1.{c} AS c0, count(*) AS c1, max(t2.d) AS c2 FROM t1 JOIN t2 ON t1.{c} = t2.{c} GROUP BY 1",
    "SELECT x.id AS c0, x.k AS c1, count(*) AS c2 FROM (SELECT t1.id, t1.k FROM t1 JOIN t2 ON t1.id = t2.id "
    "WHERE t2.n > {v}) x GROUP BY 1, 2",
]


@_SETTINGS
@given(specs=databases(names=("t1", "t2"), max_rows=20), query=st.sampled_from(ORDERED),
       column=st.sampled_from(["k", "s", "d", "id"]), v=st.integers(-2, 2))
def test_group_by_over_an_inner_join_in_key_order_answers_as_duckdb(specs, query, column, v):
    _compare(specs, query.format(c=column, v=v))


def test_a_group_by_over_a_join_in_its_key_order_skips_its_sort(db):
    sql = "SELECT a.k, count(*), sum(a.f) FROM a JOIN b ON a.k = b.k GROUP BY 1 ORDER BY 1"
    plan = db.plan(sql, epsilon=1.0)
    assert "in the order of the join's keys" in plan.explain()
    assert db.sql(sql, epsilon=1.0).fetchall() == db.oracle.sql(sql).fetchall()
    # grouped by a column that is not a join key nor on a unique side: sorted as before
    other = "SELECT a.f, count(*) FROM a JOIN b ON a.k = b.k GROUP BY 1 ORDER BY 1"
    assert "in the order of the join's keys" not in db.plan(other, epsilon=1.0).explain()


def test_planted_group_by_trusting_an_unordered_join_output_is_caught(monkeypatch, db):
    from dodb.planner import presort

    sql = "SELECT a.f, count(*) FROM a JOIN b ON a.k = b.k GROUP BY 1 ORDER BY 1"
    want = db.oracle.sql(sql).fetchall()
    assert db.sql(sql, epsilon=1.0).fetchall() == want
    real = presort._inner_join_under
    monkeypatch.setattr(presort, "_inner_join_under", lambda node, keys: real(node, keys) or _any_join(node))
    again = sql + " "  # another text: not the plan cached above
    assert "in the order of the join's keys" in db.plan(again, epsilon=1.0).explain()
    assert db.sql(again, epsilon=1.0).fetchall() != want


def _any_join(node):
    from dodb.planner.logical import Join

    while node.children and not isinstance(node, Join):
        node = node.children[0]
    return node if isinstance(node, Join) else None


# a join over a GROUP BY's output on its keys (TPC-H Q17/Q18/Q20/Q21's shape): that side
# arrives in key order, its unused slots with NULL keys (planner/presort.py ``_grouped``)
GROUPED = [
    "SELECT a.id AS c0, g.c AS c1 FROM t1 a JOIN (SELECT {c}, count(*) AS c FROM t2 GROUP BY {c}) g "
    "ON a.{c} = g.{c} WHERE a.n > {v}",
    "SELECT a.id AS c0 FROM t1 a WHERE a.{c} IN (SELECT {c} FROM t2 WHERE n <> {v} GROUP BY {c} "
    "HAVING count(*) > 1)",
    "SELECT a.id AS c0, g.m AS c1 FROM t1 a LEFT JOIN (SELECT {c} AS kk, k AS k2, max(n) AS m FROM t2 "
    "GROUP BY 1, 2) g ON a.{c} = g.kk",
    "SELECT g.kk AS c0, g.m AS c1, a.id AS c2 FROM (SELECT {c} AS kk, min(id) AS m FROM t2 GROUP BY 1) g "
    "JOIN t1 a ON g.kk = a.{c} AND g.m = a.id",
]


@_SETTINGS
@given(specs=databases(names=("t1", "t2"), max_rows=20), query=st.sampled_from(GROUPED),
       column=st.sampled_from(["k", "s", "d", "id"]), v=st.integers(-2, 2))
def test_joins_over_a_group_by_in_key_order_answer_as_duckdb(specs, query, column, v):
    _compare(specs, query.format(c=column, v=v))


# the rows the WHERE drops sort after the groups with keys of their own: compacted, they
# are what the unused slots would hold
GROUPED_SQL = ("SELECT b.id, g.c FROM b JOIN (SELECT k, count(*) AS c FROM a WHERE id > 20 GROUP BY k "
               "HAVING count(*) >= 1) g ON b.k = g.k ORDER BY 1")


def test_a_join_over_a_group_by_on_its_keys_skips_that_sides_sort(db):
    text = db.plan(GROUPED_SQL, epsilon=1.0).explain()
    assert "right sorted by the GROUP BY below" in text, text
    assert db.sql(GROUPED_SQL, epsilon=1.0).fetchall() == db.oracle.sql(GROUPED_SQL).fetchall()
    # joined on a column that is not the GROUP BY's first key: sorted at the join as before
    other = ("SELECT a.id, g.c FROM a JOIN (SELECT id, k, count(*) AS c FROM b GROUP BY id, k) g "
             "ON a.k = g.k ORDER BY 1, 2")
    assert "GROUP BY below" not in db.plan(other, epsilon=1.0).explain()
    assert db.sql(other, epsilon=1.0).fetchall() == db.oracle.sql(other).fetchall()


def test_planted_group_by_output_with_dummy_keys_out_of_order_is_caught(monkeypatch, db):
    """The GROUP BY's unused slots need NULL keys to sort last (execute ``_dummy_keys_last``):
    without them the join meets garbage keys among its sorted side."""
    from dodb.planner import execute

    want = db.oracle.sql(GROUPED_SQL).fetchall()
    assert db.sql(GROUPED_SQL, epsilon=1.0).fetchall() == want
    monkeypatch.setattr(execute, "_dummy_keys_last", lambda t, keys: t)
    assert db.sql(GROUPED_SQL, epsilon=1.0).fetchall() != want
