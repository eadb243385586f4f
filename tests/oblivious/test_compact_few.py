"""A compaction that keeps few of its rows runs through blocks (docs/design.md §Compaction,
"Few rows kept"): the same marked rows, in order, as one whole-array compaction, on both
backends, at any depth of levels, with a trace that depends on the sizes alone."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dodb.oblivious.backend import kernel_backend_scope
from dodb.oblivious.compact import compact, few_block
from dodb.oblivious.trace import Trace

compact_mod = sys.modules["dodb.oblivious.compact"]


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 16 rows and up: several levels on inputs of a few thousand rows."""
    monkeypatch.setattr(compact_mod, "FEW_MIN_BLOCK", 16)
    monkeypatch.setattr(compact_mod, "PARALLEL_MIN_ROWS", 1)  # the threaded binned path too


def _payload(rng, n):
    return [rng.integers(0, 2**62, n), rng.integers(0, 2**64, (n, 2), dtype=np.uint64), rng.random(n) < 0.5,
            np.array([b"r%d" % i for i in range(n)], "S7")]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 6000), m=st.integers(0, 60), seed=st.integers(0, 2**32), over=st.booleans())
def test_the_kept_rows_are_the_whole_compactions(small_blocks, n, m, seed, over):
    rng = np.random.default_rng(seed)
    count = int(rng.integers(0, m + 1)) if not over else int(rng.integers(0, 2 * m + 2))  # over: more than m marked
    marked = np.zeros(n, bool)
    marked[rng.choice(n, min(count, n), replace=False)] = True
    payload = _payload(rng, n)
    want = np.flatnonzero(marked)[:m]  # the first m marked rows, in order
    k = len(want)
    for name in ("numpy", "compiled"):
        with kernel_backend_scope(name):
            live, cols = compact(marked, payload, rows=m)
        assert live.shape[0] == min(m, n)
        assert live[:k].all() and not live[k:].any()
        for got, p in zip(cols, payload):
            assert got.dtype == p.dtype and got[:k].tobytes() == p[want].tobytes()


def test_the_blocks_apply_only_when_few_rows_are_kept():
    assert few_block(6_001_268, 7_000) == 1 << 17
    assert few_block(6_001_268, 500_000) is None  # a block would hold most of the input
    assert few_block(100_000, 0) is None
    assert few_block(4 * 4096 - 1, 1) is None and few_block(4 * 4096, 1) == 4096


def _traces(n: int, m: int, counts) -> list[list[str]]:
    rng = np.random.default_rng(7)
    traces = []
    for count in counts:
        marked = np.zeros(n, bool)
        marked[rng.choice(n, count, replace=False)] = True
        t = Trace()
        compact(marked, _payload(rng, n), rows=m, trace=t)
        traces.append([str(e) for e in t.events])
    return traces


def test_the_trace_depends_on_the_sizes_alone(small_blocks):
    """Two inputs with the same n and m and different marks (and counts) record the same events."""
    traces = _traces(5000, 9, (0, 3, 9))
    assert traces[0] == traces[1] == traces[2]
    assert any("compact:round" in e for e in traces[0]) and len(traces[0]) > 3  # levels ran


def test_a_block_size_from_the_true_count_is_caught(small_blocks, monkeypatch):
    """Planted leak: the schedule sized by the true number of marked rows instead of the public
    ``m`` (still correct rows) records different events for different counts."""
    real = compact_mod._compact_few

    def by_true_count(marked, payload, m, b, trace):
        true_b = compact_mod.few_block(marked.shape[0], max(1, int(marked.sum()))) or b
        return real(marked, payload, m, true_b, trace)

    monkeypatch.setattr(compact_mod, "_compact_few", by_true_count)
    traces = _traces(5000, 9, (0, 3, 9))
    assert not traces[0] == traces[1] == traces[2]


def test_a_level_that_keeps_too_few_rows_per_block_is_caught(small_blocks, monkeypatch):
    """Planted: each block keeps one slot fewer than m (the final compaction still keeps m);
    marked rows that share a block are then lost, and the check of the first test fails."""

    def short(marked, payload, m, b, trace):
        while marked.shape[0] >= 4 * b:
            whole = marked.shape[0] - marked.shape[0] % b
            keep = (np.arange(whole // b)[:, None] * b + np.arange(m - 1)).reshape(-1)
            live, cols = compact(marked[:whole], [p[:whole] for p in payload], block=b, rows=keep, trace=trace)
            marked = np.concatenate([live, marked[whole:]])
            payload = [np.concatenate([c, p[whole:]]) for c, p in zip(cols, payload)]
        return compact(marked, payload, rows=m, trace=trace)

    n, m = 4096, 8
    marked = np.zeros(n, bool)
    marked[:m] = True  # all in the first block
    live, (ids,) = compact(marked, [np.arange(n)], rows=m)
    assert live.all() and ids.tolist() == list(range(m))  # the real schedule keeps them
    monkeypatch.setattr(compact_mod, "_compact_few", short)
    live, (ids,) = compact(marked, [np.arange(n)], rows=m)
    assert live.shape[0] == m and not (live.all() and ids.tolist() == list(range(m)))
