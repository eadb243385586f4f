"""Column pruning on the logical plan: carry only the columns someone still needs.

Every column an oblivious operator carries is moved through every stage of its sorting
networks, so width is cost.  Working from the root down, each node learns which of its
output columns its parents use; projections drop unused outputs, scans read only needed
columns, and a zero-cost column selection is put in front of every sort-based operator
whose input is wider than necessary.  Column sets are public (they come from the SQL),
so pruning changes no privacy property.
"""
from __future__ import annotations

from sqlglot import exp

from .logical import AddRowId, Aggregate, CrossJoin, CrossOne, Distinct, Filter, Join, Node, Project, Scan, SetOp, Sort, walk

__all__ = ["prune_columns"]


def _refs(e: exp.Expression) -> set[str]:
    return {c.name for c in e.find_all(exp.Column)}


def _select(child: Node, keep: set[str]) -> Node:
    cols = [c for c in child.columns if c in keep]
    if len(cols) == len(child.columns) or not cols:
        return child
    mapping = set(cols)
    return Project(child, {c: exp.Column(this=exp.to_identifier(c, quoted=True)) for c in cols}, columns=cols,
                   stability=child.stability,
                   degrees={k: d for k, d in child.degrees.items()
                            if (k in mapping if isinstance(k, str) else k <= mapping)},
                   unique=[u for u in child.unique if u <= mapping], one_row=child.one_row,
                   max_rows=child.max_rows)


def _narrow_outputs(node: Node, cols: list[str]) -> None:
    """``node`` hands on only ``cols`` (a subset of its columns, in order): its facts about
    the dropped columns go with them."""
    kept = set(cols)
    node.columns = cols
    node.degrees = {k: d for k, d in node.degrees.items() if (k in kept if isinstance(k, str) else k <= kept)}
    node.unique = [u for u in node.unique if u <= kept]
    node.constant = frozenset(c for c in node.constant if c in kept)
    node.fds = [(a, b & kept) for a, b in node.fds if a <= kept and b & kept]
    node.literals = {c: v for c, v in node.literals.items() if c in kept}


def _narrow_filter(node: Filter, want: set[str]) -> None:
    """A filter hands on only what its consumers use: columns its predicate alone reads are
    dropped after the predicate is evaluated, before the compaction moves every column
    through ``log n`` rounds (TPC-H Q19: two string columns read by the predicate only).

    >>> from .logical import Scan
    >>> s = Scan(table="t", alias="t", source_columns=["a", "b"], columns=["t.a", "t.b"], degrees={"t.b": 2})
    >>> f = Filter(s, exp.column("t.b").eq(1), columns=["t.a", "t.b"], degrees={"t.b": 2})
    >>> _narrow_filter(f, {"t.a"}); f.columns, f.degrees
    (['t.a'], {})
    """
    cols = [c for c in node.child.columns if c in want] or node.child.columns[:1]
    if len(cols) == len(node.child.columns):
        node.columns = list(node.child.columns)
        return
    _narrow_outputs(node, cols)


def _narrow_join(node: Join | CrossOne | CrossJoin, want: set[str]) -> None:
    """A join hands on only what its consumers use: its key columns, which it needs itself,
    are often used by no one above it, and every column it hands on is expanded (moved
    through ``log n`` rounds) to the output's size (TPC-H Q5: ``o_orderkey`` and
    ``l_orderkey`` after ``orders ⋈ lineitem``).

    >>> from .logical import Scan
    >>> a = Scan(table="a", alias="a", source_columns=["k", "x"], columns=["a.k", "a.x"])
    >>> b = Scan(table="b", alias="b", source_columns=["k", "y"], columns=["b.k", "b.y"])
    >>> j = Join(a, b, how="inner", left_keys=["a.k"], right_keys=["b.k"], columns=["a.k", "a.x", "b.k", "b.y"])
    >>> _narrow_join(j, {"a.x", "b.y"}); j.columns
    ['a.x', 'b.y']
    """
    semi = isinstance(node, Join) and node.how in ("semi", "anti")
    full = node.left.columns + ([] if semi else node.right.columns)
    cols = [c for c in full if c in want] or full[:1]
    if len(cols) == len(full):
        node.columns = full
        return
    _narrow_outputs(node, cols)


def prune_columns(root: Node) -> Node:
    """Narrow the plan in place (returns ``root``)."""
    order = list(walk(root))[::-1]  # parents before children
    need: dict[int, set[str]] = {root.node_id: set(root.columns)}
    for node in order:
        want = need.get(node.node_id, set(node.columns))
        child_need: list[set[str]] = []
        if isinstance(node, Scan):
            keep = [c for c in node.source_columns if f"{node.alias}.{c}" in want] or node.source_columns[:1]
            node.source_columns = keep
            node.columns = [f"{node.alias}.{c}" for c in keep]
            continue
        if isinstance(node, Project):
            if node is not root:
                node.exprs = {k: v for k, v in node.exprs.items() if k in want} or dict(list(node.exprs.items())[:1])
                node.columns = list(node.exprs)
            child_need = [set().union(*(_refs(e) for e in node.exprs.values())) or {node.child.columns[0]}]
        elif isinstance(node, Filter):
            child_need = [want | _refs(node.predicate)]
        elif isinstance(node, Sort):
            child_need = [want | {k.column for k in node.keys}]
        elif isinstance(node, Aggregate):
            child_need = [set(node.keys) | {c for a in node.aggs for c in (a.column, a.column2) if c}
                          | {c for a in node.aggs for c, _, _ in a.order}
                          or {node.child.columns[0]}]
        elif isinstance(node, (Distinct, SetOp)):
            child_need = [set(c.columns) for c in node.children]
        elif isinstance(node, AddRowId):
            child_need = [(want - {node.name}) or {node.child.columns[0]}]
        elif hasattr(node, "needed_from_child"):  # planner/windows.py
            child_need = [node.needed_from_child(want)]
        elif isinstance(node, Join):
            lcols, rcols = set(node.left.columns), set(node.right.columns)
            lneed = (want & lcols) | set(node.left_keys)
            rneed = set(node.right_keys) if node.how in ("semi", "anti") else (want & rcols) | set(node.right_keys)
            child_need = [lneed, rneed]
        elif isinstance(node, (CrossOne, CrossJoin)):
            child_need = [(want & set(node.left.columns)) or {node.left.columns[0]},
                          (want & set(node.right.columns)) or {node.right.columns[0]}]
        else:
            child_need = [set(c.columns) for c in node.children]
        for c, n in zip(node.children, child_need):
            need[c.node_id] = need.get(c.node_id, set()) | n
    # narrow the inputs of the operators whose cost grows with row width
    for node in walk(root):
        if isinstance(node, (Join, CrossOne, CrossJoin)):
            node.left = _select(node.left, need[node.left.node_id])
            node.right = _select(node.right, need[node.right.node_id])
            _narrow_join(node, need.get(node.node_id, set(node.columns)))
        elif isinstance(node, (Aggregate, Sort, Filter)):
            node.child = _select(node.child, need[node.child.node_id])
            if isinstance(node, Sort):
                node.columns = list(node.child.columns)
            elif isinstance(node, Filter):
                _narrow_filter(node, need.get(node.node_id, set(node.columns)))
        elif isinstance(node, AddRowId):
            node.child = _select(node.child, need[node.child.node_id])
            node.columns = node.child.columns + [node.name]
        elif hasattr(node, "needed_from_child"):  # a window sorts its input: carry only what is needed
            node.child = _select(node.child, need[node.child.node_id])
            node.columns = node.child.columns + node.outputs
    return root
