"""Values to text and text to integers, as DuckDB's casts write and read them.

Digits are produced for a public count of positions (20 for BIGINT, 39 for DECIMAL),
then the kept ones (sign, significant digits, point) are compacted to the front.
"""
from __future__ import annotations

import numpy as np

from . import dates, int128 as i128, strings

__all__ = ["int_text", "dec_text", "date_text", "ts_text", "bool_text", "parse_int", "INT_TEXT_WIDTH",
           "DATE_TEXT_WIDTH", "TS_TEXT_WIDTH", "dec_text_width"]

INT_TEXT_WIDTH = 20
DATE_TEXT_WIDTH = 10
TS_TEXT_WIDTH = 26
_ZERO = ord("0")


def dec_text_width(precision: int, scale: int) -> int:
    return precision + 1 + (1 if scale else 0) + (1 if precision == scale else 0)


def _significant(digits: list[np.ndarray], keep_last: int) -> np.ndarray:
    """Keep mask over digit columns: from the first non-zero, and always the last ``keep_last``."""
    d = np.stack(digits, axis=1)
    lead = np.logical_or.accumulate(d != 0, axis=1)
    forced = np.zeros(d.shape[1], dtype=bool)
    forced[d.shape[1] - keep_last:] = True
    return lead | forced[None, :]


def int_text(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = x.shape[0]
    negative = x < 0
    mag = np.where(negative, (-(x + 1)).astype(np.uint64) + np.uint64(1), x.astype(np.uint64))
    digits = strings.digits_u64(mag, INT_TEXT_WIDTH)
    keep = np.concatenate([negative[:, None], _significant(digits, 1)], axis=1)
    mat = np.concatenate([np.full((n, 1), ord("-"), np.uint8), np.stack(digits, axis=1) + np.uint8(_ZERO)], axis=1)
    return strings.compact(mat, keep)


def dec_text(v: i128.I128, precision: int, scale: int) -> tuple[np.ndarray, np.ndarray]:
    n = v.lo.shape[0]
    negative = i128.is_negative(v)
    mag = i128.absolute(v)
    digits = []
    for _ in range(precision if precision > scale else scale + 1):
        mag, rem = i128.divmod_small(mag, 10)
        digits.append(rem.astype(np.uint8))
    digits = digits[::-1]
    int_part, frac = digits[: len(digits) - scale], digits[len(digits) - scale:]
    keep_int = _significant(int_part, 1)
    cols = [np.full((n, 1), ord("-"), np.uint8), np.stack(int_part, axis=1) + np.uint8(_ZERO)]
    keep = [negative[:, None], keep_int]
    if scale:
        cols += [np.full((n, 1), ord("."), np.uint8), np.stack(frac, axis=1) + np.uint8(_ZERO)]
        keep += [np.ones((n, 1), bool), np.ones((n, scale), bool)]
    return strings.compact(np.concatenate(cols, axis=1), np.concatenate(keep, axis=1))


def _two(x: np.ndarray) -> list[np.ndarray]:
    return [(x // 10 % 10 + _ZERO).astype(np.uint8), (x % 10 + _ZERO).astype(np.uint8)]


def _date_cols(days: np.ndarray) -> list[np.ndarray]:
    y, m, d = dates.civil(days)
    yc = [((y // p) % 10 + _ZERO).astype(np.uint8) for p in (1000, 100, 10, 1)]
    dash = np.full(days.shape, ord("-"), np.uint8)
    return yc + [dash] + _two(m) + [dash] + _two(d)


def date_text(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """'YYYY-MM-DD'; the third result flags years outside 1..9999 (formatted otherwise by DuckDB)."""
    mat = np.stack(_date_cols(days), axis=1)
    return mat, np.full(days.shape[0], DATE_TEXT_WIDTH, dtype=np.int64), ~dates.in_date_range(days)


def ts_text(us: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """'YYYY-MM-DD HH:MM:SS[.ffffff]' with trailing zeros of the fraction dropped (as DuckDB)."""
    n = us.shape[0]
    days, tod = dates.split_ts(us)
    secs, micros = tod // 1_000_000, tod % 1_000_000
    colon = np.full(n, ord(":"), np.uint8)
    cols = _date_cols(days) + [np.full(n, ord(" "), np.uint8)] + _two(secs // 3600) + [colon] + \
        _two(secs // 60 % 60) + [colon] + _two(secs % 60)
    frac = [((micros // 10 ** (5 - k)) % 10).astype(np.uint8) for k in range(6)]
    tail = np.logical_or.accumulate(np.stack(frac, axis=1)[:, ::-1] != 0, axis=1)[:, ::-1]
    mat = np.concatenate([np.stack(cols, axis=1), np.full((n, 1), ord("."), np.uint8),
                          np.stack(frac, axis=1) + np.uint8(_ZERO)], axis=1)
    keep = np.concatenate([np.ones((n, 19), bool), (micros != 0)[:, None], tail], axis=1)
    out, lengths = strings.compact(mat, keep)
    return out, lengths, ~dates.in_date_range(days)


def bool_text(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return strings.select_constants([b"true", b"false"], [b, ~b])


_SPACE = (ord(" "), ord("\t"), ord("\n"), ord("\r"), 0x0B, 0x0C)


def parse_int(mat: np.ndarray, lengths: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Text to an integer: ``space* [+-] digit+ space*``; returns (value, failed).

    DuckDB also reads forms this does not (``1.5``, ``1e2``, ``0x10``, ``1_000``): those
    are reported as conversion failures rather than read differently.
    """
    n, w = mat.shape
    ins = strings.inside(lengths, w)
    state = np.zeros(n, dtype=np.int64)  # 0 lead space, 1 sign, 2 digits, 3 trailing space, 4 bad
    neg = np.zeros(n, dtype=bool)
    mag = np.zeros(n, dtype=np.uint64)
    over = np.zeros(n, dtype=bool)
    limit = np.uint64((1 << 64) - 1)
    for j in range(w):  # public loop over byte positions
        c = mat[:, j:j + 1].reshape(n).astype(np.int64)
        live = ins[:, j:j + 1].reshape(n)
        space = np.zeros(n, dtype=bool)
        for s in _SPACE:
            space |= c == s
        digit = (c >= _ZERO) & (c <= _ZERO + 9)
        sign = (c == ord("+")) | (c == ord("-"))
        nxt = np.where(space, np.where(state == 0, 0, np.where(state >= 2, 3, 4)),
                       np.where(digit, np.where(state <= 2, 2, 4),
                                np.where(sign & (state == 0), 1, 4)))
        nxt = np.where(state == 4, 4, nxt)
        neg = np.where(live & sign & (state == 0), c == ord("-"), neg)
        d = np.where(digit, c - _ZERO, 0).astype(np.uint64)
        take = live & digit & (state <= 2)
        over |= take & (mag > (limit - d) // np.uint64(10))
        mag = np.where(take, mag * np.uint64(10) + d, mag)
        state = np.where(live, nxt, state)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    over |= np.where(neg, mag > np.uint64(-lo), mag > np.uint64(hi))
    signed = np.where(over, 0, mag).astype(np.uint64).view(np.int64)
    val = np.where(neg, -signed, signed)
    bad = (state != 2) & (state != 3)
    return val, bad | over
