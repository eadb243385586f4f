"""Which columns determine a row's privacy unit — for joins along privacy-unit paths.

A private base table's rows each belong to one privacy unit.  Some columns *determine*
that unit through a known mapping, named here by a *class*:

* a declared single-column key ``k`` of private table ``T``: class ``"T.k"`` (the key
  picks the row, hence its unit);
* the foreign-key column of a table protected through a hop ``parent=(P, pk)``: the
  class of ``P.pk`` — its value is a ``P`` key, and the row's unit is that ``P`` row's;
* a table's direct privacy-unit column: class ``"unit:T.col"`` (same table only: two
  tables' unit columns need not name the same kind of unit).

Two rows whose determinant columns of one class hold equal values belong to the same
unit.  So an equi-join whose key pair shares a class on both sides only ever matches
rows of one unit with each other, and one unit's change can only touch that unit's
output rows (``join(..., same_unit=True)``).  Determinants survive filters, sorts,
renames, DISTINCT, GROUP BY keys and same-unit joins; a join of two private relations
that is not along a unit path produces rows owned by two units, and the map is cleared.
"""
from __future__ import annotations

from sqlglot import exp

from .catalog import Catalog
from .logical import Aggregate, CrossOne, Distinct, Filter, Join, Node, Project, Scan, Sort

__all__ = ["Owners", "same_unit"]


class Owners:
    """Memoised determinant maps ``column -> frozenset(classes)`` of plan nodes."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self._memo: dict[int, dict[str, frozenset[str]]] = {}

    def key_class(self, table: str, key: str) -> frozenset[str]:
        return frozenset({f"{table}.{key}"})

    def _scan(self, node: Scan) -> dict[str, frozenset[str]]:
        if not node.private:
            return {}
        info = self.catalog.table(node.table)
        out: dict[str, set[str]] = {}

        def add(col: str, classes) -> None:
            if col in node.source_columns:
                out.setdefault(f"{node.alias}.{col}", set()).update(classes)

        for k in info.keys:
            if len(k) == 1:
                add(k[0], {f"{node.table}.{k[0]}"})
        if info.parent is not None:
            add(info.privacy_unit, {f"{info.parent[0]}.{info.parent[1]}"})
        elif info.privacy_unit:
            add(info.privacy_unit, {f"unit:{node.table}.{info.privacy_unit}"})
        return {c: frozenset(v) for c, v in out.items()}

    def of(self, node: Node) -> dict[str, frozenset[str]]:
        if node.node_id not in self._memo:
            self._memo[node.node_id] = self._compute(node)
        return self._memo[node.node_id]

    def _compute(self, node: Node) -> dict[str, frozenset[str]]:
        if node.stability == 0:
            return {}
        if isinstance(node, Scan):
            return self._scan(node)
        if isinstance(node, (Filter, Sort, Distinct)) or node.kind == "AddRowId":
            return dict(self.of(node.children[0]))
        if isinstance(node, Project):
            child = self.of(node.child)
            return {name: child[e.name] for name, e in node.exprs.items()
                    if isinstance(e, exp.Column) and e.name in child}
        if isinstance(node, Aggregate):
            child = self.of(node.child)
            return {k: child[k] for k in node.keys if k in child}
        if isinstance(node, Join):
            left, right = self.of(node.left), self.of(node.right)
            if node.how in ("semi", "anti"):
                return dict(left)
            if node.how == "full":  # either side's columns can be NULL-filled
                return {}
            if node.right.stability == 0:
                return dict(left)
            if node.left.stability == 0:
                return dict(right)
            if same_unit(self, node.left, node.right, node.left_keys, node.right_keys):
                merged = dict(left)
                for c, v in right.items():
                    merged[c] = merged.get(c, frozenset()) | v
                return merged
            return {}
        if isinstance(node, CrossOne):
            return dict(self.of(node.left)) if node.right.stability == 0 else {}
        return {}


def same_unit(owners: Owners, left: Node, right: Node, lk: list[str], rk: list[str]) -> bool:
    """Whether the join ``lk = rk`` only matches rows of one privacy unit with each other."""
    if left.stability == 0 or right.stability == 0:
        return False
    lo, ro = owners.of(left), owners.of(right)
    return any(lo.get(a, frozenset()) & ro.get(b, frozenset()) for a, b in zip(lk, rk))
