"""Text to DATE: ``CAST(s AS DATE)`` / ``TRY_CAST`` as DuckDB reads a date (docs/design.md
§Expressions, casts from text).

DuckDB's grammar: leading white space, an optional ``-``, the year's digits, a separator
(space, ``-``, ``/`` or ``\\``), one or two month digits, the same separator, one or two day
digits, an optional `` (BC)`` (one white-space character, any case), trailing white space;
and the words ``infinity``, ``-infinity`` and ``epoch`` (any case, white space around) and
``inf``/``-inf`` (white space before only).  Each row is read by a small automaton walking every byte column of the public
width with whole-column selects (no branch on a byte, every column visited); the fields
accumulate as numbers, and the calendar check is whole-column arithmetic.

DuckDB also reads a date followed by a time (``2020-01-02 12:00``, ``…T12:00``), taking the
date part.  dodb does not read the time part: such a row (a valid date, then ``T`` or
white space and a digit) is an error on the row under CAST and TRY_CAST alike, never a
wrong date or NULL.
"""
from __future__ import annotations

import numpy as np

from . import casemap, dates, strings
from ...oblivious.select import select

__all__ = ["parse_date", "DATE_INFINITY"]

DATE_INFINITY = (1 << 31) - 1  # DuckDB's infinite DATE; −DATE_INFINITY is −infinity
_MAX_YEAR = 5881580
_YEAR_CAP = 10 ** 8            # the year stops growing past this (out of range anyway)
_SPACES = (0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D)
# states of the reading
(_LEAD, _SIGN, _YEAR, _MONTH, _DAY, _AFTER_DAY, _PAREN, _B, _C, _BC, _BC_TRAIL, _TRAIL, _T, _TIME,
 _FAIL) = range(15)
_ENDS_OK = (_DAY, _AFTER_DAY, _BC, _BC_TRAIL, _TRAIL)


def _any_of(c: np.ndarray, chars) -> np.ndarray:
    out = np.zeros(c.shape, dtype=bool)
    for ch in chars:
        out = out | (c == ch)
    return out


def _words(mat: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows that are ``infinity``/``inf``, ``-infinity``/``-inf``, ``epoch`` (any case, spaces around)."""
    low, low_len = casemap.case_map(mat, lengths, upper=False)
    left = strings.trim(low, low_len, list(_SPACES), left=True, right=False)
    both = strings.trim(low, low_len, list(_SPACES), left=True, right=True)

    def equal(text: tuple[np.ndarray, np.ndarray], word: bytes) -> np.ndarray:
        return strings.compare_const(text[0], text[1], word)[1]
    # DuckDB's quirk: ``inf`` takes no trailing white space, the long words do
    return (equal(both, b"infinity") | equal(left, b"inf"), equal(both, b"-infinity") | equal(left, b"-inf"),
            equal(both, b"epoch"))


def parse_date(mat: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(days, not a date, a date with a time part dodb does not read) per row."""
    n, w = mat.shape
    lengths = np.asarray(lengths, dtype=np.int64)
    state = np.full(n, _LEAD, dtype=np.int64)
    year, month, day = (np.zeros(n, dtype=np.int64) for _ in range(3))
    month_digits, day_digits = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    sep = np.zeros(n, dtype=np.int64)
    neg = np.zeros(n, dtype=bool)
    for j in range(w):  # every byte column of the public width
        c = mat[:, j].astype(np.int64)
        live = j < lengths
        digit = (c >= 0x30) & (c <= 0x39)
        value = c - 0x30
        space = _any_of(c, _SPACES)
        at = [state == s for s in range(_FAIL + 1)]
        steps = [  # (condition, next state); the first that holds, else _FAIL
            (at[_LEAD] & space, _LEAD), (at[_LEAD] & (c == 0x2D), _SIGN), ((at[_LEAD] | at[_SIGN]) & digit, _YEAR),
            (at[_YEAR] & digit, _YEAR), (at[_YEAR] & _any_of(c, (0x20, 0x2D, 0x2F, 0x5C)), _MONTH),
            (at[_MONTH] & digit & (month_digits < 2), _MONTH), (at[_MONTH] & (c == sep) & (month_digits > 0), _DAY),
            (at[_DAY] & digit & (day_digits < 2), _DAY), (at[_DAY] & space, _AFTER_DAY), (at[_DAY] & (c == 0x54), _T),
            (at[_AFTER_DAY] & (c == 0x28), _PAREN), (at[_AFTER_DAY] & space, _TRAIL),
            (at[_PAREN] & _any_of(c, (0x42, 0x62)), _B), (at[_B] & _any_of(c, (0x43, 0x63)), _C),
            (at[_C] & (c == 0x29), _BC), ((at[_BC] | at[_BC_TRAIL]) & space, _BC_TRAIL),
            (at[_TRAIL] & space, _TRAIL),
            ((at[_AFTER_DAY] | at[_TRAIL] | at[_BC_TRAIL] | at[_T]) & digit, _TIME), (at[_TIME], _TIME),
        ]
        nxt = np.full(n, _FAIL, dtype=np.int64)
        for cond, target in reversed(steps):
            nxt = select(cond, target, nxt)
        in_year, in_month, in_day = live & (nxt == _YEAR), live & (nxt == _MONTH) & digit, live & (nxt == _DAY) & digit
        year = select(in_year, np.minimum(year * 10 + value, _YEAR_CAP), year)
        month = select(in_month, month * 10 + value, month)
        month_digits = month_digits + in_month
        day = select(in_day, day * 10 + value, day)
        day_digits = day_digits + in_day
        sep = select(live & at[_YEAR] & (nxt == _MONTH), c, sep)
        neg = neg | (live & (nxt == _SIGN))
        bc_seen = live & (nxt == _BC)
        state = select(live, nxt, state)
        neg_bc = neg & bc_seen  # a negative year with (BC) is no date
        state = select(neg_bc, _FAIL, state)
    bc = (state == _BC) | (state == _BC_TRAIL)
    y = select(neg, -year, select(bc, 1 - year, year))
    fields = (year <= _MAX_YEAR) & (month >= 1) & (month <= 12) & (day >= 1) & \
        (day <= dates.month_days(y, np.clip(month, 1, 12))) & ~(bc & (year == 0))
    days = dates.days_from_civil(np.clip(y, -_YEAR_CAP, _YEAR_CAP), np.clip(month, 1, 12), np.clip(day, 1, 31))
    fields = fields & (days >= -dates.DATE_MAX) & (days <= dates.DATE_MAX)
    shaped = np.zeros(n, dtype=bool)
    for s in _ENDS_OK:
        shaped = shaped | (state == s)
    good = shaped & fields
    timed = (state == _TIME) & fields
    pos_inf, neg_inf, epoch = _words(mat, lengths)
    days = select(pos_inf, DATE_INFINITY, select(neg_inf, -DATE_INFINITY, select(epoch | ~good, 0, days)))
    word = pos_inf | neg_inf | epoch
    return days, ~(good | timed | word), timed & ~word

