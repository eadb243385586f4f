"""UNION [ALL], INTERSECT, EXCEPT (set semantics, NULLs equal as in SQL set operations).

UNION ALL concatenates (sizes add; both are public).  UNION is UNION ALL + DISTINCT.
INTERSECT and EXCEPT tag both inputs, sort obliviously by ``(is_dummy, row)``, count the
real rows of each side per run, and keep one row per run where the tags say so — one
noisy release of the result size, like a group-by.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .context import ExecContext, OpResult
from .keys import KeyField, encode_keys, run_starts
from .sort_limit import distinct
from .table import Column, PaddedTable, concat_tables

__all__ = ["union_all", "union", "intersect", "except_", "set_operation"]


def _check_compatible(a: PaddedTable, b: PaddedTable) -> None:
    if len(a.columns) != len(b.columns):
        raise ValueError("set operation inputs have different numbers of columns")


def union_all(left: PaddedTable, right: PaddedTable, *, ctx: ExecContext | None = None, **_) -> OpResult:
    ctx = ctx or ExecContext()
    _check_compatible(left, right)
    right = PaddedTable(list(left.names), right.columns, right.is_real, right.stability)
    out = concat_tables([left, right])
    ctx.trace.record("union_all", -1, left.padded_size, right.padded_size)
    return OpResult(out, [], ctx.trace)


def union(left: PaddedTable, right: PaddedTable, *, mode: str = "do", epsilon: float = 1.0,
          delta: float = 1e-6, ctx: ExecContext | None = None) -> OpResult:
    ctx = ctx or ExecContext(mode=mode)
    both = union_all(left, right, ctx=ctx).table
    return distinct(both, epsilon=epsilon, delta=delta, ctx=ctx)


def _tagged_runs(ctx: ExecContext, left: PaddedTable, right: PaddedTable):
    right = PaddedTable(list(left.names), right.columns, right.is_real, right.stability)
    both = concat_tables([left, right])
    n = both.padded_size
    tag = np.concatenate([np.zeros(left.padded_size, np.int8), np.ones(right.padded_size, np.int8)])
    enc = encode_keys(both.columns, leading=[KeyField((~both.is_real).astype(np.uint64), 1)], n=n)
    _, arrays = ctx.kernels.sort(enc, both.arrays() + [tag])
    tag = arrays.pop()
    t = both.with_arrays(arrays)
    key = encode_keys(t.columns, leading=[KeyField((~t.is_real).astype(np.uint64), 1)], n=n)
    starts = run_starts(key.words)
    in_l = ctx.kernels.seg_reduce(t.is_real & (tag == 0), starts, "count") > 0
    in_r = ctx.kernels.seg_reduce(t.is_real & (tag == 1), starts, "count") > 0
    ends = np.zeros(n, dtype=bool)
    if n:
        ends[:-1] = starts[1:]
        ends[-1] = True
    return t, ends & t.is_real, in_l, in_r


def set_operation(kind: str, left: PaddedTable, right: PaddedTable, *, mode: str = "do",
                  epsilon: float = 1.0, delta: float = 1e-6, ctx: ExecContext | None = None) -> OpResult:
    """``kind`` in union_all, union, intersect, except."""
    ctx = ctx or ExecContext(mode=mode)
    _check_compatible(left, right)
    if kind == "union_all":
        return union_all(left, right, ctx=ctx)
    if kind == "union":
        return union(left, right, epsilon=epsilon, delta=delta, ctx=ctx)
    if kind not in ("intersect", "except"):
        raise ValueError(f"unknown set operation {kind!r}")
    leaks_before = len(ctx.leaks)
    t, rows, in_l, in_r = _tagged_runs(ctx, left, right)
    keep = rows & in_l & (in_r if kind == "intersect" else ~in_r)
    s = ctx.group_stability(left.stability + right.stability)
    if ctx.mode == "plain":
        out = t.with_arrays([a[keep] for a in t.arrays()[:-1]] + [np.ones(int(keep.sum()), bool)])
    elif ctx.mode == "oblivious":
        out = t.with_arrays(t.arrays()[:-1] + [keep])
    else:
        name = ctx.op_name(kind)
        live, moved = ctx.kernels.compact(keep, t.arrays()[:-1])
        noisy = int(ctx.release(name, "rows", keep.sum(keepdims=True), epsilon, delta, s)[0])
        m = min(noisy, t.padded_size)
        out = t.with_arrays([a[:m] for a in moved] + [live[:m]])
    return OpResult(out.with_stability(s), ctx.leaks[leaks_before:], ctx.trace)


def intersect(left, right, **kw) -> OpResult:
    return set_operation("intersect", left, right, **kw)


def except_(left, right, **kw) -> OpResult:
    return set_operation("except", left, right, **kw)
