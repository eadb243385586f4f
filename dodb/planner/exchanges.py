"""Plan a grouped aggregate over sharded rows as an exchange by its keys (docs/distributed.md §Group-by).

On a cluster of ``P`` workers (``plan_query(..., workers=P)``), a GROUP BY whose input runs
on every shard (planner/placement.py) would otherwise gather all its input rows to the
driver.  This pass puts an :class:`~.logical.Exchange` by the group keys under it: every
worker sends each of its rows to the worker its keys hash to, with one release of the
per-destination counts (sensitivity the input's stability, twice it under replace), and
every worker then groups the rows it received — each group on one worker.  An equi-join of
two sharded inputs that is not along the unit path gets an Exchange under each side, by its
own join keys, so that equal keys meet on one worker (§Joins).  It runs before
the filters are marked (planner/marking.py): a filter that feeds an exchange only clears
rows' real flags, since the exchange sends real rows only.  With one worker the plan is
unchanged.

    >>> from dodb.planner.logical import Aggregate, Scan
    >>> scan = Scan(table="t", alias="t", private=False, columns=["t.k"])
    >>> agg = Aggregate(scan, keys=["t.k"], aggs=[], columns=["t.k"])
    >>> insert_exchanges(agg, catalog=None, workers=2, neighbour="add_remove")  # public input: no exchange
    0
"""
from __future__ import annotations

from .logical import Aggregate, Exchange, Join, Node, walk
from .partitions import unit_local
from .placement import shardable

__all__ = ["insert_exchanges"]


def _exchange_of(c: Node, keys: list[str], workers: int, neighbour: str) -> Exchange:
    """An Exchange of ``c``'s rows by ``keys``, with ``c``'s public facts (its rows, moved)."""
    return Exchange(c, keys=list(keys), parts=workers,
                    release_scale=2 if neighbour == "replace" and c.stability > 0 else 1,
                    columns=list(c.columns), stability=c.stability, degrees=dict(c.degrees),
                    unique=list(c.unique), one_row=c.one_row, constant=c.constant, fds=list(c.fds),
                    literals=dict(c.literals), max_rows=c.max_rows, aligned=False)


def insert_exchanges(root: Node, catalog, workers: int, neighbour: str, joins: bool = True) -> int:
    """Put an Exchange under every grouped Aggregate whose input runs on the shards, and
    (``joins``) under both sides of every equi-join of two sharded inputs that does not run on
    the shards itself (docs/distributed.md §Joins); returns how many nodes got them."""
    if workers <= 1 or not any(getattr(n, "private", False) for n in walk(root)):
        return 0
    local = unit_local(root, catalog)
    memo: dict[int, bool] = {}
    sharded: set[int] = set()
    for n in walk(root):
        if shardable(n, local, sharded, memo):
            sharded.add(n.node_id)
    targets = [n for n in walk(root) if isinstance(n, Aggregate) and n.keys and n.child.node_id in sharded]
    for agg in targets:
        agg.child = _exchange_of(agg.child, agg.sort_keys or agg.keys, workers, neighbour)
    pairs = [n for n in walk(root) if joins and isinstance(n, Join) and n.left_keys and n.method == "sort"
             and n.node_id not in sharded and n.left.node_id in sharded and n.right.node_id in sharded]
    for j in pairs:  # equal keys hash to one worker from both sides (the same partition_of)
        j.left = _exchange_of(j.left, j.left_keys, workers, neighbour)
        j.right = _exchange_of(j.right, j.right_keys, workers, neighbour)
        j.left_presorted = j.right_presorted = False
    return len(targets) + len(pairs)
