"""The inverse of the bitonic merge: rows in merged order back to the two runs they came from.

:func:`~dodb.oblivious.sort.oblivious_merge` lays the first run, padding, then the second
run reversed into ``m = next_pow2(n)`` slots and runs the half-cleaner stages
``j = m/2 … 1``.  A stage with distance ``j = 2^b`` only ever decides bit ``b`` of a row's
slot: each comparator exchanges the two rows of a pair whose slots differ in bit ``b``
alone.  So before stage ``j`` a row's bit ``b`` is still the bit of its slot in the
merge's input, its *origin* ``o``, which the caller knows for every real row (the merge
key carries the row's position).

Running the stages backwards — ``j = 1 … m/2`` — and swapping a pair exactly when its
lower row's origin has bit ``b`` set (it came from the upper slot) puts every row back
where the forward stage found it.  The lower row decides alone: every forward comparator
puts the smaller row low and padding sorts after every real row, so after any stage a
pair never holds padding below a real row; a pair of padding rows may swap or not, since
nothing tells them apart and no one reads them.  After the last stage every real row is
in its input slot: the first run at ``[0, split)``, the second reversed at the end.

Each stage touches every pair under a mask computed from the two rows' words, so the
access pattern is that of ``log2 m`` butterfly stages, fixed by ``m`` (docs/design.md
§Oblivious merge).  It replaces two compactions (one per run) by one pass of the merge's
own cost; the small stages run block by block while a block is in cache, as the sort's do.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .backend import use_compiled
from .rows import block_words, fill_word_block, from_word_block
from .select import select
from .sort import BLOCK, next_pow2
from .threads import run_parts, threads
from .trace import Trace

__all__ = ["oblivious_unmerge", "unmerge_origins"]

_PADDING = np.uint64(0xFFFFFFFFFFFFFFFF)
TILE_COLUMNS = 64  # stages shorter than this run on a block's transpose (runs of BLOCK/64 rows)


def unmerge_origins(position: np.ndarray, split: int, m: int) -> np.ndarray:
    """Each row's slot in the merge's input from its position in the two runs' concatenation:
    ``p`` in the first run, ``m - 1 - (p - split)`` in the second (placed reversed at the end).

    >>> unmerge_origins(np.array([0, 3, 1, 2]), 2, 4).tolist()
    [0, 2, 1, 3]
    """
    p = np.asarray(position).astype(np.uint64)
    return select(p < np.uint64(split), p, np.uint64(m - 1 + split) - p)


def _numpy_stages(X: np.ndarray, m: int) -> None:
    """The reference: every reversed stage as whole-array element-wise selects."""
    j, b = 1, 0
    while j < m:
        V = X.reshape(X.shape[0], m // (2 * j), 2, j)
        lo, hi = V[:, :, 0, :], V[:, :, 1, :]
        swap = ((lo[0] >> np.uint64(b)) & np.uint64(1)).astype(bool)
        new_lo, new_hi = select(swap[None], hi, lo), select(swap[None], lo, hi)
        V[:, :, 0, :] = new_lo
        V[:, :, 1, :] = new_hi
        j, b = 2 * j, b + 1


def _compiled_stages(X: np.ndarray, m: int) -> None:
    """The compiled stages (:mod:`.compiled_sort`): blocks of ``BLOCK`` rows in cache, split
    between threads block by block, then the long stages, split within each group."""
    from . import compiled_sort

    nw = int(X.shape[0])
    flat = X.reshape(-1)  # a view: the kernels write X itself
    blk = min(BLOCK, m)
    parts = max(1, min(threads(), m // blk))
    cols = min(TILE_COLUMNS, blk)
    # per thread: one chunk's masks and a transposed block
    scratch = [(np.empty(compiled_sort.CHUNK, dtype=np.uint64), np.empty(nw * blk, dtype=np.uint64))
               for _ in range(parts)]

    def on_threads(call) -> None:
        run_parts([(call, (part, msk, T)) for part, (msk, T) in enumerate(scratch)])

    nblocks = m // blk
    share = -(-nblocks // parts)
    zero = np.int64(0)
    on_threads(lambda part, msk, T: compiled_sort.unmerge_pass(
        flat, nw, m, blk, cols, min(part * share, nblocks), min((part + 1) * share, nblocks), zero, np.uint64(0),
        zero, np.int64(1), msk, T))
    j, b = blk, blk.bit_length() - 1
    while j < m:
        on_threads(lambda part, msk, T, j=j, b=b: compiled_sort.unmerge_pass(
            flat, nw, m, blk, cols, zero, zero, np.int64(j), np.uint64(b), np.int64(part), np.int64(parts), msk, T))
        j, b = 2 * j, b + 1


def oblivious_unmerge(
    origin: np.ndarray,
    payload: Sequence[np.ndarray],
    *,
    split: int,
    trace: Trace | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Rows in the order :func:`~dodb.oblivious.sort.oblivious_merge` gave, back to its two
    input runs: ``(first run's payload, second run's payload)``, each in its input order.

    ``origin[i]``: the input row (``0 <= origin < n``, the runs concatenated) that merged
    row ``i`` came from — private, read only through masks.  Its values must be those the
    merge of the same ``n`` rows and ``split`` produced (a permutation from a merge).
    """
    n = int(np.asarray(origin).shape[0])
    if not 0 <= split <= n:
        raise ValueError("split must lie inside the rows")
    payload = [np.asarray(p) for p in payload]
    trace = trace if trace is not None else Trace()
    m = next_pow2(n)
    X = np.empty((1 + block_words(payload), m), dtype=np.uint64)
    buf = trace.alloc(m, int(X.shape[0]) + 1, "unmerge")
    X[0, :n] = unmerge_origins(origin, split, m)
    X[0, n:] = _PADDING
    X[1:, n:] = 0
    widths = fill_word_block(payload, X[1:, :n])
    trace.record("unmerge:butterfly", buf, n, m, min(BLOCK, m))
    (_compiled_stages if use_compiled() else _numpy_stages)(X, m)
    right = n - split
    first = from_word_block(X[1:, :split], payload, widths, split)
    second = from_word_block(np.ascontiguousarray(X[1:, m - right:][:, ::-1]), payload, widths, right)
    return first, second
