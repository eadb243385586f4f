"""Grouping sets, ROLLUP, CUBE, GROUPING(), GROUP BY ALL, aggregate FILTER clauses, HAVING and
the statistical aggregates in whole queries (docs/design.md §Grouping, §Aggregates): answers
equal DuckDB's; what dodb refuses is refused at planning, naming it, with nothing charged."""
from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings, strategies as st

import dodb
from dodb.compare import snapshot
from dodb.errors import DodbError, UnsupportedQueryError

from ..operators.util import assert_same_rows


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name VARCHAR, age INTEGER, grp INTEGER, x DOUBLE, "
                "bal DECIMAL(12,2))")
    con.execute("INSERT INTO people SELECT range, CASE WHEN range % 7 = 0 THEN NULL ELSE 'p' || range END, "
                "CASE WHEN range % 5 = 0 THEN NULL ELSE range % 13 END, range % 4, range * 1.5 - 7, "
                "(range * 37.25) % 1000 FROM range(40)")
    con.execute("CREATE TABLE towns (id INTEGER, town VARCHAR)")
    con.execute("INSERT INTO towns SELECT range, CASE WHEN range % 6 = 0 THEN NULL ELSE 't' || (range % 3) END "
                "FROM range(40)")
    d = dodb.attach(con, seed=5, allow_insecure=True)
    d.oracle = snapshot(con)
    d.set_budget(epsilon=1e6, delta=0.5)
    d.protect("people", "id", max_contributions=1, keys=[["id"]], widths={"name": 8})
    d.protect("towns", "id", parent=("people", "id"), max_contributions=1, widths={"town": 4})
    yield d
    d.close()


QUERIES = [
    # grouping sets
    "SELECT grp, age, count(*) FROM people GROUP BY ROLLUP (grp, age)",
    "SELECT grp, age, count(*), grouping(grp), grouping(grp, age) AS gg FROM people GROUP BY CUBE (grp, age)",
    "SELECT grp, age, count(*), sum(x) FROM people GROUP BY GROUPING SETS ((grp), (age), ())",
    "SELECT grp, age, count(*) FROM people GROUP BY grp, ROLLUP (age)",
    "SELECT grp + 1 AS g, count(*) FROM people GROUP BY ROLLUP (g)",
    "SELECT t.town, p.grp, count(*) AS c, avg(p.age) FROM people p JOIN towns t ON p.id = t.id "
    "GROUP BY ROLLUP (t.town, p.grp) HAVING count(*) > 1",
    "SELECT grp, count(*) AS c FROM people GROUP BY ROLLUP (grp) HAVING count(*) > 9",
    "SELECT grp, age, count(*) FROM people WHERE id > 100 GROUP BY ROLLUP (grp, age)",
    "SELECT DISTINCT grp FROM people GROUP BY GROUPING SETS ((grp), (grp, age))",
    "SELECT grp, grouping(grp) FROM people GROUP BY grp",
    "SELECT g, c FROM (SELECT grp AS g, count(*) AS c FROM people GROUP BY CUBE (grp)) s WHERE c > 5",
    # GROUP BY ALL, FILTER, HAVING
    "SELECT grp, count(*) FROM people GROUP BY ALL",
    "SELECT grp % 2 AS g2, age IS NULL, count(*), 5 FROM people GROUP BY ALL",
    "SELECT 7, count(*) FROM people WHERE id < 0 GROUP BY ALL",
    "SELECT grp, count(*) FILTER (WHERE age > 3) FROM people GROUP BY grp",
    "SELECT grp, sum(age) FILTER (WHERE name LIKE 'p1%'), count(DISTINCT age) FILTER (WHERE grp > 1), "
    "min(name) FILTER (age IS NULL) FROM people GROUP BY grp",
    "SELECT count(*) FILTER (WHERE age > 3), avg(x) FILTER (WHERE x > 0) FROM people",
    "SELECT count(*) FILTER (WHERE age > 3) FROM people WHERE id < 0",
    "SELECT count(*) FROM people HAVING count(*) > 3",
    "SELECT count(*) FROM people HAVING count(*) > 300",
    "SELECT grp FROM people GROUP BY grp HAVING sum(age) > 50 AND grp > 0",
    "SELECT grp, max(x) AS m FROM people GROUP BY grp HAVING m > 40",
    # statistical aggregates
    "SELECT median(age) FROM people",
    "SELECT grp, median(age), median(x), median(bal), median(name) FROM people GROUP BY grp",
    "SELECT grp, quantile_cont(age, 0.3), quantile_disc(age, 0.3), quantile_disc(name, 0.9), quantile(x, 0.25), "
    "quantile_cont(bal, 0.71) FROM people GROUP BY grp",
    "SELECT grp, percentile_cont(0.4) WITHIN GROUP (ORDER BY x), percentile_disc(0.4) WITHIN GROUP (ORDER BY age) "
    "FROM people GROUP BY grp",
    "SELECT grp, arg_max(name, age * 100 + id), arg_min(id, x), max_by(x, id), min_by(bal, id) FROM people GROUP BY grp",
    "SELECT grp, count(DISTINCT age), count(DISTINCT name), sum(age), median(age) FROM people GROUP BY grp",
    "SELECT count(DISTINCT age), count(DISTINCT grp), avg(x), quantile_disc(age, 0.5) FROM people",
    "SELECT grp, stddev_samp(age), stddev_pop(x), var_samp(bal), var_pop(age), variance(x), stddev(age) "
    "FROM people GROUP BY grp",
    "SELECT grp, corr(age, x), covar_pop(age, bal), covar_samp(x, id) FROM people GROUP BY grp",
    "SELECT stddev_samp(age), var_pop(age), corr(x, x), corr(age, 1) FROM people WHERE id = 3",
    "SELECT median(age), stddev_pop(x), arg_max(name, id) FROM people WHERE id > 1000",
    "SELECT median(age) FILTER (WHERE grp = 1), arg_max(name, x) FILTER (WHERE age > 3), "
    "stddev_pop(x) FILTER (WHERE age IS NOT NULL) FROM people",
    "SELECT grp, age, median(x), stddev_samp(x) FROM people GROUP BY ROLLUP (grp, age)",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_answers_equal_duckdb(db, sql):
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table())


def test_order_by_and_limit_over_grouping_sets(db):
    sql = ("SELECT grp, age, count(*) AS c FROM people GROUP BY ROLLUP (grp, age) "
           "ORDER BY grp NULLS FIRST, age NULLS FIRST, c LIMIT 7")
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table(), ordered=True)


def test_order_by_expressions_over_grouping_sets(db):
    """ORDER BY an aggregate or a GROUPING() expression is evaluated per grouping set, as in DuckDB."""
    sql = ("SELECT grp, age, count(*) AS c FROM people GROUP BY ROLLUP (grp, age) "
           "ORDER BY sum(x), grouping(grp, age), grp NULLS FIRST, age NULLS FIRST")
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table(), ordered=True)


def test_names_and_types_are_duckdbs(db):
    sql = "SELECT grp, age, count(*), grouping(grp) FROM people GROUP BY CUBE (grp, age)"
    got = db.sql(sql, epsilon=1.0, delta=1e-6).arrow()
    want = db.oracle.sql(sql).to_arrow_table()
    assert got.column_names == want.column_names


def test_each_grouping_set_is_a_charged_release(db):
    plan = db.plan("SELECT grp, age, count(*) FROM people GROUP BY ROLLUP (grp, age)", epsilon=1.0)
    groups = [e for e in plan.events if "Aggregate" in e.operator]
    assert len(groups) == 2  # (grp, age) and (grp) release padded group counts; () is one row


@pytest.mark.parametrize("sql,construct", [
    ("SELECT grp, string_agg(DISTINCT name, ',') FROM people GROUP BY grp", "string_agg(DISTINCT"),
    ("SELECT grp, list(DISTINCT name) FROM people GROUP BY grp", "list/array_agg (DISTINCT"),
    ("SELECT grp, len(list(name)) FROM people GROUP BY grp", "list/array_agg inside an expression"),
    ("SELECT quantile_cont(age, [0.1, 0.5]) FROM people", "list"),
    ("SELECT quantile_disc(age, -0.5) FROM people", "between 0 and 1"),
    ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY age DESC) FROM people", "DESC"),
    ("SELECT median(DATE '2020-01-01' + id) FROM people", "quantile_cont"),
    ("SELECT grp, sum(DISTINCT age) FROM people GROUP BY grp", "DISTINCT"),
    ("SELECT grp, age, count(*) FROM people GROUP BY ROLLUP (grp, age) ORDER BY rank() OVER (ORDER BY grp)",
     "ORDER BY"),
    # a window over grouping sets sees every set at once in DuckDB: only a PARTITION BY that
    # separates the sets gives the per-set windows the union computes
    ("SELECT grp, count(*), sum(count(*)) OVER () FROM people GROUP BY ROLLUP (grp)", "PARTITION BY does not"),
    ("SELECT grp, age, count(*), rank() OVER (PARTITION BY grouping(grp) ORDER BY count(*)) FROM people "
     "GROUP BY CUBE (grp, age)", "PARTITION BY does not"),
    ("SELECT grp, count(*) FROM people GROUP BY ROLLUP (grp) QUALIFY row_number() OVER (ORDER BY grp) <= 2",
     "QUALIFY"),
])
def test_refused_at_planning_naming_the_construct_charging_nothing(db, sql, construct):
    before = db.budget["spent"]
    with pytest.raises(DodbError) as e:
        db.sql(sql, epsilon=1.0)
    assert construct.lower() in str(e.value).lower(), str(e.value)
    assert db.budget["spent"] == before


@pytest.mark.parametrize("sql", [
    "SELECT grp, count(*) AS n, rank() OVER (PARTITION BY grouping(grp) ORDER BY count(*) DESC, grp) AS r "
    "FROM people GROUP BY ROLLUP (grp)",
    "SELECT grp, age, count(*) AS n, sum(count(*)) OVER (PARTITION BY grouping(grp), grouping(age)) AS s "
    "FROM people GROUP BY CUBE (grp, age)",
    # TPC-DS Q36's shape: the grouping level plus a key that is NULL above it
    "SELECT grp, age, sum(bal) AS b, rank() OVER (PARTITION BY grouping(grp) + grouping(age), "
    "CASE WHEN grouping(age) = 0 THEN grp END ORDER BY sum(bal), grp, age) AS r FROM people GROUP BY ROLLUP (grp, age)",
    # ORDER BY an aggregate of the SELECT list reads its column (named as DuckDB names it)
    "SELECT grp, age, count(*), sum(age) FROM people GROUP BY ROLLUP (grp, age) ORDER BY count(*), sum(age), grp, age",
    # the rewrite the refusal names: group in a subquery, window outside
    "SELECT grp, n, sum(n) OVER () AS s, rank() OVER (ORDER BY n DESC, grp) AS r "
    "FROM (SELECT grp, count(*) AS n FROM people GROUP BY ROLLUP (grp)) g",
])
def test_windows_over_grouping_sets_equal_duckdb(db, sql):
    assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), db.oracle.sql(sql).to_arrow_table())


def test_unsupported_aggregate_message_names_the_call_once(db):
    with pytest.raises(UnsupportedQueryError) as e:
        db.sql("SELECT approx_count_distinct(age) FROM people", epsilon=1.0)
    msg = str(e.value)
    assert "APPROX" in msg.upper() and "aggregate APPROXDISTINCT" not in msg.upper()


@settings(max_examples=25)
@given(keys=st.lists(st.sampled_from(["grp", "age", "name", "grp % 2"]), min_size=1, max_size=3, unique=True),
       kind=st.sampled_from(["ROLLUP", "CUBE", "SETS"]),
       agg=st.sampled_from(["count(*)", "sum(age)", "min(name)", "count(DISTINCT age)",
                            "count(*) FILTER (WHERE x > 10)", "median(age)", "max(x) FILTER (age < 5)"]),
       where=st.sampled_from(["", "WHERE id % 3 = 0", "WHERE id > 100"]))
def test_random_grouping_sets_equal_duckdb(db, keys, kind, agg, where):
    if kind == "SETS":
        group = "GROUPING SETS (" + ", ".join(["(" + k + ")" for k in keys] + ["()"]) + ")"
    else:
        group = f"{kind} ({', '.join(keys)})"
    sql = f"SELECT {', '.join(keys)}, {agg}, grouping({keys[0]}) FROM people {where} GROUP BY {group}"
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table())
