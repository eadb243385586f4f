"""±infinity DATE and TIMESTAMP values print as DuckDB prints them (issue 28 finding 4:
'infinity'::DATE::VARCHAR answered '5881580-07-11')."""
from __future__ import annotations

import duckdb
import pytest

import dodb

from .util import assert_same_rows

QUERIES = [
    "SELECT id, CAST(d AS VARCHAR) AS a, CAST(ts AS VARCHAR) AS b FROM t",
    "SELECT id, d::VARCHAR || '!' AS c, 'at ' || ts AS e FROM t",
    "SELECT CAST(d AS VARCHAR) AS a, count(*) AS n FROM t GROUP BY 1",
]


@pytest.fixture(scope="module")
def twins():
    rows = ("(1, 'infinity', 'infinity'), (2, '-infinity', '-infinity'), (3, '2020-01-02', '2020-01-02 03:04:05.5'),"
            " (4, NULL, NULL), (5, '0044-03-15 (BC)', '1999-12-31'), (6, '5881580-07-10', '294247-01-09 04:00:54'),"
            " (7, '-infinity', '2000-02-29 23:59:59.999999')")
    raw, con = duckdb.connect(), duckdb.connect()
    for c in (raw, con):
        c.execute("CREATE TABLE t (id INTEGER, d DATE, ts TIMESTAMP)")
        c.execute(f"INSERT INTO t VALUES {rows}")
    db = dodb.attach(con, seed=2)
    db.set_budget(epsilon=100.0, delta=1e-3)
    db.protect("t", "id", max_contributions=1, capacity=12)
    return db, raw


@pytest.mark.parametrize("sql", QUERIES)
def test_infinite_dates_and_timestamps_print_like_duckdb(twins, sql):
    db, raw = twins
    assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), raw.sql(sql).to_arrow_table())
