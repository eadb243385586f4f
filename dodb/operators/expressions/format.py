"""Values to text and text to integers, as DuckDB's casts write and read them.
See docs/design.md §Expressions.

Digits are produced for a public count of positions (20 for BIGINT, 39 for DECIMAL),
then the kept ones (sign, significant digits, point) are compacted to the front.
"""
from __future__ import annotations

import numpy as np
from ...oblivious.select import floor_div, floor_mod, select

from . import dates, int128 as i128, strings

__all__ = ["int_text", "dec_text", "date_text", "ts_text", "time_text", "bool_text", "parse_int", "INT_TEXT_WIDTH",
           "DATE_TEXT_WIDTH", "TS_TEXT_WIDTH", "dec_text_width"]

INT_TEXT_WIDTH = 20
DATE_TEXT_WIDTH = 18   # a 7-digit year, '-MM-DD' and ' (BC)'
TS_TEXT_WIDTH = 34
TIME_TEXT_WIDTH = 15  # HH:MM:SS.ffffff
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
    mag = select(negative, (-(x + 1)).astype(np.uint64) + np.uint64(1), x.astype(np.uint64))
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
    return [(floor_mod(floor_div(x, 10), 10) + _ZERO).astype(np.uint8), (floor_mod(x, 10) + _ZERO).astype(np.uint8)]


_BC = b" (BC)"


def _date_cols(days: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Byte columns and keep masks of DuckDB's date text: the year with at least 4 digits
    (at most 7), '-MM-DD', and ' (BC)' for years up to 0 (written as ``1 - year``)."""
    n = days.shape[0]
    y, m, d = dates.civil(days)
    bc = y <= 0
    mag = select(bc, 1 - y, y)
    yc = [floor_mod(floor_div(mag, 10 ** p), 10).astype(np.uint8) for p in range(6, -1, -1)]
    dash = np.full(n, ord("-"), np.uint8)
    cols = [c + np.uint8(_ZERO) for c in yc] + [dash] + _two(m) + [dash] + _two(d)
    keep = [k for k in _significant(yc, 4).T] + [np.ones(n, bool)] * 6
    cols += [np.full(n, b, np.uint8) for b in _BC]
    keep += [bc] * len(_BC)
    return cols, keep


# DuckDB's ±infinity DATE and TIMESTAMP values (the extreme values of their storage types)
DATE_INFINITY, TS_INFINITY = 2**31 - 1, 2**63 - 1


def _with_infinities(mat: np.ndarray, lengths: np.ndarray, x: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding ``top`` / ``-top`` read 'infinity' / '-infinity', as DuckDB prints them
    (a select on every row: both texts are built for every row)."""
    pos, neg = x == top, x == -top
    cmat, clen = strings.select_constants([b"infinity", b"-infinity"], [pos, neg])
    either = pos | neg
    wide = np.zeros_like(mat)
    wide[:, :cmat.shape[1]] = cmat
    return select(either[:, None], wide, mat), select(either, clen, lengths)


def date_text(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DuckDB's text of a DATE ('YYYY-MM-DD', wider years, ' (BC)', '±infinity'); nothing fails."""
    cols, keep = _date_cols(days)
    out, lengths = strings.compact(np.stack(cols, axis=1), np.stack(keep, axis=1))
    out, lengths = _with_infinities(out[:, :DATE_TEXT_WIDTH], lengths, days, DATE_INFINITY)
    return out, lengths, np.zeros(days.shape[0], dtype=bool)


def _clock_cols(tod: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """'HH:MM:SS.ffffff' columns of microseconds since midnight and which of them are kept:
    the fraction's trailing zeros are dropped, and the point with an all-zero fraction."""
    n = tod.shape[0]
    secs, micros = floor_div(tod, 1_000_000), floor_mod(tod, 1_000_000)
    colon = np.full(n, ord(":"), np.uint8)
    cols = _two(floor_div(secs, 3600)) + [colon] + _two(floor_mod(floor_div(secs, 60), 60)) + [colon] + _two(floor_mod(secs, 60))
    frac = [floor_mod(floor_div(micros, 10 ** (5 - k)), 10).astype(np.uint8) for k in range(6)]
    tail = np.logical_or.accumulate(np.stack(frac, axis=1)[:, ::-1] != 0, axis=1)[:, ::-1]
    cols += [np.full(n, ord("."), np.uint8)] + [f + np.uint8(_ZERO) for f in frac]
    keep = [np.ones(n, bool)] * 8 + [micros != 0] + [tail[:, k] for k in range(6)]
    return cols, keep


def ts_text(us: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """'YYYY-MM-DD[ (BC)] HH:MM:SS[.ffffff]' with trailing zeros of the fraction dropped (as DuckDB)."""
    n = us.shape[0]
    days, tod = dates.split_ts(us)
    cols, keep = _date_cols(days)
    clock, clock_keep = _clock_cols(tod)
    cols += [np.full(n, ord(" "), np.uint8)] + clock
    keep += [np.ones(n, bool)] + clock_keep
    out, lengths = strings.compact(np.stack(cols, axis=1), np.stack(keep, axis=1))
    out, lengths = _with_infinities(out[:, :TS_TEXT_WIDTH], lengths, us, TS_INFINITY)
    return out, lengths, np.zeros(n, dtype=bool)


def time_text(tod: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A TIME as DuckDB writes it: 'HH:MM:SS[.ffffff]' (24:00:00 included)."""
    cols, keep = _clock_cols(tod)
    return strings.compact(np.stack(cols, axis=1), np.stack(keep, axis=1))


def bool_text(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return strings.select_constants([b"true", b"false"], [b, ~b])




def _is_digit(c: np.ndarray) -> np.ndarray:
    return (c >= _ZERO) & (c <= _ZERO + 9)


def _one_of(c: np.ndarray, chars: str) -> np.ndarray:
    out = np.zeros(c.shape, dtype=bool)
    for ch in chars:
        out = out | (c == ord(ch))
    return out


def parse_int(mat: np.ndarray, lengths: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Text to an integer as DuckDB reads it: ``space* [+-] digits [. digits] space*`` with
    at least one digit, single ``_`` between digits, rounded half away from zero on the
    first fractional digit.

    Returns (value, failed, unread): ``failed`` where DuckDB fails too (NULL under
    TRY_CAST), ``unread`` where the text is a form DuckDB also reads and dodb does not —
    hexadecimal (``0x1f``), binary (``0b11``), an exponent (``1e5``): an error in both CAST
    and TRY_CAST, never a silent NULL.  One fixed pass over the public width, each byte
    looking at most two bytes ahead.
    """
    n, w = mat.shape
    ins = strings.inside(lengths, w)
    codes = mat.astype(np.int64) * ins - (~ins).astype(np.int64)  # -1 past the end
    # 0 lead space, 1 sign, 2 digits, 3 point, 4 fraction, 5 trailing space, 6 bad
    state = np.zeros(n, dtype=np.int64)
    neg = np.zeros(n, dtype=bool)
    signed_ = np.zeros(n, dtype=bool)    # a sign was read
    ndigits = np.zeros(n, dtype=np.int64)
    mag = np.zeros(n, dtype=np.uint64)
    over = np.zeros(n, dtype=bool)
    first = np.zeros(n, dtype=np.int64)  # 1 + the first fractional digit (0: none yet)
    other = np.zeros(n, dtype=bool)
    prev = np.full(n, -1, dtype=np.int64)
    limit = np.uint64((1 << 64) - 1)
    for j in range(w):  # public loop over byte positions
        c = codes[:, j:j + 1].reshape(n)
        nx = codes[:, j + 1:j + 2].reshape(n) if j + 1 < w else np.full(n, -1, dtype=np.int64)
        nx2 = codes[:, j + 2:j + 3].reshape(n) if j + 2 < w else np.full(n, -1, dtype=np.int64)
        live = c >= 0
        space = _one_of(c, " \t\n\r\x0b\x0c")
        digit = _is_digit(c)
        sign = _one_of(c, "+-")
        point = c == ord(".")
        in_int, in_frac = state <= 2, (state == 3) | (state == 4)
        # forms DuckDB reads and dodb does not: 0x.. / 0b.. after a lone unsigned 0, e[+-]digits
        hexa = _one_of(c, "xX") & (_is_digit(nx) | _one_of(nx, "abcdefABCDEF"))
        bina = _one_of(c, "bB") & _one_of(nx, "01")
        prefix = (hexa | bina) & (state == 2) & (ndigits == 1) & (mag == 0) & ~signed_
        expo = _one_of(c, "eE") & ((ndigits > 0) | (first > 0)) & (_is_digit(prev) | (prev == ord("."))) & \
            (_is_digit(nx) | (_one_of(nx, "+-") & _is_digit(nx2)))
        other = other | (live & (state != 6) & (prefix | expo))
        group = (c == ord("_")) & _is_digit(prev) & _is_digit(nx) & (in_int | in_frac)  # 1_000: skipped
        nxt = select(space, select(state == 0, 0, select((state >= 2) & (state != 6), 5, 6)),
                       select(digit, select(in_int, 2, select(in_frac, 4, 6)),
                                select(sign & (state == 0), 1, select(point & in_int, 3, 6))))
        nxt = select(state == 6, 6, select(group, state, nxt))
        neg = select(live & sign & (state == 0), c == ord("-"), neg)
        signed_ = signed_ | (live & sign & (state == 0))
        d = select(digit, c - _ZERO, 0).astype(np.uint64)
        take = live & digit & in_int & (state != 6)
        over = over | (take & (mag > (limit - d) // np.uint64(10)))
        mag = select(take, mag * np.uint64(10) + d, mag)
        ndigits = ndigits + take
        first = select(live & digit & in_frac & (first == 0), d.astype(np.int64) + 1, first)
        state = select(live, nxt, state)
        prev = c
    seen = (ndigits > 0) | (first > 0)
    up = first >= 6
    mag = mag + up.astype(np.uint64)
    over = over | (up & (mag == 0))  # wrapped around on rounding up
    over = over & seen
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    over = over | select(neg, mag > np.uint64(-lo), mag > np.uint64(hi))
    signed = select(over, 0, mag).astype(np.uint64).view(np.int64)
    val = select(neg, -signed, signed)
    bad = (state == 6) | (state == 0) | (state == 1) | ~seen
    return val, (bad | over) & ~other, other
