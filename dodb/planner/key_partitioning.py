"""Which columns a worker node's rows are partitioned by (docs/distributed.md §Partitioned inputs).

On a cluster an :class:`~.logical.Exchange` by keys ``K`` sends every real row to worker
``partition_of(row[K], P)`` (operators/exchange.py).  A *partitioning* of a node is a set of
column lists ``K``, each of which places every real row of the node's output: the row sits on
worker ``partition_of(row[K], P)``, with the one function (salt 0) and the cluster's ``P``.
A keyed node whose input has a partitioning by a subset of the columns it needs equal (a GROUP
BY's keys, a join's keys paired on both sides, a DISTINCT's or set operation's columns) needs
no exchange: rows that agree on the needed columns agree on that subset, so they are on one
worker already.

Only an exchange creates a partitioning.  A shard's rows sit at a keyed hash of their privacy
unit's *label* (docs/distributed.md §Sharded storage), not at ``partition_of`` of any column,
so a sharded node has none.  It is carried, column by column, through nodes that keep each
row on its worker with the column's value unchanged:

- a filter, and a local top-k: the same rows;
- a projection: a list survives when each of its columns is passed on by a plain reference
  (under its new name; the first one if several);
- a grouped aggregate or a DISTINCT: the lists within its keys (the key columns keep their
  names and values);
- a join run on the workers — co-partitioned, or with a public side broadcast whole: an
  output row holds its left row's columns unchanged, on that row's worker, when the join is
  inner, LEFT, semi or anti, so the left side's lists hold; the right side's only for an
  inner join.  A LEFT join's unmatched rows carry NULL right columns but sit at their *left*
  key's worker, not at ``partition_of(NULL)``, so the right keys do not place them (a GROUP BY
  on the right key above a LEFT join still exchanges); a FULL join has neither;
- a set operation over co-partitioned sides: its output columns are the left side's, so
  INTERSECT and EXCEPT keep the left side's lists (an INTERSECT's rows are also right rows of
  the same values on the same worker: the right side's lists, by position, too); a UNION,
  and a UNION ALL of two keyed sides (each row stays where it is), only the lists both sides
  share by position.

Two sides hash alike only when their paired columns' equal values hash alike: integers of any
width and strings of any padded width do; a pair the executor casts to a common type does not,
and the dry run re-plans such a query without co-partitioned joins or set operations
(planner/bind.py ``dry_run``).
"""
from __future__ import annotations

from typing import Sequence

from sqlglot import exp

from .logical import Aggregate, CrossOne, Distinct, Exchange, Filter, Join, Node, Project, ScalarRow, SetOp, Sort

__all__ = ["Partitioning", "partitioning", "covers", "paired_positions"]

Partitioning = frozenset  # of tuple[str, ...]: each list places every real row (module doc)

NONE: Partitioning = frozenset()


def _renamed(parts: Partitioning, rename: dict[str, str]) -> Partitioning:
    return frozenset(tuple(rename[c] for c in k) for k in parts if all(c in rename for c in k))


def _positional(parts: Partitioning, src: Sequence[str], dst: Sequence[str]) -> Partitioning:
    return _renamed(parts, {s: d for s, d in zip(src, dst)})


def partitioning(n: Node, kids: Sequence[Partitioning]) -> Partitioning:
    """The partitioning of ``n``'s output given its children's (``kids``, in child order), for a
    node that runs on the workers (module doc)."""
    if isinstance(n, Exchange):
        return frozenset({tuple(n.keys)})
    if isinstance(n, ScalarRow) or not kids:
        return NONE
    first = kids[0]
    if isinstance(n, (Filter, Sort)):
        out = first
    elif isinstance(n, Project):
        rename: dict[str, str] = {}
        for name, e in n.exprs.items():
            if isinstance(e, exp.Column) and not e.table and e.name not in rename:
                rename[e.name] = name
        out = _renamed(first, rename)
    elif isinstance(n, (Aggregate, Distinct)):
        keys = set(n.keys) if isinstance(n, Aggregate) else set(n.columns)
        out = frozenset(k for k in first if set(k) <= keys)
    elif isinstance(n, Join):
        out = (first if n.how in ("inner", "left", "semi", "anti") else NONE) | \
            (kids[1] if n.how == "inner" else NONE)
    elif isinstance(n, CrossOne):
        out = first
    elif isinstance(n, SetOp):
        left = _positional(first, n.left.columns, n.columns)
        right = _positional(kids[1], n.right.columns, n.columns)
        out = {"intersect": left | right, "except": left}.get(n.op, left & right)
    else:
        out = NONE
    return frozenset(k for k in out if set(k) <= set(n.columns))


def covers(parts: Partitioning, needed: Sequence[str]) -> bool:
    """Whether one list of ``parts`` lies within ``needed``: rows equal on ``needed`` are then
    on one worker (module doc)."""
    want = set(needed)
    return any(k and set(k) <= want for k in parts)


def paired_positions(parts: Partitioning, keys: Sequence[str]) -> set[tuple[int, ...]]:
    """The lists of ``parts`` within ``keys``, as positions in ``keys``: a list of positions
    ``S`` places a side by ``[keys[i] for i in S]``, and two sides placed by the same ``S`` of
    their paired keys are co-partitioned."""
    return {tuple(keys.index(c) for c in k) for k in parts if k and all(c in keys for c in k)}
