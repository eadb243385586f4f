"""Join keys compare -0.0 equal to 0.0 and NaN equal to NaN (DuckDB's equality), also when the
planner counts a public side's exact rows per key to choose a lookup join: Arrow's grouping
kept -0.0 and 0.0 apart, so a public side holding both was taken as unique and the lookup
failed at run time (``operators/join.py max_key_multiplicity``)."""
from __future__ import annotations

import math

import duckdb
import pyarrow as pa
import pytest

import dodb
from dodb.operators.join import max_key_multiplicity

from ..operators.util import assert_same_rows

QUERIES = [
    "SELECT id FROM p WHERE score IN (SELECT w FROM k)",
    "SELECT id FROM p WHERE score NOT IN (SELECT w FROM k)",
    "SELECT id FROM p WHERE score = ANY (SELECT w FROM k)",
    "SELECT p.id, k.w FROM p JOIN k ON p.score = k.w",
    "SELECT p.id, count(k.w) FROM p LEFT JOIN k ON p.score = k.w GROUP BY p.id",
    # one public key equated with two private columns: its rows per key counted once per name
    "SELECT p.id, k.w FROM p JOIN k ON k.w = p.score AND k.w = p.score2 WHERE k.w >= 0",
]


@pytest.fixture(scope="module")
def dbs():
    def make(con):
        con.execute("CREATE TABLE p (id INTEGER, score DOUBLE, score2 DOUBLE)")
        con.execute("INSERT INTO p VALUES (1, 0.0, 0.0), (2, 1.0, 2.0), (3, 'nan', 'nan'), (4, NULL, NULL), "
                    "(5, -0.0, 0.0), (6, 2.0, 2.0)")
        con.execute("CREATE TABLE k (w DOUBLE)")
        con.execute("INSERT INTO k VALUES (0.0), (-0.0), (1.0), ('nan'), ('nan')")
    raw, con = duckdb.connect(), duckdb.connect()
    make(raw)
    make(con)
    db = dodb.attach(con, seed=2, allow_insecure=True)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("p", "id", max_contributions=1)
    yield raw, db
    db.close()


@pytest.mark.parametrize("sql", QUERIES)
def test_answers_equal_duckdb(dbs, sql):
    raw, db = dbs
    assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), raw.sql(sql).to_arrow_table())


def test_rows_per_key_count_signed_zeros_and_nans_together():
    t = pa.table({"w": [0.0, -0.0, 1.0, math.nan, math.nan], "v": [1, 1, 1, 2, 2]})
    assert max_key_multiplicity(t, ["w"]) == 2
    assert max_key_multiplicity(t, ["w", "v"]) == 2
    assert max_key_multiplicity(t.slice(0, 0), ["w"]) == 0
