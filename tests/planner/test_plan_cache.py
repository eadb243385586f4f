"""Whole plans of repeated queries (dodb/planner/plan_cache.py, docs/design.md §Planning caches).

A cached plan is served only for the same text, parameters, ε, δ, mode and catalog, and
only while the public tables it read hold the same rows; every use gets its own copy.
"""
from __future__ import annotations

import pytest

import dodb
from dodb.compare import same_answer, snapshot
from dodb.planner import plan_cache

SQL = "SELECT t.k, count(*) AS n, sum(t.v) AS s FROM t JOIN p ON t.k = p.pk WHERE p.name LIKE ? GROUP BY t.k"


@pytest.fixture
def db():
    d = dodb.connect(seed=5)
    d.con.execute("CREATE TABLE t AS SELECT range AS id, range % 20 AS k, range % 7 AS v FROM range(300)")
    d.con.execute("CREATE TABLE p AS SELECT range AS pk, 'x' || range AS name FROM range(20)")
    d.oracle = snapshot(d.con)
    d.set_budget(epsilon=100.0, delta=1e-5)
    d.protect("t", "id", max_contributions=1)
    yield d
    d.close()


def _want(db, params):
    return db.oracle.sql(SQL, params=params).to_arrow_table()


def test_a_repeated_query_reuses_its_plan_and_each_answer_keeps_its_own_report(db):
    first = db.sql(SQL, epsilon=1.0, params=["%1%"])
    hits = db.catalog.plan_cache.hits
    second = db.sql(SQL, epsilon=1.0, params=["%1%"])
    assert db.catalog.plan_cache.hits == hits + 1
    assert second.plan is not first.plan and second.plan.root is first.plan.root  # a copy; the tree shared
    assert second.plan.stats is not first.plan.stats
    for res in (first, second):
        assert same_answer(res.arrow(), _want(db, ["%1%"]))
        assert res.privacy.charged_epsilon == pytest.approx(1.0)


@pytest.mark.parametrize("change", [
    dict(epsilon=2.0), dict(delta=1e-7), dict(params=["%2%"]), dict(mode="oblivious"),
])
def test_another_budget_mode_or_parameter_is_another_plan(db, change):
    base = dict(epsilon=1.0, params=["%1%"])
    db.plan(SQL, **base)
    misses = db.catalog.plan_cache.misses
    other = db.plan(SQL, **{**base, **change})
    assert db.catalog.plan_cache.misses == misses + 1
    assert (other.epsilon, other.delta, other.mode) == (change.get("epsilon", 1.0), change.get("delta", other.delta),
                                                        change.get("mode", "do"))
    res = db.sql(SQL, **{**base, **change})
    assert same_answer(res.arrow(), _want(db, change.get("params", base["params"])))


def test_parameters_of_other_types_are_other_plans():
    assert plan_cache.params_key([1]) != plan_cache.params_key([True])
    assert plan_cache.params_key([1]) != plan_cache.params_key(["1"])
    assert plan_cache.params_key({"a": 1}) != plan_cache.params_key([1])


def test_a_changed_public_table_or_private_load_makes_a_new_plan(db):
    db.sql(SQL, epsilon=1.0, params=["%"])
    db.con.execute("INSERT INTO p VALUES (3, 'x3')")  # a duplicate key: the public degree goes up
    db.oracle.execute("INSERT INTO p VALUES (3, 'x3')")
    misses = db.catalog.plan_cache.misses
    res = db.sql(SQL, epsilon=1.0, params=["%"])
    assert db.catalog.plan_cache.misses == misses + 1
    assert same_answer(res.arrow(), _want(db, ["%"]))
    cap = res.plan.root
    db.insert("t", db.con.sql("SELECT 1000 + range AS id, 3 AS k, 1 AS v FROM range(50)").arrow())
    db.oracle.execute("INSERT INTO t SELECT 1000 + range, 3, 1 FROM range(50)")
    again = db.sql(SQL, epsilon=1.0, params=["%"])
    assert again.plan.root is not cap  # the private table's data version changed the catalog
    assert same_answer(again.arrow(), _want(db, ["%"]))


def test_a_stale_plan_is_caught_when_contents_are_not_checked(db, monkeypatch):
    """Planted: reuse without the content check serves the plan of the old public rows."""
    db.plan(SQL, epsilon=1.0, params=["%"])
    monkeypatch.setattr(plan_cache, "public_base_tables", lambda catalog, tables: [])
    db.plan(SQL, epsilon=1.0, params=["%"])  # cached again under the planted (empty) contents
    db.con.execute("INSERT INTO p VALUES (3, 'x3')")
    stale = db.plan(SQL, epsilon=1.0, params=["%"])
    monkeypatch.undo()
    fresh = db.plan(SQL, epsilon=1.0, params=["%"])
    degree = [n.right_degree for n in _joins(fresh)]
    assert [n.right_degree for n in _joins(stale)] != degree


def _joins(plan):
    from dodb.planner.logical import Join, walk
    return [n for n in walk(plan.root) if isinstance(n, Join)]
