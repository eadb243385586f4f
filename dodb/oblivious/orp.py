"""Sorting by an oblivious random permutation, then an ordinary comparison sort (issue 13).

docs/design.md §Sorting by random permutation.  :func:`orp_sort` returns exactly what
:func:`.sort.oblivious_sort` returns (a stable sort) in three phases:

1. **bucket ORP** (Asharov, Chan, Nayak, Pass, Ren, Shi, SOSA 2020): the ``n`` rows and
   dummies go into ``B = 2^b`` buckets of capacity ``Z`` (``Z/2`` reals each), every slot
   gets a uniform label word from the CSPRNG, ``b`` levels of MergeSplit route rows by
   one label bit each, every slot gets a second uniform word, and a bitonic network sorts
   every bucket by ``(dummy, label, second word)`` (:mod:`.orp_kernels`).  Its access
   pattern depends on ``(n, Z)`` only.  The rows end up in the order of their 128 random
   bits: a uniform permutation of the input (unless two rows draw the same bits).
2. **dummy removal**: each bucket's reals are at its front; copying them out reveals the
   bucket loads, a function of the labels alone (never of the data).
3. **comparison sort** (:func:`_merge_sort_order`) of the rows by ``(key words, original
   position)`` -- distinct tuples, so the result is the stable order.  Its access pattern
   is a function of the comparison outcomes, i.e. of the rank order of the permuted rows,
   which is uniform and independent of the data.

On a bucket overflow (probability at most :func:`overflow_probability`; with label ties,
:func:`orp_delta`, which a query using this path must add to its δ -- not wired: no
operator calls it, see the design section) the rows are sorted by the bitonic network
instead; whether that happens is a function of the labels and ``n`` only.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numba import njit
from numba import uint64 as _ix

from .compiled import _OPTS
from .orp_kernels import bucket_sort_stage, merge_split_level
from .rng import RandomSource, new_rng
from .rows import from_word_block, word_block
from .sort import bitonic_network_stages, next_pow2, oblivious_sort
from .trace import Trace

__all__ = ["orp_sort", "orp_permute", "comparison_order", "comparison_steps", "overflow_probability",
           "tie_probability", "orp_delta", "choose_bucket_size", "buckets_for", "sort_with", "DELTA_TARGET",
           "MIN_BUCKET"]

# default bound on δ_orp per sort (overflow plus label ties): negligible next to a query's δ
DELTA_TARGET = 2.0 ** -64
MIN_BUCKET = 16
_ROW_HEAD = 2  # DUMMY, LABEL (orp_kernels)


# --------------------------------------------------------------------------- failure bounds


def _log_binom_pmf(N: int, k: int, p: float) -> float:
    return math.lgamma(N + 1) - math.lgamma(k + 1) - math.lgamma(N - k + 1) + k * math.log(p) + (N - k) * math.log1p(-p)


def _binomial_tail_above(N: int, p: float, Z: int) -> float:
    """An upper bound on ``Pr[Bin(N, p) > Z]`` (for ``Z >= 2Np``).

    The terms ``t_k`` for ``k > Z`` fall geometrically: ``t_{k+1}/t_k = (N-k)p/((k+1)(1-p))``
    decreases in ``k``, so the tail is at most ``t_{Z+1} / (1 - r)`` with ``r`` that ratio at
    ``k = Z + 1``.  A relative margin of ``1e-6`` covers the rounding of ``lgamma``.
    """
    if Z >= N:
        return 0.0
    r = (N - Z - 1) * p / ((Z + 2) * (1 - p))
    if r >= 1:
        return 1.0
    return min(1.0, math.exp(_log_binom_pmf(N, Z + 1, p)) / (1 - r) * (1 + 1e-6))


def buckets_for(n: int, Z: int) -> int:
    """``B``: the smallest power of two with ``B * Z / 2 >= n`` (1 when ``n <= Z / 2``)."""
    return next_pow2(-(-max(n, 1) // (Z // 2)))


def overflow_probability(n: int, Z: int) -> float:
    """Union bound on a bucket overflow of the ORP on ``n`` rows with capacity ``Z``.

    After level ``i`` (``i = 0 .. b-1``) a bucket holds exactly the reals of ``2^{i+1}``
    initial buckets (``Z/2`` each, fewer in the last) whose ``i + 1`` low label bits
    equal its own, as long as nothing overflowed before: a count dominated by
    ``Bin(2^{i+1} Z/2, 2^{-(i+1)})`` (mean ``Z/2``).  An overflow needs some bucket
    above ``Z`` at some level: ``δ ≤ Σ_i B · Pr[Bin(2^{i+1} Z/2, 2^{-(i+1)}) > Z]``
    (Asharov et al. 2020 bound the same quantity by Chernoff, ``(e/4)^{Z/2}`` per term).
    """
    B = buckets_for(n, Z)
    b = B.bit_length() - 1
    return min(1.0, sum(B * _binomial_tail_above((1 << (i + 1)) * (Z // 2), 2.0 ** -(i + 1), Z) for i in range(b)))


def tie_probability(n: int) -> float:
    """``Pr[two rows draw the same 128 random bits]`` ≤ ``C(n, 2) / 2^128`` (their order is then not uniform)."""
    return n * (n - 1) / 2 * 2.0 ** -128


def orp_delta(n: int, Z: int) -> float:
    """δ_orp of one :func:`orp_sort` of ``n`` rows with buckets of ``Z``: overflow plus ties."""
    return min(1.0, overflow_probability(n, Z) + tie_probability(n))


def choose_bucket_size(n: int, target: float = DELTA_TARGET) -> int:
    """The smallest power-of-two capacity ``Z >= MIN_BUCKET`` with ``orp_delta(n, Z) <= target``."""
    Z = MIN_BUCKET
    while orp_delta(n, Z) > target:
        Z *= 2
        if Z > 1 << 20:
            raise ValueError(f"no bucket size reaches δ = {target:g} for n = {n}")
    return Z


# --------------------------------------------------------------------------- the permutation


def _random_words(rng: RandomSource, count: int) -> np.ndarray:
    """``count`` uniform 64-bit words in one request (its size depends on ``count`` only)."""
    if count == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.frombuffer(rng.getrandbits(64 * count).to_bytes(8 * count, "little"), dtype=np.uint64).copy()


def orp_permute(rows: np.ndarray, n: int, rng: RandomSource, Z: int, trace: Trace, buf: int
                ) -> tuple[np.ndarray | None, list[int]]:
    """The bucket ORP of the first ``n`` columns of ``rows`` (``(words, n)`` ``uint64``).

    Returns ``(permuted, loads)``: the ``n`` rows in a uniformly random order and the
    bucket loads it revealed, or ``(None, [])`` on an overflow.  Trace events: the
    levels, the bucket sort and the loads; all but the loads are fixed by ``(n, Z)``.
    """
    B = buckets_for(n, Z)
    if B == 1:
        Z = max(2, next_pow2(n))  # one bucket holds everything: no level, no overflow
    h = Z // 2 if B > 1 else Z
    N, W = B * Z, _ROW_HEAD + rows.shape[0] + 1  # DUMMY, LABEL, the rows' words, the extra word
    X = np.zeros((W, N), dtype=np.uint64)
    dummy_w, label_w = X[:_ROW_HEAD]  # views of the DUMMY and LABEL words
    dummy_w[:] = 1
    # fixed placement: real row e goes to bucket e // h, slot e % h
    head = np.zeros((rows.shape[0] + 1, B * h), dtype=np.uint64)
    head[0] = 1
    head[0, :n] = 0
    head[1:, :n] = rows
    dummy_w.reshape(B, Z)[:, :h] = head[0].reshape(B, h)
    body = X[_ROW_HEAD:]
    for w in range(1, head.shape[0]):
        body[w - 1].reshape(B, Z)[:, :h] = head[w].reshape(B, h)
    label_w[:] = _random_words(rng, N)
    levels = B.bit_length() - 1
    trace.record("orp:buckets", buf, n, B, Z)
    if levels:
        Y = np.empty_like(X)
        M = 2 * Z
        T, live, dist, msk = (np.empty(W * M, np.uint64), np.empty(M, np.uint64), np.empty(M, np.uint64),
                              np.empty(M, np.uint64))
        over = np.zeros(1, dtype=np.uint64)
        for level in range(levels):
            trace.record("orp:level", buf, N, Z, level)
            merge_split_level(X.reshape(-1), Y.reshape(-1), W - 1, N, Z, level, M.bit_length() - 1, T, live, dist,
                              msk, over)
            X, Y = Y, X
        overflowed = bool(over[0])  # lint: public a function of the labels and n only (§Sorting by random permutation)
        trace.record("orp:overflow", buf, int(overflowed))
        if overflowed:  # lint: public see above
            return None, []
    X[-1] = _random_words(rng, N)  # the extra word, drawn now: the levels need not carry it
    msk = np.empty(N // 2, dtype=np.uint64)
    trace.record("orp:bucket_sort", buf, N, Z)
    for k, j in bitonic_network_stages(Z):
        bucket_sort_stage(X.reshape(-1), W, N, k, j, W - 1, msk)
    # every bucket now holds its reals first, in label order; copying them out reveals the loads
    dummy_w = X[:_ROW_HEAD][0]
    loads = (Z - dummy_w.reshape(B, Z).sum(axis=1, dtype=np.int64)).tolist()
    trace.record("orp:loads", buf, *loads)
    real = dummy_w == 0
    return X[_ROW_HEAD:W - 1, real], loads  # lint: public the loads are a function of the labels only


# --------------------------------------------------------------------------- the comparison sort


@njit(**_OPTS)
def _merge_sort_order(K, nk, n, rec):
    """Indices that sort the ``n`` rows of ``K`` (word-major, ``nk`` words, distinct rows).

    A bottom-up merge sort.  By design its accesses depend on the data -- but only through
    the outcome of each ``row_j < row_i`` test (all key words are read for every test, so
    neither timing nor addresses depend on where two rows first differ).  The outcomes are
    written to ``rec`` (``n * ceil(log2 n)`` bytes), which is the whole pattern given ``n``.
    """
    A = np.empty((nk + 1) * n, dtype=np.uint64)
    Bf = np.empty((nk + 1) * n, dtype=np.uint64)
    A[:nk * n] = K
    for t in range(n):
        A[_ix(nk * n + t)] = np.uint64(t)
    width = 1
    c = 0
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            for t in range(lo, hi):
                ic = min(i, mid - 1)  # lint: public indices follow the recorded outcomes (docstring)
                jc = min(j, hi - 1)  # lint: public as above
                lt = np.uint64(0)
                for w in range(nk - 1, -1, -1):
                    x = A[_ix(w * n + jc)]  # lint: public as above
                    y = A[_ix(w * n + ic)]  # lint: public as above
                    lt = np.uint64(x < y) | (np.uint64(x == y) & lt)
                take = np.int64(j < hi) & (np.int64(i >= mid) | np.int64(lt))  # lint: public as above
                rec[c] = np.uint8(take)
                c += 1
                m = np.uint64(0) - np.uint64(take)
                for w in range(nk + 1):
                    x = A[_ix(w * n + ic)]  # lint: public as above
                    Bf[_ix(w * n + t)] = x ^ ((x ^ A[_ix(w * n + jc)]) & m)  # lint: public as above
                i += 1 - take  # lint: public as above
                j += take  # lint: public as above
        A, Bf = Bf, A
        width *= 2
    return A[nk * n:].copy()


def comparison_steps(n: int) -> int:
    """Outcomes :func:`_merge_sort_order` records for ``n`` rows: ``n`` per pass, ``ceil(log2 n)`` passes."""
    return n * max(0, (max(n, 1) - 1).bit_length())


def comparison_order(words: list[np.ndarray], record: np.ndarray | None = None) -> np.ndarray:
    """The order of distinct rows given as key words (most significant first); outcomes into ``record``."""
    n = int(words[0].shape[0])
    K = np.ascontiguousarray(np.stack(words)).reshape(-1)
    rec = np.empty(max(1, comparison_steps(n)), dtype=np.uint8) if record is None else record
    if rec.dtype != np.uint8 or rec.ndim != 1 or rec.shape[0] < comparison_steps(n):
        raise ValueError(f"record must be a uint8 array of at least {comparison_steps(n)} bytes")
    return _merge_sort_order(K, len(words), n, rec).astype(np.int64)


# --------------------------------------------------------------------------- the sort


def orp_sort(
    keys: Sequence[np.ndarray],
    payload: Sequence[np.ndarray] = (),
    *,
    descending: bool = False,
    rng: RandomSource | None = None,
    bucket_size: int | None = None,
    trace: Trace | None = None,
    record: np.ndarray | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Stable sort of rows by ``keys`` (``uint64`` words), same result as :func:`.sort.oblivious_sort`.

    ``rng``: the CSPRNG (default :func:`.rng.new_rng`); ``bucket_size``: ``Z`` (default
    :func:`choose_bucket_size`, δ_orp ≤ :data:`DELTA_TARGET`); ``record``: if given, a
    ``uint8`` array of :func:`comparison_steps` ``(n)`` bytes that receives the comparison
    phase's outcomes (its access pattern; used by the tests).
    """
    keys = [np.asarray(k, dtype=np.uint64) for k in keys]
    if not keys:
        raise ValueError("orp_sort needs at least one key word")
    n = int(keys[0].shape[0])
    for a in list(keys) + list(payload):
        if a.shape[0] != n:
            raise ValueError("all key and payload arrays must have the same length")
    trace = trace if trace is not None else Trace()
    rng = rng if rng is not None else new_rng()
    Z = bucket_size if bucket_size is not None else choose_bucket_size(n)
    if Z < 2 or Z & (Z - 1):
        raise ValueError(f"bucket size must be a power of two >= 2, not {Z}")
    pay_words, widths = word_block(list(payload), n)
    nk = len(keys)
    # key words, the tag (original position: ties keep input order, every tuple distinct), payload
    tag = np.arange(n, dtype=np.uint64)
    rows = np.stack([~k if descending else k for k in keys] + [tag] + list(pay_words))
    buf = trace.alloc(n, rows.shape[0], "orp")
    permuted, _ = orp_permute(rows, n, rng, Z, trace, buf)
    if permuted is None:  # lint: public overflow is a function of the labels and n only
        trace.record("orp:fallback", buf, n)
        return oblivious_sort(keys, payload, descending=descending, trace=trace)
    trace.record("orp:compare", buf, n)
    order = comparison_order([permuted[w] for w in range(nk + 1)], record)
    out = permuted[:, order]  # lint: public order is a function of the uniform permutation (see module docstring)
    out_keys = [~out[w] if descending else out[w].copy() for w in range(nk)]
    return out_keys, from_word_block(out[nk + 1:], list(payload), widths, n)


def sort_with(method: str, keys: Sequence[np.ndarray], payload: Sequence[np.ndarray] = (), **kw
              ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``method="network"`` (:func:`.sort.oblivious_sort`) or ``"orp"`` (:func:`orp_sort`), same result.

    For benchmarks and tests.  Operators must not pass ``"orp"`` until the planner charges
    :func:`orp_delta` per sort (docs/design.md §Sorting by random permutation).
    """
    if method == "network":
        return oblivious_sort(keys, payload, **kw)
    if method == "orp":
        return orp_sort(keys, payload, **kw)
    raise ValueError(f"unknown sort method {method!r} (choose network or orp)")
