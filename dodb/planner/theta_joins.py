"""Planner side of the joins of issue 14 item 4 (docs/design.md §Expression and cross joins).

A mixin of :class:`~dodb.planner.build.PlanBuilder`: join keys computed from expressions,
the oblivious cross product and its refusal above the limit, one-row public sides, scalar
subqueries that must not be crossed, and the FULL OUTER JOIN node; plus the rule that
joins a FROM item linked only to an outer-joined source after the outer joins.
"""
from __future__ import annotations

from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..operators.join import full_join_stability
from ..operators.scalar_row import SCALAR_ROWS_MESSAGE
from ..operators.theta_join import CROSS_PRODUCT_LIMIT, cross_stability
from ..wire import QueryRuntimeError
from .degrees import shifted_column
from .expr_keys import expression_equality
from .logical import Aggregate, CrossJoin, Distinct, Filter, Join, Node, Project, ScalarRow, SetOp, upper_rows
from .projection import column_ref, project_node
from .relation import _Rel, _all_public, _refs
from ..sqlpos import position_of

__all__ = ["ThetaJoins"]


class ThetaJoins:
    """Join shapes beyond plain column equi-joins (mixed into PlanBuilder)."""

    def _key_pairs(self, left: _Rel, right: _Rel, preds: list[exp.Expression]
                   ) -> tuple[_Rel, _Rel, list[tuple[str, str]]]:
        """The join key pairs of the equalities ``preds`` (each one ``_joins_on``): plain
        columns as they are, ``f(a.x) = g(b.y)`` as computed columns (planner/expr_keys.py)."""
        keys = [k for p in preds if (k := self._equi(p, left, right))]
        computed = [k for p in preds if not self._equi(p, left, right)
                    and (k := expression_equality(p, left.aliases, right.aliases))]
        if computed:
            lnames = [f"__jk{next(self._n)}" for _ in computed]
            rnames = [f"__jk{next(self._n)}" for _ in computed]
            left = self._with_keys(left, dict(zip(lnames, (lx for lx, _ in computed))))
            right = self._with_keys(right, dict(zip(rnames, (rx for _, rx in computed))))
            keys += list(zip(lnames, rnames))
        return left, right, keys

    def _with_keys(self, rel: _Rel, keys: dict[str, exp.Expression]) -> _Rel:
        """``rel`` with computed join-key columns appended.  A key that is an injective
        integer shift of a column (``rn - 1``, planner/degrees.py) keeps that column's degree
        bounds and unique sets; any other computed key has none (see expr_keys)."""

        exprs = {c: column_ref(c) for c in rel.node.columns}
        exprs.update({name: self._expr(e, rel) for name, e in keys.items()})
        same = {name: rel.cols[k] for name, e in keys.items()
                if (x := shifted_column(e)) is not None and (k := (x.table, x.name)) in rel.cols}
        node = project_node(rel.node, exprs, same)
        for name in keys:
            if name not in same and (d := self._intersect_degree(rel.node, exprs[name])) is not None:
                node.degrees[name] = d
        return _Rel(node, {**rel.cols, **{("", n): n for n in keys}}, rel.aliases,
                    rel.position, rel.scalar)

    def _intersect_degree(self, node: Node, key: exp.Expression) -> int | None:
        """A bound on rows per value of the computed ``key`` over ``node`` when ``node`` is
        (filters and column projections of) ``A INTERSECT B`` with a public side, distinct on
        the columns ``key`` reads: its rows are distinct values of those columns that the
        public side holds too, so rows per key value ≤ the public side's distinct values per
        key value, counted on public data at plan time (docs/design.md §Degrees from structure)."""

        refs = {c.name for c in key.find_all(exp.Column)}
        if not refs or not any(u <= refs for u in node.unique):
            return None
        mapping = {r: r for r in refs}
        n = node
        while isinstance(n, (Filter, Project)):
            if isinstance(n, Project):
                exprs = [n.exprs.get(c) for c in mapping.values()]
                if not all(isinstance(e, exp.Column) for e in exprs):
                    return None
                mapping = {top: e.name for top, e in zip(mapping, exprs)}
            n = n.child
        if not (isinstance(n, SetOp) and n.op == "intersect"):
            return None
        pos = {c: i for i, c in enumerate(n.columns)}
        for side in (n.left, n.right):
            if not _all_public(side) or len(side.columns) != len(n.columns) or not set(mapping.values()) <= set(pos):
                continue
            at = {top: side.columns[pos[c]] for top, c in mapping.items()}
            distinct = Distinct(project_node(side, {c: column_ref(c) for c in sorted(set(at.values()))}),
                                columns=sorted(set(at.values())))
            keyed = project_node(distinct, {"__key": key.transform(
                lambda c: column_ref(at[c.name]) if isinstance(c, exp.Column) else c)})
            return max(1, self._public_result_degree(keyed, ["__key"]))
        return None

    def _scalar_row(self, r: _Rel) -> _Rel:
        """A scalar subquery's source as exactly one row, its value (NULLs when it is
        empty), before any outer condition on it: as it is when it always holds one row (a
        global aggregate, or public and counted at plan time); DuckDB's error before
        admission when it is public with several rows; otherwise a ScalarRow node, which
        raises DuckDB's error after the query through the status word when the source
        holds several (docs/design.md §Expression and cross joins)."""
        if not r.scalar or _exactly_one_row(r.node):
            return r
        n = r.node
        count = self._public_rows(n)
        if count is not None and count > 1:  # public: DuckDB's error, nothing charged
            raise QueryRuntimeError(SCALAR_ROWS_MESSAGE)
        if count == 1:
            n.one_row = True
            return r
        node = ScalarRow(n, {c: column_ref(c) for c in n.columns}, columns=list(n.columns), stability=min(n.stability, 1),
                         one_row=True, max_rows=1)
        return _Rel(node, dict(r.cols), set(r.aliases), r.position, r.scalar)

    def _public_rows(self, node: Node) -> int | None:
        """The real rows of a public sub-plan of at most 2^20 slots, counted by running it at
        plan time (no privacy cost); None for a private or larger one."""
        if not _all_public(node) or upper_rows(node) > 1 << 20:
            return None
        return self._public_table(node).real_count

    def _public_one_row(self, node: Node) -> bool:
        """A public sub-plan (e.g. a scalar subquery over public tables) that holds at most
        one row: it is broadcast."""
        count = self._public_rows(node)
        if count is None or count > 1:
            return False
        node.one_row = True
        return True

    def _cross_join(self, left: _Rel, right: _Rel, pending: list[exp.Expression]) -> _Rel:
        """The cross product of two sources (their condition, if any, is a Filter above it);
        refused before admission when its padded size is above the limit."""
        ln, rn = left.node, right.node
        nl, nr = upper_rows(ln), upper_rows(rn)
        if nl * nr > CROSS_PRODUCT_LIMIT:
            cond = [p for p in pending if _refs(p) <= left.aliases | right.aliases]
            what = f" ON {_as_written(cond[0])[:80]}" if cond else ""
            raise UnsupportedQueryError(
                f"cross join of {', '.join(sorted(left.aliases))} with {', '.join(sorted(right.aliases))}{what} "
                f"(no equality between them) pads to {nl} x {nr} rows, above {CROSS_PRODUCT_LIMIT}; "
                f"add an equality between them or filter either side first",
                (position_of(cond[0]) if cond else None) or right.position)
        degrees = {c: d * max(nr, 1) for c, d in ln.degrees.items()}
        degrees.update({c: d * max(nl, 1) for c, d in rn.degrees.items()})
        node = CrossJoin(ln, rn, columns=ln.columns + rn.columns,
                         stability=cross_stability(ln.stability, rn.stability, nl, nr), degrees=degrees)
        return _Rel(node, {**left.cols, **right.cols}, left.aliases | right.aliases)

    def _full_join_node(self, left: _Rel, right: _Rel, lk: list[str], rk: list[str]) -> _Rel:
        """A full outer join (operators/join.py): no degree or uniqueness survives it, since
        either side's columns are NULL-filled on the other side's unmatched rows."""
        ln, rn = left.node, right.node
        dl, dr = self.degree(ln, lk), self.degree(rn, rk)
        sources = {}
        if dl is None and rn.stability > 0:
            dl, sources["left"] = self.bounded_degree(ln, lk)
        if dr is None and ln.stability > 0:
            dr, sources["right"] = self.bounded_degree(rn, rk)
        node = Join(ln, rn, "full", lk, rk, left_degree=dl, right_degree=dr, columns=ln.columns + rn.columns,
                    stability=full_join_stability(ln.stability, rn.stability, dl, dr))
        node.degree_sources = sources
        return _Rel(node, {**left.cols, **right.cols}, left.aliases | right.aliases)


def _exactly_one_row(node: Node) -> bool:
    """A global aggregate, perhaps under projections: one row whatever its input."""
    while isinstance(node, Project) and not isinstance(node, ScalarRow):
        node = node.child
    return isinstance(node, (Aggregate, ScalarRow)) and not getattr(node, "keys", None)


def _as_written(e: exp.Expression) -> str:
    """``e`` as SQL without the quotes qualification added to its identifiers."""
    plain = e.copy().transform(lambda n: exp.to_identifier(n.name) if isinstance(n, exp.Identifier) else n)
    return plain.sql(dialect="duckdb")


def defer_to_outer(inner: list[_Rel], spanning: list[exp.Expression], post: list[exp.Expression],
                    outer: list) -> tuple[list[_Rel], list[_Rel]]:
    """Split off the inner sources (not the first) that no spanning predicate touches but a
    predicate on an outer-joined source does: they are joined after the outer joins."""
    if not outer:
        return inner, []
    outer_aliases = set().union(*(r.aliases for _, r, _ in outer))
    keep, deferred = [inner[0]], []
    for r in inner[1:]:
        touched = any(_refs(p) & r.aliases for p in spanning)
        linked = any(_refs(p) & r.aliases and _refs(p) & outer_aliases for p in post)
        (deferred if linked and not touched and not r.node.one_row else keep).append(r)
    return keep, deferred
