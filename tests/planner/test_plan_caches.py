"""Planning caches (docs/design.md §Planning caches) never serve a stale fact.

Public sub-plan results and public key multiplicities are keyed by a content fingerprint of
the public tables they read; the front end (parse, guard, bind, optimise) and the dry run by
the catalog's fingerprint.  Each test changes what a cached fact depends on and checks that
the next plan sees the change, and that answers still equal DuckDB's.
"""
from __future__ import annotations

import pytest

import dodb
from dodb.compare import same_answer, snapshot
from dodb.planner.logical import Join, walk

# the public side is a filtered sub-plan, so its exact degree comes from running it at plan time
SQL = ("SELECT count(*) AS n, sum(t.v) AS s FROM t JOIN (SELECT pk FROM p WHERE name LIKE '%x%') q "
       "ON t.k = q.pk")


def _db():
    db = dodb.connect(seed=3, allow_insecure=True)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 50 AS k, range % 11 AS v FROM range(400)")
    db.con.execute("CREATE TABLE p AS SELECT range AS pk, 'x' || range AS name FROM range(30)")
    db.oracle = snapshot(db.con)
    db.set_budget(epsilon=100.0, delta=1e-5)
    db.protect("t", "id", max_contributions=1)
    return db


def _public_degree(plan) -> int:
    (j,) = [n for n in walk(plan.root) if isinstance(n, Join)]
    return j.right_degree if j.right_degree is not None else j.left_degree


def _both(db, sql):
    db.con.execute(sql)
    db.oracle.execute(sql)


@pytest.mark.parametrize("change", [
    "INSERT INTO p SELECT pk, name FROM p WHERE pk < 3",   # more rows
    "UPDATE p SET pk = 0 WHERE pk = 1",                    # same row count, new contents
])
def test_a_changed_public_table_is_recomputed(change):
    db = _db()
    first = db.plan(SQL, epsilon=1.0)
    assert _public_degree(first) == 1
    plans = db.catalog.plan_cache.hits
    again = db.plan(SQL, epsilon=1.0)
    assert db.catalog.plan_cache.hits > plans  # the same query over unchanged tables: the whole plan
    assert _public_degree(again) == 1
    hits = db.catalog.public_facts.hits
    other = db.plan(SQL, epsilon=2.0)  # another plan (another ε), the same public sub-plan
    assert db.catalog.public_facts.hits > hits  # the unchanged public sub-plan was reused
    assert _public_degree(other) == 1
    _both(db, change)
    after = db.plan(SQL, epsilon=1.0)
    assert _public_degree(after) == 2  # a duplicate key now: the exact degree went up
    res = db.sql(SQL, epsilon=1.0)
    assert same_answer(res.arrow(), db.oracle.sql(SQL).to_arrow_table())
    db.close()


def test_a_changed_schema_is_rebound():
    db = _db()
    sql = "SELECT max(p.name) AS m FROM t JOIN p ON t.k = p.pk"
    assert db.plan(sql, epsilon=1.0).types == ["VARCHAR"]
    _both(db, "ALTER TABLE p DROP COLUMN name")
    with pytest.raises(dodb.DodbError, match="name"):
        db.plan(sql, epsilon=1.0)
    _both(db, "ALTER TABLE p ADD COLUMN name INTEGER")
    _both(db, "UPDATE p SET name = pk * 2")
    assert db.plan(sql, epsilon=1.0).types == ["INTEGER"]
    res = db.sql(sql, epsilon=1.0)
    assert same_answer(res.arrow(), db.oracle.sql(sql).to_arrow_table())
    db.close()


def test_a_macro_created_after_planning_is_still_refused():
    db = _db()
    sql = "SELECT count(*) AS n FROM t WHERE abs(t.v - 5) > 3"
    db.plan(sql, epsilon=1.0)
    db.plan(sql, epsilon=1.0)
    db.con.execute("CREATE MACRO abs(x) AS 0")
    before = db.budget["spent"]
    with pytest.raises(dodb.UnsupportedQueryError, match="abs"):
        db.sql(sql, epsilon=1.0)
    assert db.budget["spent"] == before
    db.close()


def test_a_macro_dropped_after_a_refusal_is_seen_at_once():
    """Planning overlaps the listing of user functions and starts from the last listing: a
    plan made with stale functions is made again (docs/design.md §Planning caches)."""
    db = _db()
    sql = "SELECT count(*) AS n FROM t WHERE abs(t.v - 5) > 3"
    db.con.execute("CREATE MACRO abs(x) AS 0")
    with pytest.raises(dodb.UnsupportedQueryError, match="abs"):
        db.plan(sql, epsilon=1.0)
    db.con.execute("DROP MACRO abs")
    assert same_answer(db.sql(sql, epsilon=1.0).arrow(), db.oracle.sql(sql).to_arrow_table())
    db.close()


def test_admission_reads_the_ledger_for_every_cached_plan():
    db = dodb.connect(seed=3, allow_insecure=True)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 50 AS k, range % 11 AS v FROM range(400)")
    db.set_budget(epsilon=1.5, delta=1e-5)
    db.protect("t", "id", max_contributions=1, epsilon=0.1)
    sql = "SELECT t.k, count(*) AS n FROM t WHERE t.v > 2 GROUP BY t.k"
    db.sql(sql, epsilon=1.0)
    with pytest.raises(dodb.BudgetExceededError):
        db.sql(sql, epsilon=1.0)
    db.close()


def test_structural_keys_tell_plans_apart():
    from sqlglot import exp, parse_one

    from dodb.planner.logical import Filter, Scan
    from dodb.planner.public_cache import structural_key

    def filtered(pred: str, **scan):
        return Filter(Scan(table="p", alias="p", source_columns=["pk"], **scan), parse_one(pred, read="duckdb"))

    base = structural_key(filtered("p.pk = 1"))
    assert base == structural_key(filtered("p.pk = 1"))  # node ids differ, structure does not
    for other in ["p.pk = '1'", "p.pk = 2", "p.pk > 1", "CAST(p.pk AS INT) = 1", "CAST(p.pk AS BIGINT) = 1"]:
        assert structural_key(filtered(other)) != base, other
    assert structural_key(filtered("p.pk = 1", predicate=exp.true())) != base
    assert structural_key(filtered("p.pk = 1", private=True)) != base


def test_the_public_cache_is_bounded_in_rows_and_entries():
    from dodb.planner.public_cache import PublicFacts

    facts = PublicFacts(max_entries=3, max_weight=100)
    for i in range(5):
        facts.get_or_compute(("k", i), lambda i=i: i, weight=lambda _: 40)
    assert facts._weight <= 100 and len(facts._entries) == 2  # 40-row entries: two fit
    assert facts.get_or_compute(("k", 4), lambda: "recomputed") == 4  # the newest stayed
    assert facts.get_or_compute(("k", 0), lambda: "recomputed") == "recomputed"  # the oldest went
    assert facts.get_or_compute(("big",), lambda: "x", weight=lambda _: 101) == "x"
    assert ("big",) not in facts._entries  # over the budget on its own: never kept
    for i in range(10):
        facts.get_or_compute(("small", i), lambda: 0)
    assert len(facts._entries) == 3


def test_every_catalog_change_between_queries_is_seen():
    """The catalog is re-read only when its cheap key changes (planner/catalog.py _KEY_SQL):
    every kind of DDL below must change the key."""
    db = _db()
    _both(db, "CREATE VIEW v AS SELECT pk AS a FROM p")
    assert db.plan("SELECT a FROM v", epsilon=1.0).names == ["a"]
    _both(db, "CREATE OR REPLACE VIEW v AS SELECT pk AS b FROM p")
    assert db.plan("SELECT b FROM v", epsilon=1.0).names == ["b"]
    assert "pk" not in db.catalog.tables["p"].not_null
    _both(db, "DELETE FROM p WHERE pk IS NULL")
    _both(db, "ALTER TABLE p ALTER COLUMN pk SET NOT NULL")
    db.plan("SELECT pk FROM p", epsilon=1.0)
    assert "pk" in db.catalog.tables["p"].not_null
    _both(db, "ALTER TABLE p RENAME COLUMN name TO label")
    assert db.plan("SELECT label FROM p", epsilon=1.0).names == ["label"]
    _both(db, "ALTER TABLE p RENAME TO p2")
    with pytest.raises(dodb.DodbError):
        db.plan("SELECT label FROM p", epsilon=1.0)
    sql = "SELECT count(*) AS n FROM t JOIN p2 ON t.k = p2.pk"
    res = db.sql(sql, epsilon=1.0)
    assert same_answer(res.arrow(), db.oracle.sql(sql).to_arrow_table())
    _both(db, "CREATE SCHEMA s2")
    _both(db, "CREATE TABLE s2.p2 (pk INTEGER)")  # another schema: not the one dodb reads
    assert db.plan("SELECT label FROM p2", epsilon=1.0).names == ["label"]
    db.close()
