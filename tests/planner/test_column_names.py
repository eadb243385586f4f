"""Unaliased result columns are named exactly as DuckDB names them (docs/design.md §Analyst API):
the names come from DuckDB's binding of the analyst's own SQL text, not from sqlglot's rendering
(which would say ``arg_min`` for ``min_by`` and ``variance`` for ``var_samp``)."""
from __future__ import annotations

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import dodb
from dodb.compare import snapshot


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name VARCHAR, age INTEGER, grp INTEGER, x DOUBLE, "
                "bal DECIMAL(12,2), born DATE)")
    con.execute("INSERT INTO people SELECT range, CASE WHEN range % 7 = 0 THEN NULL ELSE 'p' || range END, "
                "CASE WHEN range % 5 = 0 THEN NULL ELSE range % 13 END, range % 4, range * 1.5 - 7, "
                "(range * 37.25) % 1000, DATE '1990-01-01' + CAST(range * 40 AS INTEGER) FROM range(30)")
    con.execute("CREATE TABLE regions (grp INTEGER, region VARCHAR)")
    con.execute("INSERT INTO regions VALUES (0, 'north'), (1, 'south'), (2, NULL), (3, 'east')")
    d = dodb.attach(con, seed=3, allow_insecure=True)
    d.oracle = snapshot(con)
    d.set_budget(epsilon=1e6, delta=0.5)
    d.protect("people", "id", max_contributions=1, keys=[["id"]], widths={"name": 8})
    yield d
    d.close()


AGGREGATES = [
    "min_by(bal, id)", "max_by(x, id)", "arg_min(id, x)", "arg_max(name, age)", "var_samp(x)", "var_pop(x)",
    "variance(x)", "stddev(x)", "stddev_samp(x)", "stddev_pop(x)", "count(*)", "count(age)", "count()",
    "count(DISTINCT age)", "sum(age)", "avg(x)", "min(name)", "max(born)", "median(x)",
    "quantile_cont(age, 0.25)", "quantile_disc(x, 0.9)", "covar_samp(x, age)", "covar_pop(x, age)",
    "corr(x, age)", "sum(x) FILTER (WHERE age > 3)", "count(*) FILTER (age IS NULL)",
    "percentile_cont(0.5) WITHIN GROUP (ORDER BY x)",
]
EXPRESSIONS = [
    "id + 1", "x * 2.5", "age IS NULL", "coalesce(age, -1)", "CASE WHEN age > 3 THEN 'old' ELSE 'young' END",
    "upper(name)", "name || '!'", "CAST(age AS VARCHAR)", "age::DOUBLE", "born + 1", "year(born)",
    "age BETWEEN 2 AND 5", "name LIKE 'p1%'", "NOT (age > 3)", "-x", "abs(x)", "round(x, 1)", "id % 3",
    "greatest(age, grp)", "nullif(age, 0)", "ifnull(name, 'none')", "grp IN (1, 2)",
]
WINDOWS = [
    "row_number() OVER (ORDER BY id)", "rank() OVER (PARTITION BY grp ORDER BY age)",
    "dense_rank() OVER (ORDER BY x DESC)", "sum(x) OVER (PARTITION BY grp ORDER BY id)",
    "lag(age, 1, 0) OVER (ORDER BY id)", "first_value(name) OVER (PARTITION BY grp ORDER BY id)",
    "count(*) OVER ()", "avg(x) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
]

CASES = ([f"SELECT grp, {a} FROM people GROUP BY grp" for a in AGGREGATES]
         + [f"SELECT {e} FROM people" for e in EXPRESSIONS]
         + [f"SELECT id, {w} FROM people" for w in WINDOWS]
         + ["SELECT p.grp, r.region, count(*) FROM people p JOIN regions r ON p.grp = r.grp GROUP BY ALL",
            "SELECT * FROM (SELECT grp, count(*) FROM people GROUP BY grp) s",
            "WITH t AS (SELECT grp, sum(x) FROM people GROUP BY grp) SELECT * FROM t",
            "SELECT grp, age, count(*), grouping(grp) FROM people GROUP BY ROLLUP (grp, age)"])


@pytest.mark.parametrize("sql", CASES)
def test_unaliased_names_are_duckdbs(db, sql):
    want = [d[0] for d in db.oracle.sql(sql).description]
    assert db.plan(sql, epsilon=1.0).names == want


@pytest.mark.parametrize("sql", ["SELECT grp, min_by(bal, id), var_samp(x), count(*) FROM people GROUP BY grp",
                                 "SELECT id, row_number() OVER (ORDER BY x DESC) FROM people"])
def test_result_columns_carry_duckdbs_names(db, sql):
    got = db.sql(sql, epsilon=1.0, delta=1e-6).arrow()
    assert got.column_names == db.oracle.sql(sql).to_arrow_table().column_names


def test_parameters_are_named_as_duckdb_names_them(db):
    sql = "SELECT id + ? FROM people WHERE age > ?"
    want = [d[0] for d in db.oracle.execute(sql, [1, 3]).description]
    assert db.plan(sql, epsilon=1.0, params=[1, 3]).names == want


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(agg=st.sampled_from(["min_by", "max_by", "arg_min", "arg_max", "corr", "covar_samp"]),
       one=st.sampled_from(["var_samp", "variance", "stddev", "var_pop", "median", "sum", "count", "min"]),
       arg=st.sampled_from(["x", "age", "id + 1", "x * 2", "coalesce(age, 0)", "CAST(bal AS DOUBLE)"]),
       window=st.sampled_from(["", " OVER ()", " OVER (PARTITION BY grp)"]))
def test_random_unaliased_calls_are_named_as_duckdb_names_them(db, agg, one, arg, window):
    group = "" if window else " GROUP BY grp"
    first = "grp, " if not window else "id, "
    two = "" if window else f", {agg}({arg}, id)"  # the two-argument aggregates are not window functions here
    if window and one not in ("sum", "count", "min"):  # the window aggregates dodb computes
        one = "sum"
    sql = f"SELECT {first}{one}({arg}){window}{two} FROM people{group}"
    want = [d[0] for d in db.oracle.sql(sql).description]
    assert db.plan(sql, epsilon=1.0).names == want, sql


def test_the_text_is_only_parsed_never_bound_or_run():
    """DuckDB gets the analyst's text as a value to parse: a file the text names is not read
    (binding read_csv would open it), and a second statement is never run."""
    from dodb.planner.bind import duckdb_names

    assert duckdb_names("SELECT a, min_by(a, b) FROM read_csv('/no/such/dir/x.csv')") == ["a", "min_by(a, b)"]
    assert duckdb_names("SELECT 1; DROP TABLE people") is None
    assert duckdb_names("SELECT *, count(*) FROM people") is None  # a star needs binding: the bound names stay
    assert duckdb_names("SELECT x AS y, ? + 1 FROM t UNION ALL SELECT 1, 2") == ["y", "($1 + 1)"]
