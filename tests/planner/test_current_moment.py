"""``current_date``/``today()``/``current_timestamp`` (dodb/operators/expressions/now.py): the
value DuckDB gives in the same moment and zone, one value for the whole query, and a cached
plan or binding never reused for another moment (docs/design.md §Expressions)."""
from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import sqlglot

import dodb
from dodb.compare import snapshot
from dodb.operators import expressions as E
from dodb.operators.expressions import now as now_mod
from dodb.operators.table import from_arrow
from dodb.planner import plan as plan_mod

DAY0 = dt.date(1970, 1, 1)


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    con.execute("CREATE TABLE ev (id INTEGER, d DATE, ts TIMESTAMP)")
    con.execute("INSERT INTO ev SELECT range, current_date + CAST(range - 10 AS INTEGER), "
                "current_date::TIMESTAMP + to_hours(range - 10) FROM range(20)")
    con.execute("INSERT INTO ev VALUES (20, 'infinity', '-infinity'), (21, NULL, NULL)")
    d = dodb.attach(con, seed=3, allow_insecure=True)
    d.oracle = snapshot(con)
    d.set_budget(epsilon=1e6, delta=0.5)
    d.protect("ev", "id", max_contributions=1, keys=[["id"]])
    yield d
    d.close()


QUERIES = ["SELECT id, d < current_date AS a, current_date - d AS n, today() AS t FROM ev ORDER BY id",
           "SELECT count(*) FROM ev WHERE d >= current_date - 3 AND ts < current_timestamp",
           "SELECT id, date_diff('day', d, current_date) AS n, current_timestamp - INTERVAL 1 DAY < ts AS y "
           "FROM ev ORDER BY id"]


@pytest.mark.parametrize("sql", QUERIES)
def test_the_current_moment_matches_duckdb(db, sql):
    got = db.sql(sql, epsilon=1.0).fetchall()
    assert got == db.oracle.execute(sql).fetchall()  # the same day (the test does not run at midnight UTC)


def test_one_reading_per_query_and_keyed_by_it(db, monkeypatch):
    calls = []
    today = (db.oracle.execute("SELECT current_date").fetchone()[0] - DAY0).days

    def fake(zone):
        calls.append(zone)
        return now_mod.Now(days=today + 3 * len(calls), micros=0)

    monkeypatch.setattr(plan_mod, "read_now", fake)
    sql = "SELECT count(*) FROM ev WHERE d < current_date AND current_date > DATE '2000-01-01'"
    for k in (1, 2):  # the next query is another day: read again, never the cached plan of the first
        got = db.sql(sql, epsilon=1.0).fetchall()
        assert len(calls) == k
        day = (DAY0 + dt.timedelta(days=today + 3 * k)).isoformat()
        assert got == db.oracle.execute(sql.replace("current_date", f"DATE '{day}'")).fetchall()
    assert db.sql("SELECT count(*) FROM ev", epsilon=1.0) and len(calls) == 2  # not read without the words


def test_the_evaluator_pins_the_moment_in_the_zone():
    t = pa.table({"d": pa.array([0, 2 ** 31 - 1, None, 20_000], pa.int32()).cast(pa.date32())})
    pt = from_arrow(t, stability=1, is_real=np.array([True, True, True, False]))
    cols, codes = E.evaluate(pt, {"a": "d < current_date", "c": "current_date"})
    today = duckdb.connect().execute("SELECT current_date").fetchone()[0]
    assert cols["a"].to_arrow(pt.is_real).to_pylist() == [True, False, None]
    assert cols["c"].to_arrow(pt.is_real).to_pylist() == [today] * 3
    for zone in ("Pacific/Kiritimati", "Pacific/Pago_Pago"):  # UTC+14 and UTC−11: a day apart most hours
        con = duckdb.connect()
        con.execute("SET TimeZone = ?", [zone])
        want = (con.execute("SELECT current_date").fetchone()[0] - DAY0).days
        assert now_mod.read_now(zone).days == want


def test_one_argument_age_counts_from_midnight_utc(db):
    sql = "SELECT id, age(ts) AS a, age(d) AS b FROM ev ORDER BY id"
    got = db.sql(sql, epsilon=1.0).arrow()
    want = db.oracle.sql(sql).to_arrow_table()
    assert got.to_pylist() == want.to_pylist()  # the interval words, not timedeltas
    # in a zone already in tomorrow, current_date is tomorrow but age(x) still counts from UTC's today
    tree = now_mod.pin(sqlglot.parse_one("SELECT age(x), current_date", read="duckdb"),
                       now_mod.Now(days=20001, micros=20000 * 86_400_000_000 + 5))
    assert tree.sql("duckdb") == "SELECT AGE(CAST('2024-10-04' AS TIMESTAMP), x), CAST('2024-10-05' AS DATE)"
