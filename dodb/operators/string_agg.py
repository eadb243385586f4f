"""``string_agg(x, sep [ORDER BY …])`` on the group-by's sorted runs (docs/design.md §string_agg).

The rows arrive sorted by ``(is_dummy, keys, order-by keys)`` with run starts marked.
The result of a run is a VARCHAR of public width ``R·(w + s) − s``: ``w`` the input's
public string width, ``s`` the separator's byte length and ``R`` a public bound on rows
per group (the planner's degree bound of the group key, else the padded input size, and
never more than the padded ``n``).  Every row builds a fixed-width candidate from the
``R`` rows ending at it (fixed-stride shifts, one piece ``sep ‖ value`` of ``s + w`` bytes
per row), masked element-wise: a piece is kept only if its row is in the same run, real
and non-NULL, and its separator only if an included row precedes it in the run; then
:func:`~dodb.operators.expressions.strings.compact` moves the kept bytes to the front
in ``log2`` fixed shift rounds.  The run's last row holds the group's answer.  Without
GROUP BY the answer is on the last slot (public), so only that row's candidate of
``n·(s + w)`` bytes is built.  The access pattern depends on ``n``, ``R``, ``w`` and ``s``
only.  A bound above :data:`MAX_STRING_AGG_WIDTH` (or a buffer above
:data:`MAX_STRING_AGG_CELLS`) is refused, never truncated.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedQueryError
from .expressions.strings import compact, inside
from .table import Column

__all__ = ["MAX_STRING_AGG_WIDTH", "MAX_STRING_AGG_CELLS", "string_agg_width", "string_agg"]

MAX_STRING_AGG_WIDTH = 1 << 20   # bytes per aggregated value (1 MiB)
MAX_STRING_AGG_CELLS = 1 << 23   # candidate bytes over all slots of one GROUP BY (~30 working bytes each)


def string_agg_width(rows: int, w: int, s: int) -> int:
    """Public byte width of a string_agg over at most ``rows`` values of width ``w``."""
    return max(1, rows * (w + s) - s) if rows > 0 else 1


def check_string_agg(rows: int, total: int, w: int, s: int, grouped: bool) -> None:
    """Refuse (before admission: the plan's dry run calls this) a bound above the limits."""
    width = string_agg_width(rows, w, s)
    if width > MAX_STRING_AGG_WIDTH:
        raise UnsupportedQueryError(
            f"string_agg: its result's public width bound is {width} bytes ({rows} rows per group × "
            f"({w}-byte values + {s}-byte separator)), above the limit of {MAX_STRING_AGG_WIDTH} bytes; "
            "declare max_degree (or keys) for the group key in protect(), filter the rows first, or shorten "
            "the values (e.g. substring(x, 1, k))")
    cells = width * (total if grouped else 1) + (total * (w + s) if not grouped else 0)
    if cells > MAX_STRING_AGG_CELLS:
        raise UnsupportedQueryError(
            f"string_agg: {total} padded rows × {width}-byte results (≤{rows} rows per group of "
            f"{w}-byte values) need {cells} bytes of buffer, above {MAX_STRING_AGG_CELLS}; declare a smaller "
            "max_degree (or keys) for the group key in protect(), filter the rows first, or shorten the values "
            "(e.g. substring(x, 1, k))")


def _pieces(col: Column, sep: bytes, inc: np.ndarray, first: np.ndarray):
    """Per row: ``sep ‖ value`` (s + w bytes) and its keep mask."""
    n, w = col.values.shape
    s = len(sep)
    piece = np.zeros((n, s + w), dtype=np.uint8)
    if s:
        piece[:, :s] = np.frombuffer(sep, dtype=np.uint8)[None, :]
    piece[:, s:] = col.values
    keep = np.zeros((n, s + w), dtype=bool)
    keep[:, :s] = (inc & ~first)[:, None]
    keep[:, s:] = inside(col.lengths, w) & inc[:, None]
    return piece, keep


def string_agg(kern, col: Column, sep: str, rows: int, total: int, grouped: bool,
               real: np.ndarray, starts: np.ndarray) -> Column:
    """The runs' concatenations (value on each run's last row; NULL when no value is included)."""
    if not col.is_string:
        raise TypeError(f"string_agg over a {col.type} column: write the value as x::VARCHAR "
                        "(its width is then public)")
    sepb = sep.encode()
    n, w = col.values.shape
    s = len(sepb)
    check_string_agg(rows, total, w, s, grouped)
    inc = real & col.valid
    rank = kern.seg_prefix(inc, starts, "count")        # included rows so far in the run (inclusive)
    piece, keep = _pieces(col, sepb, inc, rank <= 1)
    if not grouped:
        width = string_agg_width(n, w, s)
        cand = piece.reshape(1, -1)
        ck = keep.reshape(1, -1)
        out, length = compact(cand, ck)
        out = out[:, :width] if out.shape[1] >= width else np.pad(out, ((0, 0), (0, width - out.shape[1])))
        valid = np.zeros(n, dtype=bool)
        valid[:] = rank[-1] > 0 if n else False
        vals = np.broadcast_to(out, (n, width)) if n else np.zeros((0, width), dtype=np.uint8)
        return Column(col.type, vals, valid, np.broadcast_to(length, (n,)).copy())
    r = max(1, min(rows, n))
    width = string_agg_width(r, w, s)
    gid = np.cumsum(starts)
    cand = np.zeros((n, r * (s + w)), dtype=np.uint8)
    ck = np.zeros((n, r * (s + w)), dtype=bool)
    for k in range(r):                      # piece of row i − d, d = r − 1 − k (a fixed stride)
        d = r - 1 - k
        lo, hi = k * (s + w), (k + 1) * (s + w)
        if d >= n:
            continue
        same = np.zeros(n, dtype=bool)
        same[d:] = gid[d:] == gid[: n - d]
        cand[d:, lo:hi] = piece[: n - d]
        ck[d:, lo:hi] = keep[: n - d]
        ck[:, lo:hi] = ck[:, lo:hi] & same[:, None]
    out, length = compact(cand, ck)
    out = out[:, :width]
    return Column(col.type, np.ascontiguousarray(out), rank > 0, length)
