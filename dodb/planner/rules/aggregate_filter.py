"""Rewrite aggregate ``FILTER (WHERE p)`` clauses into CASE arguments (docs/design.md §Grouping).

``agg(x) FILTER (WHERE p)`` aggregates the rows where ``p`` is true.  Every aggregate dodb
runs ignores NULL arguments, so the clause is the same as feeding NULL on the other rows:
``agg(CASE WHEN p THEN x END)``; ``count(*) FILTER (WHERE p)`` counts the rows where
``p`` is true, ``count(CASE WHEN p THEN 1 END)``.  Two-column aggregates (``corr``,
``arg_max`` …) get both columns wrapped (a row is ignored when either is NULL); a
quantile's fraction and a separator are constants and stay as written.  The rewrite runs
on the parsed query, before the guard, so the guard and DuckDB's bind see the CASE form.
``list(x) FILTER (…)`` stays as written: a list keeps NULL elements (docs/design.md §list).

Example:
    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT count(*) FILTER (WHERE a > 1), sum(b) FILTER (b < 0) FROM t", read="duckdb")
    >>> aggregate_filter(q).sql(dialect="duckdb")
    'SELECT COUNT(CASE WHEN a > 1 THEN 1 END), SUM(CASE WHEN b < 0 THEN b END) FROM t'
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import UnsupportedQueryError
from ...sqlpos import position_of

__all__ = ["aggregate_filter"]

# argument slots holding per-row values (others are constants: fractions, separators)
_ROW_ARGS = ("this", "expression")
_CONSTANT_SECOND = (exp.PercentileCont, exp.PercentileDisc, exp.Quantile, exp.GroupConcat)


def _when(cond: exp.Expression, value: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=cond.copy(), true=value)])


def _rewrite(node: exp.Filter) -> exp.Expression:
    agg = node.this
    if isinstance(agg, exp.ArrayAgg):  # a list keeps NULL elements: its FILTER stays (planner/agg_calls.py)
        return node
    where = node.expression
    cond = where.this if isinstance(where, exp.Where) else where
    if not isinstance(agg, exp.AggFunc):
        raise UnsupportedQueryError(f"FILTER clause on {agg.sql(dialect='duckdb')[:60]} (not an aggregate)",
                                    position_of(node))
    agg = agg.copy()
    if isinstance(agg, exp.Count) and (agg.this is None or isinstance(agg.this, exp.Star)):
        agg.set("this", _when(cond, exp.Literal.number(1)))
        return agg
    slots = ("this",) if isinstance(agg, _CONSTANT_SECOND) else _ROW_ARGS
    for slot in slots:
        arg = agg.args.get(slot)
        if arg is None:
            continue
        if isinstance(arg, exp.Order):  # string_agg(x, sep ORDER BY …) FILTER (…): the CASE goes on x
            arg = arg.copy()
            arg.set("this", _when(cond, arg.this.copy()))
            agg.set(slot, arg)
        elif isinstance(arg, exp.Distinct):  # count(DISTINCT x) FILTER (…): the distinct values of x where p
            if len(arg.expressions) != 1:
                raise UnsupportedQueryError("aggregate (DISTINCT …) over several expressions with FILTER",
                                            position_of(node))
            arg.set("expressions", [_when(cond, arg.expressions[0].copy())])
        else:
            agg.set(slot, _when(cond, arg.copy()))
    return agg


def aggregate_filter(expression: exp.Expression) -> exp.Expression:
    """Replace every ``agg FILTER (WHERE p)`` of ``expression`` (in place) by its CASE form."""
    for node in reversed(list(expression.find_all(exp.Filter))):  # innermost first
        replacement = _rewrite(node)
        if replacement is node:
            continue
        if node is expression:
            return replacement
        node.replace(replacement)
    return expression
