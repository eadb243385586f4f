"""Which plan nodes keep rows in their canonical slots, and where filters may use bins.

A private base table is stored in canonical slots (docs/design.md §Storage); its scan
and every row-wise operator after it — projections, marking filters, lookup LEFT joins,
one-row broadcasts, row ids — keep each row in its slot, so the coupled neighbour has
the same rows in the same places (``aligned``).  A DO filter on an aligned input may
release per-bin counts; anywhere else (after a sort, a join, a compaction) it releases
one total (docs/neighbours.md §Positional releases).  Under replace-neighbours a bin
vector moves by up to ``2s`` in L1 (one unit's rows leave, another's arrive), so such
releases are charged at twice the stability.

Example:
    >>> from dodb.planner.logical import Scan, Filter
    >>> from sqlglot import exp
    >>> scan = Scan("t", "t", ["a"], private=True, columns=["t.a"], stability=1)
    >>> f = Filter(scan, exp.true(), columns=["t.a"], stability=1)
    >>> _ = mark_alignment(f, "replace")
    >>> (scan.aligned, f.binned, f.release_scale, f.aligned)
    (True, True, 2, False)
"""
from __future__ import annotations

from .logical import CrossOne, Filter, Join, Node, Project, ScalarRow, Scan, walk

__all__ = ["mark_alignment"]


def mark_alignment(root: Node, neighbour: str) -> Node:
    """Set ``aligned`` on every node, ``binned``/``release_scale`` on filters and lookups."""
    scale = 2 if neighbour == "replace" else 1
    for n in walk(root):  # children first
        if isinstance(n, Scan):
            n.aligned = n.private and not n.sort_keys  # a sorted scan's rows left their slots
        elif isinstance(n, Filter):
            n.binned = n.child.aligned and not n.mark_only
            n.release_scale = scale if n.binned else 1
            n.aligned = n.mark_only and n.child.aligned
        elif isinstance(n, ScalarRow):  # one slot, not the base table's
            n.aligned = False
        elif isinstance(n, Project) or n.kind in ("AddRowId", "Window"):  # a window sorts its rows back
            n.aligned = n.children[0].aligned
        elif isinstance(n, CrossOne):
            n.aligned = n.left.aligned
        elif isinstance(n, Join) and n.method == "lookup":
            n.release_scale = scale if n.left.aligned else 1
            n.aligned = n.how == "left" and n.left.aligned
        else:
            n.aligned = False
    return root
