"""The bitonic merge of two sorted runs equals the sort of their union (docs/design.md
§Oblivious merge), on both kernel backends, and its trace depends on public sizes only."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dodb.oblivious import oblivious_merge, oblivious_sort
from dodb.oblivious.backend import kernel_backend_scope
from dodb.oblivious.trace import Trace


def _runs(rng, nl: int, nr: int, words: int, pos_in_key: bool = True):
    """Two runs, each sorted, with distinct keys below all-ones (a position in the last word)."""
    n = nl + nr
    hi = rng.integers(0, 4, size=(words, n), dtype=np.uint64)  # many ties before the position
    if pos_in_key:
        hi[-1] = (hi[-1] << np.uint64(32)) | np.arange(n, dtype=np.uint64)
    keys = [hi[w] for w in range(words)]
    for lo, hi_ in ((0, nl), (nl, n)):
        order = np.lexsort([k[lo:hi_] for k in keys][::-1])
        for k in keys:
            k[lo:hi_] = k[lo:hi_][order]
    return keys


@pytest.mark.parametrize("backend", ["compiled", "numpy"])
@settings(max_examples=60, deadline=None)
@given(nl=st.integers(0, 300), nr=st.integers(0, 300), words=st.integers(1, 3), seed=st.integers(0, 10**6))
def test_merge_equals_sort(backend, nl, nr, words, seed):
    rng = np.random.default_rng(seed)
    keys = _runs(rng, nl, nr, words)
    n = nl + nr
    pay = [rng.integers(-9, 9, n).astype(np.int64), rng.integers(0, 255, size=(n, 3)).astype(np.uint8)]
    with kernel_backend_scope(backend):
        mk, mp = oblivious_merge(keys, pay, split=nl)
        sk, sp = oblivious_sort(keys, pay, unique=True)
    for a, b in zip(mk + mp, sk + sp):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("n", [1 << 16, (1 << 16) + 5])  # past one cache block: whole-array stages run too
def test_merge_equals_sort_on_large_inputs(n):
    rng = np.random.default_rng(n)
    nl = n // 3
    keys = _runs(rng, nl, n - nl, 1)
    pay = [np.arange(n, dtype=np.int64)]
    mk, mp = oblivious_merge(keys, pay, split=nl)
    sk, sp = oblivious_sort(keys, pay, unique=True)
    assert np.array_equal(mk[0], sk[0]) and np.array_equal(mp[0], sp[0])


def test_merge_trace_depends_on_sizes_only():
    traces = []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        keys = _runs(rng, 70, 50, 2)
        t = Trace()
        oblivious_merge(keys, [np.arange(120)], split=70, trace=t)
        traces.append(t)
    assert traces[0] == traces[1]


def test_unsorted_runs_are_not_sorted_by_a_merge():
    """The merge relies on its precondition: the check that it equals the sort can fail."""
    keys = [np.array([9, 3, 12, 0, 7, 14, 1, 5, 11, 2, 15, 8, 4, 13, 6, 10], dtype=np.uint64)]
    mk, _ = oblivious_merge(keys, split=8)
    assert not np.array_equal(mk[0], np.sort(keys[0]))
