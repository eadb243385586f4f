"""Filters that need not shrink their output: mark rows instead of compacting.

A DO filter compacts and releases a noisy size so that later operators work on fewer
rows.  Two cases where compaction buys little:

* Every consumer of the filter is a global aggregate (no GROUP BY) — possibly through
  projections: the aggregate scans every slot once either way.  Such a filter only
  clears ``is_real`` (one linear pass), releases nothing and spends no budget
  (``mark_only``).  Example: TPC-H Q6.
* Every consumer sorts its whole input (GROUP BY, ORDER BY, DISTINCT), again
  possibly through projections.  The filter still releases its noisy size, but when
  that size is at least :data:`KEEP_MARKED_ABOVE` of the input it skips the compaction
  and hands on every slot with the real flags cleared: the sort that follows puts the
  dummies last anyway, and sorting the few extra slots costs less than compacting
  (``keep_marked_above``; docs/design.md §Filters kept marked).  The choice is a
  function of the released size and the public input size only.  Example: TPC-H Q1.
"""
from __future__ import annotations

from .logical import Aggregate, Distinct, Filter, Node, Project, Sort, walk

__all__ = ["mark_only_filters", "KEEP_MARKED_ABOVE"]

# Compaction of n slots costs about as much as sorting n/2 of them (operator benchmark,
# sf 0.1: binned compaction of lineitem 0.29 s, sorting it 0.47 s); below half the input
# the smaller sort wins.
KEEP_MARKED_ABOVE = 0.5


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


def _sorts_whole_input(p: Node) -> bool:
    return (isinstance(p, Aggregate) and bool(p.keys)) or isinstance(p, (Sort, Distinct))


def mark_only_filters(root: Node) -> Node:
    parents: dict[int, list[Node]] = {}
    for n in walk(root):
        for c in n.children:
            parents.setdefault(c.node_id, []).append(n)

    def feeds_only_global_aggregates(n: Node) -> bool:
        return _feeds_only(parents, n, lambda p: _global_aggregate(p)
                           or (isinstance(p, Filter) and feeds_only_global_aggregates(p)))

    for n in walk(root):
        if isinstance(n, Filter) and feeds_only_global_aggregates(n):
            n.mark_only = True
        elif isinstance(n, Filter) and _feeds_only(parents, n, _sorts_whole_input):
            n.keep_marked_above = KEEP_MARKED_ABOVE
    return root
