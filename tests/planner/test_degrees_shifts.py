"""Degree rules of round 2 (docs/design.md §Degrees from structure): an injective integer
shift of a column (``rn - 1``) keeps the column's bounds as a join key, and a GROUP BY all
of whose keys an equality filter fixes is one row at most.  Each rule: the bound on a plan,
planted unsound cases that must NOT get it, and answers equal to DuckDB's."""
from __future__ import annotations

import pytest
import sqlglot
from hypothesis import given, settings, strategies as st
from sqlglot import exp

from dodb.planner.degrees import shifted_column
from dodb.planner.logical import Aggregate, CrossOne, ScalarRow, walk

from .test_degrees import _check, _top_join, db  # noqa: F401  (db is the shared fixture)


def _typed(sql: str, ctype: str) -> exp.Expression:
    e = sqlglot.parse_one(sql, dialect="duckdb")
    for c in e.find_all(exp.Column):
        c.type = exp.DataType.build(ctype, dialect="duckdb")
    return e


@pytest.mark.parametrize("sql", ["x + 1", "1 + x", "x - 1", "5 - x", "-x", "(x + 1) - 2", "x - -3", "(x)"])
@pytest.mark.parametrize("ctype", ["INTEGER", "BIGINT", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT"])
def test_integer_shifts_are_injective(sql, ctype):
    assert shifted_column(_typed(sql, ctype)).name == "x"


@pytest.mark.parametrize("sql,ctype", [
    ("x * 2", "INTEGER"), ("x * 0", "INTEGER"), ("x % 7", "INTEGER"), ("x // 2", "INTEGER"),
    ("x + 1.5", "INTEGER"), ("x + 1.0", "INTEGER"), ("x + '1'", "INTEGER"), ("x + y", "INTEGER"),
    ("x + 1", "DOUBLE"), ("x + 1", "FLOAT"), ("x + 1", "DECIMAL(10,2)"), ("x + 1", "VARCHAR"),
    ("x + 1", "DATE"), ("x + 1", "BOOLEAN"), ("CAST(x AS TINYINT) + 1", "INTEGER"), ("abs(x) + 1", "INTEGER"),
    ("x + 99999999999999999999999", "INTEGER"), ("x || 'a'", "VARCHAR"),
])
def test_non_injective_or_untyped_keys_are_not_claimed(sql, ctype):
    assert shifted_column(_typed(sql, ctype)) is None
    assert shifted_column(sqlglot.parse_one("x + 1")) is None  # untyped column


W = ("WITH w AS (SELECT city, yr, sum(amt) AS s, row_number() OVER (PARTITION BY city ORDER BY yr, sum(amt)) AS rn "
     "FROM sales GROUP BY city, yr) ")


@pytest.mark.parametrize("cond", ["a.rn = b.rn - 1", "a.rn + 1 = b.rn", "a.rn = 3 - b.rn", "b.rn = -a.rn + 2",
                                  "a.rn - 1 = b.rn + 1"])
def test_row_number_shift_keeps_degree_one(db, cond):
    sql = W + f"SELECT a.city, a.yr, b.yr, a.s, b.s FROM w a JOIN w b ON a.city = b.city AND {cond}"
    j = _top_join(db, sql)
    assert (j.left_degree, j.right_degree) == (1, 1), j.describe()
    assert j.stability == j.left.stability + j.right.stability
    _check(db, sql)


def test_lag_and_lead_self_joins_equal_duckdb(db):
    """TPC-DS Q47's shape: a CTE joined to itself twice on (group keys, rn ± 1)."""
    sql = W + ("SELECT a.city, a.yr, a.s, l.s, n.s FROM w a, w l, w n WHERE a.city = l.city AND a.city = n.city "
               "AND a.rn = l.rn + 1 AND a.rn = n.rn - 1")
    from dodb.planner.logical import Join
    plan = db.plan(sql, epsilon=1.0, delta=1e-6)
    joins = [n for n in walk(plan.root) if isinstance(n, Join)]
    assert len(joins) == 2 and all((j.left_degree, j.right_degree) == (1, 1) for j in joins)
    _check(db, sql)


@pytest.mark.parametrize("key", [
    "b.rn * 2", "b.rn * 0", "b.rn % 2", "b.rn // 2",          # not one-to-one (or not claimed)
    "CAST(b.rn AS DOUBLE) + 1", "CAST(b.rn AS DECIMAL(9,1)) + 1",  # floats and decimals are not claimed
    "CAST(b.rn AS TINYINT) + 1", "length(CAST(b.rn AS VARCHAR)) - 1",
])
def test_planted_unsound_keys_do_not_get_degree_one(db, key):
    sql = W + f"SELECT a.city, a.yr, b.yr FROM w a JOIN w b ON a.city = b.city AND a.rn = {key}"
    j = _top_join(db, sql)
    assert j.right_degree != 1, j.describe()
    _check(db, sql)


def test_shift_of_a_non_unique_column_is_not_unique(db):
    """yr is not unique with city in sales: yr - 1 carries yr's (absent) bound, not degree 1."""
    sql = "SELECT a.city, b.amt FROM sales a JOIN sales b ON a.city = b.city AND a.yr = b.yr - 1"
    j = _top_join(db, sql)
    assert j.left_degree != 1 and j.right_degree != 1
    _check(db, sql)


def test_planted_unsound_shift_rule_gives_a_wrong_answer_that_the_oracle_catches(db, monkeypatch):
    """Guards the guard: a rule taking ``rn % 2`` as injective claims degree 1 on the right,
    the join keeps one partner per key and drops real rows, and DuckDB's answer differs."""
    from dodb.planner import theta_joins

    def any_column(e):
        return next(e.find_all(exp.Column), None)

    sql = W + "SELECT a.city, a.yr, b.yr FROM w a JOIN w b ON a.city = b.city AND a.rn % 2 = b.rn % 2"
    monkeypatch.setattr(theta_joins, "shifted_column", any_column)
    assert _top_join(db, sql).right_degree == 1
    with pytest.raises(AssertionError, match="row counts differ"):
        _check(db, sql)
    monkeypatch.undo()
    assert _top_join(db, sql).right_degree != 1
    _check(db, sql)


@settings(max_examples=20, deadline=None)
@given(c=st.integers(-3, 3), form=st.sampled_from(["a.rn = b.rn + {c}", "a.rn = {c} - b.rn", "a.rn - {c} = b.rn"]),
       part=st.sampled_from(["city", "yr"]))
def test_random_shift_joins_equal_duckdb(db, c, form, part):
    w = W.replace("PARTITION BY city", f"PARTITION BY {part}")
    sql = w + f"SELECT a.city, a.yr, b.city, b.yr FROM w a JOIN w b ON a.{part} = b.{part} AND " + form.format(c=f"({c})")
    j = _top_join(db, sql)
    assert (j.left_degree, j.right_degree) == (1, 1)
    _check(db, sql)


# -- GROUP BY with every key fixed: one row at most -------------------------------------------
ONE = "SELECT sum(amt) AS t FROM sales WHERE yr = {yr} AND qtr = 2 GROUP BY {keys}"


def _scalar_query(inner: str) -> str:
    return f"SELECT city, count(*) AS n FROM sales GROUP BY city HAVING sum(amt) > 0.1 * ({inner})"


@pytest.mark.parametrize("yr", [2001, 2009])  # 2009 matches no row: no group, the subquery is NULL
@pytest.mark.parametrize("keys", ["yr", "yr, qtr", "qtr, yr"])
def test_group_by_with_every_key_fixed_is_one_row(db, yr, keys):
    inner = ONE.format(yr=yr, keys=keys)
    plan = db.plan(_scalar_query(inner), epsilon=1.0, delta=1e-6)
    grouped = [n for n in walk(plan.root) if isinstance(n, Aggregate) and n.keys]
    assert any(n.one_row for n in grouped)
    assert any(isinstance(n, CrossOne) for n in walk(plan.root))
    _check(db, _scalar_query(inner))


@pytest.mark.parametrize("inner", [
    "SELECT sum(amt) AS t FROM sales WHERE yr = 2001 GROUP BY yr, qtr",            # qtr unfixed
    "SELECT sum(amt) AS t FROM sales WHERE yr = 2001 OR qtr = 2 GROUP BY yr",       # an OR fixes nothing
    "SELECT sum(amt) AS t FROM sales WHERE yr > 2000 AND yr < 2002 GROUP BY yr",    # range, not equality
    "SELECT sum(amt) AS t FROM sales WHERE CAST(code AS INTEGER) = 1 GROUP BY code",  # '1', '01', ' 1'
    "SELECT sum(amt) AS t FROM sales WHERE yr = 2001 GROUP BY yr + qtr",             # an expression key
])
def test_planted_group_by_with_a_key_unfixed_is_not_one_row(db, inner):
    plan = db.plan(_scalar_query(inner), epsilon=1.0, delta=1e-6)
    assert not any(n.one_row for n in walk(plan.root) if isinstance(n, Aggregate) and n.keys)
    # broadcast only through the ScalarRow check (DuckDB's error when it holds several rows)
    assert all(isinstance(n.right, ScalarRow) for n in walk(plan.root) if isinstance(n, CrossOne))


def test_fixed_key_through_a_join_is_not_claimed(db):
    """The constant-column fact is only carried through filters and projections: a join
    between the filter and the GROUP BY drops it (conservative, never unsound)."""
    inner = ("SELECT sum(s.amt) AS t FROM sales s JOIN cust c ON s.cid = c.id "
             "WHERE s.yr = 2001 AND c.region = 'r1' GROUP BY s.yr, c.region")
    plan = db.plan(f"SELECT t, count(*) FROM ({inner}) g GROUP BY t", epsilon=1.0, delta=1e-6)
    assert not any(n.one_row for n in walk(plan.root) if isinstance(n, Aggregate) and n.keys)


# -- bounds that survive a join: unique sets as degrees, composite keys through a unique key ----
@pytest.fixture(scope="module")
def pdb(db):  # noqa: F811
    """``db`` plus two public tables: days (3 rows per yr, a NULL yr) and stores (sk unique,
    2 sk per sid, a NULL sid)."""
    db.con.execute("CREATE TABLE days AS SELECT 2000 + range % 4 AS yr, range AS day FROM range(12) "
                   "UNION ALL SELECT NULL, 99")
    db.con.execute("CREATE TABLE stores AS SELECT range AS sk, CASE WHEN range = 5 THEN NULL ELSE range // 2 END AS sid "
                   "FROM range(6)")
    db.oracle.execute("CREATE TABLE days AS SELECT * FROM (VALUES (NULL::INTEGER, 0)) t(yr, day) WHERE false")
    db.oracle.execute("INSERT INTO days SELECT 2000 + range % 4, range FROM range(12) UNION ALL SELECT NULL, 99")
    db.oracle.execute("CREATE TABLE stores AS SELECT range AS sk, CASE WHEN range = 5 THEN NULL ELSE range // 2 END AS sid "
                      "FROM range(6)")
    return db


Y = ("WITH g AS (SELECT yr, amt % 6 AS st, sum(amt) AS s FROM sales GROUP BY yr, amt % 6), "
     "y AS (SELECT g.yr, stores.sid, g.s, days.day FROM g, days, stores WHERE g.yr = days.yr AND g.st = stores.sk) ")


def test_unique_set_becomes_a_degree_and_reaches_a_column_through_a_unique_key(pdb):
    """TPC-DS Q59's shape: (yr, st) unique, ×3 days per yr, st → sid with 2 st per sid:
    at most 3·2 rows per (yr, sid); the self-join on (sid, yr - 1) uses that bound."""
    sql = Y + "SELECT a.sid, a.yr, a.s, b.s, a.day, b.day FROM y a JOIN y b ON a.sid = b.sid AND a.yr = b.yr - 1"
    j = _top_join(pdb, sql)
    assert j.left_degree <= 6 and j.right_degree <= 6, j.describe()
    _check(pdb, sql)


def test_composite_bound_does_not_pass_a_key_that_is_not_unique(pdb):
    """Joined to days (3 rows per yr) on yr, (yr, st) bounds nothing about days' columns."""
    sql = ("WITH g AS (SELECT yr, amt % 6 AS st, sum(amt) AS s FROM sales GROUP BY yr, amt % 6), "
           "y AS (SELECT g.st, days.day, g.s FROM g, days WHERE g.yr = days.yr) "
           "SELECT a.st, a.day, b.s FROM y a JOIN y b ON a.st = b.st AND a.day = b.day")
    j = _top_join(pdb, sql)
    assert j.left_degree > 6 and j.right_degree > 6, j.describe()
    _check(pdb, sql)


def test_planted_unsound_substitution_gives_a_wrong_answer_that_the_oracle_catches(pdb, monkeypatch):
    """Guards the guard: ignoring that 2 stores share a sid claims 3 rows per (yr, sid)
    where there are 6; the join drops real rows and DuckDB's answer differs."""
    from dodb.planner import build, degrees

    def one_per_value(deg, unique, key, per_value):
        return degrees.substituted_degrees(deg, unique, key, {c: 1 for c in per_value})

    sql = Y + "SELECT a.sid, a.yr, a.day, b.day FROM y a JOIN y b ON a.sid = b.sid AND a.yr = b.yr"
    monkeypatch.setattr(build, "substituted_degrees", one_per_value)
    assert _top_join(pdb, sql).left_degree <= 3
    with pytest.raises(AssertionError, match="row counts differ"):
        _check(pdb, sql)
    monkeypatch.undo()
    assert _top_join(pdb, sql).left_degree >= 6
    _check(pdb, sql)


# -- INTERSECT with a public side: a computed key's degree from the public side's distinct values --
INTERSECT_JOIN = ("SELECT s.city, s.amt, v.yr FROM sales s JOIN ({v}) v ON s.qtr + 999 = v.yr // 2")


def test_intersect_with_a_public_side_bounds_a_computed_key(pdb):
    """TPC-DS Q8's shape: the INTERSECT is distinct and a subset of days' years; yr // 2
    takes each value for 2 distinct years there (2000..2003), so at most 2 rows per value."""
    sql = INTERSECT_JOIN.format(v="SELECT yr FROM days INTERSECT SELECT yr FROM sales")
    j = _top_join(pdb, sql)
    assert j.right_degree == 2, j.describe()
    _check(pdb, sql)
    private_first = INTERSECT_JOIN.format(v="SELECT yr FROM sales INTERSECT SELECT yr FROM days")
    assert _top_join(pdb, private_first).right_degree == 2
    _check(pdb, private_first)


@pytest.mark.parametrize("v", [
    # projected after the INTERSECT to fewer columns: not distinct on yr any more
    "SELECT yr FROM (SELECT yr, day FROM days INTERSECT SELECT yr, amt FROM sales) t",
    "SELECT yr FROM days UNION ALL SELECT yr FROM sales",            # not a subset of days
    "SELECT yr FROM days UNION SELECT yr FROM sales",                # distinct, but not a subset
    "SELECT yr FROM sales INTERSECT SELECT qtr + 1999 FROM sales",   # no public side
])
def test_planted_set_operations_without_a_public_superset_get_no_small_bound(pdb, v):
    sql = INTERSECT_JOIN.format(v=v)
    j = _top_join(pdb, sql)
    assert j.right_degree is None or j.right_degree > 2, j.describe()
    _check(pdb, sql)


def test_planted_unsound_intersect_bound_gives_a_wrong_answer_that_the_oracle_catches(pdb, monkeypatch):
    """Guards the guard: a bound of 1 where two years share yr // 2 drops real rows."""
    from dodb.planner.build import PlanBuilder

    sql = INTERSECT_JOIN.format(v="SELECT yr FROM days INTERSECT SELECT yr FROM sales")
    monkeypatch.setattr(PlanBuilder, "_intersect_degree", lambda self, node, key: 1)
    assert _top_join(pdb, sql).right_degree == 1
    with pytest.raises(AssertionError, match="row counts differ"):
        _check(pdb, sql)
    monkeypatch.undo()
    assert _top_join(pdb, sql).right_degree == 2
    _check(pdb, sql)
