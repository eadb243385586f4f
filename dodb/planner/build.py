"""Build a logical DO plan from an optimised sqlglot AST.

Columns of a source aliased ``a`` are named ``a.col`` inside the plan; a SELECT's
outputs are its aliases (made unique).  Scalar expressions are rewritten to reference
those names and later evaluated whole-column: over private rows by dodb's oblivious
evaluator, over public rows by DuckDB (docs/design.md §Expressions).
Stability and degree bounds are derived here, from the catalog alone, so the plan fixes
every privacy event before execution.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from sqlglot import exp

from .. import sqlbuild
from ..errors import PlanningError, UnsupportedQueryError
from ..operators.aggregate import Agg
from ..operators.join import same_unit_stability
from ..operators.sort_limit import SortKey
from .catalog import Catalog
from .logical import AddRowId, Aggregate, BuiltQuery, CrossOne, Distinct, Filter, Join, Node, OneRow, Project, Scan, SetOp, Sort, upper_rows, walk
from .degrees import (fixed_columns, key_fds, literal_fixes, reduce_degrees, reduce_unique, substituted_degrees,
                      union_literals, union_unique, unique_degrees, unique_reason)
from .exprs import conjuncts
from .expr_keys import expression_equality
from .projection import column_ref, project_node
from .relation import _Rel, _all_public, _refs
from .theta_joins import ThetaJoins, defer_to_outer
from ..operators.join import max_key_multiplicity
from .guard import pushable
from .rules.one_row_source import is_one_row_source
from .ownership import Owners, same_unit
from .public_cache import content_fingerprints, public_base_tables, scanned_tables, structural_key
from .rules.mark_scalar_sources import SCALAR_MARK
from ..sqlpos import position_of
from .widths import string_width

__all__ = ["PlanBuilder", "BuiltQuery", "AddRowId"]


def _int_literal(node: exp.Expression | None, what: str) -> int | None:
    if node is None:
        return None
    val = node.args.get("expression") if isinstance(node, (exp.Limit, exp.Offset)) else node
    if isinstance(val, exp.Literal) and not val.is_string:
        try:
            return int(val.this)
        except ValueError:
            pass
    raise UnsupportedQueryError(f"{what} must be an integer constant", position_of(node))


def scans_of(node: Node) -> frozenset[str]:
    """The base scans under ``node`` (table, alias, pushed predicate): unchanged by pruning."""
    return frozenset(n.describe() for n in walk(node) if isinstance(n, Scan))


def side_key(node: Node) -> tuple[frozenset[str], tuple[str, ...]]:
    """Names a public join side across re-plans of one query: its scans and output columns."""
    return scans_of(node), tuple(node.columns)


class PlanBuilder(ThetaJoins):
    def __init__(self, catalog: Catalog, neighbour: str = "add_remove",
                 lookup_costs: dict[tuple, float] | None = None, tables: frozenset[str] = frozenset(),
                 contents: dict[str, tuple] | None = None):
        self.catalog = catalog
        # the public base tables the query reads: their content fingerprints are read together
        self.public_tables = public_base_tables(catalog, tables)
        self.neighbour = neighbour
        # per-pass lookup cost of public sides after column pruning (see plan.lookup_hints)
        self.lookup_costs = lookup_costs or {}
        # the public sides that were weighed for a lookup join (by side_key): their rows
        self.lookup_candidates: dict[tuple, object] = {}
        self._n = itertools.count()
        self._public_degree_cache: dict[tuple, int] = {}
        self._rows_cache: dict[str, int] = {}
        self._public_results: dict[int, object] = {}
        # content fingerprints of public tables, when the caller read them already (plan_cache.py)
        self._contents: dict[str, tuple] = dict(contents or {})
        self._select_columns: dict[int, tuple] = {}
        self._shapes: dict[int, tuple] = {}  # structural keys of this plan's nodes (public_cache.py)
        self._public_keys: dict[int, tuple | None] = {}
        self.owners = Owners(catalog)

    # -- public facts ------------------------------------------------------------------
    def _group_s(self, s: int) -> int:
        return 2 * s if self.neighbour == "replace" else s

    def _content(self, table: str) -> tuple:
        """A public table's content fingerprint (planner/public_cache.py), read once per plan:
        at the first request, those of every public table the query reads, in one statement."""
        if table not in self._contents:
            wanted = {table} | {t for t in self.public_tables if t not in self._contents}
            self._contents.update(content_fingerprints(self.catalog, wanted))
        return self._contents[table]

    def share_public_reads(self, other: "PlanBuilder") -> None:
        """Re-planning the same query in the same plan: reuse what ``other`` read of public data."""
        self._contents = other._contents
        self._public_degree_cache = {k: v for k, v in other._public_degree_cache.items() if isinstance(k[0], str)}

    def _public_degree(self, table: str, cols: tuple[str, ...]) -> int:
        key = (table, cols)
        if key not in self._public_degree_cache:
            cur = self.catalog.cursor()
            try:
                rows = cur.execute(sqlbuild.max_rows_per_value(self.catalog.relation(table), list(cols))).fetchall()
            finally:
                cur.close()
            self._public_degree_cache[key] = int(rows[0][0])
        return self._public_degree_cache[key]

    def _row_count(self, table: str) -> int:
        """Padded size of a base table: a private table's capacity, a public table's row count."""
        if table not in self._rows_cache:
            info = self.catalog.table(table)
            self._rows_cache[table] = int(info.capacity) if info.private else self._content(table)[0]
        return self._rows_cache[table]

    def _public_key(self, node: Node) -> tuple | None:
        """What a public sub-plan's result depends on: its structure, the catalog, the contents
        of the public tables it scans (planner/public_cache.py); ``None``: do not cache."""
        if node.node_id not in self._public_keys:
            shape = structural_key(node, self._shapes)
            self._public_keys[node.node_id] = None if shape is None else (
                "result", shape, self.catalog.fingerprint,
                tuple((t, self._content(t)) for t in scanned_tables(node)))
        return self._public_keys[node.node_id]

    def _run_public(self, node: Node):
        """Run a public sub-plan at plan time (no privacy cost), or reuse the result of an
        identical sub-plan over unchanged public tables (planner/public_cache.py)."""
        if node.node_id not in self._public_results:
            from ..operators import ExecContext
            from .execute import Executor

            t = self.catalog.public_facts.get_or_compute(
                self._public_key(node), lambda: Executor(self.catalog, ExecContext(mode="plain"), {}).run(node),
                weight=lambda r: r.padded_size)
            # each plan gets its own arrays: nothing a plan does can reach the cached copy
            self._public_results[node.node_id] = t.with_arrays([a.copy() for a in t.arrays()], aligned=t.aligned)
        return self._public_results[node.node_id]

    def degree(self, node: Node, cols: list[str]) -> int | None:
        """Best public bound on rows per value of ``cols``: declared, or exact for public data."""
        d = node.degree(cols)
        if d is not None:  # never more rows per value than rows: the public worst case caps it
            d = min(d, max(1, upper_rows(node)))
        base = _base_scan(node)
        if base is not None and not base.private and base.predicate is None:
            exact = self._public_degree(base.table, tuple(c.split(".", 1)[1] for c in cols))
            d = exact if d is None else min(d, exact)
        elif _all_public(node):
            exact = self._public_result_degree(node, cols)
            d = exact if d is None else min(d, exact)
        return d

    def _public_result_degree(self, node: Node, cols: list[str]) -> int:
        """Exact key multiplicity of a public sub-plan, computed by running it (no privacy cost)."""
        key = (node.node_id, tuple(cols))
        if key not in self._public_degree_cache:
            def compute() -> int:
                return max_key_multiplicity(self._run_public(node).to_arrow(), list(cols))
            result = self._public_key(node)
            self._public_degree_cache[key] = self.catalog.public_facts.get_or_compute(
                None if result is None else ("degree", result, tuple(cols)), compute)
        return self._public_degree_cache[key]

    def _public_table(self, node: Node):
        """Run a public sub-plan at plan time (no privacy cost) and keep its result."""
        return self._run_public(node)

    def _lookup_side(self, node: Node, keys: list[str], other: Node) -> bool:
        """A public relation with unique join keys, small enough that one pass per row of it
        over ``other`` (public size bound) beats sorting both."""
        from ..operators.lookup import lookup_pays, pass_cost

        if not (_all_public(node) and self.degree(node, keys) == 1):
            return False
        pub = self._public_table(node)
        self.lookup_candidates[side_key(node)] = pub
        cost = self.lookup_costs.get(side_key(node))
        return lookup_pays(pub.real_count, upper_rows(other), pass_cost(pub) if cost is None else cost)

    def bounded_degree(self, node: Node, cols: list[str]) -> tuple[int, str]:
        """A degree bound that always exists: declared/public, else the node's size bound."""
        d = self.degree(node, cols)
        if d is not None:
            return d, "declared" if not _all_public(node) else "public data"
        return max(1, upper_rows(node)), "size bound (no declaration)"

    # -- queries -------------------------------------------------------------------------
    def build(self, e: exp.Expression) -> BuiltQuery:
        return self._query(e, {})

    def _query(self, e: exp.Expression, ctes: dict[str, BuiltQuery]) -> BuiltQuery:
        ctes = dict(ctes)
        with_ = e.args.get("with") or e.args.get("with_")
        if with_ is not None:
            for cte in with_.expressions:
                built = self._query(cte.this, ctes)
                built.scalar = bool(cte.this.meta.get(SCALAR_MARK))
                ctes[cte.alias_or_name] = built
        if isinstance(e, exp.Subquery):
            return self._query(e.this, ctes)
        if isinstance(e, (exp.Union, exp.Intersect, exp.Except)):
            return self._setop(e, ctes)
        if isinstance(e, exp.Select):
            return self._select(e, ctes)
        raise UnsupportedQueryError(f"{e.key.upper()} as a query", position_of(e))

    def _setop(self, e: exp.Expression, ctes) -> BuiltQuery:
        left, right = self._query(e.left, ctes), self._query(e.right, ctes)
        if len(left.names) != len(right.names):
            raise PlanningError("set operation inputs have different numbers of columns")
        distinct = e.args.get("distinct", True) is not False
        op = {exp.Union: "union" if distinct else "union_all", exp.Intersect: "intersect",
              exp.Except: "except"}[type(e)]
        l_node, r_node = left.root, right.root
        s = l_node.stability + r_node.stability
        lits = union_literals(l_node.literals, r_node.literals, left.internal, right.internal) \
            if op == "union_all" else {}
        # UNION ALL: unique when a literal column tells the sides apart (planner/degrees.py union_unique)
        unique = union_unique(l_node.unique, r_node.unique, l_node.literals, r_node.literals, left.internal,
                              right.internal) if op == "union_all" else [frozenset(left.internal)]
        node = SetOp(op, l_node, r_node, columns=list(left.internal),
                     stability=s if op == "union_all" else self._group_s(s), unique=unique, literals=lits)
        out = BuiltQuery(node, list(left.names), list(left.internal))
        order = e.args.get("order")
        if order is not None or e.args.get("limit") is not None or e.args.get("offset") is not None:
            cols = {(None, n): i for n, i in zip(out.names, out.internal)}
            keys = []
            for o in (order.expressions if order is not None else []):
                target = o.this
                if not (isinstance(target, exp.Column) and (None, target.name) in cols):
                    raise UnsupportedQueryError("ORDER BY of a set operation must name an output column",
                                                position_of(o))
                keys.append(SortKey(cols[(None, target.name)], bool(o.args.get("desc")),
                                    _nulls_first(o)))
            node = self._sort(node, keys, e)
            out = BuiltQuery(node, out.names, out.internal)
        return out

    # -- SELECT ----------------------------------------------------------------------------
    def _source(self, src: exp.Expression, select: exp.Select, ctes) -> _Rel:
        alias = src.alias_or_name
        if isinstance(src, exp.Table) and src.name in ctes:
            sub = ctes[src.name]
            return self._rename(sub, alias)
        if isinstance(src, exp.Table):
            info = self.catalog.table(src.name)
            if info.kind != "table":  # planner/guard.py expands views before anything is planned
                raise UnsupportedQueryError(f"view {src.name} was not expanded", position_of(src))
            used = sorted(self._columns_by_table(select).get(alias, set()) & set(info.columns))
            if not used:
                used = [next(iter(info.columns))]
            internal = [f"{alias}.{c}" for c in used]
            s = self.catalog.stability(src.name)
            degrees = {f"{alias}.{c}": d for c in used if (d := info.degree(c)) is not None}
            unique = [frozenset(f"{alias}.{c}" for c in k) for k in info.keys if set(k) <= set(used)]
            node = Scan(src.name, alias, used, private=info.private, max_rows=self._row_count(src.name),
                        widths={f"{alias}.{c}": w for c, w in info.widths.items() if c in used},
                        columns=internal, stability=s, degrees=degrees, unique=unique,
                        fds=key_fds(unique, internal))  # a declared key determines the row
            return _Rel(node, {(alias, c): f"{alias}.{c}" for c in used}, {alias})
        if isinstance(src, exp.Subquery):
            return self._rename(self._query(src.this, ctes), alias)
        if is_one_row_source(src):  # a SELECT without FROM (rules/one_row_source.py)
            col = f"{alias}._one"
            return _Rel(OneRow(columns=[col], one_row=True, max_rows=1, unique=[frozenset()]), {(alias, "_one"): col},
                        {alias})
        raise UnsupportedQueryError(f"FROM item {src.sql(dialect='duckdb')[:60]}", position_of(src))

    def _columns_by_table(self, select: exp.Select) -> dict[str, set[str]]:
        """Column names ``select`` references, per table qualifier (one walk per SELECT)."""
        key = id(select)
        if key not in self._select_columns:
            by_table: dict[str, set[str]] = {}
            for c in select.find_all(exp.Column):
                by_table.setdefault(c.table, set()).add(c.name)
            self._select_columns[key] = (select, by_table)  # holds select: its id stays unique
        return self._select_columns[key][1]

    def _rename(self, sub: BuiltQuery, alias: str) -> _Rel:
        exprs = {f"{alias}.{n}": column_ref(i) for n, i in zip(sub.names, sub.internal)}

        node = project_node(sub.root, exprs)
        return _Rel(node, {(alias, n): f"{alias}.{n}" for n in sub.names}, {alias})

    def _expr(self, e: exp.Expression, rel: _Rel) -> exp.Expression:
        """Rewrite column references to the relation's internal names."""
        def rw(node):
            if isinstance(node, exp.Column):
                key = (node.table, node.name)
                if key not in rel.cols:
                    raise PlanningError(f"column {node.sql(dialect='duckdb')} is not available here")
                return column_ref(rel.cols[key])
            if isinstance(node, (exp.Subquery, exp.Exists)) or (isinstance(node, exp.In) and node.args.get("query")):
                raise UnsupportedQueryError(f"subquery in this position: {node.sql(dialect='duckdb')[:60]}",
                                            position_of(node))
            return node
        return e.transform(rw)  # transform copies the tree (copy=True) before rewriting it

    def _filter(self, rel: _Rel, preds: list[exp.Expression]) -> _Rel:
        if not preds:
            return rel
        node = rel.node
        pred = exp.and_(*[self._expr(p, rel) for p in preds])
        if isinstance(node, Scan) and not node.private and node.predicate is None \
                and all(pushable(p, node.alias, self.catalog.macros) for p in preds):
            # public base table: DuckDB evaluates the predicate on public data directly; only
            # allow-listed scalars over this table reach it (docs/design.md §Pushdown allow-list)
            node.predicate = exp.and_(*[p.copy() for p in preds])
            return rel
        # columns the filter fixes to one value shrink unique sets and degree keys (planner/degrees.py)
        fixed = {rel.cols[key] for key in fixed_columns(preds) if key in rel.cols}
        fixed |= self._literal_fixed(preds, rel)
        unique = reduce_unique(node.unique, fixed)
        # a unique set left empty means at most one row (every key fixed: one group at most)
        f = Filter(node, pred, columns=list(node.columns), stability=node.stability,
                   degrees=reduce_degrees(node.degrees, fixed), unique=unique,
                   one_row=node.one_row or frozenset() in unique, constant=node.constant | fixed,
                   fds=list(node.fds), literals=dict(node.literals))
        return _Rel(f, rel.cols, rel.aliases, rel.position, rel.scalar)

    @staticmethod
    def _literal_fixed(preds: list[exp.Expression], rel: _Rel) -> set[str]:
        """Columns holding literals of one kind (a UNION ALL's discriminator) that a top-level
        conjunct ``col = literal`` of that kind fixes (planner/degrees.py ``literal_fixes``)."""
        out = set()
        for p in preds:
            while isinstance(p, exp.Paren):
                p = p.this
            if not isinstance(p, exp.EQ):
                continue
            a, b = p.left, p.right
            if isinstance(b, exp.Column):
                a, b = b, a
            if isinstance(a, exp.Column) and (name := rel.cols.get((a.table, a.name))) is not None \
                    and name in rel.node.literals and literal_fixes(rel.node.literals[name], b):
                out.add(name)
        return out

    def _select(self, sel: exp.Select, ctes) -> BuiltQuery:
        from_ = sel.args.get("from") or sel.args.get("from_")
        if from_ is None:
            raise UnsupportedQueryError("SELECT without FROM", position_of(sel))
        first = self._source(from_.this, sel, ctes)
        inner: list[_Rel] = [first]
        outer: list[tuple[str, _Rel, list[exp.Expression]]] = []
        preds: list[exp.Expression] = []
        for j in sel.args.get("joins") or []:
            rel = self._source(j.this, sel, ctes)
            rel.position = position_of(j)
            rel.scalar = bool(j.this.meta.get(SCALAR_MARK)) or (
                isinstance(j.this, exp.Table) and j.this.name in ctes and ctes[j.this.name].scalar)
            side, kind = (j.args.get("side") or "").upper(), (j.args.get("kind") or "").upper()
            on = conjuncts(j.args.get("on"))
            if side == "LEFT":
                outer.append(("left", rel, on))
            elif side == "FULL":
                if len(inner) > 1 or outer:
                    # `a, b FULL JOIN c` full-joins c to b alone (a comma binds looser than JOIN),
                    # `a JOIN b … FULL JOIN c` to a ⋈ b: after sqlglot both look alike, so refuse
                    raise UnsupportedQueryError(
                        "FULL JOIN after other joins in the same FROM; join those in a subquery first: "
                        "(SELECT … FROM a JOIN b ON …) AS ab FULL JOIN c ON …", position_of(j))
                outer.append(("full", rel, on))
            elif kind in ("SEMI", "ANTI"):
                outer.append((kind.lower(), rel, on))
            elif kind in ("", "INNER", "CROSS"):
                pending = set().union(*(r.aliases for _, r, _ in outer))
                if pending & set().union(*(_refs(p) for p in on)) or any(h == "full" for h, _, _ in outer):
                    # `a LEFT JOIN b … JOIN c ON b.k = c.id`: c joins the outer join's result,
                    # so the joins so far are done first (SQL's left-to-right order)
                    inner, outer, preds = [self._combine(inner, outer, preds)], [], []
                inner.append(rel)
                preds += on
            else:
                raise UnsupportedQueryError(f"{side} {kind} JOIN".strip(), position_of(j))
        preds += conjuncts(sel.args["where"].this) if sel.args.get("where") else []
        return self._finish(sel, self._combine(inner, outer, preds))

    def _combine(self, inner: list[_Rel], outer: list, preds: list[exp.Expression]) -> _Rel:
        """Inner-join ``inner`` (each predicate on the first source covering it, the rest
        spanning), then the outer joins in order, then the predicates no inner source covers."""
        inner_aliases = set().union(*(r.aliases for r in inner))
        if any(how == "full" for how, _, _ in outer):
            # both sides of a full join keep their unmatched rows: a WHERE condition on either
            # side applies to the join's result, never below it (nor a semi join pushed down)
            inner_aliases = set()
        post: list[exp.Expression] = []
        per_source: dict[int, list[exp.Expression]] = {}
        spanning: list[exp.Expression] = []
        for p in preds:
            refs = _refs(p)
            if not refs or not refs <= inner_aliases:
                post.append(p)
                continue
            owners = [i for i, r in enumerate(inner) if refs <= r.aliases]
            if owners:
                per_source.setdefault(owners[0], []).append(p)
            else:
                spanning.append(p)
        # a scalar subquery's value first, then the outer conditions on it
        inner = [self._filter(self._scalar_row(r), per_source.get(i, [])) for i, r in enumerate(inner)]
        if inner_aliases:
            outer = self._push_down_semi_joins(inner, outer)
        inner, deferred = defer_to_outer(inner, spanning, post, outer)
        rel = self._join_inner(inner, spanning)
        for how, r, on in outer:
            rel = self._join_outer(rel, how, r, on)
        if deferred:
            # `a LEFT JOIN b ON …, r WHERE b.x = r.y`: r joins the outer join's result on the
            # WHERE equality (an inner join after the outer joins is SQL's own order)
            aliases = rel.aliases.union(*(d.aliases for d in deferred))
            joining = [p for p in post if _refs(p) <= aliases]
            post = [p for p in post if p not in joining]
            rel = self._join_inner([rel] + deferred, joining)
        return self._filter(rel, post)

    def _push_down_semi_joins(self, inner: list[_Rel], outer: list) -> list:
        """Apply a SEMI/ANTI join to the one FROM item it depends on, before the inner joins.

        A semi/anti join only removes rows, so applying it to the source it refers to gives
        the same answer and shrinks the input of every later join (TPC-H Q18: the orders
        IN-subquery runs on orders, not on orders ⋈ lineitem).  Only equality joins are
        moved: one with a non-equality residual expands first and is cheaper at the end.
        Leaves ``inner`` updated in place; returns the outer joins still to do.
        """
        rest = []
        for how, r, on in outer:
            if how in ("semi", "anti"):
                refs = set().union(*(_refs(p) for p in on)) - r.aliases
                owners = [i for i, src in enumerate(inner) if refs and refs <= src.aliases]
                if owners:
                    src = inner[owners[0]]
                    plain = all(_refs(p) <= r.aliases or _refs(p) <= src.aliases or self._equi(p, src, r)
                                for p in on)
                    if plain and any(self._equi(p, src, r) for p in on):
                        inner[owners[0]] = self._join_outer(src, how, r, on)
                        continue
            rest.append((how, r, on))
        return rest

    # -- joins -----------------------------------------------------------------------------
    def _equi(self, p: exp.Expression, left: _Rel, right: _Rel):
        if isinstance(p, exp.EQ) and isinstance(p.left, exp.Column) and isinstance(p.right, exp.Column):
            a, b = p.left, p.right
            if a.table in left.aliases and b.table in right.aliases:
                return left.cols[(a.table, a.name)], right.cols[(b.table, b.name)]
            if b.table in left.aliases and a.table in right.aliases:
                return left.cols[(b.table, b.name)], right.cols[(a.table, a.name)]
        return None

    def _joins_on(self, p: exp.Expression, left: _Rel, right: _Rel) -> bool:
        """``p`` is an equality usable as a join key between ``left`` and ``right``."""
        return bool(self._equi(p, left, right) or expression_equality(p, left.aliases, right.aliases))

    def _join_public_first(self, rels: list[_Rel], pending: list[exp.Expression]) -> list[_Rel]:
        """Join the public FROM items among themselves before any private one (docs/design.md
        §Public relations joined first).  Each step joins two public items linked by equalities
        when one side is unique on its keys (so the result has at most the other side's rows);
        the joined item takes the earlier one's place.  A public join costs no privacy and runs
        on public data, and a private relation then meets one small, already filtered public
        relation instead of a chain of them (TPC-H Q21: lineitem meets the ~400 suppliers of
        one nation, not all 10,000 before the nation filter).  Consumes the used predicates
        from ``pending`` and applies those the joined items cover."""
        rels = list(rels)
        while (pair := self._public_pair(rels, pending)) is not None:
            i, j = pair
            rels[i] = self._equi_join(rels[i], rels.pop(j), pending)  # j > i: rels[i] stays in place
        return rels

    def _public_pair(self, rels: list[_Rel], pending: list[exp.Expression]) -> tuple[int, int] | None:
        """The first two public items (in FROM order) linked by equalities of ``pending``, one
        side unique on its keys; ``None`` if there are none."""
        public = [i for i, r in enumerate(rels) if not r.node.one_row and _all_public(r.node)]
        for i, j in itertools.combinations(public, 2):
            keys = [k for p in pending if (k := self._equi(p, rels[i], rels[j]))]
            if keys and (self.degree(rels[i].node, [k[0] for k in keys]) == 1
                         or self.degree(rels[j].node, [k[1] for k in keys]) == 1):
                return i, j
        return None

    def _equi_join(self, left: _Rel, right: _Rel, pending: list[exp.Expression]) -> _Rel:
        """Inner join of ``left`` and ``right`` on the equalities of ``pending`` that link them
        (taken out of ``pending``), then the conditions of ``pending`` the result covers."""
        used = [p for p in pending if self._joins_on(p, left, right)]
        pending[:] = [p for p in pending if p not in used]
        left, right, keys = self._key_pairs(left, right, used)
        return self._apply_ready(self._join_node(left, right, "inner", [k[0] for k in keys], [k[1] for k in keys]),
                                 pending)

    def _apply_ready(self, rel: _Rel, pending: list[exp.Expression]) -> _Rel:
        """``rel`` filtered by the conditions of ``pending`` it covers (taken out of ``pending``)."""
        ready = [p for p in pending if _refs(p) <= rel.aliases]
        pending[:] = [p for p in pending if p not in ready]
        return self._filter(rel, ready)

    def _join_inner(self, rels: list[_Rel], spanning: list[exp.Expression]) -> _Rel:
        pending = list(spanning)
        rels = self._join_public_first(rels, pending)
        cur, rest = rels[0], rels[1:]
        while rest:
            pick = next((i for i, r in enumerate(rest) if any(self._joins_on(p, cur, r) for p in pending)), None)
            if pick is not None:
                cur = self._equi_join(cur, rest.pop(pick), pending)
                continue
            pick = next((i for i, r in enumerate(rest) if r.node.one_row or cur.node.one_row
                         or self._public_one_row(r.node)), None)
            if pick is None:  # no equality links cur to any source: an oblivious product
                pick = min(range(len(rest)), key=lambda i: upper_rows(rest[i].node))
                cur = self._apply_ready(self._cross_join(cur, rest.pop(pick), pending), pending)
                continue
            r = rest.pop(pick)
            big, one = (cur, r) if r.node.one_row else (r, cur)
            # A private one-row value (e.g. an average) reaches every row of the other
            # side: then every output row can change, and the stability is its size bound.
            s = upper_rows(big.node) if one.node.stability > 0 else big.node.stability
            node = CrossOne(big.node, one.node, columns=big.node.columns + one.node.columns,
                            stability=s, degrees=dict(big.node.degrees), unique=list(big.node.unique),
                            one_row=big.node.one_row and one.node.one_row, fds=big.node.fds + one.node.fds)
            cur = self._apply_ready(_Rel(node, {**cur.cols, **r.cols}, cur.aliases | r.aliases), pending)
        return self._filter(cur, pending)

    def _join_node(self, left: _Rel, right: _Rel, how: str, lk: list[str], rk: list[str]) -> _Rel:
        """A join with its stability (docs/design.md §Operators and stability: s_L * deg_R + s_R * deg_L).

        A degree needed for the stability comes from a declaration, from public data, or —
        failing both — from the public size bound of that side (every row could share one
        key).  The last is always valid, never under-noises, and EXPLAIN says it was used.
        """
        ln, rn = left.node, right.node
        sl, sr = ln.stability, rn.stability
        if how == "full":
            return self._full_join_node(left, right, lk, rk)
        if sl > 0 and sr == 0 and self._lookup_side(rn, rk, ln):
            return self._lookup_node(left, right, how, lk, rk)
        if how == "inner" and sr > 0 and sl == 0 and self._lookup_side(ln, lk, rn):
            return self._lookup_node(right, left, how, rk, lk)
        dl, dr = self.degree(ln, lk), self.degree(rn, rk)
        sources = {side: why for side, n, keys, d in (("left", ln, lk, dl), ("right", rn, rk, dr))
                   if d == 1 and (why := unique_reason(n.unique, keys))}
        unit_path = same_unit(self.owners, ln, rn, lk, rk)
        if unit_path:
            # the key determines the unit on both sides: a key value's rows are one unit's, and
            # a unit owns at most a side's stability of its rows (what adding it changes), so
            # the stability bounds the degree (enforced like any bound; no real row exceeds it)
            if dl is None or dl > sl:
                dl, sources["left"] = sl, f"privacy unit's own rows (stability {sl})"
            if how not in ("semi", "anti") and (dr is None or dr > sr):
                dr, sources["right"] = sr, f"privacy unit's own rows (stability {sr})"
        if dl is None and sr > 0:
            dl, sources["left"] = self.bounded_degree(ln, lk)
        if dr is None and sl > 0 and how not in ("semi", "anti"):
            dr, sources["right"] = self.bounded_degree(rn, rk)
        if how in ("semi", "anti"):
            s = sl + sr * (dl or 0)
            cols, degrees, unique = list(ln.columns), dict(ln.degrees), list(ln.unique)
            rel_cols, aliases = left.cols, left.aliases
        else:
            s = sl * (dr or 0) + sr * (dl or 0)
            if how == "left":
                s = sl * max(dr or 0, 1) + 2 * sr * (dl or 0)
            # each left row appears at most deg_R times, each right row at most deg_L times;
            # with an unknown factor the column's bound is unknown too
            degrees = {}
            if dr is not None:
                degrees.update({c: d * max(dr, 1) for c, d in ln.degrees.items()})
                _merge_min(degrees, unique_degrees(ln.unique, max(dr, 1)))
            if dl is not None:
                degrees.update({c: d * max(dl, 1) for c, d in rn.degrees.items()})
                if how != "left":  # a left join NULL-fills right columns of unmatched rows
                    _merge_min(degrees, unique_degrees(rn.unique, max(dl, 1)))
            # the join keys themselves: rows per key value = (left rows) x (right rows)
            kl, kr = self.degree(ln, lk), self.degree(rn, rk)
            if kl is not None and kr is not None:
                for keyset, d in ((lk, kl * max(kr, 1)), (rk, kl * kr)):
                    degrees[frozenset(keyset)] = d
                    if len(keyset) == 1:
                        degrees[keyset[0]] = min(d, degrees.get(keyset[0], d))
            if how == "inner" and dr == 1:  # rn unique on rk: ln's composite bounds reach rn's columns
                _merge_min(degrees, self._substituted(ln, rn, lk, rk))
            if how == "inner" and dl == 1:
                _merge_min(degrees, self._substituted(rn, ln, rk, lk))
            unique = [u for u in ln.unique if dr == 1] + [u for u in rn.unique if dl == 1 and how != "left"]
            cols = ln.columns + rn.columns
            rel_cols, aliases = {**left.cols, **right.cols}, left.aliases | right.aliases
        # each output row's columns from one side are one row of that side, so that side's
        # dependencies hold; a LEFT join's NULL-filled right columns need not (a real right row
        # may hold a NULL key with other values), so only the kept sides' count
        fds = list(ln.fds) + (list(rn.fds) if how == "inner" else [])
        if unit_path:  # rows of different units never match: the unit's own rows only
            s, _ = same_unit_stability(how, sl, sr, dl, dr)
        node = Join(ln, rn, how, lk, rk, left_degree=dl, right_degree=dr, columns=cols, stability=s,
                    degrees=degrees, unique=unique, same_unit=unit_path, fds=fds)
        node.degree_sources = sources
        return _Rel(node, rel_cols, aliases)

    def _substituted(self, ln: Node, rn: Node, lk: list[str], rk: list[str]) -> dict:
        """Bounds of ``ln`` (left side of an inner join with ``rn`` unique on ``rk``) that
        carry over to ``rn``'s columns: a composite bound on (R, key) bounds (R, c) times
        rows per value of c in ``rn`` (planner/degrees.py ``substituted_degrees``)."""
        if len(lk) != 1 or not any(isinstance(k, frozenset) and lk[0] in k and len(k) > 1
                                   for k in list(ln.degrees) + ln.unique):
            return {}
        per_value = {c: d for c in rn.columns if c not in rk and (d := self.degree(rn, [c])) is not None}
        return substituted_degrees(ln.degrees, ln.unique, lk[0], per_value)

    def _lookup_node(self, left: _Rel, right: _Rel, how: str, lk: list[str], rk: list[str]) -> _Rel:
        """Join a private relation with a small public one by one pass per public row."""
        ln, rn = left.node, right.node
        semi = how in ("semi", "anti")
        cols = list(ln.columns) + ([] if semi else list(rn.columns))
        dl = self.degree(ln, lk)
        degrees = dict(ln.degrees)
        if dl is not None and not semi:  # matched rows share the key value: as many as on the left
            degrees[frozenset(rk)] = degrees[frozenset(lk)] = dl
            if len(rk) == 1:
                degrees[rk[0]] = dl
        if not semi:
            _merge_min(degrees, self._substituted(ln, rn, lk, rk))
        node = Join(ln, rn, how, lk, rk, left_degree=dl, right_degree=1, columns=cols,
                    stability=ln.stability, degrees=degrees, unique=list(ln.unique), method="lookup",
                    fds=list(ln.fds) + (list(rn.fds) if how == "inner" else []))
        rel_cols = left.cols if semi else {**left.cols, **right.cols}
        return _Rel(node, rel_cols, left.aliases if semi else left.aliases | right.aliases)

    def _join_outer(self, cur: _Rel, how: str, r: _Rel, on: list[exp.Expression]) -> _Rel:
        if how in ("semi", "anti") and any(isinstance(p, exp.Null) or (isinstance(p, exp.Boolean) and p.this is False)
                                           for p in on):
            # the condition simplified to FALSE (`… AND 'a' > 'b'`): no right row ever matches
            return cur if how == "anti" else self._filter(cur, [exp.false()])
        right_only = [p for p in on if _refs(p) and _refs(p) <= r.aliases]
        left_only = [p for p in on if _refs(p) and _refs(p) <= cur.aliases]
        rest = [p for p in on if p not in right_only and p not in left_only]
        r = self._filter(r, right_only)
        residual = [p for p in rest if not self._joins_on(p, cur, r)]
        if how == "full" and (left_only or right_only or residual):
            bad = (left_only or right_only or residual)[0]
            raise UnsupportedQueryError(f"FULL JOIN condition that is not an equality between its two sides: "
                                        f"{bad.sql(dialect='duckdb')}", position_of(bad))
        if left_only:
            if how != "semi":
                raise UnsupportedQueryError(f"{how.upper()} JOIN condition on the left side only: "
                                            f"{left_only[0].sql(dialect='duckdb')}", position_of(left_only[0]))
            cur = self._filter(cur, left_only)
        cur, r, keys = self._key_pairs(cur, r, [p for p in rest if p not in residual])
        if not keys:
            raise UnsupportedQueryError(f"{how.upper()} JOIN without an equality condition")
        lk, rk = [k[0] for k in keys], [k[1] for k in keys]
        if not residual:
            return self._join_node(cur, r, how, lk, rk)
        if how == "left":
            raise UnsupportedQueryError("LEFT JOIN with a non-equality condition: "
                                        f"{residual[0].sql(dialect='duckdb')}", position_of(residual[0]))
        d = self.degree(r.node, rk)
        marker = next(((t, c) for (t, c), v in r.cols.items() if v == rk[0]), None)
        if d is not None and d <= 1 and marker is not None:
            return self._residual_on_unique(cur, r, how, lk, rk, residual, marker)
        # semi/anti with a residual: inner-join a narrow copy, filter, then semi/anti on row id
        rid = f"__rid{next(self._n)}"
        base = cur.node
        with_id = AddRowId(columns=base.columns + [rid], child=base, name=rid, stability=base.stability,
                           degrees={**base.degrees, rid: 1}, unique=base.unique + [frozenset([rid])])
        cur_id = _Rel(with_id, {**cur.cols, ("", rid): rid}, cur.aliases)
        needed = {rid, *lk} | {cur.cols[(c.table, c.name)] for p in residual for c in p.find_all(exp.Column)
                              if c.table in cur.aliases}
        narrow_node = Project(with_id, {c: column_ref(c) for c in with_id.columns if c in needed},
                              columns=[c for c in with_id.columns if c in needed], stability=with_id.stability,
                              degrees={c: d for c, d in with_id.degrees.items() if c in needed},
                              unique=[u for u in with_id.unique if u <= needed])
        narrow = _Rel(narrow_node, {k: v for k, v in cur_id.cols.items() if v in needed}, cur.aliases)
        matched = self._filter(self._join_node(narrow, r, "inner", lk, rk), residual)
        return self._join_node(cur_id, matched, how, [rid], [rid])

    def _residual_on_unique(self, cur: _Rel, r: _Rel, how: str, lk: list[str], rk: list[str],
                            residual: list[exp.Expression], marker: tuple[str, str]) -> _Rel:
        """SEMI/ANTI join with a non-equality condition when the right side is unique on its
        keys: each left row meets at most one right row, so this is an inner (ANTI: left) join,
        a filter on the condition and the left columns (docs/design.md §Subqueries).  ANTI
        keeps a row that matched nothing — its right key ``marker`` is NULL, while a matched
        row's equals a non-NULL left key — or whose match does not make the condition TRUE.
        No row ids and no second join."""

        joined = self._join_node(cur, r, "inner" if how == "semi" else "left", lk, rk)
        cond = exp.and_(*[p.copy() for p in residual])
        if how == "anti":  # the condition may be TRUE on NULLs (IS NULL): test "unmatched" by the key
            unmatched = exp.Is(this=exp.column(marker[1], table=marker[0] or None), expression=exp.Null())
            cond = exp.or_(unmatched, exp.not_(exp.Coalesce(this=exp.paren(cond), expressions=[exp.false()])))
        kept = self._filter(joined, [cond])
        node = project_node(kept.node, {c: column_ref(c) for c in cur.node.columns})
        return _Rel(node, cur.cols, cur.aliases, cur.position, cur.scalar)

    # -- aggregation, projection, order ------------------------------------------------------
    def _finish(self, sel: exp.Select, rel: _Rel) -> BuiltQuery:
        from .aggregation import plan_aggregation

        return plan_aggregation(self, sel, rel)

    def _sort(self, node: Node, keys: list[SortKey], e: exp.Expression) -> Node:
        limit = _int_literal(e.args.get("limit"), "LIMIT")
        offset = _int_literal(e.args.get("offset"), "OFFSET") or 0
        s = node.stability
        if limit is not None or offset:
            s = min(2 * s, 2 * limit) if limit is not None else 2 * s
        return Sort(node, keys, limit, offset, columns=list(node.columns), stability=s,
                    degrees=dict(node.degrees), unique=list(node.unique), one_row=node.one_row,
                    fds=list(node.fds), literals=dict(node.literals))


def _merge_min(degrees: dict, more: dict) -> None:
    """Add the bounds ``more`` to ``degrees``, keeping the smaller of two bounds on one key."""
    for k, d in more.items():
        degrees[k] = min(d, degrees.get(k, d))


def _nulls_first(o: exp.Ordered) -> bool:
    nf = o.args.get("nulls_first")
    return bool(nf)


def _base_scan(node: Node) -> Scan | None:
    """The public/private base Scan under pure filters/renames, if any."""
    while True:
        if isinstance(node, Scan):
            return node
        if isinstance(node, Filter):
            node = node.child
        else:
            return None
