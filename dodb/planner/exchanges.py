"""Plan the exchanges of a cluster's keyed operators (docs/distributed.md §Group-by, §Joins, §Partitioned inputs).

On a cluster of ``P`` workers (``plan_query(..., workers=P)``), a GROUP BY whose input runs
on the workers (planner/placement.py: on every shard, or keyed by an earlier exchange, §Rounds)
would otherwise gather all its input rows to the driver.  This pass puts an
:class:`~.logical.Exchange` by the group keys under it: every worker sends each of its rows to
the worker its keys hash to, with one release of the per-destination counts (sensitivity the
input's stability, twice it under replace), and every worker then groups the rows it received
— each group on one worker.  A DISTINCT is a GROUP BY on all its columns.  An equi-join of two
inputs on the workers that is not along the unit path gets an Exchange under each side, by its
own join keys, so that equal keys meet on one worker (§Joins); a UNION, INTERSECT or EXCEPT of
two such inputs one under each side by all its columns (§Set operations).  An input already
partitioned by a subset of the needed keys (planner/key_partitioning.py) gets no exchange
(§Partitioned inputs): each exchange is one more charged release.  An ORDER BY … LIMIT over
rows on the workers gets a local top-k under it: every worker keeps its first ``limit +
offset`` rows, a public size, and the driver finishes over them (§Top-k).  It runs before the
filters are marked (planner/marking.py): a filter that feeds an exchange only clears rows'
real flags, since the exchange sends real rows only.  With one worker the plan is unchanged.

    >>> from dodb.planner.logical import Aggregate, Scan
    >>> scan = Scan(table="t", alias="t", private=False, columns=["t.k"])
    >>> agg = Aggregate(scan, keys=["t.k"], aggs=[], columns=["t.k"])
    >>> insert_exchanges(agg, catalog=None, workers=2, neighbour="add_remove")  # public input: no exchange
    0
"""
from __future__ import annotations

from typing import Sequence

from .key_partitioning import paired_positions
from .logical import Aggregate, Distinct, Exchange, Join, Node, SetOp, Sort, walk
from .placement import Placer

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


def _paired_exchanges(placer: Placer, left: Node, right: Node, lk: Sequence[str],
                      rk: Sequence[str]) -> tuple[list[str] | None, list[str] | None]:
    """The keys to exchange each side of a join (set operation) by, ``None`` for a side left
    where it is: the fewest exchanges that put both sides' rows with equal paired keys on one
    worker (docs/distributed.md §Partitioned inputs).  A side stays only when it is partitioned
    by some of its keys — the other side then goes by the paired ones — and is on the workers in
    the round the other side's rows arrive (rows are not held across rounds)."""
    def positions(c: Node, keys: Sequence[str]) -> set[tuple[int, ...]]:
        return paired_positions(placer.partitioned(c), list(keys)) if c.node_id in placer.keyed else set()

    pl, pr = positions(left, lk), positions(right, rk)
    options: list[tuple[tuple[int, ...] | None, bool, bool]] = \
        [(s, False, False) for s in sorted(pl & pr)] + [(s, False, True) for s in sorted(pl)] + \
        [(s, True, False) for s in sorted(pr)] + [(None, True, True)]
    for s, move_left, move_right in options:
        ends = [placer.arrives(c) + (1 if move else 0) for c, move in ((left, move_left), (right, move_right))]
        if all(move or end == max(ends) for move, end in zip((move_left, move_right), ends)):
            keys = range(len(lk)) if s is None else s
            return ([lk[i] for i in keys] if move_left else None), ([rk[i] for i in keys] if move_right else None)
    raise AssertionError("unreachable: exchanging both sides is always possible")


def insert_exchanges(root: Node, catalog, workers: int, neighbour: str, joins: bool = True) -> int:
    """Put an Exchange under every grouped Aggregate and DISTINCT whose input runs on the
    workers, (``joins``) under the sides of every equi-join and set operation of two worker
    inputs that does not run there itself (docs/distributed.md §Joins, §Set operations) —
    none under an input already partitioned by the keys needed (§Partitioned inputs) — and a
    local top-k under every ORDER BY … LIMIT over worker rows (§Top-k); returns how many nodes
    got them.  Children are placed before their parents (planner/placement.py), so an exchange
    may take a keyed input: a further round (§Rounds).  ``joins`` is off when the dry run found
    a join or set operation whose paired columns are cast to a common type (their hashes of
    equal values would differ)."""
    if workers <= 1 or not any(getattr(n, "private", False) for n in walk(root)):
        return 0
    placer = Placer(root, catalog, workers)
    changed = 0
    for n in list(walk(root)):  # children before parents
        placer.add(n)
        if placer.on_workers(n) or n.node_id in placer.exchanges:
            continue
        if isinstance(n, Aggregate) and n.keys and placer.on_workers(n.child):
            n.child = _exchange_of(n.child, n.sort_keys or n.keys, workers, neighbour)
        elif isinstance(n, Distinct) and placer.on_workers(n.child):
            n.child = _exchange_of(n.child, n.columns, workers, neighbour)
        elif (joins and ((isinstance(n, Join) and n.left_keys and n.method == "sort")
                         or (isinstance(n, SetOp) and n.op != "union_all"))
              and placer.on_workers(n.left) and placer.on_workers(n.right)):
            # equal keys hash to one worker from both sides (one partition_of)
            lk, rk = (n.left_keys, n.right_keys) if isinstance(n, Join) else (n.left.columns, n.right.columns)
            by_left, by_right = _paired_exchanges(placer, n.left, n.right, lk, rk)
            if by_left is not None:
                n.left = _exchange_of(n.left, by_left, workers, neighbour)
                placer.add(n.left)
            if by_right is not None:
                n.right = _exchange_of(n.right, by_right, workers, neighbour)
                placer.add(n.right)
            if isinstance(n, Join):
                n.left_presorted = n.right_presorted = False
            n.copartitioned = True
            placer.add(n)
            changed += 1
            continue
        elif isinstance(n, Sort) and n.limit is not None and not n.per_worker and placer.on_workers(n.child):
            n.child = _top_k_of(n, workers)
        else:
            continue
        placer.add(n.child)
        placer.add(n)
        changed += 1
    return changed
