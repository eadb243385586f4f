"""TIME values in expressions (docs/design.md §Expressions): comparisons, clock parts, epoch,
CASE/COALESCE, against DuckDB over a TIME column with its extremes (midnight, the last
microsecond, 24:00:00) and NULLs, hidden among dummy slots; and through the planner over a
protected table."""
from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import dodb
from dodb.operators import expressions as E
from dodb.operators.table import from_arrow

EXTREMES = [dt.time(0, 0), dt.time(23, 59, 59, 999999), dt.time(12, 34, 56, 789000), dt.time(0, 0, 0, 1)]
TIMES = st.sampled_from(EXTREMES) | st.times()
EXPRS = [
    "tm < TIME '12:00:00'", "tm = u", "tm >= u", "tm BETWEEN TIME '01:00:00' AND TIME '23:00:00'",
    "tm IN (TIME '00:00:00', TIME '12:34:56.789')", "hour(tm)", "minute(tm)", "second(tm)",
    "EXTRACT(millisecond FROM tm)", "EXTRACT(microsecond FROM tm)", "date_part('hour', tm)", "epoch(tm)",
    "CASE WHEN tm > u THEN tm ELSE u END", "COALESCE(tm, u, TIME '00:00:00')", "greatest(tm, u)",
    "tm IS DISTINCT FROM u", "NULLIF(tm, u)",
]


def _answers(values: list, others: list, dummies: int, sql: str) -> list:
    n = len(values) + dummies
    junk = [dt.time(23, 59, 59, 999999)] * dummies
    t = pa.table({"tm": pa.array(junk + values, pa.time64("us")), "u": pa.array(junk + others, pa.time64("us"))})
    is_real = np.array([False] * dummies + [True] * len(values), dtype=bool)
    pt = from_arrow(t, stability=1, widths={}, is_real=is_real)
    cols, codes = E.evaluate(pt, {"r": sql})
    assert not codes.any()
    col = cols["r"]
    got = duckdb.connect()
    got.register("x", pa.table({"r": col.to_arrow(is_real)}))
    assert n == pt.padded_size
    return [r[0] for r in got.sql("SELECT r FROM x").fetchall()]


@pytest.mark.parametrize("sql", EXPRS)
@settings(max_examples=6, deadline=None)
@given(rows=st.lists(st.tuples(TIMES | st.none(), TIMES | st.none()), max_size=8), dummies=st.integers(0, 3))
def test_time_expressions_match_duckdb(sql, rows, dummies):
    values, others = [r[0] for r in rows], [r[1] for r in rows]
    con = duckdb.connect()
    con.register("t", pa.table({"tm": pa.array(values, pa.time64("us")), "u": pa.array(others, pa.time64("us"))}))
    want = [r[0] for r in con.sql(f"SELECT {sql} FROM t").fetchall()]
    assert _answers(values, others, dummies, sql) == want, sql


def test_midnight_at_the_end_of_the_day():
    """DuckDB's TIME holds 24:00:00 (after 23:59:59.999999); Arrow's time64 does too."""
    con = duckdb.connect()
    t = con.sql("SELECT TIME '24:00:00' AS tm, TIME '23:59:59.999999' AS u").to_arrow_table()
    for sql in ["hour(tm)", "tm > u", "epoch(tm)", "microsecond(tm)"]:
        pt = from_arrow(t, stability=1, widths={}, is_real=np.ones(1, bool))
        cols, _ = E.evaluate(pt, {"r": sql})
        want = con.sql(f"SELECT {sql} FROM (SELECT TIME '24:00:00' AS tm, TIME '23:59:59.999999' AS u)").fetchall()[0][0]
        got = cols["r"].to_arrow(np.ones(1, bool)).to_pylist()[0]
        assert got == want, (sql, got, want)


def test_time_columns_of_a_protected_table_answer_as_duckdb():
    db = dodb.connect(seed=5)
    db.con.execute("CREATE TABLE visits AS SELECT i AS pid, TIME '08:00:00' + INTERVAL (i * 37) MINUTE AS seen_at, "
                   "CASE WHEN i % 7 = 0 THEN NULL ELSE i % 5 END AS ward FROM range(60) r(i)")
    want = {q: db.con.sql(q).fetchall() for q in QUERIES}
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("visits", "pid", max_contributions=1)
    for q in QUERIES:
        assert db.sql(q, epsilon=1.0).fetchall() == want[q], q


QUERIES = [
    "SELECT count(*) FROM visits WHERE seen_at >= TIME '12:00:00' AND seen_at < TIME '18:30:00'",
    "SELECT hour(seen_at) AS h, count(*) FROM visits GROUP BY h ORDER BY h",
    "SELECT pid, seen_at FROM visits WHERE minute(seen_at) = 22 ORDER BY seen_at, pid",
    "SELECT ward, min(seen_at), max(seen_at) FROM visits GROUP BY ward ORDER BY ward NULLS LAST",
]


@pytest.mark.parametrize("sql", ["year(tm)", "tm - to_seconds(1.5)", "CAST(tm AS DATE)"])
def test_what_is_not_built_is_refused(sql):
    pt = from_arrow(pa.table({"tm": pa.array([dt.time(1, 2)], pa.time64("us"))}), stability=1, widths={},
                    is_real=np.ones(1, bool))
    from dodb.errors import UnsupportedQueryError
    with pytest.raises(UnsupportedQueryError):
        E.evaluate(pt, {"r": sql})
