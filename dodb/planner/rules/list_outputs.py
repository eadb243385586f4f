"""Where ``list/array_agg`` may stand (docs/design.md §list): as a final output column only.

A list is a fixed-shape column the engine can only carry to the answer, so a call must be
an item of the outermost SELECT (``list(x) [FILTER (…)] [AS a]``), or of the one derived
table or CTE that SELECT reads from, whose list columns the outer SELECT then passes
through as items — never used in an expression, WHERE, GROUP BY, HAVING, ORDER BY,
DISTINCT, a window, a join, a subquery or a set operation.

Example:
    >>> import sqlglot
    >>> check_lists(sqlglot.parse_one("SELECT g, list(x ORDER BY y) AS l FROM t GROUP BY g ORDER BY g", read="duckdb"))
    >>> check_lists(sqlglot.parse_one("SELECT len(list(x)) FROM t", read="duckdb"))
    Traceback (most recent call last):
    ...
    dodb.errors.UnsupportedQueryError: unsupported SQL: list/array_agg inside an expression: LENGTH(ARRAY_AGG(x)) (a list can only be a final output column: list functions, comparisons and casts of lists are not supported) (at line 1, col 10)
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import UnsupportedQueryError
from ...sqlpos import position_of

__all__ = ["check_lists"]

_ONLY = "a list can only be a final output column"


def _fail(what: str, node: exp.Expression, why: str = _ONLY) -> None:
    raise UnsupportedQueryError(f"list/array_agg {what}: {node.sql(dialect='duckdb')[:80]} ({why})",
                                position_of(node))


def _item(node: exp.Expression) -> tuple[exp.Expression, exp.Select | None]:
    """The SELECT item ``node`` stands as (through FILTER and an alias), and that SELECT."""
    top = node
    if isinstance(top.parent, exp.Filter) and top.parent.this is top:
        top = top.parent
    if isinstance(top.parent, exp.Alias):
        top = top.parent
    sel = top.parent
    if isinstance(sel, exp.Select) and top.arg_key == "expressions":
        return top, sel
    return top, None


def _source(root: exp.Select) -> exp.Select | None:
    """The derived table or CTE body the outermost SELECT reads alone (no join), if any."""
    from_ = root.args.get("from") or root.args.get("from_")
    if from_ is None or root.args.get("joins"):
        return None
    src = from_.this
    if isinstance(src, exp.Subquery) and isinstance(src.this, exp.Select):
        return src.this
    with_ = root.args.get("with") or root.args.get("with_")
    if isinstance(src, exp.Table) and not src.args.get("db") and with_ is not None:
        for cte in with_.expressions:
            uses = [t for t in root.find_all(exp.Table) if t.name == cte.alias and not t.args.get("db")]
            if cte.alias == src.name and len(uses) == 1 and isinstance(cte.this, exp.Select):
                return cte.this
    return None


def _renamed(src: exp.Select) -> list[str]:
    """The column aliases a derived table or CTE gives its items (``AS s(a, b)``), if any."""
    alias = src.parent.args.get("alias") if isinstance(src.parent, (exp.Subquery, exp.CTE)) else None
    return [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []


def _no_distinct(sel: exp.Select, item: exp.Expression) -> None:
    if sel.args.get("distinct") is not None:
        _fail("in a SELECT DISTINCT", item, "DISTINCT would compare lists")


def _check_order(sel: exp.Select, names: set[str], items: list[exp.Expression]) -> None:
    """No ORDER BY on a list: by the call, its alias or its position."""
    order = sel.args.get("order")
    for o in (order.expressions if order is not None else []):
        t = o.this
        by_name = isinstance(t, exp.Column) and not t.table and t.name in names
        by_pos = isinstance(t, exp.Literal) and not t.is_string and t.this.isdigit() and \
            0 < int(t.this) <= len(sel.expressions) and sel.expressions[int(t.this) - 1] in items
        if by_name or by_pos or t.find(exp.ArrayAgg):
            _fail("in ORDER BY", o, "lists cannot be compared: order by other columns")


def _pass_through(root: exp.Select, names: set[str]) -> None:
    """The outer SELECT uses the source's list columns only as bare items."""
    _no_star_over_lists(root)
    src = _source(root)
    for col in root.find_all(exp.Column):
        if col.name not in names or _inside(col, src):
            continue
        top = col.parent if isinstance(col.parent, exp.Alias) else col
        if top.parent is root and top.arg_key == "expressions":
            _no_distinct(root, col)
            continue
        where = {"order": "in ORDER BY", "group": "in GROUP BY", "where": "in WHERE", "having": "in HAVING"}
        key = _clause(col, root)
        _fail(f"column {where.get(key, 'inside an expression')}", _enclosing(col),
              "a list column can only be passed through to the answer")


def _no_star_over_lists(root: exp.Select) -> None:
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
           for e in root.expressions):
        if root.args.get("distinct") is not None or root.args.get("group") is not None:
            _fail("column under SELECT DISTINCT * or GROUP BY", root, "a list column can only be passed through")


def _enclosing(node: exp.Expression) -> exp.Expression:
    """The whole expression ``node`` stands in (up to its SELECT item or clause), unaliased."""
    while node.parent is not None and not isinstance(node.parent, (exp.Select, exp.Subquery, exp.Where, exp.Having,
                                                                    exp.Group, exp.Ordered, exp.Alias)):
        node = node.parent
    return node


def _clause(node: exp.Expression, root: exp.Select) -> str | None:
    while node.parent is not None and node.parent is not root:
        node = node.parent
    return node.arg_key if node.parent is root else None


def _inside(node: exp.Expression, sub: exp.Expression | None) -> bool:
    while sub is not None and node is not None:
        if node is sub:
            return True
        node = node.parent
    return False


def check_lists(root: exp.Expression) -> None:
    """Refuse (naming it) every ``list/array_agg`` that is not a final output column."""
    calls = list(root.find_all(exp.ArrayAgg))
    if not calls:
        return
    src = _source(root) if isinstance(root, exp.Select) else None
    source_names: set[str] = set()
    for a in calls:
        if isinstance(a.parent, exp.Window) or isinstance(a.parent, (exp.RespectNulls, exp.IgnoreNulls)):
            _fail("as a window function", a, "only as a GROUP BY aggregate")
        arg = a.this.this if isinstance(a.this, exp.Order) else a.this
        if isinstance(arg, exp.Distinct):
            _fail("(DISTINCT …)", a, "aggregate the distinct values of a subquery instead: "
                  "SELECT list(x) FROM (SELECT DISTINCT …)")
        item, sel = _item(a)
        if a.find_ancestor(exp.Ordered) is not None:
            _fail("in ORDER BY", a, "lists cannot be compared: order by other columns")
        if sel is None:
            _fail("inside an expression", _enclosing(a), f"{_ONLY}: list functions, comparisons and casts of lists "
                                                 "are not supported")
        if sel is root or (src is not None and sel is src):
            _no_distinct(sel, item)
            if sel is src:
                source_names.add(item.alias_or_name)
                renamed = _renamed(src)  # FROM (…) AS s(a, b): the outer SELECT says b
                if item in src.expressions and src.expressions.index(item) < len(renamed):
                    source_names.add(renamed[src.expressions.index(item)])
            continue
        _fail("inside a subquery, CTE, join or set operation", a,
              _ONLY + ("; GROUPING SETS, ROLLUP and CUBE run as a set operation" if isinstance(root, exp.Union)
                       else ""))
    for sel in {id(s): s for s in (root, src) if isinstance(s, exp.Select)}.values():
        items = [e for e in sel.expressions if e.find(exp.ArrayAgg)]
        _check_order(sel, {e.alias for e in items if isinstance(e, exp.Alias)}, items)
    if source_names:
        _pass_through(root, source_names)
