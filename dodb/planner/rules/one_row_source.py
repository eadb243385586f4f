"""A SELECT without FROM reads a one-row relation, so what it selects can be planned.

``SELECT (SELECT count(*) FROM orders) AS n`` or the ``SELECT 99`` branch of a UNION has no
FROM; DuckDB evaluates its SELECT list once.  This rule gives every such SELECT the source
``FROM (VALUES (1)) AS _one_row(_one)`` (``_one_row1``, ``_one_row2`` … for the next ones): one row, so the SELECT list is evaluated once, its
scalar subqueries decorrelate into joins with that row like any other (sqlglot's
``unnest_subqueries``), ``count(*)`` is 1 and a WHERE keeps the row or not, as in DuckDB.
The planner reads that source as a :class:`~dodb.planner.logical.OneRow` node (public, one
real row).  The guard refuses VALUES in the analyst's text (planner/guard.py), so the only
VALUES the planner sees is this one.  A query with no private table never gets here: DuckDB
runs it (docs/design.md §Public queries).

Example:
    >>> import sqlglot
    >>> print(one_row_source(sqlglot.parse_one("SELECT (SELECT count(*) FROM t) AS n")).sql())
    SELECT (SELECT COUNT(*) FROM t) AS n FROM (VALUES (1)) AS _one_row(_one)
"""
from __future__ import annotations

from sqlglot import exp

__all__ = ["one_row_source", "ONE_ROW_ALIAS", "is_one_row_source"]

ONE_ROW_ALIAS = "_one_row"


def _source(n: int) -> exp.Values:
    # one alias per SELECT: two derived constants in one FROM must not share a name
    return exp.Values(expressions=[exp.Tuple(expressions=[exp.Literal.number(1)])],
                      alias=exp.TableAlias(this=exp.to_identifier(f"{ONE_ROW_ALIAS}{n or ''}"),
                                           columns=[exp.to_identifier("_one")]))


def is_one_row_source(src: exp.Expression) -> bool:
    """Whether ``src`` is a source this rule adds (one row of the literal 1)."""
    if not isinstance(src, exp.Values) or not src.alias_or_name.startswith(ONE_ROW_ALIAS) \
            or len(src.expressions) != 1:
        return False
    row = src.expressions[0]
    return isinstance(row, exp.Tuple) and len(row.expressions) == 1 and row.expressions[0] == exp.Literal.number(1)


def one_row_source(expression: exp.Expression) -> exp.Expression:
    """Give every SELECT without FROM the one-row source (see the module docstring)."""
    n = 0
    for select in list(expression.find_all(exp.Select)):
        if select.args.get("from") is None and select.args.get("from_") is None:
            select.from_(_source(n), copy=False)
            n += 1
    return expression
