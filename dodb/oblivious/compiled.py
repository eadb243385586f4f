"""Compiled, branch-free versions of the oblivious kernels (numba; issue 13).

The numpy modules (``sort``, ``compact``, ``scan``) are the *reference*: they record the
trace and, with the ``numpy`` backend (:mod:`.backend`), do the work.  With the default
``compiled`` backend the same Python wrappers record the same trace events from public
sizes and call the kernels below instead.  Each kernel applies exactly the reference's
operations (same comparators of the same network, same shift rounds, same one-pass
scans), so outputs are identical; only the loop order inside a stage may differ, and
every comparator / select inside one stage or round is independent of the others.  The
shifting rounds also interleave consecutive rounds (a wavefront, :func:`compact_rounds`),
in an order fixed by public sizes in which every select still reads the values the
round-by-round order gives it.

Rules every ``@njit`` kernel here follows (checked by ``tests/oblivious``):

* data only ever arrives in arrays; every scalar argument is a public size or a public
  operator code, so loop bounds and indices are functions of sizes and loop counters;
* no ``if``/``while``/conditional expression/short-circuit operator on a value loaded
  from an array: compare-exchange and selects are arithmetic masks
  (``m = 0 - uint64(cond)``, ``x ^ ((x ^ y) & m)``), never branches or data-chosen indices;
* indices are cast to unsigned (``_ix``) so numba emits no negative-index wrap-around and
  the loops over contiguous runs vectorise.

``tests/oblivious/ir_lint.py`` checks the LLVM IR numba produces for every compiled
signature (its docstring says what that proves and what it does not); ``lint_rules.py``
checks this source.  Compile options: ``cache=True`` (compiled once per machine and
numba version, into the per-user folder of :mod:`.kernel_cache`),
``nogil``, ``boundscheck=False``, ``error_model="numpy"`` (no zero-division branches) and
no fastmath, so floating-point sums round exactly like the reference.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as _llir
from numba import njit, types
from numba import uint64 as _ix
from numba.extending import intrinsic

from . import kernel_cache

__all__ = [
    "compact_rounds", "distribute_rounds", "compact_blocking", "scratch_rows", "fill_pass",
    "scan_pass", "lex_scan_pass", "lookup_rows", "checksum_words", "SCAN_OPS",
]



_CACHED = kernel_cache.configure()  # before the first decorator: numba picks the folder then
kernel_cache.announce()
_OPTS = dict(cache=_CACHED, nogil=True, boundscheck=False, error_model="numpy")
_ONE = np.uint64(1)
_SIGN = np.uint64(1 << 63)

# Annotation of scalar kernel arguments that carry data (the source lint treats every other
# scalar argument as a public size); never evaluated (postponed annotations).
Data = np.uint64

# scan operator codes (public): how two 64-bit words combine
SCAN_OPS = {"add": 0, "fadd": 1, "smin": 2, "smax": 3, "umin": 4, "umax": 5, "first": 6}


@intrinsic
def _f2u(typingctx, x):
    """The bits of a float64 as uint64 (an LLVM ``bitcast``: no branch, no memory)."""
    if x != types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _llir.IntType(64))

    return types.uint64(types.float64), codegen


@intrinsic
def _u2f(typingctx, x):
    """Inverse of :func:`_f2u`."""
    if x != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _llir.DoubleType())

    return types.float64(types.uint64), codegen


@intrinsic
def opaque(typingctx, x):
    """``x`` unchanged, through an empty inline-assembly statement the optimiser cannot see
    into.  A mask made from a loaded flag (``0 - uint64(flag)``) lets LLVM read
    ``b ^ ((a ^ b) & m)`` as a select between two loads, which the x86 backend turned into
    one load from a selected address in the scalar tail of a vectorised loop (measured by
    the address audit in ``compiled_int128.where_rows``, docs/design.md §Address audit);
    behind this barrier ``m`` is any word, so the bitwise form stays."""
    if x != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        fty = _llir.FunctionType(_llir.IntType(64), [_llir.IntType(64)])
        return builder.asm(fty, "", "=r,0", [args[0]], False)

    return types.uint64(types.uint64), codegen


# --------------------------------------------------------------------------- sorting network
# The compiled sorting network lives in :mod:`.compiled_sort` (same rules, same options).


# --------------------------------------------------------------------------- shifting networks


@njit(inline="always", **_OPTS)
def _sel64(mask: Data, a: Data, b: Data):
    """``a`` where ``mask`` is all ones, ``b`` where it is zero (int64 or uint64 words)."""
    return b ^ ((a ^ b) & mask)


_RUN = 64  # shifts from here on select words in place, in runs of s slots (no copy through tmp)


def compact_blocking(n: int, words: int) -> tuple[int, int]:
    """Cache blocking of the shifting rounds: ``(chunk, wave)``, functions of public sizes only.

    ``chunk`` rows of every word column plus the metadata (``words + 2`` words a row) take
    about 256 KiB, so a chunk and the ``2^wave <= chunk / 2`` rows the wavefront lags
    behind it stay in L2 (512 KiB assumed).  The ``wave`` smallest-shift rounds run
    together in one sweep (:func:`compact_rounds`); ``n`` is accepted so the choice may
    depend on it.
    """
    del n
    chunk = max(1024, (256 << 10) // (8 * (words + 2)))
    wave = (chunk // 2).bit_length() - 1
    return chunk, wave


def scratch_rows(n: int, rounds: int, chunk: int, wave: int) -> tuple[int, int]:
    """Lengths of the kernels' two scratch arrays ``(mk, tmp)``, from public sizes.

    ``tmp`` holds one piece of the wave (at most one sweep step of its slowest round,
    ``chunk + 2^wave`` slots); ``mk`` the masks of one piece, or of a whole round when
    some rounds run alone (``rounds > wave``).
    """
    t = max(1, min(n, chunk + (1 << wave)))
    return (max(t, n) if rounds > wave else t), t


@njit(**_OPTS)
def _compact_span(live, dist, cols, words, n, r, lo, hi, m, mk, tmp):
    """Round ``r`` of :func:`compact_rounds` on slots ``lo <= i < hi``, ascending.

    Piece by piece (``m`` slots): every receiving slot's mask and new ``dist`` from the
    old rows ``i`` and ``i + s`` (nothing is written yet, so all reads see the round's
    inputs), then ``live``/``dist``, then each word column, then the piece's tail slots
    ``i >= n - s`` (nothing arrives there; the flag is cleared when the row leaves).  A
    piece writes only its own slots, and those are read only by slots at or below them,
    which came earlier.  A column is selected into ``tmp`` and copied back, so that no
    loop reads and writes overlapping runs of one array (``x[i] = f(x[i], x[i + s])`` in
    place with ``s`` below the piece's length does not vectorise: numba's loops get a
    run-time overlap check, which fails, and run scalar).  From ``s >= _RUN`` on, the
    columns are selected in place in runs of ``s`` slots instead (a run's sources lie
    above it, so the check passes), without the copy.
    """
    s = 1 << r
    for a in range(lo, hi, m):
        b = min(a + m, hi)
        e = max(min(b, n - s), a)  # slots a .. e - 1 can receive a row
        for j in range(e - a):
            i = a + j
            mk[_ix(j)] = np.uint64(0) - np.uint64(live[_ix(i + s)] & np.uint8((dist[_ix(i + s)] >> r) & 1))
        for j in range(e - a):
            tmp[_ix(j)] = np.uint64(_sel64(np.int64(mk[_ix(j)]), dist[_ix(a + j + s)], dist[_ix(a + j)]))
        for j in range(e - a):
            i = a + j
            here = live[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
            live[_ix(i)] = np.uint8(mk[_ix(j)] & _ONE) | (live[_ix(i)] & (np.uint8(1) ^ here))
            dist[_ix(i)] = np.int64(tmp[_ix(j)])
        for w in range(words):
            o = w * n + a
            if s >= _RUN:  # in place, in runs of s slots: a run's sources lie above it
                for x in range(0, e - a, s):
                    for j in range(x, min(x + s, e - a)):
                        cols[_ix(o + j)] = _sel64(mk[_ix(j)], cols[_ix(o + j + s)], cols[_ix(o + j)])
            else:
                for j in range(e - a):
                    tmp[_ix(j)] = _sel64(mk[_ix(j)], cols[_ix(o + j + s)], cols[_ix(o + j)])
                for j in range(e - a):
                    cols[_ix(o + j)] = tmp[_ix(j)]
        for i in range(e, b):
            here = live[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
            live[_ix(i)] = live[_ix(i)] & (np.uint8(1) ^ here)


@njit(**_OPTS)
def _compact_round(live, dist, cols, words, n, r, mk):
    """Round ``r`` of :func:`compact_rounds` alone, over the whole array (``len(mk) >= n - s``).

    The masks (and ``live``/``dist``) of every slot first, then each word column in one
    ascending pass, as the round-by-round kernel did; every pass runs in runs of ``s``
    slots, whose sources ``i + s`` lie above the run, so the selects are written in place
    and vectorise.  Column by column, the whole array streams: measured faster here than
    row chunks for the large shifts (a chunk touches ``words`` distant runs in turn).
    """
    s = 1 << r
    for a in range(0, n - s, s):
        for i in range(a, min(a + s, n - s)):
            mk[_ix(i)] = np.uint64(0) - np.uint64(live[_ix(i + s)] & np.uint8((dist[_ix(i + s)] >> r) & 1))
        for i in range(a, min(a + s, n - s)):
            here = live[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
            live[_ix(i)] = np.uint8(mk[_ix(i)] & _ONE) | (live[_ix(i)] & (np.uint8(1) ^ here))
            dist[_ix(i)] = _sel64(np.int64(mk[_ix(i)]), dist[_ix(i + s)], dist[_ix(i)])
    for i in range(max(n - s, 0), n):
        here = live[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
        live[_ix(i)] = live[_ix(i)] & (np.uint8(1) ^ here)
    for w in range(words):
        o = w * n
        for a in range(0, n - s, s):
            for i in range(a, min(a + s, n - s)):
                cols[_ix(o + i)] = _sel64(mk[_ix(i)], cols[_ix(o + i + s)], cols[_ix(o + i)])


@njit(inline="always", **_OPTS)
def _lead_front(p, r, n):
    """Slots round ``r`` of a left-shifting wave has finished when round 0 has finished ``p``."""
    return n if p >= n else max(0, p - ((2 << r) - 2))


@njit(**_OPTS)
def compact_rounds(live, dist, cols, words, n, rounds, mk, tmp, chunk, wave):
    """Goodrich's compaction rounds (``compact.compact``), in place, cache blocked.

    Round ``r`` shifts left by ``s = 2^r`` every live row whose distance has bit ``r``
    set: slot ``i < n - s`` takes row ``i + s`` under the mask ``live[i+s] & bit r of
    dist[i+s]``, reading rows ``i`` and ``i + s`` whatever the flags; slot ``i >= n - s``
    only loses its row when that row leaves.  ``live`` is 0/1 bytes, ``dist`` int64,
    ``cols`` ``words`` columns of ``n``; ``mk``/``tmp`` are scratch (:func:`scratch_rows`).

    Schedule (``chunk``, ``wave``: :func:`compact_blocking`, public).  Rounds
    ``0 .. wave-1`` run as a wavefront in one ascending sweep: step ``t`` moves round 0's
    frontier ``P`` to ``min((t+1)·chunk, n)`` and round ``r`` to ``P - (2 + 4 + … + 2^r)``
    (``n`` at the last step), each round continuing ascending from where it stopped.
    Round ``r`` at slot ``i`` needs round ``r - 1``'s values at ``i`` and ``i + 2^r``:
    both are done (``i + 2^r`` is below round ``r - 1``'s frontier) and not yet
    overwritten by round ``r`` (which has written only slots below its current piece);
    round ``r - 1`` reads only slots at or above its own start, which round ``r`` has
    not reached.  So every slot of every round reads exactly the values the round-by-round
    order gives it: identical outputs.  The other rounds run one by one over the whole
    array (:func:`_compact_round`).  Which slots are read and written, in which
    order, depends on ``n``, ``words``, ``rounds``, ``chunk``, ``wave`` and the scratch
    lengths only (all public), never on the flags or distances.
    """
    kw = min(wave, rounds)
    steps = (n + chunk - 1) // chunk if kw > 0 else 0
    t_rows = min(tmp.shape[0], mk.shape[0])
    for t in range(steps):
        p0 = t * chunk
        p1 = min(p0 + chunk, n)
        for r in range(kw):
            _compact_span(live, dist, cols, words, n, r, _lead_front(p0, r, n), _lead_front(p1, r, n),
                          t_rows, mk, tmp)
    for r in range(kw, rounds):
        _compact_round(live, dist, cols, words, n, r, mk)


@njit(**_OPTS)
def _distribute_span(occ, dist, cols, words, n, r, lo, hi, m, mk, tmp):
    """Round ``r`` of :func:`distribute_rounds` on slots ``lo <= i < hi``, descending.

    :func:`_compact_span` mirrored: pieces of ``m`` slots from the top down (within a
    piece all reads come before any write), slot ``i`` reading ``i`` and ``i - s``; then
    the piece's tail slots ``i < s``.
    """
    s = 1 << r
    for t in range(0, hi - lo, m):
        b = hi - t
        a = max(b - m, lo)
        e = min(max(a, s), b)  # slots e .. b - 1 can receive a row
        for j in range(b - e):
            i = e + j
            mk[_ix(j)] = np.uint64(0) - np.uint64(occ[_ix(i - s)] & np.uint8((dist[_ix(i - s)] >> r) & 1))
        for j in range(b - e):
            tmp[_ix(j)] = np.uint64(_sel64(np.int64(mk[_ix(j)]), dist[_ix(e + j - s)], dist[_ix(e + j)]))
        for j in range(b - e):
            i = e + j
            here = occ[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
            occ[_ix(i)] = np.uint8(mk[_ix(j)] & _ONE) | (occ[_ix(i)] & (np.uint8(1) ^ here))
            dist[_ix(i)] = np.int64(tmp[_ix(j)])
        for w in range(words):
            o = w * n + e
            if s >= _RUN:  # in place, in runs of s slots from the top: a run's sources lie below it
                for x in range(0, b - e, s):
                    for j in range(max(b - e - x - s, 0), b - e - x):
                        cols[_ix(o + j)] = _sel64(mk[_ix(j)], cols[_ix(o + j - s)], cols[_ix(o + j)])
            else:
                for j in range(b - e):
                    tmp[_ix(j)] = _sel64(mk[_ix(j)], cols[_ix(o + j - s)], cols[_ix(o + j)])
                for j in range(b - e):
                    cols[_ix(o + j)] = tmp[_ix(j)]
        for i in range(a, e):
            here = occ[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
            occ[_ix(i)] = occ[_ix(i)] & (np.uint8(1) ^ here)


@njit(**_OPTS)
def _distribute_round(occ, dist, cols, words, n, r, mk):
    """Round ``r`` of :func:`distribute_rounds` alone: :func:`_compact_round` mirrored, in
    runs of ``s`` slots from the top down (a run's sources ``i - s`` lie below it)."""
    s = 1 << r
    for t in range(0, n - s, s):
        b = n - t
        a = max(b - s, s)
        for i in range(a, b):
            mk[_ix(i)] = np.uint64(0) - np.uint64(occ[_ix(i - s)] & np.uint8((dist[_ix(i - s)] >> r) & 1))
        for i in range(a, b):
            here = occ[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
            occ[_ix(i)] = np.uint8(mk[_ix(i)] & _ONE) | (occ[_ix(i)] & (np.uint8(1) ^ here))
            dist[_ix(i)] = _sel64(np.int64(mk[_ix(i)]), dist[_ix(i - s)], dist[_ix(i)])
    for i in range(min(s, n)):
        here = occ[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
        occ[_ix(i)] = occ[_ix(i)] & (np.uint8(1) ^ here)
    for w in range(words):
        o = w * n
        for t in range(0, n - s, s):
            b = n - t
            for i in range(max(b - s, s), b):
                cols[_ix(o + i)] = _sel64(mk[_ix(i)], cols[_ix(o + i - s)], cols[_ix(o + i)])


@njit(inline="always", **_OPTS)
def _trail_front(q, r, kw, n):
    """Lowest slot round ``r`` of a right-shifting wave (rounds ``kw-1 .. 0``) has finished
    when its first round ``kw - 1`` has finished down to ``q``."""
    return 0 if q <= 0 else min(n, q + (1 << (kw - 1)) - (1 << r))


@njit(**_OPTS)
def distribute_rounds(occ, dist, cols, words, n, rounds, mk, tmp, chunk, wave):
    """Distribution rounds (``compact.distribute``): shifts right, largest first, in place.

    Round ``r`` (``s = 2^r``, rounds ``rounds-1 .. 0``): slot ``i >= s`` takes row
    ``i - s`` where it moves, slot ``i < s`` only loses its row when that row leaves;
    each round reads every slot's old row ``i - s`` before overwriting it.

    Schedule: :func:`compact_rounds` mirrored.  The large-shift rounds
    ``rounds-1 .. wave`` run one by one (:func:`_distribute_round`); the last ``wave`` rounds (``wave-1 .. 0``) run as one descending wavefront
    sweep: step ``t`` moves round ``wave-1``'s frontier ``Q`` down to
    ``max(n - (t+1)·chunk, 0)`` and round ``r`` to ``Q + 2^r + … + 2^(wave-2)`` (``0`` at
    the last step).  Round ``r`` at slot ``i`` needs round ``r + 1``'s values at ``i`` and
    ``i - 2^r``, both at or above round ``r + 1``'s frontier and not yet overwritten by
    round ``r``: identical outputs, and an access order from public sizes only.
    """
    kw = min(wave, rounds)
    for r in range(rounds - 1, kw - 1, -1):
        _distribute_round(occ, dist, cols, words, n, r, mk)
    steps = (n + chunk - 1) // chunk if kw > 0 else 0
    t_rows = min(tmp.shape[0], mk.shape[0])
    for t in range(steps):
        q0 = n - t * chunk
        q1 = max(q0 - chunk, 0)
        for r in range(kw - 1, -1, -1):
            _distribute_span(occ, dist, cols, words, n, r, _trail_front(q1, r, kw, n), _trail_front(q0, r, kw, n),
                             t_rows, mk, tmp)


@njit(**_OPTS)
def fill_pass(has, cols, words, n, msk):
    """Forward fill (``scan.forward_fill``): one ascending pass, in place.

    Row ``i`` takes row ``i - 1``'s (already filled) words when it has none of its own;
    ``has`` becomes the running OR.  Every row is read and written once per word.
    """
    for i in range(1, n):
        take = (np.uint8(1) ^ has[_ix(i)]) & has[_ix(i - 1)]
        msk[_ix(i)] = np.uint64(0) - np.uint64(take)
        has[_ix(i)] = has[_ix(i)] | has[_ix(i - 1)]
    for w in range(words):
        o = w * n
        for i in range(1, n):
            cols[_ix(o + i)] = _sel64(msk[_ix(i)], cols[_ix(o + i - 1)], cols[_ix(o + i)])


# --------------------------------------------------------------------------- segmented scans


@njit(inline="always", **_OPTS)
def _combine(op, cur: Data, prev: Data):
    """``op`` (a public code, :data:`SCAN_OPS`) of two words; min/max by masks, not branches."""
    if op == 0:
        return cur + prev  # two's complement: the same bits for int64 and uint64
    if op == 1:
        return _f2u(_u2f(cur) + _u2f(prev))
    if op == 6:
        return prev
    a = cur
    b = prev
    if op == 2 or op == 3:  # signed order = unsigned order of the sign-flipped words
        a = cur ^ _SIGN
        b = prev ^ _SIGN
    lt = np.uint64(0) - np.uint64(b < a)  # prev < cur
    if op == 2 or op == 4:
        return _sel64(lt, prev, cur)
    return _sel64(lt, cur, prev)


@njit(**_OPTS)
def scan_pass(acc, seg, n, op, reverse):
    """Segmented scan (``scan.segmented_scan``) over 64-bit words: one pass, in place.

    Row ``i`` combines with row ``i - 1`` (``i + 1`` when ``reverse``), which already holds
    its running value, where both carry the same segment id.
    """
    if reverse:
        for i in range(n - 2, -1, -1):
            same = np.uint64(0) - np.uint64(seg[_ix(i + 1)] == seg[_ix(i)])
            cur = acc[_ix(i)]
            acc[_ix(i)] = _sel64(same, _combine(op, cur, acc[_ix(i + 1)]), cur)
    else:
        for i in range(1, n):
            same = np.uint64(0) - np.uint64(seg[_ix(i - 1)] == seg[_ix(i)])
            cur = acc[_ix(i)]
            acc[_ix(i)] = _sel64(same, _combine(op, cur, acc[_ix(i - 1)]), cur)


@njit(**_OPTS)
def lex_scan_pass(W, nw, P, npay, seg, n, is_max, reverse):
    """Segmented lexicographic min/max (``scan.segmented_lex_scan``): one pass, in place.

    Row ``i`` takes row ``i - 1``'s running winner (``i + 1`` when ``reverse``) when both
    are in one segment and that winner's words compare lower (min) or not higher (max);
    every word of both rows is read whatever the outcome, then selected under the mask.
    """
    flip = np.uint64(0) - np.uint64(is_max)
    for t in range(n - 1):
        i = t + 1
        d = 1
        if reverse:
            i = n - 2 - t
            d = -1
        last = (nw - 1) * n
        m = np.uint64(0) - np.uint64(W[_ix(last + i - d)] < W[_ix(last + i)])
        for w in range(nw - 2, -1, -1):
            a = W[_ix(w * n + i - d)]
            b = W[_ix(w * n + i)]
            m = (np.uint64(0) - np.uint64(a < b)) | ((np.uint64(0) - np.uint64(a == b)) & m)
        m = (np.uint64(0) - np.uint64(seg[_ix(i - d)] == seg[_ix(i)])) & (m ^ flip)
        for w in range(nw):
            W[_ix(w * n + i)] = _sel64(m, W[_ix(w * n + i - d)], W[_ix(w * n + i)])
        for w in range(npay):
            P[_ix(w * n + i)] = _sel64(m, P[_ix(w * n + i - d)], P[_ix(w * n + i)])


# --------------------------------------------------------------------------- lookup join


@njit(**_OPTS)
def lookup_rows(LW, RWT, nkw, ok, r_ok, PUBT, OUT, words, n, k, matched, msk, i0, i1):
    """The lookup join's ``k × n`` comparisons row by row (``operators.lookup``), for the
    private rows ``i0 <= i < i1`` (threads take disjoint ranges cut by public sizes); the same
    results as the reference's ``k`` passes, as the real public keys are unique (checked).

    For every private row ``i`` (in order) and every public row ``j`` (in order): a mask of
    key equality, then each output word is the OR over ``j`` of ``mask_j & public word`` —
    at most one ``j`` matches, so the OR is the matched row's word or zero.  Every pair
    ``(i, j)`` is read whatever the keys; the public side (``RWT``/``PUBT``: ``nkw``/``words``
    runs of ``k`` words) stays in cache, so the work no longer streams ``n`` rows ``k`` times.
    """
    for i in range(i0, i1):
        # Key differences are ORed bitwise, and the mask is made from them in a pass of its
        # own: written as ``msk[j] &= 0 - (key == v)``, LLVM's vectoriser made a masked store
        # (``vpmaskmovq``, AVX-512 ``vmovdqu64 {k}``) whose lanes were the key comparisons,
        # measured by the address audit (docs/design.md §Address audit); here every store
        # writes every lane, and the loops still vectorise.
        oki = np.uint64(ok[_ix(i)])
        any_ = np.uint64(0)
        if nkw == 1:  # keys of one or two words (a public width): the mask in one pass over j
            v0 = LW[_ix(i)]
            for j in range(k):
                x = (RWT[_ix(j)] ^ v0) | (_ONE ^ (oki & np.uint64(r_ok[_ix(j)])))  # nonzero: no match
                m = np.uint64(0) - np.uint64(x == np.uint64(0))
                msk[_ix(j)] = m
                any_ |= m
        elif nkw == 2:
            v0 = LW[_ix(i)]
            v1 = LW[_ix(n + i)]
            for j in range(k):
                x = (RWT[_ix(j)] ^ v0) | (RWT[_ix(k + j)] ^ v1) | (_ONE ^ (oki & np.uint64(r_ok[_ix(j)])))
                m = np.uint64(0) - np.uint64(x == np.uint64(0))
                msk[_ix(j)] = m
                any_ |= m
        else:
            for j in range(k):
                msk[_ix(j)] = _ONE ^ (oki & np.uint64(r_ok[_ix(j)]))  # nonzero: no match possible
            for w in range(nkw):
                v = LW[_ix(w * n + i)]
                o = w * k
                for j in range(k):
                    msk[_ix(j)] |= RWT[_ix(o + j)] ^ v
            for j in range(k):
                m = np.uint64(0) - np.uint64(msk[_ix(j)] == np.uint64(0))
                msk[_ix(j)] = m
                any_ |= m
        matched[_ix(i)] = np.uint8(any_ & _ONE)
        for w in range(words):
            o = w * k
            acc = np.uint64(0)
            for j in range(k):
                acc |= msk[_ix(j)] & PUBT[_ix(o + j)]
            OUT[_ix(w * n + i)] = acc


# --------------------------------------------------------------------------- storage checksum


@njit(**_OPTS)
def checksum_words(W, m):
    """XOR over ``p < m`` of splitmix64's finaliser of ``W[p] ^ p·φ`` (``storage.canonical``).

    One pass over every word, no temporaries; the same value as the numpy reference.
    """
    acc = np.uint64(0)
    golden = np.uint64(0x9E3779B97F4A7C15)
    m1 = np.uint64(0xBF58476D1CE4E5B9)
    m2 = np.uint64(0x94D049BB133111EB)
    for p in range(m):
        x = W[_ix(p)] ^ (np.uint64(p) * golden)
        x = (x ^ (x >> np.uint64(30))) * m1
        x = (x ^ (x >> np.uint64(27))) * m2
        acc ^= x ^ (x >> np.uint64(31))
    return acc
