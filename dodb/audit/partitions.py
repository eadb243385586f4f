"""Audit of partition charges (docs/design.md §Partitions).

A query charged to partitions ``P`` claims that every release depends only on the units
of ``P``.  For units ``u`` *outside* ``P`` this checks the claim directly: run the query
on the database and on its neighbour without ``u`` (same slots, same randomness, no
replay) and require the true released values to be equal and the whole view
(:mod:`.view`) to be identical — the loss of such a change is zero, which is what lets
the ledger leave ``u``'s partition uncharged (paper 000, Thm IV.11).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Hashable, Iterable

from ..oblivious.rng import seeded_mode
from ..planner.partitions import partition_key
from .neighbour import AuditError, Neighbourhood
from .run import _run
from .view import first_difference, peak_only

__all__ = ["PartitionFinding", "audit_partitions"]


@dataclass
class PartitionFinding:
    sql: str
    partitions: frozenset[str] | None
    unit: Hashable
    difference: str | None  # None: identical view and releases

    @property
    def ok(self) -> bool:
        return self.difference is None


def _partition_of_units(nb: Neighbourhood) -> dict[Hashable, str]:
    out: dict[Hashable, str] = {}
    for t, st in nb.states.items():
        col = st.info.partition_by
        if col is None:
            continue
        for u, v in zip(nb.units[t], st.values(col)):
            if u is not None:
                out[u] = partition_key(t, col, v)
    return out


def _neighbour(db, nb: Neighbourhood, u: Hashable, sql: str, epsilon: float, seed: int) -> tuple:
    """The view and true releases of ``sql`` on the database without unit ``u``."""
    nb.write(nb.removed(u))
    try:
        other, trues, _ = _run(db, sql, "do", epsilon, None, seed)
    finally:
        nb.restore()
    return other, trues


def audit_partitions(db, queries: Iterable[str], *, units: int = 3, epsilon: float = 1.0, seed: int = 0,
                     planted: frozenset[str] | None = None) -> list[PartitionFinding]:
    """Check every partition-confined query against ``units`` units outside its partitions.

    ``planted`` overrides the planner's answer (tests plant a wrong one to show the
    audit catches it).  Rewrites the private tables and restores them; charges nothing.
    """
    findings = []
    with seeded_mode(), db._lock:
        nb = Neighbourhood.read(db.con, db.catalog)
        where = _partition_of_units(nb)
        rng = random.Random(seed)
        for sql in queries:
            parts = planted if planted is not None else db.plan(sql, epsilon=epsilon).partitions
            if parts is None:
                continue
            outside = [u for u in nb.root_units() if u in where and where[u] not in parts]
            if not outside:
                raise AuditError(f"no unit outside {sorted(parts)} to audit {sql!r} with")
            picked = outside[:1] + rng.sample(outside[1:], min(units - 1, len(outside) - 1))
            _run(db, sql, "do", epsilon, None, seed)  # warm-up: caches, compilation (as the audit does)
            base, trues, _ = _run(db, sql, "do", epsilon, None, seed)
            for u in picked:
                other, trues2 = _neighbour(db, nb, u, sql, epsilon, seed)
                if trues == trues2 and peak_only(base, other):  # measured again: a leak repeats
                    base, trues, _ = _run(db, sql, "do", epsilon, None, seed)
                    other, trues2 = _neighbour(db, nb, u, sql, epsilon, seed)
                diff = None
                if [x[3] for x in trues] != [y[3] for y in trues2]:
                    diff = "true released values differ: " + "; ".join(
                        f"{a[0]}:{a[1]} {a[3]} vs {b[3]}" for a, b in zip(trues, trues2) if a[3] != b[3])[:300]
                else:
                    diff = first_difference(base, other) or None
                findings.append(PartitionFinding(sql, parts, u, diff))
    return findings
