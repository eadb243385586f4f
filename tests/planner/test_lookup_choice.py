"""Lookup-vs-sort is chosen on the columns a public join side keeps after pruning."""
from __future__ import annotations

import dodb
from dodb.compare import same_answer, snapshot

SQL = ("SELECT t.g, count(*) AS n, sum(t.v) AS s FROM t JOIN p ON t.k = p.pk "
       "WHERE p.name LIKE '%x%' GROUP BY t.g ORDER BY t.g")


def _db():
    db = dodb.connect(seed=3, allow_insecure=True)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 500 AS k, range % 7 AS g, range % 11 AS v "
                   "FROM range(5000)")
    # a wide public column used only by the public side's own filter
    db.con.execute("CREATE TABLE p AS SELECT range AS pk, repeat('x', 90) || range AS name FROM range(300)")
    db.oracle = snapshot(db.con)
    db.set_budget(epsilon=10.0, delta=1e-5)
    db.protect("t", "id", max_contributions=1)
    return db


def test_pruned_public_side_is_looked_up_and_answers_match():
    db = _db()
    plan = db.plan(SQL, epsilon=1.0, delta=1e-7)
    assert "lookup in a small public relation" in plan.explain()
    res = db.sql(SQL, epsilon=1.0, delta=1e-7)
    assert same_answer(res.arrow(), db.oracle.sql(SQL).to_arrow_table(), ordered=True)


def test_wide_public_columns_that_the_query_needs_keep_the_sort_join():
    db = _db()
    sql = SQL.replace("count(*) AS n", "max(p.name) AS n")
    plan = db.plan(sql, epsilon=1.0, delta=1e-7)
    assert "lookup in a small public relation" not in plan.explain()
    res = db.sql(sql, epsilon=1.0, delta=1e-7)
    assert same_answer(res.arrow(), db.oracle.sql(sql).to_arrow_table(), ordered=True)


def test_a_left_lookup_join_hands_on_a_narrow_decimal_whole():
    """A public DECIMAL(≤18) column travels as its low words through the lookup; a LEFT
    lookup's output column must be rebuilt from them (Column.with_arrays), or the answer
    cannot be encoded (it failed in the dry run, before admission, with no ORDER BY to
    rebuild it on the way)."""
    db = dodb.connect(seed=3)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS k FROM range(40)")
    db.con.execute("CREATE TABLE p AS SELECT range AS k, CAST(range * 1.5 - 1 AS DECIMAL(10,2)) AS n FROM range(2)")
    oracle = snapshot(db.con)
    db.set_budget(epsilon=10.0, delta=1e-5)
    db.protect("t", "id", max_contributions=1, max_degree={"k": None})
    for sql in ("SELECT t.id, p.n FROM t LEFT JOIN p ON t.k = p.k",
                "SELECT t.id, g.m FROM t LEFT JOIN (SELECT k, max(n) AS m FROM p GROUP BY k) g ON t.k = g.k"):
        assert "lookup in a small public relation" in db.plan(sql, epsilon=1.0).explain()
        assert same_answer(db.sql(sql, epsilon=1.0).arrow(), oracle.sql(sql).to_arrow_table())
