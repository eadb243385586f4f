"""The coupled-neighbour audit (docs/design.md §Audit).

For each query and each sampled privacy unit ``u``: run the query on the database ``D``
(seeded randomness, after one warm-up run that fills caches), build the coupled
neighbour ``D'`` in the same slots (:mod:`.neighbour`), run the query on ``D'`` with the
same randomness and ``D``'s released values replayed, then

* check that every release's true values moved by at most its charged sensitivity (L1);
* require the two views (:mod:`.view`) to be identical.

A replayed value below the neighbour's true value is the coupling's failure event (its
probability is what the padding's δ pays for); the pair is retried with fresh randomness.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Hashable, Iterable, Sequence

from .. import duckcalls
from ..errors import DodbError
from ..operators.context import ExecContext, ReplayBelowTrueError
from ..oblivious.rng import new_rng, seeded_mode
from .neighbour import AuditError, Neighbourhood
from .view import CountingSource, MessageRecorder, View, ViewRecorder, first_difference, peak_only

__all__ = ["audit", "AuditReport", "QueryAudit", "PairResult"]

RETRIES = 3


@dataclass
class PairResult:
    unit: Hashable
    difference: str = ""                                  # '' when the views are identical
    sensitivity: list[str] = field(default_factory=list)  # releases that moved more than charged
    retries: int = 0
    extreme: bool = False                                 # a replace neighbour with extreme values

    @property
    def ok(self) -> bool:
        return not self.difference and not self.sensitivity


@dataclass
class QueryAudit:
    sql: str
    pairs: list[PairResult] = field(default_factory=list)
    releases: int = 0
    seconds: float = 0.0
    error: str | None = None

    @property
    def identical(self) -> int:
        return sum(p.ok for p in self.pairs)

    def line(self, label: str) -> str:
        if self.error is not None:
            return f"ERROR {label}: {self.error}"
        head = f"{'ok' if self.identical == len(self.pairs) else 'LEAK':5} {label}: {self.identical} of " \
               f"{len(self.pairs)} pairs identical, {self.releases} releases, {self.seconds:.1f}s"
        bad = [p for p in self.pairs if not p.ok]
        if bad:
            p = bad[0]
            why = p.difference or "; ".join(p.sensitivity)
            head += f"; unit {_unit_name(p.unit)}{' (extreme values)' if p.extreme else ''}: {why}"
        return head


@dataclass
class AuditReport:
    queries: list[QueryAudit]
    mode: str
    neighbour: str

    @property
    def identical(self) -> int:
        return sum(q.identical for q in self.queries)

    @property
    def total(self) -> int:
        return sum(len(q.pairs) for q in self.queries)

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.identical == self.total and not any(q.error for q in self.queries)

    def lines(self, labels: Sequence[str] | None = None) -> list[str]:
        """One line per query (named by ``labels``, else ``q1``, ``q2`` … in order) and the total."""
        labels = list(labels) if labels is not None else [f"q{i + 1}" for i in range(len(self.queries))]
        out = [q.line(label) for q, label in zip(self.queries, labels)]
        out.append(f"audit: {self.identical} of {self.total} neighbour pairs identical")
        return out


def _unit_name(u: Hashable) -> str:
    return repr(u[1]) if isinstance(u, tuple) and u and u[0] == "unit" else repr(u)


def _run(db, sql: str, mode: str, epsilon: float, delta: float | None, seed: int,
         replay: list[int] | None = None, allocations: bool = True) -> tuple[View, list, list[int]]:
    plan = db.plan(sql, epsilon=epsilon, delta=delta, mode=mode)
    rec = ViewRecorder(allocations)
    rng = CountingSource(new_rng(seed))
    ctx = ExecContext(mode=mode, rng=rng, neighbour=db.neighbour,
                      replay=None if replay is None else list(replay), true_log=[], observer=rec)
    view = View(plan=plan.explain())
    # every audited run reads its slots from storage: a scan served from the slot cache
    # allocates differently, and which runs hit depends on the audit's own order of runs
    # (public, but not the same on both sides of a pair): docs/design.md §Slot cache
    db.catalog.slot_cache.clear()
    rec.start()
    try:
        with MessageRecorder() as said, duckcalls.recording() as log:
            padded = plan.execute(ctx=ctx, executor=db.executor)
    finally:
        rec.stop()
    view.trace, view.nodes, view.duckdb, view.random = list(ctx.trace.events), rec.nodes, log, rng.requests
    view.messages = said.messages
    view.moves = list(ctx.moves)
    view.answer = (duckcalls.arrow_shape(padded.table), tuple(padded.status.shape))
    return view, ctx.true_log, ctx.trace.leaked_values()


def _sensitivity_excess(a: list, b: list) -> list[str]:
    """Releases whose true values are farther apart (L1) than their charged sensitivity."""
    out = []
    for (op, name, s, x), (op2, name2, _, y) in zip(a, b):
        if (op, name) != (op2, name2) or len(x) != len(y):
            out.append(f"{op}:{name} is not the same release in both runs")
            continue
        dist = sum(abs(u - v) for u, v in zip(x, y))
        if dist > s:
            out.append(f"{op}:{name} moved by {dist} (L1), charged sensitivity {s}")
    if len(a) != len(b):
        out.append(f"{len(a)} releases != {len(b)}")
    return out


def audit(db, queries: Iterable[str], *, pairs: int = 3, mode: str = "do", epsilon: float = 1.0,
          delta: float | None = None, seed: int = 0, allocations: bool = True,
          units: Iterable[Hashable] | None = None) -> AuditReport:
    """Audit ``queries`` on ``db`` with ``pairs`` sampled units each (module docstring).

    ``units`` names the units to use instead of sampling (as :class:`Neighbourhood`
    labels them: ``("unit", key)``, ``("orphan", parent_table, key)`` for a unit the
    parent table lacks, ``("null", table, slot)`` for a row whose unit key is NULL).

    ``db`` is a :class:`dodb.Database` whose private tables the audit rewrites to build
    each neighbour and restores afterwards; nothing is charged to its ledger.  Run it on
    a copy of the data (it reads private rows: owner tooling).
    """
    from ..oblivious.kernel_cache import quiet

    quiet()  # the one-time "compiling" line depends on the kernel cache, not on data: not part of the view
    queries = list(queries)
    if not queries:
        raise AuditError("no queries to audit")
    if pairs < 1:
        raise AuditError(f"pairs must be at least 1, got {pairs}")
    with seeded_mode(), db._lock:
        if db.executor is not None:  # a cluster: the neighbours are built in the shards (audit/sharded.py)
            from .sharded import ShardedNeighbourhood

            nb = ShardedNeighbourhood.read_shards(db.con, db.catalog, db.shard_directory())
        else:
            nb = Neighbourhood.read(db.con, db.catalog)
        rng = random.Random(seed)
        units = nb.sample(pairs, rng) if units is None else _known(nb, units)
        # replace: every other unit is replaced by one holding extreme values (module doc of .neighbour)
        extreme = {u: db.neighbour == "replace" and k % 2 == 1 for k, u in enumerate(units)}
        neighbours = {u: (nb.removed(u) if db.neighbour == "add_remove" else nb.replaced(u, rng, extreme=extreme[u]))
                      for u in units}
        results = [QueryAudit(q) for q in queries]
        base: dict[int, tuple] = {}
        for i, q in enumerate(queries):
            t0 = time.perf_counter()
            try:
                _run(db, q, mode, epsilon, delta, seed, allocations=allocations)  # warm-up: caches, compilation
                base[i] = _run(db, q, mode, epsilon, delta, seed, allocations=allocations)
                results[i].releases = len(base[i][1])
            except DodbError as e:
                results[i].error = str(e)
            results[i].seconds += time.perf_counter() - t0
        retry: list[tuple[int, Hashable]] = []
        again: list[tuple[int, Hashable]] = []  # pairs that differed only in a traced peak (view.peak_only)
        for u in units:
            nb.write(neighbours[u])
            try:
                for i in base:
                    t0 = time.perf_counter()
                    view, trues, released = base[i]
                    try:
                        other, trues2, _ = _run(db, queries[i], mode, epsilon, delta, seed, released, allocations)
                    except ReplayBelowTrueError:
                        retry.append((i, u))
                        continue
                    if peak_only(view, other):
                        again.append((i, u))
                        continue
                    results[i].pairs.append(PairResult(u, first_difference(view, other),
                                                       _sensitivity_excess(trues, trues2), extreme=extreme[u]))
                    results[i].seconds += time.perf_counter() - t0
            finally:
                nb.restore()
        for i, u in again:
            pair = measure_again(db, nb, neighbours[u], queries[i], u, mode, epsilon, delta, seed, allocations)
            pair.extreme = extreme[u]
            results[i].pairs.append(pair)
        for i, u in retry:
            pair = _retry(db, nb, neighbours[u], queries[i], u, mode, epsilon, delta, seed, allocations)
            pair.extreme = extreme[u]
            results[i].pairs.append(pair)
    return AuditReport(results, mode, db.neighbour)


def _known(nb: Neighbourhood, units: Iterable[Hashable]) -> list[Hashable]:
    units = list(units)
    owning = set(nb.root_units())
    missing = [u for u in units if u not in owning]
    if missing or not units:
        raise AuditError(f"no row belongs to the unit(s) {missing}" if missing else "no units to audit")
    return units


def measure_again(db, nb: Neighbourhood, states, sql: str, u, mode, epsilon, delta, seed,
                  allocations) -> PairResult:
    """A pair whose views differed only in a traced peak, measured once more on both sides
    with the same seed (:func:`.view.peak_only`): a leak repeats, a host thread's allocation
    landing in an operator's window does not."""
    view, trues, released = _run(db, sql, mode, epsilon, delta, seed, allocations=allocations)
    nb.write(states)
    try:
        other, trues2, _ = _run(db, sql, mode, epsilon, delta, seed, released, allocations)
    except ReplayBelowTrueError:
        other = None
    finally:
        nb.restore()
    if other is None:
        return _retry(db, nb, states, sql, u, mode, epsilon, delta, seed, allocations)
    return PairResult(u, first_difference(view, other), _sensitivity_excess(trues, trues2))


def _retry(db, nb: Neighbourhood, states, sql: str, u, mode, epsilon, delta, seed, allocations) -> PairResult:
    """A pair whose replay fell below a true value, run again with fresh randomness."""
    for attempt in range(1, RETRIES + 1):
        s = seed + 7919 * attempt
        view, trues, released = _run(db, sql, mode, epsilon, delta, s, allocations=allocations)
        nb.write(states)
        try:
            other, trues2, _ = _run(db, sql, mode, epsilon, delta, s, released, allocations)
        except ReplayBelowTrueError:
            continue
        finally:
            nb.restore()
        return PairResult(u, first_difference(view, other), _sensitivity_excess(trues, trues2), attempt)
    return PairResult(u, f"the coupling failed {RETRIES + 1} times in a row (each time with probability ≤ δ)",
                      [], RETRIES)
