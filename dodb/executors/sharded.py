"""The driver of a sharded run: placement, broadcast, workers, gather, the rest (docs/distributed.md).

:class:`ShardedExecutor` runs a :class:`~dodb.planner.plan.QueryPlan` on ``P`` workers:

1. place the plan (:func:`~dodb.planner.placement.place`);
2. run the public sub-plans the sharded nodes read, on the driver;
3. hand every worker its task (:mod:`dodb.executors.worker`) through a runner — the
   :class:`InlineRunner` here runs them one after another in this process (tests, the
   audit), the Ray runner (:mod:`dodb.executors.ray_runner`) on a cluster;
4. concatenate each gathered node's outputs in worker order (their padded sizes are
   public) and run the rest of the plan on the driver over them.

The view is the workers' views in worker order, each behind a ``worker`` event, then the
driver's; the releases are the workers', in worker order, then the driver's.  The plan's
privacy events are the single-process plan's plus one per exchange (docs/distributed.md
§Sharded execution, §Group-by).  With exchanges the workers run in rounds (§Rounds): the
shards up to the first exchanges, then every worker over the blocks addressed to it up to
the next exchanges or gathers, and so on.
"""
from __future__ import annotations

import random
import time
from typing import Callable, Protocol, Sequence

from ..operators.context import ExecContext
from ..operators.table import PaddedTable, concat_tables
from ..planner.execute import Executor, NodeStats
from ..planner.logical import Scan, leaks, walk
from ..planner.placement import Placement, place
from ..storage.shards import ShardSet, StaleShardsError
from .moves import DRIVER, block_move
from .worker import WorkerResult, WorkerTask, run_worker

__all__ = ["Runner", "InlineRunner", "ShardedExecutor"]


class Runner(Protocol):
    """Runs worker tasks and returns their results in task order."""

    workers: int

    def map(self, tasks: Sequence[WorkerTask]) -> list[WorkerResult]: ...


class InlineRunner:
    """The workers one after another in this process: the same tasks, no cluster."""

    def __init__(self, workers: int):
        self.workers = workers

    def map(self, tasks: Sequence[WorkerTask]) -> list[WorkerResult]:
        return [run_worker(t) for t in tasks]

    def describe(self) -> str:
        return f"inline:{self.workers}"

    def close(self) -> None:
        pass


def _worker_seed(rng) -> int | None:
    """A seed for a worker's generator when the driver's is a seeded test generator."""
    return rng.getrandbits(64) if type(rng) is random.Random else None


def _merge_stats(into: dict[int, NodeStats], results: list[WorkerResult]) -> None:
    for r in results:
        for nid, st in r.stats.items():
            have = into.get(nid)
            if have is None:
                into[nid] = NodeStats(list(st.padded_in), st.padded_out, st.seconds, list(st.leaked))
                continue
            have.padded_in = [a + b for a, b in zip(have.padded_in, st.padded_in)]
            have.padded_out += st.padded_out
            have.seconds = max(have.seconds, st.seconds)
            have.leaked += st.leaked


class ShardedExecutor:
    """Runs plans on the workers of ``runner`` over the shards ``shards()`` returns."""

    def __init__(self, runner: Runner, shards: Callable[[], ShardSet | None]):
        self.runner = runner
        self.shards = shards
        self.last_placement: Placement | None = None

    @property
    def workers(self) -> int:
        return self.runner.workers

    def close(self) -> None:
        self.runner.close()

    def placement(self, plan) -> Placement:
        return place(plan.root, plan.catalog, self.workers)

    def check(self, plan) -> tuple[Placement, ShardSet | None, list[str]]:
        """Placement, shard set and the private tables the workers scan; refuses (before
        anything is charged) shards that are missing, stale or cut for another worker count."""
        placement = self.placement(plan)
        if not placement.gathers:
            return placement, None, []
        scanned = sorted({n.table for g in placement.gathers for n in walk(g) if isinstance(n, Scan) and n.private})
        shards = self.shards()
        if shards is None:
            raise StaleShardsError(f"the database has no shards: the owner runs db.shard(workers={self.workers}) "
                                   "before querying it on a cluster")
        shards.check_current(plan.catalog, scanned, self.workers)
        return placement, shards, scanned

    @staticmethod
    def gather(node, parts: list[PaddedTable]) -> PaddedTable:
        """The workers' outputs of ``node`` one after another, at their padded sizes (each a
        function of that worker's releases and public sizes)."""
        out = concat_tables(parts, stability=node.stability)
        out.aligned = node.aligned  # shards of canonical slot arrays are canonical slots too
        return out

    @staticmethod
    def _check_releases(nodes: list, results: list[WorkerResult], mode: str) -> None:
        """Every worker made exactly the releases the plan announced for the nodes it ran: a
        worker that released more (a retried task drawing fresh noise, an operator leaking
        twice) would be spending budget nobody charged."""
        unique = {n.node_id: n for n in nodes}
        planned = sorted(s for n in unique.values() for _, s in leaks(n)) if mode == "do" else []
        for r in results:
            made = sorted(lk.sensitivity for lk in r.leaks)
            if made != planned:
                raise RuntimeError(f"internal error: worker {r.worker} made releases of sensitivities {made}, "
                                   f"the plan announced {planned} for it")

    def _round(self, ctx: ExecContext, number: int, tasks: list[WorkerTask], nodes: list) -> list[WorkerResult]:
        results = self.runner.map(tasks)
        self._check_releases(nodes, results, ctx.mode)
        for r in results:
            ctx.trace.record("worker", -1, number, r.worker)
            ctx.trace.extend(r.events)
            ctx.leaks.extend(r.leaks)
            ctx.fold_errors(r.error_code)
            ctx.error_messages.update(r.error_messages)
        return results

    @staticmethod
    def _log_gathers(ctx: ExecContext, gathers: list, results: list[WorkerResult], stage: dict[int, str]) -> None:
        ctx.moves.extend(block_move(stage[g.node_id], r.worker, DRIVER, r.outputs[i])
                         for i, g in enumerate(gathers) for r in results)

    def run(self, plan, ctx: ExecContext, bin_size: int | None) -> tuple[PaddedTable, dict[int, NodeStats]]:
        placement, shards, scanned = self.check(plan)
        self.last_placement = placement
        driver = Executor(plan.catalog, ctx, plan.allocation, bin_size=bin_size)
        if not placement.gathers:
            return driver.run(plan.root), driver.stats
        t0 = time.perf_counter()
        public = driver.run_all(list(placement.broadcasts)) if placement.broadcasts else []
        inputs = {b.node_id: t for b, t in zip(placement.broadcasts, public)}
        tables = {t: plan.catalog.table(t) for t in scanned}
        inline = isinstance(self.runner, InlineRunner)
        if ctx.replay is not None and not inline:
            raise RuntimeError("internal error: a replayed run (the audit) runs its workers inline")

        def task(p: int, roots: list, given: dict, exchanges: list) -> WorkerTask:
            # inline, the workers run one after another here and share the driver's generator,
            # replay list and audit recorders; remote ones draw from their own CSPRNG
            return WorkerTask(p, roots, given, tables, shards, plan.allocation, ctx.mode, ctx.neighbour, bin_size,
                              None if inline else _worker_seed(ctx.rng), replay=ctx.replay if inline else None,
                              observer=ctx.observer if inline else None,
                              true_log=ctx.true_log if inline else None, rng=ctx.rng if inline else None,
                              threads=getattr(self.runner, "threads_per_worker", None), exchanges=exchanges)

        # round by round (docs/distributed.md §Rounds): every worker runs the gathers and the
        # exchanges' inputs of the round over its shard and the blocks addressed to it so far
        # (each exchange's blocks concatenated in source order, each at its released size)
        rounds = placement.rounds
        exchanges = list(placement.exchanges)
        stage = {g.node_id: f"gather {i}" for i, g in enumerate(placement.gathers)}
        on_workers = placement.sharded | placement.keyed
        blocks: dict[int, list[list[PaddedTable]]] = {}  # exchange id -> by source, by destination
        gathered: dict[int, PaddedTable] = {}
        results: list[WorkerResult] = []
        for number in range(1, max(rounds.values(), default=1) + 1):
            gathers = [g for g in placement.gathers if rounds[g.node_id] == number]
            sends = [x for x in exchanges if rounds[x.node_id] == number]
            if not gathers and not sends:
                continue
            roots = gathers + [x.child for x in sends]
            ran = [n for r in roots for n in walk(r) if n.node_id in on_workers and rounds[n.node_id] == number]
            reads = {n.node_id for r in roots for n in walk(r)}
            needed = [x for x in exchanges if x.node_id in blocks and x.node_id in reads]

            def received(d: int, needed=needed) -> dict:
                got = dict(inputs)
                for x in needed:
                    got[x.node_id] = concat_tables([b[d] for b in blocks[x.node_id]], stability=x.stability)
                return got

            done = self._round(ctx, number, [task(p, gathers, received(p), sends) for p in range(self.workers)],
                               ran + sends)
            self._log_gathers(ctx, gathers, done, stage)
            for x in sends:  # every block, to the driver and on to its destination
                i = exchanges.index(x)
                ctx.moves.extend(block_move(f"exchange {i}", r.worker, d, b) for r in done
                                 for d, b in enumerate(r.blocks[x.node_id]))
                blocks[x.node_id] = [r.blocks[x.node_id] for r in done]
            gathered.update({g.node_id: self.gather(g, [r.outputs[i] for r in done]) for i, g in enumerate(gathers)})
            results += done
        ctx.trace.record("driver", -1, self.workers)
        stats: dict[int, NodeStats] = {}
        _merge_stats(stats, results)
        driver.stats.update(stats)
        driver.given = gathered
        out = driver.run(plan.root)
        driver.stats.setdefault(plan.root.node_id, NodeStats([], out.padded_size, time.perf_counter() - t0))
        return out, driver.stats
