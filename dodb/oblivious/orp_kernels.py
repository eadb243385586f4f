"""Compiled, branch-free kernels of the bucket oblivious random permutation (issue 13).

The bucket ORP of Asharov, Chan, Nayak, Pass, Ren and Shi ("Bucket Oblivious Sort: An
Extremely Simple Oblivious Sort", SOSA 2020), see docs/design.md §Sorting by random
permutation.  Rows live in one word-major block ``X`` of ``W`` words per row, word ``w``
of row ``i`` at ``X[w * N + i]`` (as in :mod:`.compiled`), ``N = B * Z`` rows in ``B``
buckets of capacity ``Z``.  Three words of a row have fixed roles:

* ``DUMMY`` (word 0): 0 for a real row, 1 for a dummy;
* ``LABEL`` (word 1): a uniform 64-bit word; bit ``i`` routes the row at level ``i``;
* the *extra* word (the last one, ``ex``): a second uniform word that, with ``LABEL``,
  orders a final bucket.  It is drawn after the levels, so the levels do not move it.

Both kernels follow :mod:`.compiled`'s rules (checked by ``tests/oblivious``): scalar
arguments are public sizes, every loop bound and index is a function of sizes and loop
counters, and data only ever chooses a value through an arithmetic mask.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as _ix

from .compiled import _OPTS

__all__ = ["merge_split_level", "bucket_sort_stage", "DUMMY", "LABEL"]

DUMMY, LABEL = 0, 1


@njit(**_OPTS)
def _compact_front(T, live, dist, W, M, rounds, msk):
    """Goodrich's order-preserving compaction of the rows with ``live == 1`` in ``T``.

    ``T`` holds ``M`` rows word-major (``T[w * M + t]``); ``dist[t]`` is the number of
    rows with ``live == 0`` before ``t``.  Round ``r`` moves every live row whose
    distance has bit ``r`` set left by ``2^r``: slot ``t`` reads slots ``t`` and ``t + s``
    whatever the flags, then every word is selected under the slot's mask (computed in a
    separate pass, so no loop is invariant in a data mask and LLVM cannot unswitch on it).
    Afterwards the live rows are at ``0 .. count-1`` in their input order and ``live``
    marks exactly those slots.
    """
    for r in range(rounds):
        s = 1 << r
        for t in range(M - s):
            here = live[_ix(t)] & ((dist[_ix(t)] >> np.uint64(r)) & np.uint64(1))
            inc = live[_ix(t + s)] & ((dist[_ix(t + s)] >> np.uint64(r)) & np.uint64(1))
            m = np.uint64(0) - inc
            msk[_ix(t)] = m
            live[_ix(t)] = inc | (live[_ix(t)] & (np.uint64(1) ^ here))
            dist[_ix(t)] = dist[_ix(t)] ^ ((dist[_ix(t)] ^ dist[_ix(t + s)]) & m)
        for t in range(max(M - s, 0), M):
            here = live[_ix(t)] & ((dist[_ix(t)] >> np.uint64(r)) & np.uint64(1))
            live[_ix(t)] = live[_ix(t)] & (np.uint64(1) ^ here)
        for w in range(W):
            o = w * M
            for t in range(M - s):
                x = T[_ix(o + t)]
                T[_ix(o + t)] = x ^ ((x ^ T[_ix(o + t + s)]) & msk[_ix(t)])


@njit(**_OPTS)
def merge_split_level(X, Y, W, N, Z, level, rounds, T, live, dist, msk, over):
    """One level of the bucket ORP: MergeSplit every bucket pair ``(j, j + 2^level)``.

    Moves words ``0 .. W-1`` of each row (the caller passes ``W`` without the extra word).

    For each pair (``j`` with bit ``level`` clear) the ``2Z`` rows of both buckets are
    copied to the scratch block ``T`` (``2Z`` rows, ``rounds = log2(2Z)``) twice: once to
    compact the real rows whose label bit ``level`` is 0 into the first ``Z`` slots, which
    become bucket ``j`` of ``Y``, once for label bit 1, which become bucket
    ``j + 2^level``.  Slots past the compacted reals are dummies (their ``DUMMY`` word is
    set from ``live``; their other words are stale copies, never read as data again).
    ``over[0]`` becomes nonzero if a side received more than ``Z`` reals (an overflow; a
    mask, not a branch).  Which rows are read and written depends on ``(N, Z, level)``.
    """
    M = 2 * Z
    half = 1 << level
    npairs = N // M
    for p in range(npairs):
        j = (p // half) * (2 * half) + (p % half)  # p-th bucket index with bit ``level`` clear
        for side in range(2):
            src0 = j * Z
            src1 = (j + half) * Z
            cnt = np.uint64(0)
            for t in range(Z):
                for u in range(2):
                    src = src0
                    if u == 1:
                        src = src1
                    tt = u * Z + t
                    real = np.uint64(1) ^ X[_ix(DUMMY * N + src + t)]
                    bit = (X[_ix(LABEL * N + src + t)] >> np.uint64(level)) & np.uint64(1)
                    sel = real & (bit ^ np.uint64(1 - side))
                    live[_ix(tt)] = sel
            for tt in range(M):
                dist[_ix(tt)] = np.uint64(tt) - cnt
                cnt += live[_ix(tt)]
            over[0] |= np.uint64(cnt > np.uint64(Z))
            for w in range(W):
                for t in range(Z):
                    T[_ix(w * M + t)] = X[_ix(w * N + src0 + t)]
                    T[_ix(w * M + Z + t)] = X[_ix(w * N + src1 + t)]
            _compact_front(T, live, dist, W, M, rounds, msk)
            dst = (j + side * half) * Z
            for w in range(1, W):
                for t in range(Z):
                    Y[_ix(w * N + dst + t)] = T[_ix(w * M + t)]
            for t in range(Z):
                Y[_ix(DUMMY * N + dst + t)] = np.uint64(1) ^ live[_ix(t)]


@njit(**_OPTS)
def bucket_sort_stage(X, W, N, k, j, ex, msk):
    """Stage ``(k, j)`` of the flip-form bitonic network on every aligned group of ``k`` rows.

    Applied for ``k = 2 .. Z`` it sorts each bucket of ``Z`` rows ascending by the key
    words ``(DUMMY, LABEL, ex)`` (``k <= Z`` keeps every comparator inside a bucket).
    Pass 1 computes each comparator's mask (lexicographic ``a > b`` over the key words,
    all words read); pass 2 xor-swaps every word of both rows under it.  ``j == k // 2``
    is the flip stage (row ``t`` against its mirror); the branch is on that public flag.
    """
    flip = 2 * j == k
    size = 2 * j
    if flip:
        size = k
    groups = N // size
    for g in range(groups):
        base = g * size
        for t in range(j):
            a = base + t
            b = base + j + t
            if flip:
                b = base + k - 1 - t
            x = X[_ix(ex * N + a)]
            y = X[_ix(ex * N + b)]
            m = np.uint64(0) - np.uint64(x > y)
            for w in range(LABEL, DUMMY - 1, -1):
                x = X[_ix(w * N + a)]
                y = X[_ix(w * N + b)]
                m = (np.uint64(0) - np.uint64(x > y)) | ((np.uint64(0) - np.uint64(x == y)) & m)
            msk[_ix(g * j + t)] = m
    for w in range(W):
        o = w * N
        for g in range(groups):
            base = g * size
            for t in range(j):
                a = base + t
                b = base + j + t
                if flip:
                    b = base + k - 1 - t
                d = (X[_ix(o + a)] ^ X[_ix(o + b)]) & msk[_ix(g * j + t)]
                X[_ix(o + a)] ^= d
                X[_ix(o + b)] ^= d
