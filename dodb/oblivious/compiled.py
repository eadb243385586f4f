"""Compiled, branch-free versions of the oblivious kernels (numba; issue 13).

The numpy modules (``sort``, ``compact``, ``scan``) are the *reference*: they record the
trace and, with the ``numpy`` backend (:mod:`.backend`), do the work.  With the default
``compiled`` backend the same Python wrappers record the same trace events from public
sizes and call the kernels below instead.  Each kernel applies exactly the reference's
operations (same comparators of the same network, same shift rounds, same one-pass
scans), so outputs are identical; only the loop order inside a stage may differ, and
every comparator / select inside one stage or round is independent of the others.

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
checks this source.  Compile options: ``cache=True`` (compiled once per machine; see
:func:`_cache_location` when no cache directory is writable),
``nogil``, ``boundscheck=False``, ``error_model="numpy"`` (no zero-division branches) and
no fastmath, so floating-point sums round exactly like the reference.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as _llir
from numba import njit, types
from numba import uint64 as _ix
from numba.extending import intrinsic

__all__ = [
    "compact_rounds", "distribute_rounds", "fill_pass",
    "scan_pass", "lex_scan_pass", "lookup_rows", "checksum_words", "SCAN_OPS",
]



def _cache_location() -> bool:
    """Whether numba can cache compiled code for this file.

    numba writes the cache to ``$NUMBA_CACHE_DIR``, else next to this module
    (``__pycache__``), else to the user's cache directory (``~/.cache/numba``).  If none is
    writable (a read-only install run by a user without a home directory), ``cache=True``
    would raise at import; then the kernels are compiled in every process instead
    (about 10-15 s on the first calls), with a warning.
    """
    try:
        from numba.core.caching import FunctionCache
    except ImportError:  # a numba without this class: let cache=True decide
        return True
    try:
        FunctionCache(_cache_location)  # the locator search cache=True runs for every kernel
    except RuntimeError:
        import warnings

        warnings.warn("dodb: no writable numba cache directory for dodb/oblivious/compiled.py (set "
                      "NUMBA_CACHE_DIR); the compiled kernels are compiled again in every process",
                      RuntimeWarning, stacklevel=2)
        return False
    return True


_OPTS = dict(cache=_cache_location(), nogil=True, boundscheck=False, error_model="numpy")
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


# --------------------------------------------------------------------------- sorting network
# The compiled sorting network lives in :mod:`.compiled_sort` (same rules, same options).


# --------------------------------------------------------------------------- shifting networks


@njit(inline="always", **_OPTS)
def _sel64(mask: Data, a: Data, b: Data):
    """``a`` where ``mask`` is all ones, ``b`` where it is zero (int64 or uint64 words)."""
    return b ^ ((a ^ b) & mask)


@njit(**_OPTS)
def compact_rounds(live, dist, cols, words, n, rounds, msk):
    """Goodrich's compaction rounds (``compact.compact``), in place.

    Round ``r`` shifts left by ``s = 2^r`` every live row whose distance has bit ``r``
    set.  Slot ``i`` reads rows ``i`` and ``i + s`` whatever the flags (ascending ``i``:
    row ``i + s`` is still the old one), then every payload word is selected under the
    slot's mask.  ``live`` is 0/1 bytes, ``dist`` int64, ``cols`` ``words`` columns of ``n``.
    """
    for r in range(rounds):
        s = 1 << r
        for i in range(n - s):
            here = live[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
            inc = live[_ix(i + s)] & np.uint8((dist[_ix(i + s)] >> r) & 1)
            mi = np.int64(0) - np.int64(inc)
            msk[_ix(i)] = np.uint64(mi)
            live[_ix(i)] = inc | (live[_ix(i)] & (np.uint8(1) ^ here))
            dist[_ix(i)] = _sel64(mi, dist[_ix(i + s)], dist[_ix(i)])
        for i in range(max(n - s, 0), n):
            here = live[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
            live[_ix(i)] = live[_ix(i)] & (np.uint8(1) ^ here)
        for w in range(words):
            o = w * n
            for i in range(n - s):
                cols[_ix(o + i)] = _sel64(msk[_ix(i)], cols[_ix(o + i + s)], cols[_ix(o + i)])


@njit(**_OPTS)
def distribute_rounds(occ, dist, cols, words, n, rounds, msk):
    """Distribution rounds (``compact.distribute``): shifts right, largest first, in place.

    Descending ``i`` so that row ``i - s`` is still the old one when slot ``i`` reads it.
    """
    for r in range(rounds - 1, -1, -1):
        s = 1 << r
        for i in range(n - 1, s - 1, -1):
            here = occ[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
            inc = occ[_ix(i - s)] & np.uint8((dist[_ix(i - s)] >> r) & 1)
            mi = np.int64(0) - np.int64(inc)
            msk[_ix(i)] = np.uint64(mi)
            occ[_ix(i)] = inc | (occ[_ix(i)] & (np.uint8(1) ^ here))
            dist[_ix(i)] = _sel64(mi, dist[_ix(i - s)], dist[_ix(i)])
        for i in range(min(s, n)):
            here = occ[_ix(i)] & np.uint8((dist[_ix(i)] >> r) & 1)
            occ[_ix(i)] = occ[_ix(i)] & (np.uint8(1) ^ here)
        for w in range(words):
            o = w * n
            for i in range(n - 1, s - 1, -1):
                cols[_ix(o + i)] = _sel64(msk[_ix(i)], cols[_ix(o + i - s)], cols[_ix(o + i)])


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
def lookup_rows(LW, RWT, nkw, ok, r_ok, PUBT, OUT, words, n, k, matched, msk):
    """The lookup join's ``k × n`` comparisons row by row (``operators.lookup``); the same
    results as the reference's ``k`` passes, as the real public keys are unique (checked).

    For every private row ``i`` (in order) and every public row ``j`` (in order): a mask of
    key equality, then each output word is the OR over ``j`` of ``mask_j & public word`` —
    at most one ``j`` matches, so the OR is the matched row's word or zero.  Every pair
    ``(i, j)`` is read whatever the keys; the public side (``RWT``/``PUBT``: ``nkw``/``words``
    runs of ``k`` words) stays in cache, so the work no longer streams ``n`` rows ``k`` times.
    """
    for i in range(n):
        oki = np.uint64(0) - np.uint64(ok[_ix(i)])
        for j in range(k):
            msk[_ix(j)] = oki & (np.uint64(0) - np.uint64(r_ok[_ix(j)]))
        for w in range(nkw):
            v = LW[_ix(w * n + i)]
            o = w * k
            for j in range(k):
                msk[_ix(j)] &= np.uint64(0) - np.uint64(RWT[_ix(o + j)] == v)
        any_ = np.uint64(0)
        for j in range(k):
            any_ |= msk[_ix(j)]
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
