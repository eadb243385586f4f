"""Plan a grouped aggregate over worker rows as an exchange by its keys (docs/distributed.md §Group-by).

On a cluster of ``P`` workers (``plan_query(..., workers=P)``), a GROUP BY whose input runs
on the workers (planner/placement.py: on every shard, or keyed by an earlier exchange, §Rounds)
would otherwise gather all its input rows to the driver.  This pass puts an :class:`~.logical.Exchange` by the group keys under it: every
worker sends each of its rows to the worker its keys hash to, with one release of the
per-destination counts (sensitivity the input's stability, twice it under replace), and
every worker then groups the rows it received — each group on one worker.  An equi-join of
two inputs on the workers that is not along the unit path gets an Exchange under each side, by its
own join keys, so that equal keys meet on one worker (§Joins).  An ORDER BY … LIMIT over
rows on the workers gets a local top-k under it: every worker keeps its first ``limit +
offset`` rows, a public size, and the driver finishes over them (§Top-k).  It runs before
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

from .logical import Aggregate, Exchange, Join, Node, Sort, walk
from .partitions import unit_local
from .placement import worker_side

__all__ = ["insert_exchanges"]


def _exchange_of(c: Node, keys: list[str], workers: int, neighbour: str) -> Exchange:
    """An Exchange of ``c``'s rows by ``keys``, with ``c``'s public facts (its rows, moved)."""
    return Exchange(c, keys=list(keys), parts=workers,
                    release_scale=2 if neighbour == "replace" and c.stability > 0 else 1,
                    columns=list(c.columns), stability=c.stability, degrees=dict(c.degrees),
                    unique=list(c.unique), one_row=c.one_row, constant=c.constant, fds=list(c.fds),
                    literals=dict(c.literals), max_rows=c.max_rows, aligned=False)


def _top_k_of(sort: Sort, workers: int) -> Sort:
    """Every worker's first ``limit + offset`` rows of ``sort``'s input in its order: the final
    ORDER BY … LIMIT over them is the one over the whole input (docs/distributed.md §Top-k)."""
    c, k = sort.child, sort.limit + sort.offset
    return Sort(c, list(sort.keys), k, 0, per_worker=workers, columns=list(c.columns),
                stability=min(2 * c.stability, 2 * k), degrees=dict(c.degrees), unique=list(c.unique),
                one_row=c.one_row, fds=list(c.fds), literals=dict(c.literals), max_rows=c.max_rows)


def insert_exchanges(root: Node, catalog, workers: int, neighbour: str, joins: bool = True) -> int:
    """Put an Exchange under every grouped Aggregate whose input runs on the workers, (``joins``)
    under both sides of every equi-join of two worker inputs that does not run there itself
    (docs/distributed.md §Joins), and a local top-k under every ORDER BY … LIMIT over worker
    rows (§Top-k); returns how many nodes got them.  Children are placed before their parents
    (planner/placement.py), so an exchange may take a keyed input: a further round (§Rounds)."""
    if workers <= 1 or not any(getattr(n, "private", False) for n in walk(root)):
        return 0
    local = unit_local(root, catalog)
    memo: dict[int, bool] = {}
    sharded: set[int] = set()
    keyed: set[int] = set()
    exchanges: dict[int, Exchange] = {}
    changed = 0

    def on_workers(c: Node) -> bool:
        return c.node_id in sharded or c.node_id in keyed

    def place(n: Node) -> None:
        side = worker_side(n, workers, local, memo, sharded, keyed, exchanges)
        if side == "exchange":
            exchanges[n.node_id] = n
        elif side is not None:
            (sharded if side == "sharded" else keyed).add(n.node_id)

    for n in list(walk(root)):  # children before parents
        place(n)
        if on_workers(n) or n.node_id in exchanges:
            continue
        if isinstance(n, Aggregate) and n.keys and on_workers(n.child):
            n.child = _exchange_of(n.child, n.sort_keys or n.keys, workers, neighbour)
        elif (joins and isinstance(n, Join) and n.left_keys and n.method == "sort" and on_workers(n.left)
              and on_workers(n.right)):  # equal keys hash to one worker from both sides (one partition_of)
            n.left = _exchange_of(n.left, n.left_keys, workers, neighbour)
            n.right = _exchange_of(n.right, n.right_keys, workers, neighbour)
            n.left_presorted = n.right_presorted = False
            place(n.left)
        elif isinstance(n, Sort) and n.limit is not None and not n.per_worker and on_workers(n.child):
            n.child = _top_k_of(n, workers)
        else:
            continue
        place(n.children[-1] if not isinstance(n, Join) else n.right)
        place(n)
        changed += 1
    return changed
