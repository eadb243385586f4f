"""TIME → VARCHAR, TIME ± a constant INTERVAL, and DATE/TIMESTAMP/TIME ± an interval built per
row (to_hours, to_minutes, to_microseconds, to_days, to_weeks; dodb/operators/expressions/
intervals.py) against DuckDB: values, NULLs and the kind of error, over extreme arguments,
±infinity, the ends of the TIMESTAMP range and garbage dummy slots."""
from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.operators import expressions as E
from dodb.operators.table import from_arrow

from .util import ERROR_KINDS, duckdb_row_results

I64, I32 = (-(1 << 63), (1 << 63) - 1), (-(1 << 31), (1 << 31) - 1)
_BIG = st.sampled_from([I64[0], I64[1], I64[0] + 1, 2562047788, -2562047788, 2562047789, 153722867280, -153722867281,
                        I32[0], I32[1], 306783378, -306783379, 106751991, -106751992, 0, 1, -1])
_INTS = st.integers(-100, 100) | st.integers(-10 ** 6, 10 ** 6) | _BIG
_TS = st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)) | \
    st.sampled_from(["infinity", "-infinity", "294247-01-10 04:00:54.775806", "290309-12-22 (BC) 00:00:00"])
_DATES = st.dates() | st.sampled_from(["infinity", "-infinity", "5881580-07-10", "5877642-06-25 (BC)"])
_TIMES = st.times() | st.sampled_from(["24:00:00", "00:00:00", "23:59:59.999999"])
EXPRS = ["CAST(tm AS VARCHAR)", "tm + INTERVAL 2 HOUR", "tm - INTERVAL 25 HOUR", "tm + INTERVAL '3 days 1 minute'",
         "INTERVAL 90 MINUTE + tm", "tm + to_hours(i)", "tm - to_minutes(i)", "tm + to_microseconds(i)",
         "tm - to_microseconds(i)", "tm + to_days(j)", "ts + to_hours(i)", "ts - to_hours(i)", "to_minutes(i) + ts",
         "ts - to_microseconds(i)", "ts + to_microseconds(i)", "ts + to_days(j)", "ts - to_days(j)",
         "ts + to_weeks(j)", "dt + to_minutes(i)", "dt - to_days(j)", "dt + (to_hours(i))"]


def _table(rows: list) -> pa.Table:
    """The rows as DuckDB reads them (times, timestamps and dates given as text, so that
    ±infinity and years beyond Python's are values too)."""
    def text(k):
        return [None if r[k] is None else str(r[k]) for r in rows]
    j = [None if r[4] is None else max(I32[0], min(I32[1], r[4])) for r in rows]
    return duckdb.connect().execute(
        "SELECT unnest(?::TIME[]) tm, unnest(?::TIMESTAMP[]) ts, unnest(?::DATE[]) dt, unnest(?::BIGINT[]) i, "
        "unnest(?::INTEGER[]) j", [text(0), text(1), text(2), [r[3] for r in rows], j]).to_arrow_table()


def _check(rows: list, dummies: int, exprs: list[str]) -> None:
    t = _table(rows)
    garbage = _table([("23:59:59", "294247-01-10 04:00:54.775806", "5881580-07-10", I64[0], I32[0])] * dummies)
    both = pa.concat_tables([garbage, t])
    is_real = np.array([False] * dummies + [True] * len(rows))
    pt = from_arrow(both, stability=1, is_real=is_real)
    con = duckdb.connect()
    con.register("t", t)
    for expr in exprs:
        cols, codes = E.evaluate(pt, {"r": f"({expr})::VARCHAR"})
        assert not codes[~is_real].any()
        got = cols["r"].to_arrow(is_real).to_pylist()
        for (want, raised), g, code, row in zip(duckdb_row_results(con, expr, len(rows)), got, codes[is_real], rows):
            if raised:
                assert code and E.message_for(int(code)).startswith(ERROR_KINDS[raised]), (expr, row, raised)
            else:
                assert code == 0 and g == want, (expr, row, g, want, code and E.message_for(int(code)))


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.tuples(_TIMES | st.none(), _TS | st.none(), _DATES | st.none(), _INTS | st.none(),
                               _INTS | st.none()), min_size=1, max_size=5),
       dummies=st.integers(0, 2), exprs=st.lists(st.sampled_from(EXPRS), min_size=3, max_size=3, unique=True))
def test_time_text_and_interval_rows_match_duckdb(rows, dummies, exprs):
    _check(rows, dummies, exprs)


@pytest.mark.parametrize("expr", EXPRS)
def test_interval_rows_at_the_edges(expr):
    rows = [("24:00:00", "294247-01-10 04:00:54.775806", "5881580-07-10", 2562047788, I32[1]),
            ("00:00:00", "290309-12-22 (BC) 00:00:00", "5877642-06-25 (BC)", I64[0], I32[0]),
            ("12:34:56.000001", "infinity", "-infinity", -2562047789, -306783379),
            ("23:59:59.999999", "2020-02-29 12:00:00", "2020-02-29", 153722867280, 106751991),
            (None, None, None, None, None), ("01:00:00", "1970-01-01", "1970-01-01", -1, -1)]
    _check(rows, 2, [expr])
