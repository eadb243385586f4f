"""``GROUP BY ALL`` → the SELECT items that are not aggregates (docs/design.md §Grouping).

DuckDB groups by every SELECT item that contains no aggregate and refers to a column; a
constant item (``SELECT 1, count(*) … GROUP BY ALL``) is not a grouping key, so a query
whose items are all aggregates or constants has no GROUP BY (one row, even when empty).

Example:
    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT a, b + 1 AS c, 7, sum(d) FROM t GROUP BY ALL", read="duckdb")
    >>> group_by_all(q).sql(dialect="duckdb")
    'SELECT a, b + 1 AS c, 7, SUM(d) FROM t GROUP BY a, b + 1'
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import UnsupportedQueryError
from ...sqlpos import position_of

__all__ = ["group_by_all"]


def _keys(select: exp.Select) -> list[exp.Expression]:
    keys = []
    for item in select.expressions:
        e = item.unalias() if isinstance(item, exp.Alias) else item
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
            raise UnsupportedQueryError("GROUP BY ALL with SELECT * (list the grouping columns)", position_of(select))
        if e.find(exp.AggFunc) or not e.find(exp.Column) or e.find(exp.Window):
            continue
        keys.append(e.copy())
    return keys


def group_by_all(expression: exp.Expression) -> exp.Expression:
    """Expand every ``GROUP BY ALL`` of ``expression`` in place."""
    for select in list(expression.find_all(exp.Select)):
        group = select.args.get("group")
        if group is None or not group.args.get("all"):
            continue
        keys = _keys(select)
        select.set("group", exp.Group(expressions=keys) if keys else None)
    return expression
