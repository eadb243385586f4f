"""Exact 128-bit sums of integer and DECIMAL columns: the two's-complement words of a column,
carries through 32-bit limbs, and the nearest double of a 128-bit total.  Shared by
GROUP BY (``aggregate.py``), the global aggregate (``global_aggregate.py``) and windows
(``window.py``); docs/design.md §Aggregates.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .table import Column
from ..oblivious.select import as_float64, select

__all__ = ["int128_parts", "int128_to_float", "carry_limbs", "exceeds_38_digits", "sum_column", "avg_column", "TEN38"]

TEN38 = [(10 ** 38 >> (32 * i)) & 0xFFFFFFFF for i in range(4)]  # 32-bit limbs of 10^38, low first


def int128_parts(c: Column) -> tuple[np.ndarray, np.ndarray]:
    """(lo uint64, hi int64) two's-complement words of an integer or decimal column."""
    if c.is_decimal:
        return c.values[:, 0], c.values[:, 1].view(np.int64)
    if c.values.dtype == np.uint64:  # UBIGINT: above 2^63 the int64 view would wrap negative
        return c.values.copy(), np.zeros(c.values.shape[0], dtype=np.int64)
    v = c.values.astype(np.int64)
    return v.view(np.uint64), select(v < 0, -1, 0).astype(np.int64)


def carry_limbs(limbs: list) -> list:
    """Propagate carries through 32-bit limbs (low first); the top limb keeps the sign."""
    out, carry = [], 0
    for i, t in enumerate(limbs):
        t = t + carry
        if i == len(limbs) - 1:
            out.append(t)
        else:
            out.append(t & 0xFFFFFFFF)
            carry = t >> 32  # arithmetic shift: exact for negative limbs too
    return out


def int128_to_float(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Nearest double of ``hi * 2^64 + lo`` (exact int64 path when the value fits)."""
    small = lo.view(np.int64)
    fits = hi == select(small < 0, -1, 0)
    big = hi.astype(np.float64) * 18446744073709551616.0 + as_float64(lo)
    return select(fits, small.astype(np.float64), big)



def exceeds_38_digits(limbs: list) -> np.ndarray:
    """Whether the exact totals given by four 32-bit limb sums (low first, the top one signed)
    are at least 10^38 in magnitude: ``T + 10^38 <= 0`` or ``T - 10^38 >= 0`` by carry
    propagation, element-wise, with no branch on the values."""
    full = carry_limbs(list(limbs))
    up = carry_limbs([x + t for x, t in zip(full, TEN38)])
    down = carry_limbs([x - t for x, t in zip(full, TEN38)])
    return (up[3] < 0) | ((up[0] | up[1] | up[2] | up[3]) == 0) | (down[3] >= 0)


def _scale(col: Column) -> int:
    return col.type.scale if pa.types.is_decimal(col.type) else 0


def sum_column(col: Column, lo: np.ndarray, hi: np.ndarray, nonnull: np.ndarray) -> Column:
    """SUM of ``col`` from its exact totals' words: DECIMAL(38, s), zero words where NULL; a
    SUM of integers (or booleans) is DuckDB's HUGEINT."""
    # each word selected as one column (the fast one-dimensional select), then interleaved
    words = np.empty((int(nonnull.shape[0]), 2), dtype=np.uint64)
    words[:, 0] = select(nonnull, np.asarray(lo).view(np.uint64), np.uint64(0))
    words[:, 1] = select(nonnull, np.asarray(hi).view(np.uint64), np.uint64(0))
    huge = col.huge or not pa.types.is_decimal(col.type)
    return Column(pa.decimal128(38, _scale(col)), words, nonnull, huge=huge)


def avg_column(col: Column, lo: np.ndarray, hi: np.ndarray, count: np.ndarray, nonnull: np.ndarray) -> Column:
    """AVG of ``col`` from its exact totals' words and the counts: the nearest double of the
    total, divided by the count and by 10^scale (DuckDB's order of operations)."""
    return Column(pa.float64(), int128_to_float(lo, hi) / np.maximum(count, 1) / (10.0 ** _scale(col)), nonnull)
