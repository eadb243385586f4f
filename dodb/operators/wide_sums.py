"""Exact 128-bit sums of integer and DECIMAL columns: the two's-complement words of a column,
carries through 32-bit limbs, and the nearest double of a 128-bit total.  Shared by
GROUP BY (``aggregate.py``), the global aggregate (``global_aggregate.py``) and windows
(``window.py``); docs/design.md §Aggregates.
"""
from __future__ import annotations

import numpy as np

from .table import Column

__all__ = ["int128_parts", "int128_to_float", "carry_limbs", "TEN38"]

TEN38 = [(10 ** 38 >> (32 * i)) & 0xFFFFFFFF for i in range(4)]  # 32-bit limbs of 10^38, low first


def int128_parts(c: Column) -> tuple[np.ndarray, np.ndarray]:
    """(lo uint64, hi int64) two's-complement words of an integer or decimal column."""
    if c.is_decimal:
        return c.values[:, 0], c.values[:, 1].view(np.int64)
    if c.values.dtype == np.uint64:  # UBIGINT: above 2^63 the int64 view would wrap negative
        return c.values.copy(), np.zeros(c.values.shape[0], dtype=np.int64)
    v = c.values.astype(np.int64)
    return v.view(np.uint64), np.where(v < 0, -1, 0).astype(np.int64)


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
    fits = hi == np.where(small < 0, -1, 0)
    big = hi.astype(np.float64) * 18446744073709551616.0 + lo.astype(np.float64)
    return np.where(fits, small.astype(np.float64), big)
