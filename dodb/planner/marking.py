"""Filters that need not shrink their output: mark rows instead of compacting.

A DO filter compacts and releases a noisy size so that later operators work on fewer
rows.  Two cases where compaction buys little:

* Every consumer of the filter is a global aggregate (no GROUP BY) — possibly through
  projections: the aggregate scans every slot once either way.  Such a filter only
  clears ``is_real`` (one linear pass), releases nothing and spends no budget
  (``mark_only``).  Example: TPC-H Q6.  So is a filter whose consumer is a cluster's
  exchange (planner/exchanges.py): the exchange sends real rows only, and its release of
  the per-destination counts already sizes what the filter kept.
* Every consumer sorts its whole input (GROUP BY, ORDER BY, DISTINCT; a sort-based
  join), again possibly through projections.  The filter still releases its noisy
  size, but when that size is at least a fraction of the input (:data:`KEEP_MARKED_ABOVE`,
  :data:`KEEP_MARKED_ABOVE_JOIN`) it skips the compaction and hands on every slot with
  the real flags cleared: the sort that follows puts the dummies last anyway, and
  sorting the few extra slots costs less than compacting (``keep_marked_above``;
  docs/design.md §Filters kept marked).  The choice is a function of the released size
  and the public input size only.  Examples: TPC-H Q1, Q13, Q21.
"""
from __future__ import annotations

from .logical import Aggregate, Distinct, Exchange, Filter, Join, Node, Project, ScalarRow, Sort, walk

__all__ = ["mark_only_filters", "KEEP_MARKED_ABOVE", "KEEP_MARKED_ABOVE_JOIN"]

# Compaction of n slots costs about as much as sorting n/2 of them (operator benchmark,
# sf 0.1: binned compaction of lineitem 0.29 s, sorting it 0.47 s); below half the input
# the smaller sort wins.
KEEP_MARKED_ABOVE = 0.5
# A sort-based join makes several passes per input slot (a wide sort, the narrow union
# sort, the compaction back to the sides, the expansion): extra slots cost more there.
KEEP_MARKED_ABOVE_JOIN = 0.8


def _feeds_only(parents: dict[int, list[Node]], n: Node, accept) -> bool:
    """Whether every consumer of ``n``, looking through projections, satisfies ``accept``."""
    ps = parents.get(n.node_id, [])
    if not ps:
        return False
    for p in ps:
        if accept(p):
            continue
        if isinstance(p, Project) and _feeds_only(parents, p, accept):
            continue
        return False
    return True


def _global_aggregate(p: Node) -> bool:
    return isinstance(p, Aggregate) and not p.keys


def _threshold(p: Node) -> float | None:
    """The kept-marked threshold for a filter consumed by ``p`` (None: always compact)."""
    if (isinstance(p, Aggregate) and p.keys) or isinstance(p, (Sort, Distinct)):
        return KEEP_MARKED_ABOVE
    if isinstance(p, Join) and p.method == "sort":
        return KEEP_MARKED_ABOVE_JOIN
    return None


def _consumer_threshold(parents: dict[int, list[Node]], n: Node) -> float | None:
    """The largest threshold over every consumer of ``n`` seen through projections."""
    ps = parents.get(n.node_id, [])
    found: list[float] = []
    for p in ps:
        through = isinstance(p, Project) and not isinstance(p, ScalarRow)
        t = _consumer_threshold(parents, p) if through else _threshold(p)
        if t is None:
            return None
        found.append(t)
    return max(found) if found else None


def mark_only_filters(root: Node) -> Node:
    parents: dict[int, list[Node]] = {}
    for n in walk(root):
        for c in n.children:
            parents.setdefault(c.node_id, []).append(n)

    def feeds_only_global_aggregates(n: Node) -> bool:
        return _feeds_only(parents, n, lambda p: _global_aggregate(p) or isinstance(p, Exchange)
                           or (isinstance(p, Filter) and feeds_only_global_aggregates(p)))

    for n in walk(root):
        if isinstance(n, Filter) and feeds_only_global_aggregates(n):
            n.mark_only = True
        elif isinstance(n, Filter):
            n.keep_marked_above = _consumer_threshold(parents, n)
    return root
