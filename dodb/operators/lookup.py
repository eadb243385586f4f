"""Joins with a small public relation whose join key is unique: one pass per public row.

When the right side is public (part of the schema-level knowledge, e.g. ``nation``, or a
public table filtered by constants) and has at most one row per key, every private row
matches at most one public row.  Instead of sorting the private side, compare it with
each of the ``k`` public rows in turn: ``k`` linear passes whose pattern depends only on
``k`` and the padded size — fully oblivious, and much cheaper than a sort when ``k`` is
small.  Matched values are copied with element-wise selects over all rows, never with
an index gather (which would reveal which public row matched).

Sizes: an inner/semi/anti join then only *removes* rows, which is a filter on the private
side (sensitivity ``s_L``: the public side cannot change) — in ``do`` mode a DO filter,
in ``oblivious`` mode a mark.  A left join keeps every row: nothing is released.
"""
from __future__ import annotations

import numpy as np

from .context import ExecContext, OpResult
from .filter import filter_table
from .join import _normalise_key
from .keys import column_fields, pack_fields
from .table import Column, PaddedTable, unify_columns

__all__ = ["lookup_join", "LOOKUP_MAX_ROWS"]

LOOKUP_MAX_ROWS = 256  # public rows up to which k passes beat a sort


def _key_words(cols: list[Column], n: int) -> list[np.ndarray]:
    fields = []
    for c in cols:
        fields.extend(column_fields(c))
    words, _ = pack_fields(fields, n)
    return words


def lookup_join(left: PaddedTable, right: PaddedTable, left_keys: list[str], right_keys: list[str], *,
                how: str = "inner", mode: str = "do", epsilon: float = 1.0, delta: float = 1e-6,
                ctx: ExecContext | None = None) -> OpResult:
    """Join ``left`` with a public ``right`` whose ``right_keys`` are unique among its rows."""
    ctx = ctx or ExecContext(mode=mode)
    if right.stability != 0:
        raise ValueError("lookup_join needs a public right side")
    leaks_before = len(ctx.leaks)
    pub = right.select(right.names)  # public: its real rows may be read directly
    pub = pub.with_arrays([a[pub.is_real] for a in pub.arrays()])
    k = pub.padded_size
    n = left.padded_size
    lcols, rcols = [], []
    for a, b in zip(left_keys, right_keys):
        ca, cb = unify_columns([_normalise_key(left.column(a)), _normalise_key(pub.column(b))])
        lcols.append(ca)
        rcols.append(cb)
    lw, rw = _key_words(lcols, n), _key_words(rcols, k)
    if k and len({tuple(int(w[j]) for w in rw) for j in range(k)}) != k:
        raise ValueError("lookup_join: the public side's join key is not unique")
    ok = left.is_real.copy()
    for c in lcols:
        ok &= c.valid
    r_ok = np.ones(k, dtype=bool)
    for c in rcols:
        r_ok &= c.valid
    ctx.trace.record("lookup:passes", -1, n, k)
    matched = np.zeros(n, dtype=bool)
    out_cols = [Column(c.type, np.zeros((n,) + c.values.shape[1:], c.values.dtype), np.zeros(n, bool),
                       None if c.lengths is None else np.zeros(n, np.int32)) for c in pub.columns]
    for j in range(k):  # one pass per public row: j is public, the comparison covers every row
        eq = ok & r_ok[j]
        for lwd, rwd in zip(lw, rw):
            eq &= lwd == rwd[j]
        matched |= eq
        for oc, pc in zip(out_cols, pub.columns):
            sel = eq.reshape((n,) + (1,) * (oc.values.ndim - 1))
            oc.values[...] = np.where(sel, pc.values[j], oc.values)
            oc.valid[...] = np.where(eq, pc.valid[j], oc.valid)
            if oc.lengths is not None:
                oc.lengths[...] = np.where(eq, pc.lengths[j], oc.lengths)
    s = left.stability
    if how in ("semi", "anti"):
        keep = matched if how == "semi" else ~matched
        res = filter_table(left, keep, epsilon=epsilon, delta=delta, ctx=ctx)
        return OpResult(res.table.with_stability(s), ctx.leaks[leaks_before:], ctx.trace)
    joined = PaddedTable(left.names + pub.names, left.columns + out_cols, left.is_real, s, dict(left.meta))
    if how == "left":
        return OpResult(joined, ctx.leaks[leaks_before:], ctx.trace)
    res = filter_table(joined, matched, epsilon=epsilon, delta=delta, ctx=ctx)
    return OpResult(res.table.with_stability(s), ctx.leaks[leaks_before:], ctx.trace)
