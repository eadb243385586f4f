"""INTERVAL values as lanes (docs/design.md §Expressions, INTERVAL values).

A stored INTERVAL is Arrow's month_day_nano words, ``(n, 2)`` uint64 (months and days as
int32s in the first word, nanoseconds in the second; DuckDB writes microseconds × 1000).
In the evaluator it is ``(n, 3)`` int64: months, days, microseconds.  Comparisons order
DuckDB's normalised triple (the µs carried into days of 24 hours, the days into months of
30 days, rounding down), so ``INTERVAL 30 DAY =
INTERVAL 1 MONTH``.  Every operation is whole-column integer arithmetic on every slot.
"""
from __future__ import annotations

import numpy as np

from ...oblivious.select import floor_div


__all__ = ["from_words", "to_words", "normalized", "compare", "epoch"]

US_PER_DAY = 86_400_000_000
DAYS_PER_MONTH = 30


def from_words(words: np.ndarray) -> np.ndarray:
    """``(n, 3)`` int64 (months, days, µs) of Arrow's ``(n, 2)`` month_day_nano words."""
    first = np.ascontiguousarray(words[:, 0]).view(np.int32).reshape(-1, 2).astype(np.int64)
    nanos = np.ascontiguousarray(words[:, 1]).view(np.int64)
    return np.stack([first[:, 0], first[:, 1], _trunc_div(nanos, 1000)], axis=1)


def to_words(lanes: np.ndarray) -> np.ndarray:
    """Arrow's ``(n, 2)`` month_day_nano words of ``(n, 3)`` (months, days, µs) lanes."""
    n = lanes.shape[0]
    first = np.empty((n, 2), dtype=np.int32)
    first[:, 0] = lanes[:, 0]
    first[:, 1] = lanes[:, 1]
    out = np.empty((n, 2), dtype=np.uint64)
    out[:, 0] = first.reshape(-1).view(np.uint64)
    out[:, 1] = (lanes[:, 2] * 1000).view(np.uint64)
    return out


def _trunc_div(a: np.ndarray, k: int) -> np.ndarray:
    """C's ``a / k`` (towards zero) for a public positive ``k``, without a branch per row."""
    q = floor_div(np.abs(a), k)
    return q * np.sign(a)


def normalized(lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DuckDB's normalised interval: (months, days, µs) with the µs's whole days carried into
    the days and the days' whole 30-day months into the months, rounding down (so that
    ``1 day − 1 µs`` equals ``86399999999 µs``: checked against DuckDB)."""
    months, days, micros = lanes[:, 0], lanes[:, 1], lanes[:, 2]
    carry_days = floor_div(micros, US_PER_DAY)  # floor: the µs left are 0 … one day − 1
    micros = micros - carry_days * US_PER_DAY
    days = days + carry_days
    carry_months = floor_div(days, DAYS_PER_MONTH)  # floor: the days left are 0 … 29
    return months + carry_months, days - carry_months * DAYS_PER_MONTH, micros


def compare(a: np.ndarray, b: np.ndarray, raw: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(less, equal) of two INTERVAL values' ``(n, 3)`` lanes, lexicographically on the normalised triples — or,
    with ``raw``, on the stored ones: DuckDB's GREATEST/LEAST order intervals that way
    (``greatest(INTERVAL 40 DAY, INTERVAL 1 MONTH)`` is 1 month, though 40 days ``>`` 1 month)."""
    x, y = (a.T, b.T) if raw else (normalized(a), normalized(b))
    lt = np.zeros(a.shape[0], dtype=bool)
    eq = np.ones(a.shape[0], dtype=bool)
    for p, q in zip(x, y):  # months, then days, then µs: a public loop of three
        lt = lt | (eq & (p < q))
        eq = eq & (p == q)
    return lt, eq


def epoch(lanes: np.ndarray) -> np.ndarray:
    """``epoch(interval)``: seconds as DOUBLE, DuckDB's ``DatePart::EpochOperator`` — a year of
    months is 365.25 days, another month 30, a day 86,400 s, plus the µs / 10^6."""
    months, days, micros = lanes[:, 0], lanes[:, 1], lanes[:, 2]
    years = _trunc_div(months, 12)
    total_days = years * 365 + DAYS_PER_MONTH * (months - years * 12) + days
    seconds = total_days * 86_400 + years * (86_400 // 4)
    return seconds.astype(np.float64) + micros.astype(np.float64) / 1e6
