"""Join sides sorted at their scan: a private table's sorted slots, kept between queries.

A sort-based join sorts each side by its keys (operators/join.py).  When a side is a
private table's scan followed only by row-wise nodes — projections and filters — that
pass the join keys through unchanged, the sort can move down to the scan:

* sorting commutes with row-wise operators (each row's outputs depend on that row only),
  so sorting the scan and then projecting and filtering gives the rows the join's own
  sort would give, in the same order (ties in slot order in both);
* a scan's sorted lanes are kept in the slot cache (docs/design.md §Slot cache), so a
  later query over the same columns copies them instead of sorting: the sort's events
  are recorded from public sizes, as for any cached sorted side;
* the filters between the scan and the join then only clear the real flags
  (``mark_only``): the join skips the non-real rows anyway, so they compact nothing and
  release nothing — one noisy size and one compaction fewer per filtered side, and the
  ε they would have taken goes to the other releases.

The join's sort order is by key alone, ties in position order (dummies need not go last:
the join reads only eligible rows), so sorting before a filter marks rows gives the order
sorting after it would.  Nothing here looks at data: the choice is a function of the
plan's shape (docs/design.md §Join sides sorted at the scan).

Not for a cluster's plans (a worker has no slot cache, and its scan is the shard's) nor
in the ``plain`` and ``oblivious`` baselines, whose joins are planned as before.

Example:
    >>> from sqlglot import exp
    >>> from .logical import Join, Scan
    >>> s = Scan("o", "o", ["k", "d"], private=True, columns=["o.k", "o.d"], stability=1)
    >>> f = Filter(s, exp.column("o.d").eq(1), columns=["o.k", "o.d"], stability=1)
    >>> p = Scan("p", "p", ["k"], columns=["p.k"])
    >>> j = Join(f, p, "inner", ["o.k"], ["p.k"], columns=["o.k", "o.d", "p.k"], stability=1)
    >>> _ = presort_join_sides(j, "do", 1)
    >>> (s.sort_keys, f.mark_only, j.left_presorted, j.right_presorted)
    (['o.k'], True, True, False)
"""
from __future__ import annotations

from sqlglot import exp

from .logical import Filter, Join, Node, Project, ScalarRow, Scan, consumer_counts, walk

__all__ = ["presort_join_sides"]


def _chain(side: Node, keys: list[str], consumers: dict[int, int]) -> tuple[Scan, list[str], list[Filter]] | None:
    """The private scan under ``side`` through row-wise nodes read by this join alone, the
    join keys' names at the scan and the filters on the way; ``None`` if there is none."""
    filters: list[Filter] = []
    node = side
    while True:
        if consumers.get(node.node_id, 0) != 1:  # shared: its other reader expects it unsorted
            return None
        if isinstance(node, Scan):
            return (node, keys, filters) if node.private else None
        if isinstance(node, Filter):
            filters.append(node)
        elif isinstance(node, Project) and not isinstance(node, ScalarRow):
            renamed = []
            for k in keys:
                e = node.exprs.get(k)
                if not isinstance(e, exp.Column):  # a computed key: the scan is not sorted by it
                    return None
                renamed.append(e.name)
            keys = renamed
        else:
            return None
        node = node.children[0]


def presort_join_sides(root: Node, mode: str, workers: int) -> Node:
    """Move the sort of every eligible join side to its scan (module doc); in place."""
    if mode != "do" or workers > 1:
        return root
    consumers = consumer_counts(root)
    for n in list(walk(root)):
        if not isinstance(n, Join) or n.method != "sort":
            continue
        for side, keys, attr in ((n.left, n.left_keys, "left_presorted"), (n.right, n.right_keys, "right_presorted")):
            found = _chain(side, list(keys), consumers)
            if found is None:
                continue
            scan, scan_keys, filters = found
            if scan.sort_keys is not None and scan.sort_keys != scan_keys:
                continue
            scan.sort_keys = scan_keys
            for f in filters:
                f.mark_only = True
            setattr(n, attr, True)
    return root
