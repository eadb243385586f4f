"""Scalar subqueries hold at most one row, as DuckDB checks it (docs/design.md §Subqueries).

DuckDB raises "More than one row returned by a subquery used as an expression" when a
scalar subquery yields several rows.  dodb used to join such a source as if it were one
row (``x = (SELECT y FROM t)`` became ``JOIN t ON x = t.y``; ``HAVING s > (SELECT … GROUP
BY a, b)`` took the max over the product).  Now the source passes through a ScalarRow
node: the same error through the status word, DuckDB's answer whenever it has one.
"""
from __future__ import annotations

import duckdb
import pytest

import dodb
from dodb.compare import snapshot
from dodb.planner.logical import ScalarRow, walk
from dodb.planner.simulate import simulate_plan
from dodb.wire import QueryRuntimeError

from ..operators.util import assert_same_rows


def _attach(pub_rows: list, protect_pub: bool) -> dodb.Database:
    con = duckdb.connect()
    con.execute("CREATE TABLE people (id INTEGER, k INTEGER, amt INTEGER, name VARCHAR)")
    con.execute("INSERT INTO people SELECT i, i % 3, i % 7, CASE WHEN i % 5 = 0 THEN NULL ELSE 'n' || (i % 4) END "
                "FROM range(24) r(i)")
    con.execute("CREATE TABLE pub (a INTEGER, b INTEGER, y INTEGER, s VARCHAR)")
    if pub_rows:
        con.executemany("INSERT INTO pub VALUES (?, ?, ?, ?)", pub_rows)
    db = dodb.attach(con, seed=5, allow_insecure=True)
    db.oracle = snapshot(con)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("people", "id", max_contributions=1, widths={"name": 4})
    if protect_pub:
        db.protect("pub", "a", max_contributions=4, widths={"s": 4})
    return db


PUB = [(1, 1, 5, "n1"), (1, 2, 6, None), (2, 1, 3, "n2"), (3, None, None, "n3")]

# (query, True when DuckDB raises on PUB because the subquery holds several rows)
QUERIES = [
    ("SELECT id FROM people WHERE amt = (SELECT y FROM pub)", True),
    ("SELECT id FROM people WHERE amt = (SELECT y FROM pub WHERE a = 2)", False),
    ("SELECT id FROM people WHERE amt = (SELECT y FROM pub WHERE a = 1)", True),
    ("SELECT id FROM people WHERE amt = (SELECT y FROM pub WHERE a = 9)", False),  # empty: NULL
    ("SELECT id FROM people WHERE amt < (SELECT y FROM pub WHERE b IS NULL)", False),  # one row, NULL y
    ("SELECT id FROM people WHERE name = (SELECT s FROM pub WHERE a = 2)", False),
    ("SELECT id FROM people WHERE name = (SELECT s FROM pub WHERE y > 4)", True),
    ("SELECT k, sum(amt) FROM people GROUP BY k HAVING sum(amt) > (SELECT sum(y) FROM pub GROUP BY a, b)", True),
    ("SELECT k, sum(amt) FROM people GROUP BY k HAVING sum(amt) > (SELECT sum(y) FROM pub GROUP BY b "
     "HAVING b IS NULL)", False),
    ("SELECT k, count(*) FROM people GROUP BY k HAVING count(*) > (SELECT DISTINCT a FROM pub WHERE b = 2)", False),
    ("SELECT k, count(*) FROM people GROUP BY k HAVING count(*) > (SELECT DISTINCT a FROM pub WHERE b = 1)", True),
    # a subquery with a join inside: only its result must be one row, not each table
    ("SELECT id FROM people WHERE amt = (SELECT p.y FROM pub p JOIN pub q ON p.a = q.a AND p.b = q.b "
     "WHERE p.a = 2)", False),
    ("SELECT id FROM people WHERE amt = (SELECT p.y FROM pub p JOIN pub q ON p.a = q.a)", True),
    ("SELECT id FROM people WHERE amt > (SELECT y FROM pub ORDER BY y DESC LIMIT 1)", False),
    # an outer condition on the value applies after the check, not to the subquery's rows
    ("SELECT id FROM people WHERE (SELECT y FROM pub) > 5", True),
    ("SELECT id FROM people WHERE (SELECT y FROM pub WHERE a = 2) > 2 AND amt < 3", False),
    ("SELECT id FROM people WHERE (SELECT y FROM pub WHERE a = 2) > 5", False),
    # an empty subquery is NULL, not "no row"
    ("SELECT id FROM people WHERE (SELECT y FROM pub WHERE a = 9) IS NULL", False),
    ("SELECT id FROM people WHERE amt < coalesce((SELECT y FROM pub WHERE a = 9), 2)", False),
    ("SELECT k, count(*) FROM people GROUP BY k HAVING (SELECT sum(y) FROM pub GROUP BY a HAVING a = 9) IS NULL",
     False),
    # a whole SELECT item
    ("SELECT id, (SELECT y FROM pub WHERE a = 2) AS v FROM people", False),
    ("SELECT id, (SELECT s FROM pub WHERE a = 9) AS v FROM people", False),
    ("SELECT id, (SELECT y FROM pub) AS v FROM people", True),
    ("SELECT id, (SELECT DISTINCT a FROM pub WHERE y > 4) AS v FROM people", False),
    ("SELECT k, sum(amt) + (SELECT y FROM pub WHERE a = 2) AS v FROM people GROUP BY k", False),
]


@pytest.fixture(scope="module", params=[True, False], ids=["private_pub", "public_pub"])
def db(request):
    d = _attach(PUB, protect_pub=request.param)
    yield d
    d.close()


@pytest.mark.parametrize("sql,raises", QUERIES)
def test_scalar_subqueries_answer_or_raise_like_duckdb(db, sql, raises):
    if raises:
        with pytest.raises(duckdb.InvalidInputException, match="More than one row returned by a subquery"):
            db.oracle.sql(sql).fetchall()
        with pytest.raises(QueryRuntimeError, match="More than one row returned by a subquery"):
            db.sql(sql, epsilon=1.0).arrow()
    else:
        assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), db.oracle.sql(sql).to_arrow_table())


@pytest.mark.parametrize("rows", [[], PUB[2:3], PUB[:2], PUB], ids=["empty", "one", "two", "four"])
def test_a_private_scalar_source_is_one_slot_and_its_trace_is_public(rows):
    """The ScalarRow pass reads every slot whatever the number of real rows: the whole
    query's trace is reconstructed from public information alone."""
    db = _attach(rows, protect_pub=True)
    sql = "SELECT id FROM people WHERE amt = (SELECT y FROM pub WHERE b = 1)"
    plan = db.plan(sql, epsilon=1.0)
    assert any(isinstance(n, ScalarRow) for n in walk(plan.root)), plan.explain()
    if sum(1 for r in rows if r[1] == 1) > 1:
        with pytest.raises(QueryRuntimeError):
            db.sql(sql, epsilon=1.0).arrow()
    else:
        assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), db.oracle.sql(sql).to_arrow_table())
    padded = plan.execute()
    assert simulate_plan(plan, plan.trace.leaked_values()).events == plan.trace.events
    assert padded.table.num_rows == plan.execute().table.num_rows
    db.close()


def test_known_one_row_sources_are_not_checked():
    """A global aggregate is one row by construction: no ScalarRow is added."""
    db = _attach(PUB, protect_pub=True)
    plan = db.plan("SELECT id FROM people WHERE amt > (SELECT avg(y) FROM pub)", epsilon=1.0)
    assert not any(isinstance(n, ScalarRow) for n in walk(plan.root))
    db.close()


def test_a_planted_count_dependent_pass_is_caught_by_the_simulator(monkeypatch):
    """A ScalarRow whose pass depended on the number of real rows (here: one more trace
    event when there are several) makes the real trace differ from the one rebuilt from
    public information: the check above can fail."""
    import dodb.planner.execute as execute
    from dodb.operators.scalar_row import scalar_row

    def leaky(t, ctx=None):
        out, too_many = scalar_row(t, ctx)
        if too_many:  # planted: control flow on private data
            ctx.trace.record("scalar:again", -1, t.padded_size)
        return out, too_many

    monkeypatch.setattr(execute, "scalar_row", leaky)
    db = _attach(PUB, protect_pub=True)
    plan = db.plan("SELECT id FROM people WHERE amt = (SELECT y FROM pub WHERE a = 1)", epsilon=1.0)
    plan.execute()
    assert simulate_plan(plan, plan.trace.leaked_values()).events != plan.trace.events
    db.close()
