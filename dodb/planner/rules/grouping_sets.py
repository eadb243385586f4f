"""GROUPING SETS / ROLLUP / CUBE / GROUPING() as a UNION ALL of GROUP BYs (docs/design.md §Grouping).

A SELECT grouped by several grouping sets is the UNION ALL of one SELECT per set over the
same FROM/WHERE: each branch groups by its set, and every grouping expression outside the
set reads as NULL there (outside aggregates, in the SELECT list and in HAVING);
``GROUPING(a, b)`` is the constant bit mask of the arguments left out (``a`` the high
bit), as in DuckDB.  An empty set is a global aggregate (one row, also over no rows).
ORDER BY / LIMIT / OFFSET / DISTINCT apply to the union and move to an outer SELECT.

Privacy: every branch is an ordinary DO group-by whose padded group count is released and
charged on its own (neighbours.md §Sensitivity: group count), so the union's padded size
is the sum of charged padded sizes and nothing else is released.

Elements combine as a cross product (``GROUP BY a, ROLLUP(b, c)`` = sets ``(a,b,c), (a,b),
(a)``); a query with more than :data:`MAX_SETS` sets is refused (each set is one pass).

Example:
    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT a, b, count(*) FROM t GROUP BY ROLLUP (a, b)", read="duckdb")
    >>> print(grouping_sets(q).sql(dialect="duckdb"))  # doctest: +NORMALIZE_WHITESPACE
    SELECT * FROM (SELECT a, b, COUNT(*) AS "count_star()" FROM t GROUP BY a, b UNION ALL SELECT a, NULL, COUNT(*)
    FROM t GROUP BY a UNION ALL SELECT NULL, NULL, COUNT(*) FROM t) AS _dodb_grouping_sets
"""
from __future__ import annotations

import itertools

from sqlglot import exp

from ...errors import UnsupportedQueryError
from ...sqlpos import position_of

__all__ = ["grouping_sets", "MAX_SETS"]

MAX_SETS = 64
_SET_NODES = (exp.Rollup, exp.Cube, exp.GroupingSets)


def _key(e: exp.Expression) -> str:
    return e.sql(dialect="duckdb")


def _parts(e: exp.Expression) -> list[exp.Expression]:
    """The expressions of one element of ROLLUP/CUBE/GROUPING SETS (a parenthesised list or one)."""
    if isinstance(e, exp.Tuple):
        return list(e.expressions)
    return [e.this] if isinstance(e, exp.Paren) else [e]


def _alternatives(e: exp.Expression) -> list[list[exp.Expression]]:
    if isinstance(e, exp.Rollup):
        elems = [_parts(x) for x in e.expressions]
        return [[p for el in elems[:i] for p in el] for i in range(len(elems), -1, -1)]
    if isinstance(e, exp.Cube):
        elems = [_parts(x) for x in e.expressions]
        out = []
        for r in range(len(elems), -1, -1):
            for combo in itertools.combinations(elems, r):
                out.append([p for el in combo for p in el])
        return out
    if isinstance(e, exp.GroupingSets):
        alts = []
        for x in e.expressions:
            if isinstance(x, _SET_NODES):
                alts.extend(_alternatives(x))
            else:
                alts.append(_parts(x))
        return alts
    return [[e]]


def _resolve(e: exp.Expression, select: exp.Select) -> exp.Expression:
    """A GROUP BY position (``1``) or SELECT alias means that SELECT item's expression, as in DuckDB."""
    items = select.expressions
    if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
        i = int(e.this)
        if not 1 <= i <= len(items):
            raise UnsupportedQueryError(f"GROUP BY position {i} is not in the SELECT list", position_of(e))
        return items[i - 1].unalias().copy()
    if isinstance(e, exp.Column) and not e.table:
        for item in items:
            if isinstance(item, exp.Alias) and item.alias == e.name and not (
                    isinstance(item.this, exp.Column) and item.this.name == e.name):
                return item.this.copy()
    return e


def _sets(select: exp.Select) -> list[list[exp.Expression]]:
    sets: list[list[exp.Expression]] = [[]]
    for e in select.args["group"].expressions:
        sets = [s + [_resolve(x, select) for x in alt] for s in sets for alt in _alternatives(e)]
        if len(sets) > MAX_SETS:
            raise UnsupportedQueryError(f"more than {MAX_SETS} grouping sets (each is one pass over the input)",
                                        position_of(e))
    return sets


def auto_name(e: exp.Expression) -> str:
    """The column name DuckDB gives an unaliased SELECT item (close to its own rendering)."""
    if isinstance(e, exp.Alias):
        return e.alias
    if isinstance(e, exp.Column):
        return e.name
    if isinstance(e, exp.Count) and (e.this is None or isinstance(e.this, exp.Star)):
        return "count_star()"
    return e.sql(dialect="duckdb", normalize_functions="lower")


def _substitute(e: exp.Expression, nulled: dict[str, exp.Expression], in_set: set[str]) -> exp.Expression:
    """``e`` with grouping expressions outside the set as NULL and GROUPING() as its constant."""
    def walk(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Grouping):
            mask = 0
            for arg in node.expressions:
                k = _key(arg)
                if k not in nulled and k not in in_set:
                    raise UnsupportedQueryError(f"GROUPING({arg.sql(dialect='duckdb')}): not a grouping expression",
                                                position_of(node))
                mask = (mask << 1) | (k in nulled)
            return exp.Literal.number(mask)
        if isinstance(node, (exp.AggFunc, exp.Subquery, exp.Select)):
            return node
        if isinstance(node, exp.Ordered):  # renders as its key ("grp"): substitute inside, keep the ordering
            node.set("this", walk(node.this))
            return node
        if _key(node) in nulled:
            return exp.Null()
        if _key(node) in in_set:  # a grouped expression stays whole (grp % 2 grouped, grp not)
            return node
        for k, v in list(node.args.items()):
            if isinstance(v, exp.Expression):
                node.set(k, walk(v))
            elif isinstance(v, list):
                node.set(k, [walk(x) if isinstance(x, exp.Expression) else x for x in v])
        return node
    return walk(e.copy())


def _branch(select: exp.Select, keys: list[exp.Expression], universe: dict[str, exp.Expression],
            name_changed: bool, hidden: list[tuple[str, exp.Expression]] = ()) -> exp.Select:
    """One grouping set's SELECT; ``hidden`` are extra ``(name, expression)`` items the outer
    ORDER BY reads (evaluated per set like the SELECT list: GROUPING() constant, others NULL)."""
    in_set = {_key(k) for k in keys}
    nulled = {k: v for k, v in universe.items() if k not in in_set}
    b = select.copy()
    for arg in ("order", "limit", "offset", "distinct", "with", "with_"):
        b.set(arg, None)
    unique = list({_key(k): k.copy() for k in keys}.values())
    b.set("group", exp.Group(expressions=unique) if unique else None)
    items = []
    for item in select.expressions:
        new = _substitute(item, nulled, in_set)
        if name_changed and not isinstance(item, exp.Alias) and (
                _key(new) != _key(item) or not isinstance(item, exp.Column)):
            # DuckDB's name for the column, which an outer ORDER BY count(*) reads as well
            new = exp.alias_(new, auto_name(item), quoted=True)
        items.append(new)
    items += [exp.alias_(_substitute(e, nulled, in_set), name, quoted=True) for name, e in hidden]
    b.set("expressions", items)
    if select.args.get("having") is not None:
        b.set("having", exp.Having(this=_substitute(select.args["having"].this, nulled, in_set)))
    return b


def _order_names(select: exp.Select, first: exp.Select) -> dict[str, str]:
    """ORDER BY text → output column name, for keys that are a SELECT item or its alias."""
    names: dict[str, str] = {}
    for item, out in zip(select.expressions, first.expressions):
        names.setdefault(_key(item.unalias()), auto_name(out))
        names.setdefault(auto_name(out), auto_name(out))
    return names


def _order_plan(select: exp.Select, first: exp.Select) -> tuple[list[tuple[exp.Ordered, str]], list]:
    """Each ORDER BY key with the output column it sorts on, and the hidden items to add.

    A key that is a SELECT item (or its alias, or its position) sorts on that column; any
    other expression (``CASE WHEN GROUPING(a) = 0 THEN a END``, TPC-DS Q70) is computed in
    every branch as a hidden column, as DuckDB evaluates it per grouping set.
    """
    order = select.args.get("order")
    if order is None:
        return [], []
    names = _order_names(select, first)
    keys, hidden = [], []
    for o in order.expressions:
        t = o.this
        name = names.get(t.name) if isinstance(t, exp.Column) and not t.table else None
        name = name or names.get(_key(t))
        if name is None and isinstance(t, exp.Literal) and not t.is_string and t.this.isdigit() \
                and 1 <= int(t.this) <= len(first.expressions):
            name = auto_name(first.expressions[int(t.this) - 1])
        if name is None:
            if t.find(exp.Window) is not None or t.find(exp.Subquery) is not None:
                raise UnsupportedQueryError(
                    f"ORDER BY {t.sql(dialect='duckdb')[:60]} with grouping sets (order by a SELECT item)",
                    position_of(o))
            name = f"_dodb_order_{len(hidden)}"
            hidden.append((name, t))
        keys.append((o, name))
    return keys, hidden


def _constant(e: exp.Expression) -> str | None:
    """The SQL of ``e`` folded to a literal or NULL, else None (not constant)."""
    from sqlglot.optimizer.simplify import simplify

    folded = simplify(e.copy())
    return _key(folded) if isinstance(folded, (exp.Literal, exp.Null, exp.Boolean)) else None


def _check_windows(select: exp.Select, sets: list[list[exp.Expression]], universe: dict[str, exp.Expression]) -> None:
    """A window over grouping sets sees the rows of every set together in DuckDB, but here each
    set is its own branch of the union.  That is the same only when the window's PARTITION BY
    tells the sets apart: some partition expressions fold to constants per set (``GROUPING(a) +
    GROUPING(b)``, TPC-DS Q36, Q70, Q86) and no two sets share those constants.  Otherwise (and
    for QUALIFY) refused, naming the rewrite that works."""
    windows = [w for item in select.expressions for w in item.find_all(exp.Window)
               if w.find_ancestor(exp.Select) is select]
    for w in windows:
        parts = w.args.get("partition_by") or []
        signatures = []
        for keys in sets:
            in_set = {_key(k) for k in keys}
            nulled = {k: v for k, v in universe.items() if k not in in_set}
            consts = [_constant(_substitute(p, nulled, in_set)) for p in parts]
            signatures.append(tuple(c for c in consts if c is not None))
        if len(set(signatures)) < len(signatures) or not all(signatures) and len(signatures) > 1:
            raise UnsupportedQueryError(
                "window function over GROUPING SETS / ROLLUP / CUBE whose PARTITION BY does not separate the "
                "sets (partition by their GROUPING(), or group in a subquery and apply the window to its rows)",
                position_of(w))
    if select.args.get("qualify") is not None:
        raise UnsupportedQueryError("QUALIFY with GROUPING SETS / ROLLUP / CUBE (group in a subquery, then filter "
                                    "its rows)", position_of(select.args["qualify"]))


def _expand(select: exp.Select) -> exp.Expression:
    sets = _sets(select)
    universe: dict[str, exp.Expression] = {}
    for s in sets:
        for k in s:
            universe.setdefault(_key(k), k)
    _check_windows(select, sets, universe)
    first = _branch(select, sets[0], universe, name_changed=True)
    order_keys, hidden = _order_plan(select, first)
    branches = [_branch(select, s, universe, name_changed=(i == 0), hidden=hidden) for i, s in enumerate(sets)]
    union: exp.Expression = branches[0]
    for b in branches[1:]:
        union = exp.Union(this=union, expression=b, distinct=False)
    columns = ["*"] if not hidden else [exp.column(auto_name(o), quoted=True) for o in first.expressions]
    outer = exp.select(*columns).from_(exp.Subquery(this=union, alias=exp.TableAlias(
        this=exp.to_identifier("_dodb_grouping_sets"))))
    order = None
    if order_keys:
        order = exp.Order(expressions=[_ordered_on(o, name) for o, name in order_keys])
    for arg, value in (("order", order), ("limit", select.args.get("limit")),
                       ("offset", select.args.get("offset")), ("distinct", select.args.get("distinct")),
                       ("with", select.args.get("with")), ("with_", select.args.get("with_"))):
        if value is not None:
            outer.set(arg, value.copy())
    return outer


def _ordered_on(o: exp.Ordered, name: str) -> exp.Ordered:
    o = o.copy()
    o.set("this", exp.column(name, quoted=True))
    return o


def _plain_grouping(select: exp.Select) -> None:
    """GROUPING() under a plain GROUP BY is 0 (every argument is grouped)."""
    group = select.args.get("group")
    keys = {_key(_resolve(k, select)) for k in (group.expressions if group is not None else [])}
    for g in list(select.find_all(exp.Grouping)):
        if g.find_ancestor(exp.Select) is not select:
            continue
        if not keys:
            raise UnsupportedQueryError("GROUPING() without GROUP BY", position_of(g))
        for arg in g.expressions:
            if _key(arg) not in keys:
                raise UnsupportedQueryError(f"GROUPING({arg.sql(dialect='duckdb')}): not a grouping expression",
                                            position_of(g))
        g.replace(exp.Literal.number(0))


def grouping_sets(expression: exp.Expression) -> exp.Expression:
    """Expand every SELECT of ``expression`` grouped by sets (innermost first); returns the new root."""
    for select in reversed(list(expression.find_all(exp.Select))):
        group = select.args.get("group")
        has_sets = group is not None and any(isinstance(e, _SET_NODES) for e in group.expressions)
        if not has_sets:
            _plain_grouping(select)
            continue
        new = _expand(select)
        if select is expression:
            expression = new
        else:
            select.replace(new)
    return expression
