"""Which partitions a query's releases can depend on (docs/design.md §Partitions).

The owner may declare ``partition_by`` on the table that defines the privacy unit
(e.g. ``customer.c_nationkey``): each unit lies in exactly one partition.  A release is
charged to partitions ``P`` only if its true value is a function of the rows of units
in ``P`` (and public tables) alone — the ``p_P``-dependency of paper 000, Thm IV.11.
Otherwise it is charged to *all* partitions.  The DO operators still touch whole tables,
but their access pattern depends only on public sizes and released values
(docs/threat-model.md), so a query whose every release depends only on ``P``'s units
has a view that depends only on ``P``'s units.

Per plan node, from the plan alone (children first), :class:`Dependence` holds:

* ``deps``: the partitions the node's real output rows can depend on (``None`` = all,
  ``frozenset()`` = public data only);
* ``unit_rows``: the output is a union over units ``u`` of rows determined by ``u``'s
  own rows (scans, row-wise filters and projections, same-unit joins), so a row of a
  unit outside ``deps`` never appears;
* ``pcols``: output columns that hold the partition value of the row's own unit.

A filter on a ``unit_rows`` input whose predicate has a conjunct ``pcol = k`` or
``pcol IN (k1, …)`` keeps only rows of units in those partitions: its output — and the
count it releases — depends on those units only.  A filter on any other column (e.g.
``orders`` filtered before the join that reaches ``customer``) releases a count over all
units: charged to all partitions.  Joins along a privacy-unit path
(``planner/ownership.py``) match rows of one unit only, so an inner or semi join keeps
the intersection; every other combination keeps the union (conservative).  A release
at a node is charged to that node's ``deps``; the query to the union of its releases'.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from sqlglot import exp

from .catalog import Catalog
from .logical import (
    Aggregate, CrossJoin, CrossOne, Distinct, Filter, Join, Node, Project, Scan, SetOp, Sort, leaks, walk,
)
from .ownership import Owners, same_unit

__all__ = ["Dependence", "partition_key", "query_partitions", "describe_partitions", "unit_local"]

_INTEGER = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


def partition_key(table: str, column: str, value: object) -> str:
    """The ledger's name of one partition: ``customer.c_nationkey=5`` / ``…='FRANCE'``."""
    return f"{table}.{column}={json.dumps(value)}"


@dataclass(frozen=True)
class Dependence:
    deps: frozenset[str] | None
    unit_rows: bool
    pcols: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # column -> (table, column, type)


def _union(*ds: frozenset[str] | None) -> frozenset[str] | None:
    if any(d is None for d in ds):
        return None
    return frozenset().union(*ds)


def _meet(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _literal(node: exp.Expression, sql_type: str) -> object | None:
    """The value of an integer literal for an integer column, a string for VARCHAR; else None."""
    neg = isinstance(node, exp.Neg)
    lit = node.this if neg else node
    if not isinstance(lit, exp.Literal):
        return None
    if sql_type.upper() in _INTEGER and not lit.is_string:
        try:
            v = int(lit.this)
        except ValueError:
            return None  # 5.0, 1e3: not read as a partition (conservative: charge all)
        return -v if neg else v
    if sql_type.upper() == "VARCHAR" and lit.is_string and not neg:
        return lit.this
    return None


def _conjuncts(pred: exp.Expression) -> list[exp.Expression]:
    while isinstance(pred, exp.Paren):
        pred = pred.this
    if isinstance(pred, exp.And):
        return _conjuncts(pred.left) + _conjuncts(pred.right)
    return [pred]


def _confining(pred: exp.Expression, pcols: dict[str, tuple[str, str, str]]) -> frozenset[str] | None:
    """Partitions a predicate confines its rows to (None: it does not confine)."""
    out: frozenset[str] | None = None
    for c in _conjuncts(pred):
        keys = None
        if isinstance(c, exp.EQ):
            for col, lit in ((c.this, c.expression), (c.expression, c.this)):
                if isinstance(col, exp.Column) and col.name in pcols:
                    t, name, ty = pcols[col.name]
                    v = _literal(lit, ty)
                    if v is not None:
                        keys = frozenset({partition_key(t, name, v)})
                        break
        elif isinstance(c, exp.In) and isinstance(c.this, exp.Column) and c.this.name in pcols \
                and not c.args.get("query") and not c.args.get("unnest") and not c.args.get("field"):
            t, name, ty = pcols[c.this.name]
            vals = [_literal(e, ty) for e in c.expressions]
            if vals and all(v is not None for v in vals):
                keys = frozenset(partition_key(t, name, v) for v in vals)
        if keys is not None:
            out = keys if out is None else out & keys
    return out


class _Analysis:
    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.owners = Owners(catalog)
        self.memo: dict[int, Dependence] = {}
        self._private: dict[int, bool] = {}

    def of(self, n: Node) -> Dependence:
        if n.node_id not in self.memo:
            self.memo[n.node_id] = self._compute(n)
        return self.memo[n.node_id]

    def private(self, n: Node) -> bool:
        """Whether a private table is read below ``n`` (not just stability > 0: never trust a 0)."""
        if n.node_id not in self._private:
            self._private[n.node_id] = (isinstance(n, Scan) and n.private) or any(self.private(c) for c in n.children)
        return self._private[n.node_id]

    def _compute(self, n: Node) -> Dependence:
        if not self.private(n):
            return Dependence(frozenset(), True)  # public rows: no unit's data
        if isinstance(n, Scan):
            info = self.catalog.table(n.table)
            pcols = {}
            col = info.partition_by
            if col is not None and info.parent is None and col in n.source_columns:
                pcols[f"{n.alias}.{col}"] = (n.table, col, info.columns[col])
            return Dependence(None, True, pcols)
        kids = [self.of(c) for c in n.children]
        if isinstance(n, Filter):
            c = kids[0]
            if not c.unit_rows:
                return Dependence(c.deps, False)
            keys = _confining(n.predicate, c.pcols)
            return Dependence(c.deps if keys is None else _meet(c.deps, keys), True, c.pcols)
        if isinstance(n, Project):
            c = kids[0]
            pcols = {name: c.pcols[e.name] for name, e in n.exprs.items()
                     if isinstance(e, exp.Column) and e.name in c.pcols}
            return Dependence(c.deps, c.unit_rows, pcols)
        if isinstance(n, Sort):
            c = kids[0]
            keeps = n.limit is None and not n.offset  # a LIMIT picks rows by comparing units
            return Dependence(c.deps, c.unit_rows and keeps, c.pcols if keeps else {})
        if isinstance(n, Join):
            return self._join(n, kids[0], kids[1])
        if isinstance(n, CrossJoin):  # each unit's rows meet every row of the other side
            left, right = kids
            return Dependence(_union(left.deps, right.deps), False)
        if isinstance(n, CrossOne):
            left, right = kids
            if not self.private(n.right):
                return left
            return Dependence(_union(left.deps, right.deps), False)
        if isinstance(n, SetOp) and n.op == "union_all":
            left, right = kids
            return Dependence(_union(left.deps, right.deps), left.unit_rows and right.unit_rows)
        if isinstance(n, (Aggregate, Distinct, SetOp)) or n.kind == "AddRowId":
            return Dependence(_union(*(k.deps for k in kids)), False)
        return Dependence(None, False)  # an operator this analysis does not know: all partitions

    def _join(self, n: Join, left: Dependence, right: Dependence) -> Dependence:
        if n.how == "full":  # rows of both sides, matched or not: no row is one unit's alone
            return Dependence(_union(left.deps, right.deps), False)
        if not self.private(n.right):  # a public side adds no unit's data
            return left
        if not self.private(n.left):
            return Dependence(right.deps, right.unit_rows and n.how == "inner", right.pcols if n.how == "inner" else {})
        linked = left.unit_rows and right.unit_rows and same_unit(self.owners, n.left, n.right,
                                                                   n.left_keys, n.right_keys)
        if not linked:
            return Dependence(_union(left.deps, right.deps), False)
        if n.how == "inner":
            return Dependence(_meet(left.deps, right.deps), True, {**left.pcols, **right.pcols})
        if n.how == "semi":  # a left row of u stays iff u has a matching right row
            return Dependence(_meet(left.deps, right.deps), True, left.pcols)
        if n.how in ("anti", "left"):  # a left row of u depends on u's rows on both sides
            return Dependence(left.deps, True, left.pcols)
        return Dependence(_union(left.deps, right.deps), False)


def query_partitions(root: Node, catalog: Catalog) -> frozenset[str] | None:
    """The partitions the query's releases depend on (``None``: all of them).

    Only meaningful if some table declares ``partition_by``; without one every private
    release depends on all units and the answer is ``None``.
    """
    if not any(t.partition_by for t in catalog.tables.values() if t.private):
        return None
    a = _Analysis(catalog)
    out: frozenset[str] = frozenset()
    for n in walk(root):
        if leaks(n):
            d = a.of(n).deps
            if not d:  # all units, or a contradiction (no unit at all): be conservative, charge all
                return None
            out = out | d
    return out or None


def unit_local(root: Node, catalog: Catalog) -> dict[int, bool]:
    """Per node: it reads a private table and its output is a union over units of rows
    determined by each unit's own rows (``unit_rows``), so run on every shard of a
    by-unit sharding its outputs add up to the whole (docs/distributed.md §Placement)."""
    a = _Analysis(catalog)
    return {n.node_id: a.private(n) and a.of(n).unit_rows for n in walk(root)}


def describe_partitions(parts: frozenset[str] | None) -> str:
    if parts is None:
        return "all partitions"
    if not parts:
        return "no partition (public data only)"
    return "partitions " + ", ".join(sorted(parts))
