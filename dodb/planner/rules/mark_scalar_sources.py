"""Mark the tables of scalar subqueries before sqlglot merges them into the outer query.

sqlglot's ``unnest_subqueries`` turns an uncorrelated scalar subquery into ``CROSS JOIN
(SELECT …) AS _u_N``, and ``merge_subqueries`` may then inline a plain one (``(SELECT y
FROM t)``) into ``JOIN t ON …``, after which nothing says that ``t`` must hold at most one
row (DuckDB raises an error when it holds several).  The mark (``meta["dodb_scalar"]``)
survives the merge; the planner refuses to cross such a source unless it is known to
hold at most one row (docs/design.md §Expression and cross joins).  Aggregates without
GROUP BY are left unmarked: they always hold exactly one row.

Example:
    >>> import sqlglot
    >>> e = mark_scalar_sources(sqlglot.parse_one("SELECT p.id FROM p CROSS JOIN (SELECT t.y FROM t) AS _u_0"))
    >>> [(t.name, t.meta.get("dodb_scalar")) for t in e.find_all(sqlglot.exp.Table)]
    [('p', None), ('t', True)]
"""
from __future__ import annotations

import re

from sqlglot import exp

__all__ = ["mark_scalar_sources", "SCALAR_MARK"]

SCALAR_MARK = "dodb_scalar"
_UNNESTED = re.compile(r"_u_\d+")


def _one_row_aggregate(select: exp.Expression) -> bool:
    return (isinstance(select, exp.Select) and not select.args.get("group")
            and all(e.find(exp.AggFunc) for e in select.expressions))


def mark_scalar_sources(expression: exp.Expression) -> exp.Expression:
    for j in list(expression.find_all(exp.Join)):
        sub = j.this
        if (j.args.get("kind") or "").upper() != "CROSS" or not isinstance(sub, exp.Subquery) \
                or not _UNNESTED.fullmatch(sub.alias_or_name or "") or _one_row_aggregate(sub.this):
            continue
        sub.meta[SCALAR_MARK] = True  # kept as a derived table (DISTINCT, GROUP BY, …)
        sub.this.meta[SCALAR_MARK] = True  # or moved into a CTE (eliminate_subqueries)
        inner = sub.this
        if isinstance(inner, exp.Select) and not inner.args.get("joins"):
            # or inlined into the outer query: only a one-table subquery is merged into a
            # JOIN, so its FROM table is marked; tables under joins or nested subqueries
            # stay inside the derived table and are not scalar sources themselves
            source = (inner.args.get("from") or inner.args.get("from_"))
            if source is not None and isinstance(source.this, exp.Table):
                source.this.meta[SCALAR_MARK] = True
    return expression
