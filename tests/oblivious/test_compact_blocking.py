"""The cache-blocked compaction/distribution kernels against the round-by-round kernels they replaced.

``compact_rounds``/``distribute_rounds`` (dodb/oblivious/compiled.py) run the small-shift
rounds as one wavefront sweep and the others chunk by chunk; the kernels below are the
previous versions (one pass per round over the metadata, then one per word column),
kept verbatim.  Every output array must be bit-identical, for every size, chunk and wave,
including unmarked slots (whose contents the reference leaves unspecified).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba import njit
from numba import uint64 as _ix

from dodb.oblivious import Trace, compact, compiled, distribute
from dodb.oblivious.backend import kernel_backend_scope

OPTS = dict(nogil=True, boundscheck=False, error_model="numpy")


@njit(inline="always", **OPTS)
def _sel64(mask, a, b):
    return b ^ ((a ^ b) & mask)


@njit(**OPTS)
def old_compact_rounds(live, dist, cols, words, n, rounds, msk):
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


@njit(**OPTS)
def old_distribute_rounds(occ, dist, cols, words, n, rounds, msk):
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


OLD = {"compact": old_compact_rounds, "distribute": old_distribute_rounds}


def flags_of(kind: str, n: int, rng) -> np.ndarray:
    if kind == "all":
        return np.ones(n, bool)
    if kind == "none":
        return np.zeros(n, bool)
    if kind == "alternating":
        return np.arange(n) % 2 == 0
    if kind == "sparse":
        return rng.random(n) < 0.05
    return rng.random(n) < 0.5


def compact_inputs(marked: np.ndarray, words: int, rng, span: int | None = None):
    n = marked.shape[0]
    span = n if span is None else span
    if span and span < n:
        c = np.cumsum(~marked.reshape(-1, span), axis=1) - (~marked.reshape(-1, span))
        dist = np.where(marked, c.reshape(-1), 0).astype(np.int64)
    else:
        dist = np.where(marked, np.cumsum(~marked) - (~marked), 0).astype(np.int64)
    rounds = (span - 1).bit_length() if span > 0 else 0
    cols = rng.integers(0, 2**64, words * n, dtype=np.uint64)
    return marked.astype(np.uint8), dist, cols, rounds


def distribute_inputs(n: int, words: int, rng, kind: str):
    k = int(flags_of(kind, n, rng).sum())
    live = np.arange(n) < k
    target = np.zeros(n, np.int64)
    target[:k] = np.sort(rng.choice(n, k, replace=False)) if n else []
    dist = np.where(live, target - np.arange(n), 0).astype(np.int64)
    rounds = max(0, (n - 1).bit_length())
    cols = rng.integers(0, 2**64, words * n, dtype=np.uint64)
    return live.astype(np.uint8), dist, cols, rounds


def run_both(kind: str, args, words: int, n: int, rounds: int, chunk: int | None = None, wave: int | None = None):
    """The old and the new kernel on copies of ``args``: their (flags, dist, cols)."""
    if chunk is None:
        chunk, wave = compiled.compact_blocking(n, words)
    old = [a.copy() for a in args[:3]]
    new = [a.copy() for a in args[:3]]
    OLD[kind](*old, words, n, rounds, np.empty(n, np.uint64))
    mk, tmp = (np.empty(k, np.uint64) for k in compiled.scratch_rows(n, rounds, chunk, wave))
    getattr(compiled, f"{kind}_rounds")(*new, words, n, rounds, mk, tmp, chunk, wave)
    return old, new


def assert_identical(old, new):
    for a, b, name in zip(old, new, ("flags", "dist", "cols")):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name


KINDS = ["all", "none", "alternating", "sparse", "random"]


def _sizes() -> list[int]:
    out = {0, 1, 2, 3, 5, 7, 8, 9, 100, 1000, 4999}
    for w in (1, 2, 8, 16, 20):
        c, _ = compiled.compact_blocking(4096, w)
        out |= {c - 1, c, c + 1, 2 * c + 3}
    out |= {(1 << p) + d for p in (4, 10, 12, 13) for d in (-1, 0, 1)}
    return sorted(out)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", _sizes())
def test_default_blocking_identical(n, kind):
    rng = np.random.default_rng(n * 7 + len(kind))
    for words in (1, 3, 16) if n < 3000 else (2,):
        old, new = run_both("compact", compact_inputs(flags_of(kind, n, rng), words, rng), words, n,
                            max(0, (n - 1).bit_length()))
        assert_identical(old, new)
        old, new = run_both("distribute", distribute_inputs(n, words, rng, kind), words, n,
                            max(0, (n - 1).bit_length()))
        assert_identical(old, new)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 5000), st.integers(1, 20), st.sampled_from(KINDS), st.integers(1, 300), st.integers(0, 12),
       st.integers(0, 2**32), st.sampled_from([None, 1, 2, 4, 16]))
def test_any_chunk_and_wave_identical(n, words, kind, chunk, wave, seed, span):
    """Small chunks and waves wider than the chunk: every frontier case and tail runs."""
    rng = np.random.default_rng(seed)
    n = min(n, 40000 // words)
    if span is not None:
        n -= n % span
    marked = flags_of(kind, n, rng)
    args = compact_inputs(marked, words, rng, span)
    old, new = run_both("compact", args, words, n, args[3], chunk, wave)
    assert_identical(old, new)
    if span is None:
        args = distribute_inputs(n, words, rng, kind)
        old, new = run_both("distribute", args, words, n, args[3], chunk, wave)
        assert_identical(old, new)


def test_blocking_is_public_and_bounded():
    for words in range(1, 64):
        chunk, wave = compiled.compact_blocking(1 << 20, words)
        assert chunk >= 1024 and wave >= 1 and (1 << wave) <= chunk // 2
        assert (chunk + (1 << wave)) * (words + 2) * 8 <= 512 << 10 or chunk == 1024


@pytest.mark.parametrize("kind", ["random", "alternating"])
def test_wavefront_used_on_operator_path(monkeypatch, kind):
    """compact()/distribute() with a small chunk: the wave covers some rounds, not all."""
    n = 3000
    seen = []

    def small(n_, words_):
        seen.append((n_, words_))
        return 64, 4

    rng = np.random.default_rng(3)
    marked = flags_of(kind, n, rng)
    pay = [rng.integers(0, 2**62, n), np.array([b"r%d" % i for i in range(n)], "S9")]
    target = np.sort(rng.choice(n, int(marked.sum()), replace=False))
    tg = np.zeros(n, np.int64)
    tg[: target.shape[0]] = target
    live = np.arange(n) < target.shape[0]
    out = {}
    for backend in ("numpy", "compiled"):
        with kernel_backend_scope(backend):
            if backend == "compiled":
                monkeypatch.setattr(compiled, "compact_blocking", small)
            t = Trace()
            out[backend] = (compact(marked, pay, trace=t), distribute(live, tg, pay, trace=t), t)
    (ca, da, ta), (cb, db, tb) = out["numpy"], out["compiled"]
    assert seen and all(s == (n, 3) for s in seen)
    assert ta == tb
    for x, y in ((ca, cb), (da, db)):
        assert x[0].tobytes() == y[0].tobytes()
        live_rows = x[0]
        for p, q in zip(x[1], y[1]):
            # the reference and the kernel agree on the live slots (the others are unspecified)
            assert p[live_rows].tobytes() == q[live_rows].tobytes()
