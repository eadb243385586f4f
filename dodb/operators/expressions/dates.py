"""Calendar kernels on DATE (int64 days since 1970-01-01) and TIMESTAMP (int64 µs).
See docs/design.md §Expressions.

Proleptic Gregorian conversions are Howard Hinnant's ``civil_from_days`` /
``days_from_civil`` written with whole-column integer arithmetic (no table look-ups, no
branches).  Interval arithmetic follows DuckDB's ``Interval::Add``: months first (the
day clamped to the month's length), then days, then microseconds.
"""
from __future__ import annotations

import numpy as np
from ...oblivious.select import floor_div, floor_mod, select

__all__ = ["civil", "days_from_civil", "month_days", "add_interval", "add_interval_checked", "date_part", "US_PER_DAY", "split_ts",
           "iso_week", "in_date_range", "finite_date", "finite_ts", "finite", "keep_infinities", "to_us", "PARTS"]

US_PER_DAY = 86_400_000_000
_MIN_DAY = -719162   # 0001-01-01 (strftime's range)
_MAX_DAY = 2932896   # 9999-12-31
# DuckDB's ranges: a finite DATE is an int32 other than ±(2^31 - 1) (the infinities); a
# TIMESTAMP lies between 290309-12-22 (BC) 00:00:00 and 294247-01-10 04:00:54.775806
DATE_MAX = (1 << 31) - 2
TS_MIN_US = -9223372022400000000
TS_MAX_US = (1 << 63) - 2
_TS_MIN_DAY, _TS_MAX_DAY = TS_MIN_US // US_PER_DAY, TS_MAX_US // US_PER_DAY


def civil(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) of day numbers."""
    z = z + 719468
    era = floor_div(z, 146097)
    doe = z - era * 146097
    yoe = floor_div(doe - floor_div(doe, 1460) + floor_div(doe, 36524) - floor_div(doe, 146096), 365)
    y = yoe + era * 400
    doy = doe - (365 * yoe + floor_div(yoe, 4) - floor_div(yoe, 100))
    mp = floor_div(5 * doy + 2, 153)
    d = doy - floor_div(153 * mp + 2, 5) + 1
    m = mp + select(mp < 10, 3, -9)
    return y + (m <= 2), m, d


def days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    y = y - (m <= 2)
    era = floor_div(y, 400)
    yoe = y - era * 400
    mp = m + select(m > 2, -3, 9)
    doy = floor_div(153 * mp + 2, 5) + d - 1
    doe = yoe * 365 + floor_div(yoe, 4) - floor_div(yoe, 100) + doy
    return era * 146097 + doe - 719468


def is_leap(y: np.ndarray) -> np.ndarray:
    return ((floor_mod(y, 4) == 0) & (floor_mod(y, 100) != 0)) | (floor_mod(y, 400) == 0)


def month_days(y: np.ndarray, m: np.ndarray) -> np.ndarray:
    base = select((m == 4) | (m == 6) | (m == 9) | (m == 11), 30, 31)
    return select(m == 2, 28 + is_leap(y), base)


def in_date_range(days: np.ndarray) -> np.ndarray:
    """Years 1 to 9999 (what STRFTIME writes)."""
    return (days >= _MIN_DAY) & (days <= _MAX_DAY)


def finite_date(days: np.ndarray) -> np.ndarray:
    """A DATE DuckDB can hold (``Date out of range`` otherwise)."""
    return (days >= -DATE_MAX) & (days <= DATE_MAX)


def finite_ts(us: np.ndarray) -> np.ndarray:
    """A TIMESTAMP other than ±infinity (DuckDB's ±(2^63 − 1) microseconds)."""
    return (us >= -TS_MAX_US) & (us <= TS_MAX_US)


def finite(data: np.ndarray, kind: str) -> np.ndarray:
    """Rows of a DATE (``kind == 'date'``) or TIMESTAMP column other than ±infinity."""
    return finite_date(data) if kind == "date" else finite_ts(data)


def keep_infinities(src: np.ndarray, src_kind: str, res: np.ndarray, to_kind: str) -> np.ndarray:
    """``res``, but ±infinity (of ``to_kind``) wherever ``src`` holds ±infinity: DuckDB keeps an
    infinity through casts between DATE and TIMESTAMP, interval arithmetic and DATE_TRUNC."""
    big = DATE_MAX + 1 if to_kind == "date" else TS_MAX_US + 1
    return select(finite(src, src_kind), res, select(src > 0, big, -big))


def to_us(data: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Microseconds of a DATE (``kind == 'date'``) or TIMESTAMP, and where a DATE is outside
    the TIMESTAMP range (DuckDB's cast fails there; those rows hold 0)."""
    if kind != "date":
        return data, np.zeros(data.shape, dtype=bool)
    bad = (data < _TS_MIN_DAY) | (data > _TS_MAX_DAY)
    return select(bad, 0, data) * US_PER_DAY, bad


def split_ts(us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(days, microseconds into the day) of timestamps."""
    days = floor_div(us, US_PER_DAY)
    return days, us - days * US_PER_DAY


_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_LAST_TOD = TS_MAX_US - _TS_MAX_DAY * US_PER_DAY  # the latest time of the last day


def add_interval(us: np.ndarray, months: int, days, micros) -> tuple[np.ndarray, np.ndarray]:
    """Timestamp + an interval and where it fails (:func:`add_interval_checked`, both failures)."""
    res, bad, date_over = add_interval_checked(us, months, days, micros)
    return res, bad | date_over


def add_interval_checked(us: np.ndarray, months: int, days, micros) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Timestamp + an interval as DuckDB's ``Interval::Add`` does it: where the interval has
    months or days, the date moves (a public count of months, the day clamped to the
    month's length, then ``days``: a constant or one per row) and is joined again with the
    time of day (it must fit in 64 bits); then the µs are added with an overflow check.
    The result must not be ±infinity.  Returns (result, not a timestamp, the date past
    32 bits — DuckDB's 'Date out of range'); failed rows hold 0."""
    d, tod = split_ts(us)
    if months:
        y, m, dd = civil(d)
        total = y * 12 + (m - 1) + months
        ny, nm = floor_div(total, 12), floor_mod(total, 12) + 1
        d = days_from_civil(ny, nm, np.minimum(dd, month_days(ny, nm)))
    nd = d + days
    date_over = (nd < _I32_MIN) | (nd > _I32_MAX)
    joined_bad = (nd < _TS_MIN_DAY) | (nd > _TS_MAX_DAY) | ((nd == _TS_MAX_DAY) & (tod > _LAST_TOD))
    joined = select(joined_bad, 0, nd) * US_PER_DAY + tod
    moved = (np.asarray(days) != 0) | (months != 0)
    base = select(moved, joined, us)
    date_bad = moved & (joined_bad | date_over)
    micros = np.asarray(micros, dtype=np.int64)
    over = select(micros >= 0, base > _I64_MAX - np.maximum(micros, 0), base < _I64_MIN - np.minimum(micros, 0))
    res = base + select(over, 0, micros)
    bad = (date_bad & ~date_over) | (~date_bad & (over | (res == _I64_MAX) | (res == -_I64_MAX)))
    date_over = moved & date_over
    return select(bad | date_over, 0, res), bad, date_over


def iso_week(days: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ISO year, ISO week) of day numbers."""
    isodow = floor_mod(days + 3, 7) + 1  # 1970-01-01 was a Thursday (4)
    thursday = days - isodow + 4
    y, _, _ = civil(thursday)
    jan1 = days_from_civil(y, np.ones_like(y), np.ones_like(y))
    return y, floor_div(thursday - jan1, 7) + 1


PARTS = ("year", "month", "day", "dow", "isodow", "doy", "quarter", "week", "dayofweek", "dayofmonth",
         "dayofyear", "weekday", "hour", "minute", "second", "millisecond", "microsecond", "decade", "century",
         "millennium", "era", "isoyear", "yearweek")


def c_div(x: np.ndarray, k: int) -> np.ndarray:
    """``x / k`` rounded towards zero, as C divides (``k > 0``): DuckDB's decade, century and
    millennium of a BC year."""
    q = floor_div(np.abs(x), k)
    return select(x < 0, -q, q)


def date_part(part: str, days: np.ndarray, tod: np.ndarray | None = None) -> np.ndarray:
    """``EXTRACT(part FROM …)`` as BIGINT (DuckDB: Sunday = 0 for dow)."""
    y, m, d = civil(days)
    if part == "year":
        return y
    if part == "month":
        return m
    if part in ("day", "dayofmonth"):
        return d
    if part in ("dow", "dayofweek", "weekday"):
        return floor_mod(days + 4, 7)
    if part == "isodow":
        return floor_mod(days + 3, 7) + 1
    if part in ("doy", "dayofyear"):
        return days - days_from_civil(y, np.ones_like(y), np.ones_like(y)) + 1
    if part == "quarter":
        return floor_div(m - 1, 3) + 1
    if part == "week":
        return iso_week(days)[1]
    if part == "isoyear":
        return iso_week(days)[0]
    if part == "yearweek":  # a BC year's week is subtracted (DuckDB: -27067 week 30 is -2706730)
        iy, w = iso_week(days)
        return select(iy < 0, iy * 100 - w, iy * 100 + w)
    if part == "decade":  # C division: towards zero
        return np.sign(y) * floor_div(np.abs(y), 10)
    if part == "century":
        return select(y > 0, floor_div(y - 1, 100) + 1, -(floor_div(-y, 100) + 1))
    if part == "millennium":
        return select(y > 0, floor_div(y - 1, 1000) + 1, -(floor_div(-y, 1000) + 1))
    if part == "era":
        return (y > 0).astype(np.int64)
    t = np.zeros_like(days) if tod is None else tod
    if part == "hour":
        return floor_div(t, 3_600_000_000)
    if part == "minute":
        return floor_mod(floor_div(t, 60_000_000), 60)
    if part == "second":
        return floor_mod(floor_div(t, 1_000_000), 60)
    if part == "millisecond":  # the seconds of the minute, in milliseconds
        return floor_mod(floor_div(t, 1000), 60_000)
    if part == "microsecond":
        return floor_mod(t, 60_000_000)
    raise ValueError(part)
