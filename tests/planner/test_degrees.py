"""Degree bounds inferred from plan structure (docs/design.md §Degrees from structure,
dodb/planner/degrees.py): GROUP BY keys fixed by equality filters, ROW_NUMBER/RANK with
their partition.  Each rule is checked on a plan (the bound it gives, EXPLAIN's reason),
a planted unsound case must NOT get a small bound, and the answers equal DuckDB's."""
from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings, strategies as st

import sqlglot
from sqlglot import exp

import dodb
from dodb.compare import snapshot
from dodb.planner.degrees import fixed_columns
from dodb.planner.logical import Join, upper_rows, walk

from ..operators.util import assert_same_rows


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    con.execute("CREATE TABLE cust (id INTEGER PRIMARY KEY, region VARCHAR)")
    con.execute("INSERT INTO cust SELECT range, CASE WHEN range % 5 = 0 THEN NULL ELSE 'r' || (range % 3) END "
                "FROM range(30)")
    # sales: duplicates, NULL cities/years, and a VARCHAR code whose values '1', '01', ' 1' all
    # equal the integer 1 (the planted coarse-equality case)
    con.execute("CREATE TABLE sales (cid INTEGER, yr INTEGER, qtr INTEGER, city VARCHAR, code VARCHAR, amt INTEGER)")
    con.execute("INSERT INTO sales SELECT range % 30, CASE WHEN range % 11 = 0 THEN NULL ELSE 2000 + range % 3 END, "
                "1 + range % 4, CASE WHEN range % 9 = 0 THEN NULL ELSE 'c' || (range % 5) END, "
                "['1', '01', ' 1', '2'][1 + range % 4], range % 17 FROM range(120)")
    d = dodb.attach(con, seed=7, allow_insecure=True)
    d.oracle = snapshot(con)
    d.set_budget(epsilon=1e6, delta=0.5)
    d.protect("cust", "id", max_contributions=1, keys=[["id"]], widths={"region": 4})
    n = con.execute("SELECT max(c) FROM (SELECT count(*) c FROM sales GROUP BY cid)").fetchall()[0][0]
    d.protect("sales", "cid", parent=("cust", "id"), max_contributions=int(n), widths={"city": 4, "code": 4})
    yield d
    d.close()


G = "WITH g AS (SELECT city, yr, qtr, code, sum(amt) AS s, count(*) AS n FROM sales GROUP BY city, yr, qtr, code) "
QUARTERS = (G + "SELECT a.city, a.s, b.s FROM g a JOIN g b ON a.city = b.city "
            "WHERE a.yr = 2000 AND a.qtr = 1 AND a.code = '2' AND b.yr = 2001 AND b.qtr = 1 AND b.code = '2'")


def _joins(db, sql: str) -> list[Join]:
    plan = db.plan(sql, epsilon=1.0, delta=1e-6)
    return [n for n in walk(plan.root) if isinstance(n, Join) and n.how == "inner"]


def _top_join(db, sql: str) -> Join:
    return _joins(db, sql)[-1]


def _check(db, sql: str) -> None:
    res = db.sql(sql, epsilon=1.0)
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table())


def test_group_keys_fixed_by_equality_filters_give_degree_one(db):
    j = _top_join(db, QUARTERS)
    assert (j.left_degree, j.right_degree) == (1, 1)
    assert "unique key (a.city)" in j.describe() and "unique key (b.city)" in j.describe()
    assert "left bound is a unique key (a.city)" in db.explain(QUARTERS, epsilon=1.0, delta=1e-6)
    # the stability uses the small bound: s_L·1 + s_R·1, not a product of sizes
    assert j.stability == j.left.stability + j.right.stability
    _check(db, QUARTERS)


@pytest.mark.parametrize("side", [
    "{t}.yr = 2000 AND {t}.qtr = 1",                   # code not fixed: unique on (city, code) only
    "{t}.yr = 2000 AND {t}.code = '2'",                # qtr not fixed
    "{t}.yr > 1999 AND {t}.qtr = 1 AND {t}.code = '2'",  # not an equality
    "({t}.yr = 2000 OR {t}.yr = 2001) AND {t}.qtr = 1 AND {t}.code = '2'",
    # CAST(code AS INTEGER) = 1 keeps '1', '01' and ' 1': three groups, so code is not fixed
    "{t}.yr = 2000 AND {t}.qtr = 1 AND CAST({t}.code AS INTEGER) = 1",
])
def test_keys_not_fixed_do_not_get_degree_one(db, side):
    where = side.format(t="a") + " AND " + side.format(t="b")
    sql = G + f"SELECT a.city, a.code, a.s, b.s FROM g a JOIN g b ON a.city = b.city WHERE {where}"
    j = _top_join(db, sql)
    assert j.left_degree != 1 and j.right_degree != 1
    assert "unique key" not in j.describe()
    _check(db, sql)


@pytest.mark.parametrize("ctype, literal, fixes", [
    ("INTEGER", "1", True), ("DECIMAL(12,2)", "1.5", True), ("VARCHAR", "'x'", True),
    ("VARCHAR", "1", False),   # DuckDB casts the column: '1', '01', ' 1' all equal 1
    ("DATE", "'2000-01-01'", False), ("INTEGER", "'1'", False), ("INTEGER", "NULL", False),
    (None, "1", False),        # an untyped column fixes nothing
])
def test_only_a_literal_of_the_columns_type_family_fixes_it(ctype, literal, fixes):
    pred = sqlglot.parse_one(f"t.c = {literal}")
    col = pred.find(exp.Column)
    col.type = exp.DataType.build(ctype) if ctype else None
    assert (fixed_columns([pred]) == {("t", "c")}) is fixes
    assert fixed_columns([sqlglot.parse_one(f"{literal} = t.c")]) == set()  # untyped copy
    assert fixed_columns([sqlglot.parse_one("t.c > 1"), sqlglot.parse_one("t.c = 1 OR t.c = 2")]) == set()


def test_planted_unsound_group_by_two_keys_joined_on_one(db):
    sql = ("WITH g AS (SELECT city, yr, sum(amt) AS s FROM sales GROUP BY city, yr) "
           "SELECT a.city, a.yr, b.yr, a.s + b.s FROM g a JOIN g b ON a.city = b.city")
    j = _top_join(db, sql)
    assert j.left_degree > 1 and j.right_degree > 1
    assert db.oracle.sql("SELECT max(c) FROM (SELECT count(DISTINCT yr) + 1 c FROM sales GROUP BY city)").fetchall()[0][0] > 1
    _check(db, sql)


def test_planted_unsound_fixing_rule_gives_a_wrong_answer_that_the_oracle_catches(db, monkeypatch):
    """Guards the guard: a rule that took an inequality as fixing its column would claim
    degree 1 on city for rows grouped by (city, yr, qtr, code); the join then keeps one
    partner per key and drops real rows, and comparing with DuckDB fails."""
    from dodb.planner import build

    def every_compared_column(preds):
        return {(c.table, c.name) for p in preds for c in p.find_all(exp.Column)}

    sql = G + ("SELECT a.city, a.s, b.s FROM g a JOIN g b ON a.city = b.city "
               "WHERE a.yr > 0 AND a.qtr > 0 AND a.code > '' AND b.yr > 0 AND b.qtr > 0 AND b.code > ''")
    monkeypatch.setattr(build, "fixed_columns", every_compared_column)
    assert _top_join(db, sql).left_degree == 1
    with pytest.raises(AssertionError, match="row counts differ"):
        _check(db, sql)
    monkeypatch.undo()
    assert _top_join(db, sql).left_degree != 1
    _check(db, sql)


def test_all_group_keys_fixed_is_at_most_one_row(db):
    sql = ("WITH g AS (SELECT yr, qtr, sum(amt) AS s FROM sales GROUP BY yr, qtr) "
           "SELECT a.s, x.amt FROM g a JOIN sales x ON a.yr = x.yr WHERE a.yr = 2001 AND a.qtr = 2")
    j = _top_join(db, sql)
    assert j.left_degree == 1 and "unique key (at most one row)" in j.describe()
    _check(db, sql)


def test_row_number_is_unique_with_its_partition(db):
    sql = ("WITH w AS (SELECT city, yr, sum(amt) AS s, row_number() OVER (PARTITION BY city ORDER BY sum(amt)) AS rn "
           "FROM sales GROUP BY city, yr) "
           "SELECT a.city, a.rn, a.s, b.s FROM w a JOIN w b ON a.city = b.city AND a.rn = b.rn")
    j = _top_join(db, sql)
    assert (j.left_degree, j.right_degree) == (1, 1)
    _check(db, sql)


def test_rank_is_unique_with_its_partition_only_without_ties(db):
    no_ties = ("WITH w AS (SELECT city, yr, sum(amt) AS s, rank() OVER (PARTITION BY city ORDER BY yr) AS rk "
               "FROM sales GROUP BY city, yr) "
               "SELECT a.city, a.rk, a.s, b.s FROM w a JOIN w b ON a.city = b.city AND a.rk = b.rk")
    assert (_top_join(db, no_ties).left_degree, _top_join(db, no_ties).right_degree) == (1, 1)
    _check(db, no_ties)
    # ORDER BY a value with ties: two rows of a partition can share a rank
    ties = no_ties.replace("ORDER BY yr) AS rk", "ORDER BY count(*) % 2) AS rk")
    j = _top_join(db, ties)
    assert j.left_degree != 1 and j.right_degree != 1
    _check(db, ties)


def test_degree_bounds_never_exceed_the_padded_size(db):
    for sql in (QUARTERS, G + "SELECT a.city, b.yr FROM g a JOIN g b ON a.city = b.city JOIN g c ON b.yr = c.yr"):
        for j in _joins(db, sql):
            assert j.left_degree is None or j.left_degree <= max(1, upper_rows(j.left))
            assert j.right_degree is None or j.right_degree <= max(1, upper_rows(j.right))


@settings(max_examples=25)
@given(fixed=st.sets(st.sampled_from(["yr", "qtr", "code"])), join_on=st.sampled_from(["city", "yr", "code"]),
       yr=st.sampled_from([2000, 2002, 2009]), qtr=st.integers(1, 4), code=st.sampled_from(["1", "01", "2", "x"]))
def test_random_filtered_group_joins_equal_duckdb(db, fixed, join_on, yr, qtr, code):
    values = {"yr": str(yr), "qtr": str(qtr), "code": f"'{code}'"}
    where = " AND ".join(f"{t}.{c} = {values[c]}" for t in ("a", "b") for c in sorted(fixed)) or "TRUE"
    sql = G + f"SELECT a.{join_on}, a.s, b.n FROM g a JOIN g b ON a.{join_on} = b.{join_on} WHERE {where}"
    j = _top_join(db, sql)
    free = {"city", "yr", "qtr", "code"} - set(fixed)
    if free - {join_on}:  # a group key neither fixed nor joined on: no unique key covers the join
        assert "unique key" not in j.describe()
    else:
        assert (j.left_degree, j.right_degree) == (1, 1)
    _check(db, sql)


def _chain(k: int) -> str:
    return "SELECT count(*) FROM sales s0 " + " ".join(f"JOIN sales s{i} ON s{i - 1}.city = s{i}.city"
                                                       for i in range(1, k))


def test_join_chains_without_bounds_are_refused_before_admission(db):
    """Self-joins on a column with no degree bound multiply size bounds: refused by the memory
    guard (not by an oblivious dry run padding to the worst case first), or — when even the
    noise cannot be calibrated — by one line naming the join; nothing is charged either way."""
    from dodb.errors import MemoryLimitError, PlanningError

    spent = db.budget["spent"]
    with pytest.raises(MemoryLimitError, match="nothing was charged"):
        db.sql(_chain(5), epsilon=1e-3, delta=1e-9)
    with pytest.raises(PlanningError) as info:
        db.sql(_chain(7), epsilon=1e-3, delta=1e-9)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("Join INNER ON s5.city = s6.city")
    assert "cannot calibrate noise" in msg and "max_degree" in msg
    assert db.budget["spent"] == spent
