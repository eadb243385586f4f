"""Partition-aware admission: the loss bound of paper 000 over a privacy filter's coordinates.

When the owner declares a partition of the privacy units (docs/design.md §Partitions),
each charge has a *scope*: the partitions ``S`` whose units its releases can depend on,
or all of them.  One neighbouring change alters the inputs of only the charges whose
scope contains the changed unit's partition, so (paper 000, Thm IV.11 — the IC theorem
for a common domain, every mechanism ``p_S``-dependent) the loss of the whole history
for that change is the composition of just those charges:

* **add/remove** one unit of partition ``p``: the global charges plus the charges with
  ``p`` in scope.  Over all changes: the worst partition (Thm IV.12: ``max_i ε_i``).
* **replace** a unit of ``i`` by a unit of ``j``: the global charges plus those touching
  ``i`` or ``j``; a charge touching both is counted twice (a bound, as in Cor IV.13:
  ``max_{i≠j} ε_i + ε_j``); ``i = j`` is the single-partition case, dominated by the pair
  with an untouched partition.

A filter (``filters.py``) works on additive coordinates and is monotone, so the ledger
admits a charge iff the filter admits, for every such change, the sum of the coordinates
of the charges that change affects (plus the new one, once per affected partition it
touches).  For one fixed change this is exactly the filter run on the subsequence of
charges that can lose privacy on it — the others have zero loss there — so the filter's
adaptive guarantee holds change by change, for each composition method (basic,
advanced, Rényi/zCDP, their union).  A partition no charge names yet is the ``REST``
entry (zero coordinates): a unit may live in a partition nobody queried.  With more
than ``EXACT_LIMIT`` named partitions the check uses the coordinate-wise maximum over
partitions instead of each one, which dominates every case (still sound, coarser).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

from .errors import Budget
from .filters import PrivacyFilter

__all__ = ["REST", "EXACT_LIMIT", "ScopedState", "admits", "worst_spent", "worst_headroom", "worst_filter_spent",
           "partition_status", "add_coords"]

REST = "(partitions not charged yet)"
EXACT_LIMIT = 64
Coords = Mapping[str, float]


def add_coords(*parts: tuple[Coords, float]) -> dict[str, float]:
    """``sum_k m_k * c_k`` coordinate-wise (``m_k`` copies of a charge)."""
    out: dict[str, list[float]] = {}
    for coords, m in parts:
        if not m:
            continue
        for k, v in coords.items():
            out.setdefault(k, []).append(m * v)
    return {k: math.fsum(v) for k, v in out.items()}


@dataclass
class ScopedState:
    """One account's charges: global ones and per-partition ones (coordinates and plain sums)."""

    global_totals: dict[str, float] = field(default_factory=dict)
    parts: dict[str, dict[str, float]] = field(default_factory=dict)
    global_sums: Budget = Budget(0.0, 0.0)
    part_sums: dict[str, Budget] = field(default_factory=dict)

    def _cases(self, neighbour: str, scope: frozenset[str] | None) -> Iterable[tuple[tuple[str, ...], dict]]:
        """(partitions a change touches, coordinates of the charges it affects), every change."""
        names = sorted(set(self.parts) | set(scope or ()))
        if len(names) > EXACT_LIMIT:  # one dominating case: coordinate-wise maximum over partitions
            top: dict[str, float] = {}
            for c in self.parts.values():
                for k, v in c.items():
                    top[k] = max(top.get(k, 0.0), v)
            hits = ("*",) if neighbour == "add_remove" else ("*", "*")
            yield hits, add_coords((self.global_totals, 1), (top, len(hits)))
            return
        names.append(REST)
        if neighbour == "add_remove":
            for p in names:
                yield (p,), add_coords((self.global_totals, 1), (self.parts.get(p, {}), 1))
        else:
            if len(names) == 1:
                yield (REST,), dict(self.global_totals)
            for i, j in itertools.combinations(names, 2):
                yield (i, j), add_coords((self.global_totals, 1), (self.parts.get(i, {}), 1),
                                         (self.parts.get(j, {}), 1))

    @staticmethod
    def _hits(case: tuple[str, ...], scope: frozenset[str] | None) -> int:
        if scope is None:
            return 1  # a global charge is in every case once
        if case[0] == "*":  # the dominating case: every named partition may be hit
            return len(case) if len(scope) >= len(case) else len(scope)
        return sum(1 for p in case if p in scope)


def admits(filt: PrivacyFilter, state: ScopedState, cost: Coords, scope: frozenset[str] | None,
           neighbour: str) -> bool:
    """Whether every neighbouring change still fits the filter with this charge added."""
    for case, totals in state._cases(neighbour, scope):
        m = ScopedState._hits(case, scope)
        if m and not filt.admits(totals, add_coords((cost, m))):
            return False
    return True


def _pick_two(sums: dict[str, Budget], k: int) -> list[Budget]:
    return sorted(sums.values(), key=lambda b: (b.epsilon, b.delta), reverse=True)[:k]


def worst_spent(state: ScopedState, neighbour: str) -> Budget:
    """Plain sums of the charges the worst change affects (what ``spent`` shows):
    the global ones plus the largest partition (add/remove) or the two largest (replace)."""
    top = _pick_two(state.part_sums, 1 if neighbour == "add_remove" else 2)
    return Budget(math.fsum([state.global_sums.epsilon] + [b.epsilon for b in top]),
                  math.fsum([state.global_sums.delta] + [b.delta for b in top]))


def frontier(cases: list[dict[str, float]]) -> list[dict[str, float]]:
    """The cases no other case dominates coordinate-wise (duplicates once).  A filter's
    headroom falls and its spent rises with every coordinate, so the extremes over all
    cases are attained on these; it saves the costly headroom of the Rényi filter."""
    if len(cases) <= 2:
        return cases
    keys = sorted({k for c in cases for k in c})
    m = np.array([[c.get(k, 0.0) for k in keys] for c in cases])
    m, first = np.unique(m, axis=0, return_index=True)
    keep = []
    for i in range(len(m)):
        geq = np.all(m >= m[i], axis=1)
        gt = np.any(m > m[i], axis=1)
        if not np.any(geq & gt):
            keep.append(cases[first[i]])
    return keep


def worst_headroom(filt: PrivacyFilter, state: ScopedState, neighbour: str) -> Budget:
    """What a next *global* charge may cost: the smallest headroom over all changes."""
    rooms = [filt.headroom(t) for t in frontier([t for _, t in state._cases(neighbour, None)])]
    return min(rooms, key=lambda b: (b.epsilon, b.delta))


def worst_filter_spent(filt: PrivacyFilter, state: ScopedState, neighbour: str) -> Budget:
    return max((filt.spent(t) for t in frontier([t for _, t in state._cases(neighbour, None)])),
               key=lambda b: (b.epsilon, b.delta))


def partition_status(filt: PrivacyFilter, state: ScopedState, neighbour: str) -> dict[str, dict[str, Budget]]:
    """Per named partition: plain sums of the charges that can touch it (global + its own)
    and the headroom of a next charge confined to it."""
    out = {}
    for p, sums in sorted(state.part_sums.items()):
        spent = Budget(state.global_sums.epsilon + sums.epsilon, state.global_sums.delta + sums.delta)
        scope = frozenset({p})
        rooms = [filt.headroom(t) for t in frontier([t for case, t in state._cases(neighbour, scope)
                                                     if ScopedState._hits(case, scope)])]
        out[p] = {"spent": spent, "remaining": min(rooms, key=lambda b: (b.epsilon, b.delta))}
    return out
