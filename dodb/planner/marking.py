"""Filters that need not shrink their output: mark rows instead of compacting.

A DO filter compacts and releases a noisy size so that later operators work on fewer
rows.  When every consumer of the filter is a global aggregate (no GROUP BY) — possibly
through projections — nothing downstream gets cheaper from a smaller input: the
aggregate scans every slot once either way.  Such a filter only clears ``is_real``
(one linear pass), releases nothing and spends no budget.  Example: TPC-H Q6.
"""
from __future__ import annotations

from .logical import Aggregate, Filter, Node, Project, walk

__all__ = ["mark_only_filters"]


def mark_only_filters(root: Node) -> Node:
    parents: dict[int, list[Node]] = {}
    for n in walk(root):
        for c in n.children:
            parents.setdefault(c.node_id, []).append(n)

    def feeds_only_global_aggregates(n: Node) -> bool:
        ps = parents.get(n.node_id, [])
        if not ps:
            return False
        for p in ps:
            if isinstance(p, Aggregate) and not p.keys:
                continue
            if isinstance(p, (Project, Filter)) and feeds_only_global_aggregates(p):
                continue
            return False
        return True

    for n in walk(root):
        if isinstance(n, Filter) and feeds_only_global_aggregates(n):
            n.mark_only = True
    return root
