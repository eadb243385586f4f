"""TIMESTAMP WITH TIME ZONE values (dodb/operators/expressions/zoned.py) against DuckDB in a UTC
session: comparisons (with TIMESTAMPTZ, TIMESTAMP and DATE), casts to and from TIMESTAMP, DATE
and VARCHAR, epoch_us/epoch_ms and to_timestamp(double) — values, NULLs and the kind of
error over the whole TIMESTAMP range, ±infinity, extreme doubles and garbage dummy slots; and
the zone-dependent operations refused, in one line, when the session's zone is not UTC."""
from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.errors import UnsupportedQueryError
from dodb.operators import expressions as E
from dodb.operators.expressions.zoned import using_zone
from dodb.operators.table import from_arrow

from .util import ERROR_KINDS, duckdb_row_results

_TS = st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)) | \
    st.sampled_from(["infinity", "-infinity", "294247-01-10 04:00:54.775806", "290309-12-22 (BC) 00:00:00",
                     "0001-01-01 (BC) 12:00:00.5", "1969-12-31 23:59:59.999999"])
_DATES = st.dates() | st.sampled_from(["infinity", "-infinity", "5881580-07-10", "5877642-06-25 (BC)", "294247-01-10"])
_DOUBLES = st.floats(allow_nan=True, allow_infinity=True) | st.floats(-1e13, 1e13) | st.sampled_from(
    [9223372036854.775807, 9223372036854.7, -9223372036854.775808, -9223372036854.775, 0.0, -0.0, 1.5e-6, 2.5e-6,
     -0.5e-6, 1e300])
EXPRS = ["z", "z < z2", "z = z2", "z >= z2", "z < ts", "ts <= z", "z = ts", "z > dt", "dt = z", "CAST(z AS VARCHAR)",
         "CAST(z AS DATE)", "CAST(z AS TIMESTAMP)", "CAST(ts AS TIMESTAMPTZ)", "CAST(dt AS TIMESTAMPTZ)",
         "TRY_CAST(dt AS TIMESTAMPTZ)", "epoch_us(z)", "epoch_ms(z)", "to_timestamp(f)",
         "to_timestamp(i)", "greatest(z, z2)", "coalesce(z, to_timestamp(f))", "CASE WHEN z < z2 THEN z ELSE z2 END",
         "z BETWEEN ts AND z2", "z IN (z2, TIMESTAMPTZ '2020-01-01 10:00:00+05')",
         "z > TIMESTAMPTZ '1970-01-01 00:00:00+00'"]


def _table(rows: list) -> pa.Table:
    """The rows as DuckDB reads them (timestamps and dates as text: ±infinity and years beyond
    Python's are values too), in a UTC session."""
    def text(k):
        return [None if r[k] is None else str(r[k]) for r in rows]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    return con.execute(
        "SELECT unnest(?::TIMESTAMP[])::TIMESTAMPTZ z, unnest(?::TIMESTAMP[])::TIMESTAMPTZ z2, unnest(?::TIMESTAMP[]) ts, "
        "unnest(?::DATE[]) dt, unnest(?::DOUBLE[]) f, unnest(?::BIGINT[]) i",
        [text(0), text(1), text(2), text(3), [r[4] for r in rows], [r[5] for r in rows]]).to_arrow_table()


def _check(rows: list, dummies: int, exprs: list[str]) -> None:
    t = _table(rows)
    garbage = _table([("294247-01-10 04:00:54.775806", "290309-12-22 (BC) 00:00:00", "infinity", "5881580-07-10",
                       float("nan"), -(1 << 63))] * dummies)
    both = pa.concat_tables([garbage, t])
    is_real = np.array([False] * dummies + [True] * len(rows))
    pt = from_arrow(both, stability=1, is_real=is_real)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
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


_ROW = st.tuples(_TS | st.none(), _TS | st.none(), _TS | st.none(), _DATES | st.none(), _DOUBLES | st.none(),
                 st.integers(-(1 << 63), (1 << 63) - 1) | st.integers(-10 ** 6, 10 ** 6) | st.none())


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(_ROW, min_size=1, max_size=5), dummies=st.integers(0, 2),
       exprs=st.lists(st.sampled_from(EXPRS), min_size=4, max_size=4, unique=True))
def test_timestamptz_matches_duckdb_in_utc(rows, dummies, exprs):
    _check(rows, dummies, exprs)


@pytest.mark.parametrize("expr", EXPRS)
def test_timestamptz_at_the_edges(expr):
    rows = [("294247-01-10 04:00:54.775806", "290309-12-22 (BC) 00:00:00", "infinity", "5881580-07-10",
             9223372036854.775807, (1 << 63) - 1),
            ("290309-12-22 (BC) 00:00:00", "294247-01-10 04:00:54.775806", "-infinity", "5877642-06-25 (BC)",
             -9223372036854.775, -(1 << 63)),
            ("infinity", "-infinity", "290309-12-22 (BC) 00:00:00", "infinity", float("nan"), 9223372036854),
            ("-infinity", "infinity", "1970-01-01", "-infinity", float("inf"), -9223372036854),
            ("0001-01-01 (BC) 12:00:00.5", "0001-01-01 (BC) 12:00:00.5", "0001-01-01 (BC) 12:00:00.5", "294247-01-10",
             -0.0, 0),
            (None, None, None, None, None, None), ("2020-02-29 12:00:00", "2020-02-29", "2020-02-29", "2020-02-29",
                                                   1.5e-6, 1)]
    _check(rows, 2, [expr])


_ZONED = ["z < ts", "dt = z", "CAST(z AS VARCHAR)", "CAST(z AS DATE)", "CAST(z AS TIMESTAMP)",
          "CAST(ts AS TIMESTAMPTZ)", "CAST(dt AS TIMESTAMPTZ)", "z > TIMESTAMPTZ '1970-01-01 00:00:00+00'"]
_ZONE_FREE = ["z < z2", "epoch_us(z)", "epoch_ms(z)", "to_timestamp(f)", "greatest(z, z2)", "z IS NULL"]


@pytest.mark.parametrize("expr", _ZONED + _ZONE_FREE)
def test_zone_dependent_operations_only_in_utc(expr):
    """In another zone DuckDB's answer depends on ICU's rules for it: refused (one line, at
    bind time); the zone-free ones are evaluated in any zone.  Names of UTC are UTC."""
    schema = {"z": pa.timestamp("us", tz="UTC"), "z2": pa.timestamp("us", tz="UTC"), "ts": pa.timestamp("us"),
              "dt": pa.date32(), "f": pa.float64()}
    for zone in ("UTC", "Etc/UTC", "GMT"):
        with using_zone(zone):
            E.check({"r": expr}, schema)
    with using_zone("America/New_York"):
        if expr in _ZONED:
            with pytest.raises(UnsupportedQueryError, match="time zone America/New_York") as e:
                E.check({"r": expr}, schema)
            assert "\n" not in str(e.value)
        else:
            E.check({"r": expr}, schema)
