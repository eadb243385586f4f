"""ORDER BY … LIMIT k OFFSET o, DISTINCT — operators that leak nothing new.

ORDER BY sorts obliviously by ``(is_dummy, keys)`` so dummies go last, then keeps the
slots ``[offset, offset + limit)``: positions fixed by the public ``limit``/``offset``.
Fewer real rows than ``limit`` simply leaves dummies in the window; how many is never
revealed.  Ties keep input order (SQL leaves tie order unspecified).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .aggregate import group_by
from .context import ExecContext, OpResult
from .keys import KeyField, encode_keys
from .table import PaddedTable

__all__ = ["SortKey", "order_by", "distinct"]


@dataclass(frozen=True)
class SortKey:
    column: str
    descending: bool = False
    nulls_first: bool = False


def order_by(
    table: PaddedTable,
    keys: list[SortKey],
    *,
    limit: int | None = None,
    offset: int = 0,
    mode: str = "do",
    ctx: ExecContext | None = None,
) -> OpResult:
    """Sort real rows by ``keys``; keep ``limit`` rows after ``offset`` (public numbers)."""
    ctx = ctx or ExecContext(mode=mode)
    if limit is not None and limit < 0 or offset < 0:
        raise ValueError("LIMIT and OFFSET must be non-negative")
    n = table.padded_size
    leaks_before = len(ctx.leaks)
    enc = encode_keys([table.column(k.column) for k in keys], [k.descending for k in keys],
                      leading=[KeyField((~table.is_real).astype(np.uint64), 1)], n=n,
                      nulls_first=[k.nulls_first for k in keys])
    _, arrays = ctx.kernels.sort(enc, table.arrays())
    out = table.with_arrays(arrays)
    if ctx.mode == "plain":
        real = int(out.is_real.sum())
        out = out.slice(0, real)
    stop = out.padded_size if limit is None else min(out.padded_size, offset + limit)
    start = min(offset, out.padded_size)
    out = out.slice(start, stop)
    ctx.trace.record("order_by:window", -1, n, start, stop)
    # A window can shift: s changed rows may push s rows out and bring s others in.
    s = table.stability
    if limit is not None or offset:
        s = min(2 * s, 2 * (limit if limit is not None else n))
    return OpResult(out.with_stability(s), ctx.leaks[leaks_before:], ctx.trace)


def distinct(table: PaddedTable, *, mode: str = "do", epsilon: float = 1.0, delta: float = 1e-6,
             ctx: ExecContext | None = None) -> OpResult:
    """SELECT DISTINCT: a group-by on every column without aggregates."""
    return group_by(table, list(table.names), [], mode=mode, epsilon=epsilon, delta=delta, ctx=ctx)
