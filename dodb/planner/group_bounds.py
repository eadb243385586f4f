"""Public bounds on the rows of one group: GROUP BY groups and window partitions.

A declared degree bound (``max_degree``) counts rows per non-NULL value only — joins never
match NULLs, so that is what a join needs — but GROUP BY and PARTITION BY put every NULL
into one group.  A degree therefore bounds a group only for a column that is NOT NULL in
its table, which ingest enforces at every data change (docs/design.md §Storage,
*NOT NULL*); a unique key bounds it by 1 (keys are verified counting NULLs as one value).
"""
from __future__ import annotations

from sqlglot import exp

from .logical import Node, Scan

__all__ = ["rows_per_group", "column_not_null"]


def rows_per_group(builder, node: Node, cols: list[str]) -> int | None:
    """A public bound on the rows sharing one value of ``cols`` (NULLs grouped), or ``None``.

    >>> rows_per_group(None, Node(unique=[frozenset({"t.k"})]), ["t.k"])
    1
    >>> rows_per_group(None, Node(), []) is None
    True
    """
    if not cols:
        return None
    if any(u <= frozenset(cols) for u in node.unique) or node.one_row:
        return 1
    known = [node.degrees[c] for c in cols if c in node.degrees and column_not_null(builder, node, c)]
    return min(known) if known else None


def column_not_null(builder, node: Node, col: str) -> bool:
    """Whether ``col`` of ``node`` is a NOT NULL table column, followed through projections,
    filters, windows and sorts to its scan (anything else may introduce a NULL)."""
    while True:
        if isinstance(node, Scan):
            name = col.split(".", 1)[1] if col.startswith(f"{node.alias}.") else None
            return name is not None and name in builder.catalog.table(node.table).not_null
        if node.kind == "Project":
            e = node.exprs.get(col)
            if not isinstance(e, exp.Column):
                return False
            col, node = e.name, node.children[0]
        elif node.kind in ("Filter", "Window", "Sort") and col in node.children[0].columns:
            node = node.children[0]
        else:
            return False
