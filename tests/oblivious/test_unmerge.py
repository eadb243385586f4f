"""The unmerge puts merged rows back into the two runs they came from (dodb/oblivious/unmerge.py,
docs/design.md §Oblivious merge), on both kernel backends, and its trace depends on public
sizes only; stages planted in the wrong order are caught."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dodb.oblivious import oblivious_merge
from dodb.oblivious import unmerge as unmerge_mod
from dodb.oblivious.backend import kernel_backend_scope
from dodb.oblivious.trace import Trace
from dodb.oblivious.unmerge import oblivious_unmerge

POS_BITS = 32


def _merged(rng, nl: int, nr: int, ties: int = 4):
    """Two runs sorted by (value, position), merged: the merged rows' origins."""
    n = nl + nr
    hi = rng.integers(0, ties, n).astype(np.uint64)
    hi[:nl].sort()
    hi[nl:].sort()
    keys = (hi << np.uint64(POS_BITS)) | np.arange(n, dtype=np.uint64)
    (merged,), _ = oblivious_merge([keys], [], split=nl)
    return (merged & np.uint64((1 << POS_BITS) - 1)).astype(np.int64)


def _payload(rng, n: int) -> list[np.ndarray]:
    return [rng.integers(-2**62, 2**62, n), rng.random(n) < 0.5, rng.integers(0, 255, size=(n, 3)).astype(np.uint8)]


def _check(origin: np.ndarray, pay: list[np.ndarray], nl: int) -> None:
    first, second = oblivious_unmerge(origin, [p[origin] for p in pay], split=nl)  # test side: merged rows
    for p, a, b in zip(pay, first, second):
        assert np.array_equal(a, p[:nl]) and np.array_equal(b, p[nl:])


@pytest.mark.parametrize("backend", ["compiled", "numpy"])
@settings(max_examples=60, deadline=None)
@given(nl=st.integers(0, 300), nr=st.integers(0, 300), ties=st.integers(1, 6), seed=st.integers(0, 10**6))
def test_unmerge_returns_each_run_in_its_order(backend, nl, nr, ties, seed):
    rng = np.random.default_rng(seed)
    with kernel_backend_scope(backend):
        _check(_merged(rng, nl, nr, ties), _payload(rng, nl + nr), nl)


@pytest.mark.parametrize("nl,nr", [(3, 5), (40, 1), (1, 70), (100, 28), (333, 700)])
def test_unmerge_with_small_blocks_and_tiles(monkeypatch, nl, nr):
    """Blocks of 16 rows and tiles of 4 columns: every kind of stage runs (tile, block, whole array)."""
    monkeypatch.setattr(unmerge_mod, "BLOCK", 16)
    monkeypatch.setattr(unmerge_mod, "TILE_COLUMNS", 4)
    rng = np.random.default_rng(nl * 1000 + nr)
    with kernel_backend_scope("compiled"):
        _check(_merged(rng, nl, nr), _payload(rng, nl + nr), nl)


@pytest.mark.parametrize("n", [1 << 17, (1 << 17) + 9])  # past one cache block, on two threads
def test_unmerge_on_large_inputs(n):
    rng = np.random.default_rng(n)
    nl = n // 5
    _check(_merged(rng, nl, n - nl, ties=1000), [np.arange(n, dtype=np.int64) * 7], nl)


def test_unmerge_trace_depends_on_sizes_only():
    traces = []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        origin = _merged(rng, 70, 50)
        t = Trace()
        oblivious_unmerge(origin, [np.arange(120)], split=70, trace=t)
        traces.append(t)
    assert traces[0] == traces[1]
    assert [e.kind for e in traces[0].events if e.kind.startswith("unmerge")] == ["unmerge:butterfly"]


def test_stages_run_in_the_merges_order_are_caught(monkeypatch):
    """Planted: the stages replayed in the merge's own order (``j = m/2 … 1``) instead of
    backwards; the rows land in the wrong slots and the check above fails."""
    def forward_order(X, m):
        j = m // 2
        while j >= 1:
            b = j.bit_length() - 1
            V = X.reshape(X.shape[0], m // (2 * j), 2, j)
            lo, hi = V[:, :, 0, :].copy(), V[:, :, 1, :].copy()
            swap = ((lo[0] >> np.uint64(b)) & np.uint64(1)).astype(bool)
            V[:, :, 0, :] = np.where(swap[None], hi, lo)
            V[:, :, 1, :] = np.where(swap[None], lo, hi)
            j //= 2

    rng = np.random.default_rng(5)
    origin, pay = _merged(rng, 9, 4), _payload(rng, 13)
    with kernel_backend_scope("numpy"):
        _check(origin, pay, 9)  # the real rule
        monkeypatch.setattr(unmerge_mod, "_numpy_stages", forward_order)
        with pytest.raises(AssertionError):
            _check(origin, pay, 9)
