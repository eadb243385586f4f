"""Kernel traces depend only on public sizes (docs/design.md §Invariants, 1 and 2)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st

from dodb.oblivious import (
    Trace,
    compact,
    distribute,
    expand,
    forward_fill,
    oblivious_sort,
    segmented_lex_scan,
    segmented_scan,
)


def run_all(rng: np.random.Generator, n: int, m_extra: int) -> Trace:
    t = Trace()
    keys = rng.integers(0, 4, n).astype(np.uint64)
    pay = rng.integers(0, 100, (n, 2))
    oblivious_sort([keys, keys ^ np.uint64(5)], [pay], trace=t)
    oblivious_sort([keys], [pay], key_bits=8, descending=True, trace=t)
    flags = rng.random(n) < rng.random()
    live, _ = compact(flags, [pay], trace=t)
    distribute(live, np.arange(n), [pay], trace=t)
    starts = rng.random(n) < 0.3
    segmented_scan(pay[:, 0], starts, "sum", trace=t)
    segmented_scan(flags, starts, "count", reverse=True, trace=t)
    segmented_lex_scan([keys, keys], starts, "max", payload=[pay], trace=t)
    forward_fill(flags, [pay], trace=t)
    # expansion: counts differ between runs but the public output size is fixed
    counts = rng.integers(0, 3, n)
    counts = np.where(np.cumsum(counts) <= n, counts, 0)
    expand(counts, [pay], n + m_extra, trace=t)
    return t


@given(st.integers(0, 80), st.integers(0, 5), st.integers(0, 2**32), st.integers(0, 2**32))
def test_same_public_size_same_trace(n, extra, seed_a, seed_b):
    ta = run_all(np.random.default_rng(seed_a), n, extra)
    tb = run_all(np.random.default_rng(seed_b), n, extra)
    assert ta == tb


def test_trace_differs_with_size():
    # guards against a vacuous trace: different public sizes must be visible
    assert run_all(np.random.default_rng(0), 8, 0) != run_all(np.random.default_rng(0), 9, 0)
    assert len(run_all(np.random.default_rng(0), 64, 0)) > 40  # 6 rounds each of 2 compactions, 2 distributions


def test_sort_trace_is_the_network(monkeypatch):
    import dodb.oblivious.sort as sort_mod

    t = Trace()
    oblivious_sort([np.arange(6, dtype=np.uint64)], trace=t)
    # the network skips comparators at rows >= n, so n is part of the view (sort:prune)
    assert [(e.kind, e.sizes) for e in t.events[1:]] == [("sort:prune", (6, 8)), ("sort:blocks", (8, 8, 1))]
    monkeypatch.setattr(sort_mod, "BLOCK", 2)
    t = Trace()
    oblivious_sort([np.arange(6, dtype=np.uint64)], trace=t)
    # merges of size 4 and 8: their big stages are whole passes, the rest runs per block
    assert [(e.kind, e.sizes) for e in t.events[1:]] == [
        ("sort:prune", (6, 8)), ("sort:blocks", (8, 2, 4)), ("sort:stage", (8, 4, 2)), ("sort:block_tail", (8, 4, 1, 2)),
        ("sort:stage", (8, 8, 4)), ("sort:stage", (8, 8, 2)), ("sort:block_tail", (8, 8, 1, 2))]
