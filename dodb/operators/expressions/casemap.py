"""UPPER/LOWER with DuckDB's own code-point mapping, applied obliviously.
See docs/design.md §Expressions.

The mapping table is public (Unicode data): it is read once from DuckDB itself (``upper``
and ``lower`` of every code point) and compressed into runs ``(first, last, stride,
delta)``.  Every run is applied to every character slot with a ``where``; the mapped code
points are re-encoded and compacted (a mapping may change a character's byte length).
"""
from __future__ import annotations

import functools
import math

import duckdb
import numpy as np
from ...oblivious.select import floor_mod, select

from . import strings

__all__ = ["case_map", "case_width"]


@functools.lru_cache(maxsize=2)
def _runs(upper: bool) -> tuple[tuple[tuple[int, int, int, int], ...], float]:
    fn = "upper" if upper else "lower"
    con = duckdb.connect()
    try:
        rows = con.execute(
            f"SELECT i, unicode({fn}(chr(i::INTEGER))) FROM range(1, 1114112) t(i) "
            f"WHERE (i < 55296 OR i > 57343) AND {fn}(chr(i::INTEGER)) <> chr(i::INTEGER) ORDER BY i").fetchall()
    finally:
        con.close()
    pairs = [(int(a), int(b) - int(a)) for a, b in rows]  # in code-point order
    runs: list[list[int]] = []
    for cp, delta in pairs:
        if runs:
            first, last, stride, d = runs[-1]
            step = cp - last
            if d == delta and step in (1, 2) and (stride == 0 or stride == step):
                runs[-1] = [first, cp, step, d]
                continue
        runs.append([cp, cp, 0, delta])
    ratio = 1.0

    def blen(c: int) -> int:
        return 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4

    for cp, delta in pairs:
        ratio = max(ratio, blen(cp + delta) / blen(cp))
    return tuple((f, l, max(s, 1), d) for f, l, s, d in runs), ratio


def case_width(width: int, upper: bool) -> int:
    """Public byte-width bound of UPPER/LOWER of a ``width``-byte string."""
    return int(math.ceil(width * _runs(upper)[1]))


def case_map(mat: np.ndarray, lengths: np.ndarray, upper: bool) -> tuple[np.ndarray, np.ndarray]:
    runs, _ = _runs(upper)
    cp, st = strings.decode(mat, lengths)
    out = cp
    for first, last, stride, delta in runs:
        hit = (cp >= first) & (cp <= last)
        if stride > 1:
            hit = hit & (floor_mod(cp - first, stride) == 0)
        out = select(hit, cp + delta, out)
    return strings.encode(out, st, case_width(mat.shape[1], upper))
