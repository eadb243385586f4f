"""Refuse SQL outside dodb's surface before anything else happens.

Example:
    >>> import sqlglot
    >>> reject_unsupported(sqlglot.parse_one("SELECT * FROM t TABLESAMPLE 10%", read="duckdb"))
    Traceback (most recent call last):
    ...
    dodb.errors.UnsupportedQueryError: unsupported SQL: TABLESAMPLE SYSTEM (10 PERCENT) (at line 1, col 30)
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import UnsupportedQueryError
from .list_outputs import check_lists
from ...sqlpos import position_of

__all__ = ["reject_unsupported", "position_of"]

_STATEMENTS = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery)
_BANNED = {
    exp.Lateral: "LATERAL",
    exp.Unnest: "UNNEST",
    exp.Pivot: "PIVOT",
    exp.TableSample: "TABLESAMPLE",
}
_AGGS_OK = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Median, exp.Stddev, exp.StddevSamp, exp.StddevPop,
            exp.Variance, exp.VariancePop, exp.Corr, exp.CovarPop, exp.CovarSamp, exp.ArgMin, exp.ArgMax,
            exp.PercentileCont, exp.PercentileDisc, exp.Quantile, exp.GroupConcat, exp.ArrayAgg)


def _unwrap_nulls(node: exp.Expression | None) -> exp.Expression | None:
    """The node above ``RESPECT NULLS`` / ``IGNORE NULLS`` wrappers."""
    while isinstance(node, (exp.RespectNulls, exp.IgnoreNulls)):
        node = node.parent
    return node


def _fail(what: str, node: exp.Expression) -> None:
    text = node.sql(dialect="duckdb")[:80]
    # 'ARRAY_AGG ARRAY_AGG(a)' said the name twice: name the construct once
    said = text if text.upper().startswith(what.upper()) else f"{what} {text}"
    raise UnsupportedQueryError(said.strip(), position_of(node))


def reject_unsupported(expression: exp.Expression) -> exp.Expression:
    """Raise :class:`UnsupportedQueryError` on constructs dodb cannot run privately."""
    if not isinstance(expression, _STATEMENTS):
        raise UnsupportedQueryError(f"{expression.key.upper()} statement (only SELECT queries run privately)",
                                    position_of(expression))
    with_ = expression.args.get("with") or expression.args.get("with_")
    if with_ is not None and with_.args.get("recursive"):
        _fail("WITH RECURSIVE", with_)
    for node in expression.walk():
        for cls, what in _BANNED.items():
            if isinstance(node, cls):
                _fail(what, node)
        if isinstance(node, exp.AggFunc) and not isinstance(node, _AGGS_OK) \
                and not isinstance(_unwrap_nulls(node.parent), exp.Window):  # planner/windows.py checks those
            _fail("aggregate", node)
        if isinstance(node, exp.Join):
            side, kind = (node.args.get("side") or "").upper(), (node.args.get("kind") or "").upper()
            if side == "RIGHT":  # FULL joins are planned (planner/build.py, operators/join.py)
                _fail(f"{side} OUTER JOIN", node)
            if node.args.get("using"):
                _fail("JOIN … USING", node)
            if kind in ("ASOF", "POSITIONAL", "NATURAL") or node.args.get("method"):
                _fail(f"{kind or node.args.get('method')} JOIN", node)
        if isinstance(node, (exp.Union, exp.Intersect, exp.Except)) and not isinstance(node, exp.Union) \
                and node.args.get("distinct") is False:
            _fail(f"{node.key.upper()} ALL", node)
        if isinstance(node, exp.Select) and node.args.get("distinct") is not None \
                and node.args["distinct"].args.get("on"):
            _fail("DISTINCT ON", node)
        if isinstance(node, exp.Order) and isinstance(node.parent, exp.AggFunc) \
                and not isinstance(node.parent, (exp.GroupConcat, exp.ArrayAgg)):
            _fail("ORDER BY inside an aggregate", node)
    check_lists(expression)  # list/array_agg only as a final output column (docs/design.md §list)
    return expression
