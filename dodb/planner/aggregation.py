"""The tail of a SELECT: GROUP BY / aggregates / HAVING, projection, DISTINCT, ORDER BY, LIMIT.

Aggregate calls are pulled out of the SELECT, HAVING and ORDER BY expressions (as
sqlglot's own planner does): their arguments and the GROUP BY expressions become a
narrow pre-projection, one :class:`Aggregate` node computes them, and the original
expressions are rewritten over its output columns.
"""
from __future__ import annotations

from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..operators.aggregate import Agg
from ..operators.sort_limit import SortKey
from .agg_calls import agg_call
from .degrees import aggregate_fds, fd_unique
from .logical import Aggregate, BuiltQuery, Distinct, Filter
from .projection import column_ref, project_node
from ..sqlpos import position_of
from .widths import plan_string_widths, string_width
from .windows import extract_windows, plan_windows

__all__ = ["plan_aggregation"]


def _replace(e: exp.Expression, table: dict[str, exp.Expression]) -> exp.Expression:
    """Replace subtrees whose SQL matches a key of ``table`` (outermost first)."""
    def rw(node):
        key = node.sql(dialect="duckdb") if isinstance(node, exp.Expression) else None
        if key in table:
            return table[key].copy()
        return node
    return e.copy().transform(rw, copy=False) if e.sql(dialect="duckdb") not in table else table[e.sql(dialect="duckdb")].copy()


def _widths(node, names) -> dict[str, int]:
    """Public string widths known for a node's columns (from scans and earlier projections)."""
    return dict(getattr(node, "_widths", {}) or {})


def _order_column(n: exp.Expression, select_items: dict[str, exp.Expression], rel) -> exp.Expression:
    """An unqualified name inside an ORDER BY expression, bound as DuckDB binds it: a column of
    the FROM sources first (sqlglot leaves such names unqualified there), else a SELECT alias
    (`CASE WHEN lochierarchy = 0 …`, TPC-DS Q36)."""
    if not isinstance(n, exp.Column) or n.table:
        return n
    tables = {t for t, c in rel.cols if c == n.name and t}
    if len(tables) == 1:
        return exp.column(n.name, table=tables.pop(), quoted=True)
    if not tables and n.name in select_items:
        return select_items[n.name].copy()
    return n


def plan_aggregation(builder, sel: exp.Select, rel):
    node = rel.node
    group_exprs = [builder._expr(g, rel) for g in (sel.args["group"].expressions if sel.args.get("group") else [])]
    having = builder._expr(sel.args["having"].this, rel) if sel.args.get("having") else None
    outputs = [(p.alias_or_name, builder._expr(p.unalias() if isinstance(p, exp.Alias) else p, rel))
               for p in sel.expressions]
    if any(isinstance(p, exp.Star) for _, p in outputs):
        raise UnsupportedQueryError("SELECT * after optimisation", position_of(sel))
    order = sel.args.get("order")
    order_items = list(order.expressions) if order is not None else []
    alias_names = {name for name, _ in outputs}
    select_items = {p.alias: p.this for p in sel.expressions if isinstance(p, exp.Alias)}

    def order_expr(o: exp.Ordered) -> exp.Expression:
        t = o.this
        if isinstance(t, exp.Literal) and t.is_int and 1 <= int(t.name) <= len(outputs):
            # ORDER BY 2: the second output (sqlglot keeps the ordinal when output names repeat,
            # ``SELECT a.id, b.id … ORDER BY 1, 2``; DuckDB's binder refuses one out of range)
            return exp.Column(this=exp.to_identifier(f"@pos:{int(t.name) - 1}"))
        if isinstance(t, exp.Column) and not t.table and t.name in alias_names:
            return exp.Column(this=exp.to_identifier(f"@out:{t.name}"))
        return builder._expr(t.transform(lambda n: _order_column(n, select_items, rel)), rel)

    order_exprs = [order_expr(o) for o in order_items]
    # window calls become placeholder columns of a Window node (planner/windows.py)
    qualify = builder._expr(sel.args["qualify"].this, rel) if sel.args.get("qualify") else None
    flat, calls = extract_windows([p for _, p in outputs] + order_exprs + [qualify])
    outputs = [(n, e) for (n, _), e in zip(outputs, flat)]
    order_exprs, qualify = flat[len(outputs):-1], flat[-1]
    extra = calls.inputs() + ([qualify] if qualify is not None else [])
    has_agg = bool(group_exprs) or any(
        e.find(exp.AggFunc) for e in [p for _, p in outputs] + order_exprs + ([having] if having is not None else [])
        + extra)

    if has_agg:
        pre: dict[str, exp.Expression] = {}
        repl: dict[str, exp.Expression] = {}
        keys = []
        for i, g in enumerate(group_exprs):
            name = g.name if isinstance(g, exp.Column) else f"_g{i}"
            pre[name] = g
            keys.append(name)
            repl[g.sql(dialect="duckdb")] = column_ref(name)
        aggs: list[Agg] = []
        seen: dict[str, str] = {}
        for e in [p for _, p in outputs] + order_exprs + ([having] if having is not None else []) + extra:
            for a in _agg_calls(e):
                key = a.sql(dialect="duckdb")
                if key in seen:
                    continue
                call = agg_call(a)
                out = f"_agg{len(aggs)}"
                cols = []
                for j, arg in enumerate(call.args):
                    if call.func == "string_agg" and _not_text(arg):  # DuckDB casts the value to VARCHAR
                        arg = exp.cast(arg.copy(), "VARCHAR")
                    col = arg.name if isinstance(arg, exp.Column) else f"_a{len(aggs)}_{j}"
                    pre[col] = arg
                    cols.append(col)
                cols += [None] * (2 - len(cols))
                order = []
                for j, (oe, desc, nf) in enumerate(call.order):
                    col = oe.name if isinstance(oe, exp.Column) else f"_a{len(aggs)}_o{j}"
                    pre[col] = oe
                    order.append((col, desc, nf))
                aggs.append(Agg(call.func, cols[0], out, column2=cols[1], param=call.param, order=tuple(order)))
                seen[key] = out
                repl[key] = column_ref(out)
        if not pre:  # COUNT(*) only: keep one column so the row count is known
            pre[node.columns[0]] = column_ref(node.columns[0])
        pnode = project_node(node, pre)
        if any(a.func in ("string_agg", "list") for a in aggs):
            aggs = _bound_string_aggs(builder, pnode, keys, aggs)
        s = node.stability
        agg_s = builder._group_s(s) if keys else (1 if s > 0 else 0)
        smaller = fd_unique(keys, pnode.fds) if keys else []
        node = Aggregate(pnode, keys, aggs, columns=keys + [a.name for a in aggs], stability=agg_s,
                         sort_keys=_narrowest_keys(keys, smaller, pnode),
                         # unique on its keys, and on fewer when declared keys determine the rest
                         unique=[frozenset(keys)] + smaller if keys else [],
                         fds=aggregate_fds(pnode.fds, keys),
                         literals={k: v for k, v in pnode.literals.items() if k in keys},
                         # every key fixed by an equality filter below: one group at most
                         one_row=not keys or set(keys) <= pnode.constant,
                         degrees={} if len(keys) != 1 else {keys[0]: 1})
        if having is not None:
            node = Filter(node, _replace(having, repl), columns=list(node.columns), stability=node.stability,
                          unique=list(node.unique), degrees=dict(node.degrees), one_row=node.one_row)
        outputs = [(n, _replace(p, repl)) for n, p in outputs]
        order_exprs = [e if e.name.startswith(("@out:", "@pos:")) else _replace(e, repl) for e in order_exprs]
        calls.map_inputs(lambda e: _replace(e, repl))
        qualify = _replace(qualify, repl) if qualify is not None else None
    node = plan_windows(builder, node, calls)
    if qualify is not None:  # QUALIFY: a filter on the window's output (before DISTINCT, ORDER BY, LIMIT)
        node = Filter(node, qualify, columns=list(node.columns), stability=node.stability,
                      unique=list(node.unique), degrees=dict(node.degrees), one_row=node.one_row)

    # final projection (+ hidden ORDER BY columns)
    proj: dict[str, exp.Expression] = {}
    internal = []
    for name, e in outputs:
        iname = name if name not in proj else f"{name}#{len(proj)}"
        proj[iname] = e
        internal.append(iname)
    out_of_alias = {n: i for (n, _), i in zip(outputs, internal)}
    # an ORDER BY key equal to a SELECT item sorts on that column (no hidden copy, so
    # `SELECT DISTINCT t.a … ORDER BY t.a` needs none)
    out_of_expr: dict[str, str] = {}
    for (_, e), i in zip(outputs, internal):
        out_of_expr.setdefault(e.sql(dialect="duckdb"), i)
    sort_keys = []
    hidden = []
    for o, e in zip(order_items, order_exprs):
        if e.name.startswith("@out:"):
            col = out_of_alias[e.name[5:]]
        elif e.name.startswith("@pos:"):
            col = internal[int(e.name[5:])]
        elif e.sql(dialect="duckdb") in out_of_expr:
            col = out_of_expr[e.sql(dialect="duckdb")]
        else:
            col = f"_o{len(hidden)}"
            proj[col] = e
            hidden.append(col)
        sort_keys.append(SortKey(col, bool(o.args.get("desc")), bool(o.args.get("nulls_first"))))
    node = project_node(node, proj)
    if sel.args.get("distinct") is not None:
        if hidden:
            raise UnsupportedQueryError("SELECT DISTINCT with ORDER BY on a non-selected expression",
                                        position_of(sel))
        node = Distinct(node, columns=list(node.columns), stability=builder._group_s(node.stability),
                        unique=[frozenset(node.columns)], fds=list(node.fds), literals=dict(node.literals))
    if sort_keys or sel.args.get("limit") is not None or sel.args.get("offset") is not None:
        node = builder._sort(node, sort_keys, sel)
    if hidden:
        node = project_node(node, {c: column_ref(c) for c in internal})

    return BuiltQuery(node, [n for n, _ in outputs], internal)


def _agg_calls(e: exp.Expression):
    """The aggregate calls of ``e``; a list's FILTER is part of its call (planner/agg_calls.py)."""
    for a in e.find_all(exp.AggFunc):
        if isinstance(a, exp.ArrayAgg) and isinstance(a.parent, exp.Filter) and a.parent.this is a:
            yield a.parent
        else:
            yield a


def _not_text(e: exp.Expression) -> bool:
    """The optimiser typed ``e`` as something other than a string (then string_agg casts it)."""
    t = getattr(e, "type", None)
    return t is not None and t.this not in (exp.DataType.Type.UNKNOWN,) and not t.is_type(*exp.DataType.TEXT_TYPES)


def _narrowest_keys(keys: list[str], smaller: list[frozenset[str]], pnode) -> list[str] | None:
    """The keys to sort and group by when fewer determine the rest (``smaller``, from
    ``fd_unique``): the set with the fewest key bytes (a string its public width, anything
    else 8), in the query's key order; None when no set is narrower than all keys.

    Grouping by a set the other keys are functions of gives the same groups, and the other
    keys take their values from any row of the group (docs/design.md §Aggregates, *Fewer sort keys*)."""
    if not smaller:
        return None
    widths = plan_string_widths(pnode)

    def cost(cols) -> int:
        return sum(max(8, widths.get(c, 0)) for c in cols)

    best = min(smaller, key=lambda u: (cost(u), len(u), sorted(u)))
    if cost(best) >= cost(keys):
        return None
    return [k for k in keys if k in best]


def _bound_string_aggs(builder, pnode, keys: list[str], aggs: list[Agg]) -> list[Agg]:
    """string_agg's and list's public bounds (operators/string_agg.py, list_agg.py): rows per group — the group key's
    degree bound when the planner has one, else the padded input's — and the padded input size."""
    from dataclasses import replace

    from .group_bounds import rows_per_group
    from .logical import upper_rows
    total = max(1, upper_rows(pnode))
    rows = total
    if keys:
        d = rows_per_group(builder, pnode, list(keys))  # GROUP BY puts all NULLs in one group
        if d is not None:
            rows = max(1, min(rows, d))
    return [replace(a, rows=rows, total=total) if a.func in ("string_agg", "list") else a for a in aggs]
