"""Oblivious expansion: row ``i`` copied ``d_i`` times into an output of public size ``m``.

Needed by many-to-many joins (Chu–Zhuo–Shi–Chan, ITC 2021): each row is replicated by
its join degree so that the two sides can be aligned copy by copy.  Three oblivious
steps, each with an access pattern fixed by ``(n, m)``:

1. compact the rows with ``d_i > 0`` to the front (:func:`~dodb.oblivious.compact.compact`);
2. distribute them to their first output slot ``p_i = sum_{j<i} d_j``
   (:func:`~dodb.oblivious.compact.distribute`, strictly increasing targets);
3. forward-fill every slot from the nearest placed row before it
   (:func:`~dodb.oblivious.scan.forward_fill`).

When a public bound caps every count at one (the other side of a join is unique on its
key), step 1 is the whole expansion: a row's first slot ``p_i`` is the number of kept
rows before it, which is where compaction puts it, so steps 2 and 3 would move nothing
(docs/design.md §Compaction, *Unit expansions*).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .compact import compact, distribute
from .scan import forward_fill
from .trace import Trace
from .invariant import broken
from .select import select

__all__ = ["expand"]


def _fit(a: np.ndarray, m: int) -> np.ndarray:
    """Cut or zero-pad the first axis to the public length ``m``."""
    n = a.shape[0]
    if n >= m:
        return a[:m]
    out = np.zeros((m,) + a.shape[1:], dtype=a.dtype)
    out[:n] = a
    return out


def expand(
    counts: np.ndarray,
    payload: Sequence[np.ndarray],
    m: int,
    *,
    unit: bool = False,
    trace: Trace | None = None,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Replicate row ``i`` ``counts[i]`` times, in order, into ``m >= sum(counts)`` slots.

    Returns ``(real, copy_index, payload_out)``: ``real`` marks the first ``sum(counts)``
    slots, ``copy_index[j]`` is which copy (``0 .. d_i-1``) slot ``j`` holds.  The caller
    guarantees ``m >= sum(counts)`` (a padded size from a DP mechanism that never
    undershoots); rows beyond ``m`` would be lost, so this is checked and raises — the
    check is the trusted caller's contract, not a data-dependent access.

    ``unit``: the caller's public bound says every count is 0 or 1; only the compaction
    runs (same outputs on real slots; dummy slots hold unspecified rows).
    """
    counts = np.asarray(counts, dtype=np.int64)
    m = int(m)
    trace = trace if trace is not None else Trace()
    total = counts.sum(keepdims=True)  # private: one element kept an array (a numpy number compares through Python)
    if broken(total > m):  # lint: public never true in a correct run: m is a one-sided DP padding of total
        raise ValueError("expand: output size smaller than the total count")
    if unit and broken((counts > 1).sum(keepdims=True) > 0):  # lint: public never true in a correct run: the caller's public degree bound caps every count at 1
        raise ValueError("expand: a count above 1 in a unit expansion")
    n = int(counts.shape[0])
    buf = trace.alloc(m, 1, "expand")
    trace.record("expand:begin", buf, n, m)
    nz = counts > 0
    slot = np.arange(m, dtype=np.int64)
    real = slot < total
    if unit:  # every row's first slot is where compaction puts it: no counts, no targets
        _, cols = compact(nz, list(payload), trace=trace)
        return real, np.zeros(m, dtype=np.int64), [_fit(c, m) for c in cols]
    first_slot = np.cumsum(counts) - counts
    live, cols = compact(nz, [counts, first_slot] + list(payload), trace=trace)
    live = _fit(live, m)
    cols = [_fit(c, m) for c in cols]
    target = select(live, cols[1], 0)
    occ, cols = distribute(live, target, cols, trace=trace)
    _, cols = forward_fill(occ, cols, trace=trace)
    copy_index = select(real, slot - cols[1], 0)
    return real, copy_index, cols[2:]
