"""DATE_SUB (complete units between two dates or timestamps) against DuckDB: every pair of
month-end days of 2019–2021 with times of day either side, random pairs across two
millennia, ±infinity and NULLs, among extreme dummies (issue 30's top-200 list)."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from dodb.operators.expressions import dates
from dodb.operators.table import from_arrow

from tests.operators.expr_cases import compare

US = dates.US_PER_DAY
UNITS = ["month", "quarter", "year", "decade", "century", "day", "week", "hour", "minute", "second",
         "millisecond", "microsecond"]


def _month_ends() -> tuple[pa.Table, object]:
    days = []
    for y in (2019, 2020, 2021):
        for m in range(1, 13):
            for d in (27, 28, 29, 30, 31):
                try:
                    days.append((dt.date(y, m, d) - dt.date(1970, 1, 1)).days)
                except ValueError:
                    pass
    days = np.array(days[::3], dtype=np.int64)
    a = np.repeat(days, days.size) * US + np.tile([3600 * 10 ** 6 * 10, 3600 * 10 ** 6 * 14], days.size * days.size // 2 + 1)[:days.size ** 2]
    b = np.tile(days, days.size) * US + 12 * 3600 * 10 ** 6
    return _padded(a, b)


def _random() -> tuple[pa.Table, object]:
    rng = np.random.default_rng(3)
    n = 3000
    base = rng.integers(-1000 * 365 * US, 1200 * 365 * US, n)
    a = base + rng.integers(-500 * US, 500 * US, n)
    b = base + rng.integers(-900 * US, 900 * US, n)
    a[:3] = [2 ** 63 - 1, 0, -(2 ** 63 - 1)]
    return _padded(a, b)


def _padded(a: np.ndarray, b: np.ndarray):
    n = a.size
    t = pa.table({"a": pa.array(a, pa.int64()).cast(pa.timestamp("us")),
                  "b": pa.array(b, pa.int64(), mask=np.arange(n) % 97 == 5).cast(pa.timestamp("us")),
                  "da": pa.array(np.floor_divide(np.clip(a, -(2 ** 62), 2 ** 62), US).astype(np.int32)).cast(pa.date32())})
    dummies = t.take(pa.array(np.arange(n)[::-1]))
    return t, from_arrow(pa.concat_tables([t, dummies]), stability=1, is_real=np.r_[np.ones(n, bool), np.zeros(n, bool)])


@pytest.fixture(scope="module", params=["month ends", "random"])
def data(request):
    return _month_ends() if request.param == "month ends" else _random()


@pytest.mark.parametrize("unit", UNITS)
def test_date_sub_matches_duckdb(data, unit):
    t, pt = data
    compare(t, pt, f"date_sub('{unit}', a, b)")
    compare(t, pt, f"datesub('{unit}', da, b)")
