"""The fully oblivious baseline's left join onto a unique right side (a PK–FK left join).

docs/design.md §Fair oblivious baselines.  When the right side (the *PK side*) has at most
one row per key value — a declared key, or exact for public data — every left row (the
*FK side*) has at most one partner, so ``left LEFT JOIN right`` has exactly the left
side's rows.  The general algorithm pads it to the inner join's worst case *plus* the
left side again (the anti join's rows with NULLs); this one returns ``n_FK`` slots:

1. sort the union of both sides by ``(ineligible, key, side, position)`` — PK rows first
   in every key run — carrying both payloads (one sorting network over ``n_PK + n_FK``);
2. one segmented ``first`` scan per payload word copies the run's first row (its PK row,
   if it has one) onto every FK row of the run;
3. compact the FK rows back out (order-preserving, ``n_PK + n_FK`` → ``n_FK``); the PK
   columns are NULL on rows without a partner.

Every step is a sorting network, a fixed-stride scan or a shifting-network compaction
whose pattern is fixed by ``n_PK``, ``n_FK`` and the public bounds: same public sizes,
same trace.  Declared bounds are enforced exactly as the general algorithm does (only the
first eligible PK row of a run matches; FK rows ranked past ``deg_FK`` in their run do
not), so both algorithms return the same rows.  Inner PK–FK joins use the general
algorithm, which skips its final re-sort when one side is unique (:mod:`.join`).
"""
from __future__ import annotations

import numpy as np

from ..oblivious.rows import pack_rows, unpack_rows
from .context import ExecContext
from .keys import EncodedKey, KeyField, column_fields, pack_fields, run_starts
from .table import Column, PaddedTable

__all__ = ["pk_fk_left_join"]


def _zeros_like(a: np.ndarray, n: int) -> np.ndarray:
    return np.zeros((n,) + a.shape[1:], dtype=a.dtype)


def pk_fk_left_join(ctx: ExecContext, fk: PaddedTable, pk: PaddedTable, fk_cols: list[Column],
                    pk_cols: list[Column], fk_ok: np.ndarray, pk_ok: np.ndarray, *, fk_bound: int | None,
                    stability: int) -> PaddedTable:
    """``fk LEFT JOIN pk`` where ``pk`` has at most one row per key.

    ``fk_cols``/``pk_cols``: the encoded-alike key columns; ``fk_ok``/``pk_ok``: rows that may
    match (real, no NULL key).  ``fk_bound``: the *declared* degree bound of the FK side
    (enforced).  Output: ``fk``'s columns then ``pk``'s, ``n_FK`` slots in key order.
    """
    kern = ctx.kernels
    nf, npk = fk.padded_size, pk.padded_size
    n = nf + npk
    ctx.trace.record("join:pk_fk_left", -1, npk, nf)
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
    starts = run_starts(run_s)
    is_pk = ok_s & (side_s == 0)
    is_fk = ok_s & (side_s == 1)
    # PK rows lead their run: the run has a partner iff its first row is an eligible PK row
    matched = is_fk & kern.seg_first(is_pk, starts)
    if fk_bound is not None:
        matched = matched & (kern.seg_prefix(is_fk, starts, "count") <= fk_bound)  # not in place (join._eligible)
    filled = np.stack([kern.seg_first(np.ascontiguousarray(pk_s[:, j]), starts) for j in range(pk_s.shape[1])],
                      axis=1) if n else pk_s
    # exactly the n_FK FK rows are kept (a public count): the first nf slots
    _, out = kern.compact(side_s == 1, [matched, filled] + fk_s)
    matched_o, filled_o, *fk_o = [a[:nf] for a in out]
    pk_o = unpack_rows(filled_o, pk_layout) if n else [_zeros_like(a, nf) for a in pk_arrays]
    fk_cols_o = _columns(fk, fk_o[:-1])
    # a PK column's value counts only on matched rows (NULL elsewhere)
    pk_cols_o = [c.with_arrays([c.values, c.valid & matched_o] + c.arrays()[2:]) for c in _columns(pk, pk_o)]
    return PaddedTable(fk.names + pk.names, fk_cols_o + pk_cols_o, fk_o[-1], stability)


def _columns(like: PaddedTable, arrays: list[np.ndarray]) -> list[Column]:
    cols, i = [], 0
    for c in like.columns:
        k = c.n_arrays()
        cols.append(c.with_arrays(arrays[i:i + k]))
        i += k
    return cols
