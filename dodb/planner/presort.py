"""Join sides and GROUP BY inputs sorted at their scan: a private table's sorted slots,
kept between queries (docs/design.md §Join sides sorted at the scan).

A sort-based join sorts each side by its keys (operators/join.py).  When a side is a
private table's scan followed only by row-wise nodes — projections and filters — that
pass the join keys through unchanged, the sort can move down to the scan:

* sorting commutes with row-wise operators (each row's outputs depend on that row only),
  so sorting the scan and then projecting and filtering gives the rows the join's own
  sort would give, in the same order (ties in slot order in both);
* a scan's sorted lanes are kept in the slot cache (docs/design.md §Slot cache), so a
  later query over the same columns copies them instead of sorting: the sort's events
  are recorded from public sizes, as for any cached sorted side;
* the filters between release their sizes as before; kept marked, their rows stay in
  place, and compacted, their real rows stay in key order at the front and the slots
  after them get NULL keys (``ordered_keys``; planner/execute.py ``_dummy_keys_last``),
  which sort last: either way the side is in the join's order.

The join's sort order is by key alone, ties in position order (dummies need not go last:
the join reads only eligible rows), so sorting before a filter marks rows gives the order
sorting after it would.  Nothing here looks at data: the choice is a function of the
plan's shape.

A GROUP BY over such a chain is sorted at its scan the same way (``Aggregate … (input
sorted at the scan)``) when every key is a sort key (no key read from a run's row as
payload), no key is floating-point (a non-real row's -0.0 could show), and every
aggregate masks rows by their real flag (COUNT, SUM, AVG, MIN, MAX:
operators/aggregate.py ``takes_presorted``): runs are cut on the keys alone and a group
is a run that holds a real row, so whatever a compacting filter leaves after its real
rows needs no NULL keys.

A GROUP BY whose sort keys are one side's keys of an inner sort-based join below it
(through projections), plus only columns of a side unique on them, needs no sort at all:
the join's output is already in its left keys' order with its unused slots last, which
groups those keys, and the GROUP BY's stable sort would keep each group's rows in the
order they have (``ordered_by``; TPC-H Q3 groups by ``l_orderkey`` after joining on it).
The executor sorts anyway when it cast the join's keys to a common type (a cast need not
keep distinct keys apart).

Not for a cluster's plans (a worker has no slot cache, and its scan is the shard's) nor
in the ``plain`` and ``oblivious`` baselines, whose joins are planned as before.

Example:
    >>> from sqlglot import exp
    >>> from .logical import Join, Scan
    >>> s = Scan("o", "o", ["k", "d"], private=True, columns=["o.k", "o.d"], stability=1)
    >>> f = Filter(s, exp.column("o.d").eq(1), columns=["o.k", "o.d"], stability=1)
    >>> p = Scan("p", "p", ["k"], columns=["p.k"])
    >>> j = Join(f, p, "inner", ["o.k"], ["p.k"], columns=["o.k", "o.d", "p.k"], stability=1)
    >>> _ = presort_sides(j, "do", 1)
    >>> (s.sort_keys, f.ordered_keys, j.left_presorted, j.right_presorted)
    (['o.k'], ['o.k'], True, False)
"""
from __future__ import annotations

from sqlglot import exp

from ..operators.aggregate import groups_presorted, needs_own_pass
from ..operators.expressions.types import parse_type
from .logical import Aggregate, Filter, Join, Node, Project, ScalarRow, Scan, consumer_counts, walk

__all__ = ["presort_sides"]


def _renamed(node: Project, keys: list[str]) -> list[str] | None:
    """The columns ``node`` passes through as ``keys``, by their names below it; ``None`` if
    one of them is computed (the rows below are not in its order)."""
    below = [node.exprs.get(k) for k in keys]
    return [e.name for e in below] if all(isinstance(e, exp.Column) for e in below) else None


GROUPED_BELOW = "by the GROUP BY below"


def _chain(side: Node, keys: list[str], consumers: dict[int, int],
           grouped: bool = False) -> tuple[Node, list[str], list] | None:
    """The private scan (``grouped``: the GROUP BY) under ``side`` through row-wise nodes read
    by this operator alone, the keys' names there and the filters on the way with the keys'
    names at each; ``None`` if there is none."""
    filters: list[tuple[Filter, list[str]]] = []
    node = side
    while True:
        if consumers.get(node.node_id, 0) != 1:  # shared: its other reader expects it unsorted
            return None
        if isinstance(node, Scan):
            return (node, keys, filters) if node.private and not grouped else None
        if isinstance(node, Aggregate):
            return (node, keys, filters) if grouped else None
        if isinstance(node, Filter):
            filters.append((node, list(keys)))
        elif isinstance(node, Project) and not isinstance(node, ScalarRow):
            keys = _renamed(node, keys)
            if keys is None:  # a computed key: the scan is not sorted by it
                return None
        else:
            return None
        node = node.children[0]


def _floating(catalog, scan: Scan, keys: list[str]) -> bool:
    """Whether any of ``keys`` (``alias.column`` of ``scan``) is a floating-point column."""
    if catalog is None:
        return True  # unknown types: do not presort a GROUP BY
    columns = catalog.table(scan.table).columns
    return any(parse_type(columns.get(k.split(".", 1)[-1], "")).kind == "float" for k in keys)


def _presort(side: Node, keys: list[str], consumers: dict[int, int], catalog, for_join: bool) -> bool:
    """Sort the scan under ``side`` by ``keys`` if the chain allows; under a join its filters
    give the slots after their real rows NULL keys when they compact (module doc)."""
    found = _chain(side, list(keys), consumers)
    if found is None:
        return False
    scan, scan_keys, filters = found
    if (scan.sort_keys is not None and scan.sort_keys != scan_keys) or \
            (not for_join and _floating(catalog, scan, scan_keys)):
        return False
    scan.sort_keys = scan_keys
    for f, names in filters:
        if for_join:
            f.ordered_keys = names
    return True


def _grouped(side: Node, keys: list[str], consumers: dict[int, int]) -> bool:
    """Whether ``side`` is a GROUP BY's output, through projections and filters, in the order
    of ``keys``: its groups come out in the order of its sort keys (operators/aggregate.py
    sorts by them, encoded as a join encodes them, real rows first, and compacts in order),
    so keys that are, below, a prefix of those sort keys are in order, and groups that tie
    on the prefix sit in position order (the order the output has).  The GROUP BY's unused slots (and those of compacting filters
    between) then get NULL keys (``ordered_keys``), which sort last, as after a scan."""
    found = _chain(side, list(keys), consumers, grouped=True)
    if found is None:
        return False
    agg, names, filters = found
    # a GROUP BY in a join's order (ordered_by) is in that join's key order, not its own
    order = list(agg.sort_keys or agg.keys) if agg.ordered_by is None else []
    if not names or order[:len(names)] != names:
        return False
    agg.ordered_keys = names
    for f, at in filters:
        f.ordered_keys = at
    return True


def _inner_join_under(node: Node, keys: list[str]) -> Join | None:
    """The inner sort-based join under ``node`` through projections whose output groups
    ``keys`` together, or ``None``.

    Its output is in the order of its left keys, unused slots last (operators/join.py
    ``_inner`` expands the sorted left side in order): rows with equal join keys are
    adjacent, and in each such run the columns of a side unique on the keys (degree bound
    1) hold one row's values.  So ``keys`` are grouped when they hold every join key (from
    either side: equal on real rows) and otherwise only columns of a unique side."""
    while isinstance(node, Project) and not isinstance(node, ScalarRow):
        keys = _renamed(node, keys)
        if keys is None:
            return None
        node = node.children[0]
    if not (isinstance(node, Join) and node.method == "sort" and node.how == "inner"):
        return None
    got = set(keys)
    if not all(a in got or b in got for a, b in zip(node.left_keys, node.right_keys)):
        return None
    rest = got - set(node.left_keys) - set(node.right_keys)
    unique_sides = [set(side.columns) for side, d in ((node.left, node.left_degree), (node.right, node.right_degree))
                    if d is not None and d <= 1]
    return node if not rest or any(rest <= u for u in unique_sides) else None


def presort_sides(root: Node, mode: str, workers: int, catalog=None) -> Node:
    """Move the sort of every eligible join side and GROUP BY input to its scan (module
    doc); in place.  ``catalog`` gives the scans' column types (a GROUP BY needs them)."""
    if mode != "do" or workers > 1:
        return root
    consumers = consumer_counts(root)
    for n in list(walk(root)):
        if isinstance(n, Join) and n.method == "sort":
            n.left_presorted = _presort(n.left, n.left_keys, consumers, catalog, True) or \
                (_grouped(n.left, n.left_keys, consumers) and GROUPED_BELOW)
            n.right_presorted = _presort(n.right, n.right_keys, consumers, catalog, True) or \
                (_grouped(n.right, n.right_keys, consumers) and GROUPED_BELOW)
        elif isinstance(n, Aggregate) and groups_presorted(n.keys, n.aggs, n.sort_keys):
            n.presorted = _presort(n.child, n.keys, consumers, catalog, False)
        if isinstance(n, Aggregate) and n.keys and not n.presorted and not any(needs_own_pass(a) for a in n.aggs):
            join = _inner_join_under(n.child, list(n.sort_keys or n.keys))
            n.ordered_by = None if join is None else join.node_id
    return root

