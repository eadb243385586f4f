"""One worker's share of a sharded plan (docs/distributed.md §Sharded execution).

:func:`run_worker` is what a worker process (or the inline runner) runs: the sharded
sub-plans under the gather nodes, over shard ``p`` of every private table it scans, with
the broadcast public inputs given; then, for each exchange it is given, it sends the
rows of the exchange's input to the workers their keys hash to (its blocks travel back in
the result, and the driver hands every worker the blocks addressed to it for the next
round).  Everything it needs travels in a :class:`WorkerTask`
(plain data: plan nodes, table declarations, the shard set, the privacy allocation) and
everything it returns in a :class:`WorkerResult`: the gathered outputs, its releases, its
trace and per-node statistics.  Its randomness is its own generator, from the operating
system's CSPRNG (or, in test mode only, a seed the driver drew).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..oblivious.rng import new_rng, seeded_mode
from ..heap import keep_freed_memory
from ..oblivious.threads import set_threads
from ..oblivious.trace import TraceEvent
from ..operators.context import ExecContext, Leak
from ..operators.exchange import exchange_by_keys
from ..operators.table import PaddedTable
from ..planner.catalog import TableInfo
from ..planner.execute import Executor, NodeStats
from ..planner.logical import Node
from ..storage.shards import ShardSet, read_shard

__all__ = ["WorkerTask", "WorkerResult", "run_worker"]


@dataclass
class WorkerTask:
    worker: int
    roots: list[Node]                         # the gather nodes, in placement order
    inputs: dict[int, PaddedTable]            # broadcast public inputs by node id
    tables: dict[str, TableInfo]              # declarations of the private tables scanned
    shards: ShardSet
    allocation: dict[int, tuple[float, float]]
    mode: str
    neighbour: str
    bin_size: int | None = None
    seed: int | None = None                   # test mode only
    replay: list[int] | None = None           # the audit's replayed releases (inline runner only)
    observer: object | None = None            # the audit's recorder (inline runner only)
    true_log: list | None = None              # the audit's true values (inline runner only)
    rng: object | None = None                 # the driver's generator, shared (inline runner only)
    threads: int | None = None                # kernel threads in a worker process (None: keep the setting)
    exchanges: list = field(default_factory=list)  # Exchange nodes whose input this worker sends by key


@dataclass
class WorkerResult:
    worker: int
    outputs: list[PaddedTable]
    leaks: list[Leak]
    events: list[TraceEvent]
    stats: dict[int, NodeStats]
    error_code: "int | np.ndarray" = 0  # the worker's status word (ExecContext.errors, a 0-d array)
    error_messages: dict = field(default_factory=dict)
    blocks: dict = field(default_factory=dict)  # Exchange node id -> this worker's block per destination


class _Tables:
    """The catalog a worker needs: the declarations of the tables it scans."""

    def __init__(self, tables: dict[str, TableInfo]):
        self.tables = tables

    def table(self, name: str) -> TableInfo:
        return self.tables[name]


def run_worker(task: WorkerTask) -> WorkerResult:
    """Run worker ``task.worker``'s share (module doc)."""
    keep_freed_memory()  # a worker process reuses its freed pages between tasks (design.md §Freed memory kept)
    if task.threads is not None:
        set_threads(task.threads)  # one CPU per task on a cluster: no oversubscription
    if task.rng is not None:
        rng = task.rng
    elif task.seed is not None:  # the driver runs in test/benchmark mode (its generator is seeded)
        with seeded_mode():
            rng = new_rng(task.seed)
    else:
        rng = new_rng()
    ctx = ExecContext(mode=task.mode, rng=rng, neighbour=task.neighbour, replay=task.replay,
                      true_log=task.true_log, observer=task.observer)

    def read(info: TableInfo, cols):
        return read_shard(task.shards, info, task.worker, cols)

    ex = Executor(_Tables(task.tables), ctx, task.allocation, bin_size=task.bin_size, given=task.inputs,
                  slot_reader=read)
    outputs = ex.run_all(task.roots + [x.child for x in task.exchanges])
    blocks = {}
    for x, table in zip(task.exchanges, outputs[len(task.roots):]):
        t0 = time.perf_counter()
        eps, delta = task.allocation.get(x.node_id, (1.0, 0.5))
        before = len(ctx.leaks)
        with np.errstate(all="ignore"):
            sent = exchange_by_keys(table, x.keys, x.parts, epsilon=eps, delta=delta, ctx=ctx)
        blocks[x.node_id] = sent.blocks
        ex.stats[x.node_id] = NodeStats([table.padded_size], sum(sent.sizes), time.perf_counter() - t0,
                                        [v for lk in ctx.leaks[before:] for v in lk.values])
    return WorkerResult(task.worker, outputs[:len(task.roots)], list(ctx.leaks), list(ctx.trace.events), ex.stats,
                        ctx.errors, dict(ctx.error_messages), blocks)
