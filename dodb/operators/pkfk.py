"""The oblivious PK–FK join: the fully oblivious baseline's join when one side is unique.

docs/design.md §Fair oblivious baselines.  When one side (the *PK side*) has at most one
row per key value — a declared key, or exact for public data — every row of the other
side (the *FK side*) has at most one partner, so the join's worst-case output is the FK
side itself.  The best oblivious algorithm then needs no expansion (the general
algorithm of :mod:`dodb.operators.join` expands both sides into the worst-case number
of slots and re-sorts one of them):

1. sort the union of both sides by ``(ineligible, key, side, position)`` — PK rows first
   in every key run — carrying both payloads (one sorting network over ``n_PK + n_FK``);
2. one segmented ``first`` scan per payload word copies the run's first row (its PK row,
   if it has one) onto every FK row of the run;
3. compact the FK rows back out (order-preserving, ``n_PK + n_FK`` → ``n_FK``), or to the
   smaller public worst case ``n_PK * deg_FK`` when a bound on the FK side makes it so.

Every step is a sorting network, a fixed-stride scan or a shifting-network compaction
whose pattern is fixed by ``n_PK``, ``n_FK`` and the public degree bounds: same public
sizes, same trace.  Declared bounds are enforced exactly as the general algorithm does
(only the first eligible PK row of a run matches; FK rows ranked past ``deg_FK`` in their
run do not), so both algorithms return the same rows.
"""
from __future__ import annotations

import numpy as np

from ..oblivious.rows import pack_rows, unpack_rows
from .context import ExecContext
from .keys import EncodedKey, KeyField, column_fields, pack_fields
from .table import Column, PaddedTable

__all__ = ["pk_fk_join"]


def _zeros_like(a: np.ndarray, n: int) -> np.ndarray:
    return np.zeros((n,) + a.shape[1:], dtype=a.dtype)


def pk_fk_join(ctx: ExecContext, left: PaddedTable, right: PaddedTable, lcols: list[Column],
               rcols: list[Column], l_ok: np.ndarray, r_ok: np.ndarray, *, pk_is_right: bool,
               fk_bound: int | None, worst: int, how: str, stability: int) -> PaddedTable:
    """Inner (or, with the PK side on the right, left outer) equi-join of ``left`` and ``right``.

    ``lcols``/``rcols``: the encoded-alike key columns; ``l_ok``/``r_ok``: rows that may match
    (real, no NULL key).  ``fk_bound``: the *declared* degree bound of the FK side (enforced).
    ``worst``: the public worst-case inner output size (``<= n_FK``).  Output columns: left's
    then right's; rows in key order.
    """
    kern = ctx.kernels
    fk, pk = (left, right) if pk_is_right else (right, left)
    fk_cols, pk_cols = (lcols, rcols) if pk_is_right else (rcols, lcols)
    fk_ok, pk_ok = (l_ok, r_ok) if pk_is_right else (r_ok, l_ok)
    nf, npk = fk.padded_size, pk.padded_size
    n = nf + npk
    ctx.trace.record("join:pk_fk", -1, npk, nf, worst)
    ok = np.concatenate([pk_ok, fk_ok])
    fields = [KeyField((~ok).astype(np.uint64), 1)]
    for p, f in zip(pk_cols, fk_cols):
        both = p.with_arrays([np.concatenate([a, b]) for a, b in zip(p.arrays(), f.arrays())])
        fields.extend(column_fields(both))
    side = np.concatenate([np.zeros(npk, np.uint64), np.ones(nf, np.uint64)])
    run_words, _ = pack_fields(fields, n)
    words, bits = pack_fields(fields + [KeyField(side, 1),
                                        KeyField(np.arange(n, dtype=np.uint64), max(1, n.bit_length()))], n)
    # both payloads travel as one row matrix each; the other side's part is zeros
    pk_arrays, fk_arrays = pk.arrays()[:-1], fk.arrays()[:-1]
    pk_matrix, pk_layout = pack_rows([np.concatenate([a, _zeros_like(a, nf)]) for a in pk_arrays]) \
        if n else (np.zeros((0, 1), np.uint64), None)
    fk_payload = [np.concatenate([_zeros_like(a, npk), a]) for a in fk_arrays + [fk.is_real]]
    payload = [ok, side, pk_matrix] + fk_payload + run_words
    _, (ok_s, side_s, pk_s, *rest) = kern.sort(EncodedKey(words, bits), payload)  # lint: public the network
    fk_s, run_s = rest[:len(fk_payload)], rest[len(fk_payload):]
    starts = np.zeros(n, dtype=bool)
    if n:
        starts[0] = True
        for w in run_s:
            starts[1:] |= w[1:] != w[:-1]
    is_pk = ok_s & (side_s == 0)
    is_fk = ok_s & (side_s == 1)
    # PK rows lead their run: the run has a partner iff its first row is an eligible PK row
    has_pk = kern.seg_first(is_pk, starts)
    matched = is_fk & has_pk
    if fk_bound is not None:
        matched &= kern.seg_prefix(is_fk, starts, "count") <= fk_bound
    filled = np.stack([kern.seg_first(np.ascontiguousarray(pk_s[:, j]), starts) for j in range(pk_s.shape[1])],
                      axis=1) if n else pk_s
    fk_row = side_s == 1
    keep = nf if how == "left" else worst
    kept, out = kern.compact(fk_row if how == "left" else matched, [matched, filled] + fk_s)
    matched_o, filled_o, *fk_o = [a[:keep] for a in out]
    matched_o = matched_o & kept[:keep]  # slots past the kept rows hold unspecified contents
    pk_o = unpack_rows(filled_o, pk_layout) if n else [_zeros_like(a, keep) for a in pk_arrays]
    fk_real = fk_o[-1]
    fk_cols_o = _columns(fk, fk_o[:-1])
    pk_cols_o = _columns(pk, pk_o)
    # a PK column's value counts only on matched rows (NULL elsewhere in a left join)
    pk_cols_o = [c.with_arrays([c.values, c.valid & matched_o] + c.arrays()[2:]) for c in pk_cols_o]
    real = fk_real if how == "left" else matched_o
    cols = fk_cols_o + pk_cols_o if pk_is_right else pk_cols_o + fk_cols_o
    names = fk.names + pk.names if pk_is_right else pk.names + fk.names
    return PaddedTable(names, cols, real, stability)


def _columns(like: PaddedTable, arrays: list[np.ndarray]) -> list[Column]:
    cols, i = [], 0
    for c in like.columns:
        k = c.n_arrays()
        cols.append(c.with_arrays(arrays[i:i + k]))
        i += k
    return cols
