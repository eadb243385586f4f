"""Decorrelate a scalar subquery that selects a plain value, keeping DuckDB's row check.

``(SELECT v FROM o WHERE o.k = t.k)`` in a SELECT list is one value per outer row, and DuckDB
fails the query ("More than one row returned by a subquery used as an expression") when an
outer row that reaches the SELECT list finds several rows.  sqlglot's ``unnest_subqueries``
decorrelates it into ``MAX(v) … GROUP BY k``, which silently answers with the largest value
instead.  This rule takes these subqueries first: a subquery of one non-aggregate expression
over a plain FROM/WHERE, correlated only by ``outer = inner`` equalities, in the SELECT list,
becomes

    LEFT JOIN (SELECT inner AS _k0, MAX(v) AS _v, COUNT(*) AS _n FROM … WHERE <local>
               GROUP BY inner) AS _sN ON outer = _sN._k0

and the subquery reads ``_sN._v`` under the check ``CASE WHEN _sN._n > 1 THEN error(<DuckDB's
message>) ELSE … END``, which wraps the whole SELECT item (DuckDB checks every row reaching
the SELECT list, whatever CASE, COALESCE or AND surrounds the subquery).
Over one row ``MAX`` is that row's value (NULL included); over no row (or a NULL outer key,
which equals nothing) the LEFT JOIN gives NULL, DuckDB's empty subquery.  The error is a
constant DuckDB rejects, so the evaluator sets its code exactly on the real rows whose CASE
takes that branch (docs/design.md §Expressions) — after the query's WHERE, as in DuckDB.  The
same subquery in WHERE is refused by name: whether DuckDB fails there depends on its plan
(a comparison may be pushed into the subquery first, and its column statistics decide), so
no rewrite can give its answer on every database.  In a
grouped query the correlation columns are group keys, so every row of a group reads the same
``_n`` and ``_v`` and the reads are wrapped in ``MAX``.  ``SELECT DISTINCT v`` counts distinct
values (NULL as one).  The grouped side has one row per key (degree 1).  The guard refuses
``error()`` in the analyst's text (planner/guard.py), so the only ``error()`` is this one.

Example:
    >>> import sqlglot
    >>> from sqlglot.optimizer.qualify import qualify
    >>> schema = {"t": {"k": "int"}, "o": {"k": "int", "v": "int"}}
    >>> e = qualify(sqlglot.parse_one("SELECT (SELECT v FROM o WHERE o.k = t.k) AS w FROM t"), schema=schema)
    >>> print(correlated_value(e).sql())  # doctest: +NORMALIZE_WHITESPACE
    SELECT CASE WHEN "_s0"."_n" > 1 THEN ERROR('More than one row returned by a subquery used as an expression -
    scalar subqueries can only return a single row.') ELSE "_s0"."_v" END AS "w" FROM "t" AS "t"
    LEFT JOIN (SELECT "o"."k" AS "_k0", MAX("o"."v") AS "_v", COUNT(*) AS "_n" FROM "o" AS "o" GROUP BY "o"."k")
    AS _s0 ON "t"."k" = "_s0"."_k0"
"""
from __future__ import annotations

import itertools

from sqlglot import exp

from ...operators.scalar_row import SCALAR_ROWS_MESSAGE
from .correlated_count import _inside_subquery
from ...errors import UnsupportedQueryError
from ...sqlpos import position_of
from .unnest_exists import _and, _equality_keys, _inner_aliases, _split_correlation

__all__ = ["correlated_value", "ROWS_ERROR"]

_PREFIX = "Invalid Input Error: "
assert SCALAR_ROWS_MESSAGE.startswith(_PREFIX)
ROWS_ERROR = SCALAR_ROWS_MESSAGE[len(_PREFIX):]  # DuckDB's error() prefixes the kind itself


def _candidate(sub: exp.Select) -> bool:
    """One expression with no aggregate over a plain FROM/WHERE, reading inner columns only."""
    if not isinstance(sub, exp.Select) or len(sub.expressions) != 1 or any(
            sub.args.get(k) for k in ("group", "having", "limit", "offset", "order", "with", "with_", "qualify")):
        return False
    distinct = sub.args.get("distinct")
    if distinct is not None and distinct.args.get("on"):
        return False
    value = sub.expressions[0].unalias()
    if isinstance(value, exp.Star) or value.find(exp.AggFunc, exp.Window, exp.Subquery):
        return False
    inner = _inner_aliases(sub)
    return all(c.table in inner for c in value.find_all(exp.Column))


def _rewrite(select: exp.Select, node: exp.Subquery, counter, grouped: bool, item: exp.Expression | None) -> bool:
    sub = node.this
    local, correlated, inner = _split_correlation(sub)
    keys = _equality_keys(correlated, inner)
    if not keys:
        return False
    alias = f"_s{next(counter)}"
    value = sub.expressions[0].unalias()
    if sub.args.get("distinct") is not None:
        # distinct values, NULL counting as one value (SELECT DISTINCT keeps one NULL row)
        count = exp.Add(this=exp.Count(this=exp.Distinct(expressions=[value.copy()])),
                        expression=exp.Max(this=exp.Case(ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()),
                                                                      true=exp.Literal.number(1))],
                                                         default=exp.Literal.number(0))))
    else:
        count = exp.Count(this=exp.Star())
    body = sub.copy()
    body.set("distinct", None)
    body.set("where", exp.Where(this=_and([p.copy() for p in local])) if local else None)
    body.set("expressions", [exp.alias_(i.copy(), f"_k{n}", quoted=True) for n, (_, i) in enumerate(keys)]
             + [exp.alias_(exp.Max(this=value.copy()), "_v", quoted=True), exp.alias_(count, "_n", quoted=True)])
    body.set("group", exp.Group(expressions=[i.copy() for _, i in keys]))
    derived = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    on = _and([exp.EQ(this=o.copy(), expression=exp.column(f"_k{n}", table=alias, quoted=True))
               for n, (o, _) in enumerate(keys)])

    def read(name: str) -> exp.Expression:
        col = exp.column(name, table=alias, quoted=True)
        return exp.Max(this=col) if grouped else col

    def checked(value: exp.Expression) -> exp.Case:
        return exp.Case(ifs=[exp.If(this=exp.GT(this=read("_n"), expression=exp.Literal.number(1)),
                                    true=exp.Anonymous(this="error", expressions=[exp.Literal.string(ROWS_ERROR)]))],
                        default=value)

    select.append("joins", exp.Join(this=derived, side="LEFT", on=on))
    name = node.args.get("alias")  # a SELECT item's name rides on the subquery node itself
    if item is None or node is item:
        # WHERE, or the whole SELECT item: the check stands where the value is read
        node.replace(exp.alias_(exp.paren(checked(read("_v")), copy=False), name.this.copy()) if name is not None
                     else exp.paren(checked(read("_v")), copy=False))
        return True
    # inside a SELECT item: DuckDB checks every row that reaches the SELECT list, whatever
    # CASE, COALESCE or AND around the subquery would evaluate, so the check wraps the item
    node.replace(read("_v"))
    target = item.this if isinstance(item, exp.Alias) else item
    case = checked(exp.null())
    if isinstance(item, exp.Alias):
        item.set("this", case)
    else:
        item.replace(case)
    case.set("default", target)  # the item's own nodes move under the check (no copies)
    return True


def correlated_value(expression: exp.Expression) -> exp.Expression:
    """Rewrite correlated plain-value scalar subqueries of SELECT lists; refuse them in WHERE
    (see the module docstring)."""
    counter = itertools.count()
    for select in list(expression.find_all(exp.Select)):
        grouped = bool(select.args.get("group")) or any(
            p.find(exp.AggFunc) and not _inside_subquery(p, select) for p in select.expressions)
        where = select.args.get("where")
        for node in list(where.find_all(exp.Subquery)) if where is not None else []:
            if node.parent_select is select and _candidate(node.this) and not isinstance(node.parent, (exp.Exists, exp.In)) \
                    and _equality_keys(*_split_correlation(node.this)[1:]):
                raise UnsupportedQueryError(
                    "a correlated scalar subquery in WHERE that selects a plain value: whether DuckDB fails on an "
                    "outer row with several rows depends on its plan (select an aggregate such as max(v), or use "
                    "EXISTS / IN)", position_of(node))
        for item in list(select.expressions):
            for node in list(item.find_all(exp.Subquery)):
                if node.parent_select is not select or not _candidate(node.this):
                    continue
                if isinstance(node.parent, (exp.Exists, exp.In)) or node.find_ancestor(exp.AggFunc, exp.Window):
                    continue
                _rewrite(select, node, counter, grouped, item)
    return expression
