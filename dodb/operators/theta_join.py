"""Oblivious cross product: the input of inequality, band and condition-less joins.

Slot ``i * n_R + j`` of the output holds left slot ``i`` next to right slot ``j``; it is
real when both are.  Both lanes are built by fixed-stride repeats of the inputs, so the
access pattern is a function of the two public padded sizes only; no size is released
here.  The join condition (``a.x < b.y``, ``a.x BETWEEN b.y - k AND b.y + k``, ``<>``)
is a Filter above it, whose DO compaction releases the noisy match count
(docs/design.md §Expression and cross joins).

Stability: a unit's ``s_L`` left rows each meet every real right row (at most the public
bound ``N_R`` of them), and likewise on the right, so the output stability is
``s_L * N_R + s_R * N_L``; a public side (stability 0) adds nothing and a one-row public
side gives back ``s_L`` (Paper 002's stability of a product, DESIGN §4).
"""
from __future__ import annotations

import numpy as np

from .context import ExecContext
from .table import PaddedTable

__all__ = ["cross_product", "cross_stability", "CROSS_PRODUCT_LIMIT"]

CROSS_PRODUCT_LIMIT = 1 << 24  # padded output rows a cross product may allocate


def cross_stability(s_left: int, s_right: int, rows_left: int, rows_right: int) -> int:
    """Rows of the product one unit can change: its rows on each side times the other side's bound.

    >>> cross_stability(2, 0, 100, 7)   # a private side against a public 7-row table
    14
    >>> cross_stability(1, 1, 10, 20)
    30
    """
    return s_left * rows_right + s_right * rows_left


def cross_product(left: PaddedTable, right: PaddedTable, *, stability: int,
                  ctx: ExecContext | None = None) -> PaddedTable:
    """Every (left slot, right slot) pair, padded to ``n_L * n_R`` slots (both public)."""
    ctx = ctx or ExecContext(mode="do")
    nl, nr = left.padded_size, right.padded_size
    if nl * nr > CROSS_PRODUCT_LIMIT:  # the planner refuses first; this guards direct calls
        raise MemoryError(f"cross product of {nl} x {nr} slots is above {CROSS_PRODUCT_LIMIT}")
    ctx.trace.record("cross:product", -1, nl, nr)
    # left slot i fills slots [i*nr, (i+1)*nr); right slot j sits at j, nr + j, 2*nr + j, …
    l_arrays = [np.repeat(a, nr, axis=0) for a in left.arrays()]
    r_arrays = [np.tile(a, (nl,) + (1,) * (a.ndim - 1)) for a in right.arrays()]
    real = l_arrays[-1] & r_arrays[-1]
    cols, i = [], 0
    for c in left.columns:
        k = c.n_arrays()
        cols.append(c.with_arrays(l_arrays[i:i + k]))
        i += k
    i = 0
    for c in right.columns:
        k = c.n_arrays()
        cols.append(c.with_arrays(r_arrays[i:i + k]))
        i += k
    return PaddedTable(left.names + right.names, cols, real, int(stability))
