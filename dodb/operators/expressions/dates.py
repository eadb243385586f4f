"""Calendar kernels on DATE (int64 days since 1970-01-01) and TIMESTAMP (int64 µs).

Proleptic Gregorian conversions are Howard Hinnant's ``civil_from_days`` /
``days_from_civil`` written with whole-column integer arithmetic (no table look-ups, no
branches).  Interval arithmetic follows DuckDB's ``Interval::Add``: months first (the
day clamped to the month's length), then days, then microseconds.
"""
from __future__ import annotations

import numpy as np

__all__ = ["civil", "days_from_civil", "month_days", "add_interval", "extract", "US_PER_DAY", "split_ts",
           "iso_week", "in_date_range", "PARTS"]

US_PER_DAY = 86_400_000_000
# DuckDB's DATE range is wider, but dodb only formats and checks years 1..9999 exactly
_MIN_DAY = -719162   # 0001-01-01
_MAX_DAY = 2932896   # 9999-12-31


def civil(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) of day numbers."""
    z = z + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + np.where(mp < 10, 3, -9)
    return y + (m <= 2), m, d


def days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = m + np.where(m > 2, -3, 9)
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def is_leap(y: np.ndarray) -> np.ndarray:
    return ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)


def month_days(y: np.ndarray, m: np.ndarray) -> np.ndarray:
    base = np.where((m == 4) | (m == 6) | (m == 9) | (m == 11), 30, 31)
    return np.where(m == 2, 28 + is_leap(y), base)


def in_date_range(days: np.ndarray) -> np.ndarray:
    return (days >= _MIN_DAY) & (days <= _MAX_DAY)


def split_ts(us: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(days, microseconds into the day) of timestamps."""
    days = np.floor_divide(us, US_PER_DAY)
    return days, us - days * US_PER_DAY


def add_interval(us: np.ndarray, months: int, days: int, micros: int) -> np.ndarray:
    """Timestamp + a constant interval (DuckDB ``Interval::Add``)."""
    d, tod = split_ts(us)
    if months:
        y, m, dd = civil(d)
        total = y * 12 + (m - 1) + months
        ny, nm = np.floor_divide(total, 12), total % 12 + 1
        d = days_from_civil(ny, nm, np.minimum(dd, month_days(ny, nm)))
    return (d + days) * US_PER_DAY + tod + micros


def iso_week(days: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ISO year, ISO week) of day numbers."""
    isodow = (days + 3) % 7 + 1  # 1970-01-01 was a Thursday (4)
    thursday = days - isodow + 4
    y, _, _ = civil(thursday)
    jan1 = days_from_civil(y, np.ones_like(y), np.ones_like(y))
    return y, (thursday - jan1) // 7 + 1


PARTS = ("year", "month", "day", "dow", "isodow", "doy", "quarter", "week", "dayofweek", "dayofmonth",
         "dayofyear", "weekday", "hour", "minute", "second", "decade", "century", "isoyear", "yearweek")


def extract(part: str, days: np.ndarray, tod: np.ndarray | None = None) -> np.ndarray:
    """``EXTRACT(part FROM …)`` as BIGINT (DuckDB: Sunday = 0 for dow)."""
    y, m, d = civil(days)
    if part == "year":
        return y
    if part == "month":
        return m
    if part in ("day", "dayofmonth"):
        return d
    if part in ("dow", "dayofweek", "weekday"):
        return (days + 4) % 7
    if part == "isodow":
        return (days + 3) % 7 + 1
    if part in ("doy", "dayofyear"):
        return days - days_from_civil(y, np.ones_like(y), np.ones_like(y)) + 1
    if part == "quarter":
        return (m - 1) // 3 + 1
    if part == "week":
        return iso_week(days)[1]
    if part == "isoyear":
        return iso_week(days)[0]
    if part == "yearweek":
        iy, w = iso_week(days)
        return iy * 100 + w
    if part == "decade":
        return np.floor_divide(y, 10)
    if part == "century":
        return np.where(y > 0, (y - 1) // 100 + 1, -((-y) // 100 + 1))
    t = np.zeros_like(days) if tod is None else tod
    if part == "hour":
        return t // 3_600_000_000
    if part == "minute":
        return t // 60_000_000 % 60
    if part == "second":
        return t // 1_000_000 % 60
    raise ValueError(part)
