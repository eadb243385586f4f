"""Expressions over private rows in whole queries (docs/design.md §Expressions).

* nothing private is handed to DuckDB: every DuckDB call of a private query is a scan or
  a plan-time ``LIMIT 0`` bind, never ``register __dodb_batch``;
* what the evaluator cannot do is refused at planning, naming it, with nothing charged;
* a real row that fails raises :class:`~dodb.wire.QueryRuntimeError` on the analyst's
  side after the query (as DuckDB raises); a dummy or a NULL never does.
"""
from __future__ import annotations

import duckdb
import pytest

import dodb
from dodb import duckcalls
from dodb.compare import snapshot
from dodb.errors import DodbError, UnsupportedQueryError
from dodb.wire import QueryRuntimeError

from ..operators.util import assert_same_rows


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name VARCHAR, age INTEGER, born DATE, "
                "balance DECIMAL(12,2), big BIGINT)")
    con.execute("INSERT INTO people SELECT range, CASE WHEN range % 7 = 0 THEN NULL ELSE 'p' || range || "
                "CASE WHEN range % 3 = 0 THEN 'é' ELSE '' END END, CASE WHEN range % 5 = 0 THEN NULL ELSE "
                "range % 90 END, DATE '1950-01-01' + ((range * 137) % 20000)::INTEGER, (range * 37.25) % 1000 - 300, "
                "CASE WHEN range = 3 THEN 9223372036854775807 ELSE range END FROM range(40)")
    con.execute("CREATE TABLE towns (id INTEGER, town VARCHAR)")
    con.execute("INSERT INTO towns SELECT range, 't' || (range % 4) FROM range(40)")
    d = dodb.attach(con, seed=5, allow_insecure=True)
    d.oracle = snapshot(con)  # DuckDB on the raw rows, taken before they are protected
    d.set_budget(epsilon=1e6, delta=0.5)
    d.protect("people", "id", max_contributions=1, keys=[["id"]], widths={"name": 16})
    d.protect("towns", "id", parent=("people", "id"), max_contributions=1, widths={"town": 4})
    yield d
    d.close()


QUERIES = [
    "SELECT id, upper(name) || '-' || CAST(age AS VARCHAR) AS tag FROM people WHERE name LIKE 'p1%'",
    "SELECT CASE WHEN age IS NULL THEN 'n/a' WHEN age < 30 THEN 'young' ELSE 'old' END AS k, count(*) "
    "FROM people GROUP BY 1",
    "SELECT id, COALESCE(name, 'nobody') AS n, NULLIF(age, 0) AS a FROM people WHERE id BETWEEN 3 AND 17",
    "SELECT extract(year FROM born) AS y, sum(balance * 2 - 1) AS s FROM people WHERE born < DATE '1990-01-01' "
    "GROUP BY 1",
    "SELECT id, date_trunc('month', born) AS m, born + INTERVAL 1 MONTH AS later FROM people WHERE age IN (1, 2, 3)",
    "SELECT p.id, t.town FROM people p JOIN towns t ON p.id = t.id WHERE t.town <> 't1' AND length(p.name) > 2",
    "SELECT id, substring(name, 2, 2) AS s, trim(name, 'p') AS t FROM people WHERE NOT (age > 40 OR age IS NULL)",
    "SELECT sum(CAST(big AS HUGEINT) * 3) AS h FROM people",
    "SELECT id, big + 1 AS b FROM people WHERE big < 100",
    # ROUND as DuckDB: a DECIMAL to tens and hundreds; a DOUBLE's exact binary value (41.15 is
    # 41.149999…, so 41.1), not x·10^k rounded
    "SELECT id, round(balance, -1) AS r1, round(balance, -2) AS r2, round(balance / 3, 1) AS r3 FROM people",
    "SELECT id, round(CAST(id AS DOUBLE) * 0.15 + 40, 1) AS r1, round(id * 1.005::DOUBLE, 2) AS r2 FROM people",
    "SELECT id, strftime(born, NULL) AS s FROM people WHERE id < 5",
    # no algebra that holds only in exact arithmetic: 0.1 + 0.2 <> 0.3 in DOUBLE
    "SELECT id FROM people WHERE CAST(id AS DOUBLE) * 0.1 + 0.2 = 0.3 OR CAST(id AS DOUBLE) * 0.1 - 0.1 = 0.2",
    # a month after (DATE + k), not k days after (DATE + a month)
    "SELECT id, (DATE '2020-01-30' + age) + INTERVAL 1 MONTH AS m FROM people WHERE age < 5",
    # a CASE that simplifies away keeps its type: DuckDB cannot bind an untyped NULL + INTERVAL
    "SELECT id, CASE WHEN 0 BETWEEN 3 AND 1 THEN born END + INTERVAL 1 DAY AS later FROM people WHERE id < 5",
    "SELECT id, (CASE WHEN 1 > 2 THEN DATE '1992-01-25' END + INTERVAL 2 DAY) - INTERVAL 1 DAY AS d FROM people "
    "WHERE id < 3",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_answers_equal_duckdb_and_no_private_batch_reaches_duckdb(db, sql):
    with duckcalls.recording() as log:
        res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table())
    handed = [c for c in log if c[0] == "register"]
    assert not handed, f"private rows handed to DuckDB: {handed[:2]}"


@pytest.mark.parametrize("sql,construct", [
    ("SELECT regexp_replace(name, 'p[0-9]+', 'x', 'i') FROM people", "REGEXP"),
    ("SELECT id FROM people WHERE name ILIKE CAST(age AS VARCHAR)", "LIKE"),
    ("SELECT CAST(balance AS FLOAT) FROM people", "FLOAT"),
    ("SELECT CAST(name AS TIME) FROM people", "CAST from VARCHAR to TIME"),
    ("SELECT count(*) FROM people WHERE CAST(CAST(age AS DOUBLE) AS VARCHAR) = '1.0'", "DOUBLE to VARCHAR"),
])
def test_refused_at_planning_naming_the_construct_charging_nothing(db, sql, construct):
    before = db.budget["spent"]
    with pytest.raises(UnsupportedQueryError) as e:
        db.plan(sql, epsilon=1.0)
    assert construct.lower() in str(e.value).lower()
    with pytest.raises(UnsupportedQueryError):
        db.sql(sql, epsilon=1.0)
    assert db.budget["spent"] == before


def test_plain_mode_keeps_duckdb(db):
    res = db.sql("SELECT regexp_matches(name, 'p1.*') AS r FROM people WHERE id < 3", epsilon=1.0, mode="plain")
    assert res.arrow().num_rows == 3


def test_a_real_row_that_fails_raises_after_the_query(db):
    sql = "SELECT id, big + 1 AS b FROM people"  # id 3 holds the largest BIGINT
    with pytest.raises(duckdb.Error, match="Overflow"):
        db.oracle.sql(sql).fetchall()
    spent = db.budget["spent"]
    with pytest.raises(QueryRuntimeError, match="Overflow in addition of INT64") as e:
        db.sql(sql, epsilon=1.0, delta=1e-6)
    assert isinstance(e.value, DodbError)
    assert db.budget["spent"] >= spent  # admitted (and charged, if it released anything) before it ran
    sql = "SELECT age // (id - 11) FROM people WHERE age IS NOT NULL"  # age of id 11 is not NULL
    with pytest.raises(duckdb.Error, match="Division by zero"):
        db.oracle.sql(sql).fetchall()
    with pytest.raises(QueryRuntimeError, match="Division by zero"):
        db.sql(sql, epsilon=1.0, delta=1e-6)


def test_filtered_rows_dummies_and_nulls_never_fail(db):
    """Rows removed by WHERE become dummies: DuckDB does not evaluate them, nor does dodb fail."""
    for sql in ["SELECT id, big + 1 AS b FROM people WHERE big < 100",
                "SELECT age // (id - 10) AS q FROM people WHERE id <> 10",
                "SELECT CASE WHEN id = 10 THEN 0 ELSE age // (id - 10) END AS q FROM people",
                "SELECT 100 // age AS q FROM people WHERE age IS NULL OR age > 0"]:
        res = db.sql(sql, epsilon=1.0, delta=1e-6)
        assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table())


def test_the_answer_names_its_possible_errors_for_the_client(db):
    """The padded answer carries the message of every code the plan's expressions can set,
    whether or not a row failed (public, fixed by the plan): a client in another process,
    whose registry of codes is empty, names the error (served mode)."""
    import json

    from dodb.wire import decode

    failing = db.plan("SELECT id, big + 1 AS b FROM people", epsilon=1.0, delta=1e-6).execute()
    fine = db.plan("SELECT id, big + 1 AS b FROM people WHERE big < 100", epsilon=1.0, delta=1e-6).execute()
    for padded in (failing, fine):
        errors = json.loads(padded.table.schema.metadata[b"dodb"])["errors"]
        assert any("Overflow in addition of INT64" in m for m in errors.values()), errors
    assert int(fine.status[0]) == 0
    with pytest.raises(QueryRuntimeError, match="Overflow in addition of INT64"):
        decode(failing)  # no message lookup of the engine's process
