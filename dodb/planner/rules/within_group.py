"""``percentile_cont(q) WITHIN GROUP (ORDER BY x)`` → ``quantile_cont(x, q)`` (docs/design.md §Aggregates).

The ordered-set form of DuckDB's quantiles names the value in an ORDER BY; ascending order
is the plain quantile.  ``DESC`` (the quantile from the top) is refused, naming it.

Example:
    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY x) FROM t", read="duckdb")
    >>> within_group(q).sql(dialect="duckdb")
    'SELECT QUANTILE_DISC(x, 0.25) FROM t'
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import UnsupportedQueryError
from ...sqlpos import position_of

__all__ = ["within_group"]


def within_group(expression: exp.Expression) -> exp.Expression:
    """Rewrite every ``WITHIN GROUP`` quantile of ``expression`` in place."""
    for node in reversed(list(expression.find_all(exp.WithinGroup))):
        func, order = node.this, node.expression
        items = order.expressions if isinstance(order, exp.Order) else []
        if not isinstance(func, (exp.PercentileCont, exp.PercentileDisc)) or len(items) != 1:
            raise UnsupportedQueryError(f"WITHIN GROUP on {func.sql(dialect='duckdb')[:40]}", position_of(node))
        if items[0].args.get("desc"):
            raise UnsupportedQueryError("WITHIN GROUP (ORDER BY … DESC) (quantiles over descending order)",
                                        position_of(node))
        new = type(func)(this=items[0].this.copy(), expression=func.this.copy())
        if node is expression:
            return new
        node.replace(new)
    return expression
