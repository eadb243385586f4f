"""``age(a, b)`` (dodb/operators/expressions/ages.py) against DuckDB: the (months, days, µs)
words themselves (a fetched ``timedelta`` would hide months as 30 days), over every pair of
month-end days of 2019–2021 with times of day either side, random pairs across DuckDB's whole
TIMESTAMP range (BC years included), its limits, ±infinity and NULLs, DATE arguments (and
one outside the TIMESTAMP range: DuckDB's cast error), among garbage dummy slots; ``age(x)``
counts from today's midnight (UTC) as DuckDB's does (the test does not run at midnight)."""
from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from dodb.errors import UnsupportedQueryError
from dodb.operators import expressions as E
from dodb.operators.expressions import dates
from dodb.operators.table import from_arrow

US = dates.US_PER_DAY
INF = 2 ** 63 - 1


def _pairs() -> tuple[np.ndarray, np.ndarray]:
    days = []
    for y in (2019, 2020, 2021):
        for m in range(1, 13):
            for d in (1, 28, 29, 30, 31):
                try:
                    days.append((dt.date(y, m, d) - dt.date(1970, 1, 1)).days)
                except ValueError:
                    pass
    days = np.array(days[::2], dtype=np.int64)
    hours = np.array([3, 21], dtype=np.int64) * 3600 * 10 ** 6
    a = np.repeat(days, days.size) * US + np.resize(hours, days.size ** 2)
    b = np.tile(days, days.size) * US + 12 * 3600 * 10 ** 6 + 7
    rng = np.random.default_rng(30)
    n = 1500
    ra = rng.integers(dates.TS_MIN_US, dates.TS_MAX_US, n)
    rb = np.clip(ra + rng.integers(-400 * 366 * US, 400 * 366 * US, n), dates.TS_MIN_US, dates.TS_MAX_US)
    wide = rng.integers(dates.TS_MIN_US, dates.TS_MAX_US, (2, 200))
    edges = np.array([[dates.TS_MIN_US, dates.TS_MAX_US], [dates.TS_MAX_US, dates.TS_MIN_US], [INF, 0], [0, -INF],
                      [-INF, INF], [0, 0], [-1, 0], [0, -1], [US - 1, US]], dtype=np.int64)
    return np.r_[a, ra, wide[0], edges[:, 0]], np.r_[b, rb, wide[1], edges[:, 1]]


@pytest.fixture(scope="module")
def data():
    a, b = _pairs()
    n = a.size
    days = np.floor_divide(np.clip(b, -(2 ** 62), 2 ** 62), US)
    days[-3:] = [2 ** 31 - 1, -(2 ** 31 - 1), 0]  # ±infinity dates
    t = pa.table({"a": pa.array(a, pa.int64()).cast(pa.timestamp("us")),
                  "b": pa.array(b, pa.int64(), mask=np.arange(n) % 97 == 5).cast(pa.timestamp("us")),
                  "d": pa.array(days.astype(np.int32), mask=np.arange(n) % 89 == 3).cast(pa.date32())})
    garbage = pa.table({"a": pa.array(np.full(n // 4, -INF), pa.int64()).cast(pa.timestamp("us")),
                        "b": pa.array(np.full(n // 4, dates.TS_MAX_US), pa.int64()).cast(pa.timestamp("us")),
                        "d": pa.array(np.full(n // 4, 2 ** 31 - 2), pa.int32()).cast(pa.date32())})
    pt = from_arrow(pa.concat_tables([garbage, t]), stability=1,
                    is_real=np.r_[np.zeros(n // 4, bool), np.ones(n, bool)])
    return t, pt


@pytest.mark.parametrize("sql", ["age(a, b)", "age(b, a)", "age(a, d)", "age(d, TIMESTAMP '2000-02-29 12:00:00')",
                                 "age(a, TIMESTAMP '2000-01-01')", "age(DATE '1999-12-31', d)", "age(a)", "age(d)"])
def test_age_words_match_duckdb(data, sql):
    t, pt = data
    con = duckdb.connect()
    con.register("t", t)
    want = con.sql(f"SELECT {sql} AS r FROM t").to_arrow_table()["r"]
    cols, codes = E.evaluate(pt, {"r": sql})
    assert not codes.any()
    got = cols["r"].to_arrow(pt.is_real)
    assert got.type == want.type == pa.month_day_nano_interval()
    g, w = got.to_pylist(), want.to_pylist()
    bad = [(i, x, y) for i, (x, y) in enumerate(zip(g, w)) if x != y]
    assert len(g) == len(w) and not bad, bad[:3]
    assert sum(v is None for v in w) >= 2  # ±infinity or NULL rows


def test_age_errors_and_refusals():
    t = pa.table({"d": pa.array([5_000_000 * 366, 0], pa.int32()).cast(pa.date32()),
                  "a": pa.array([None, 0], pa.int64()).cast(pa.timestamp("us"))})
    pt = from_arrow(t, stability=1)
    con = duckdb.connect()
    con.register("t", t)
    with pytest.raises(duckdb.ConversionException):  # the DATE's cast fails, NULL partner or not
        con.sql("SELECT age(a, d) FROM t").fetchall()
    _, codes = E.evaluate(pt, {"r": "age(a, d)"})
    assert "timestamp range" in E.message_for(int(codes.max()))
    with pytest.raises(UnsupportedQueryError, match="cannot bind"):
        E.evaluate(pt, {"r": "age(a, a, a)"})
