"""``a LEFT JOIN b … WHERE <b's column compared to something>`` → an inner join.

A left join's unmatched rows carry NULL in every column of its right side.  A WHERE
conjunct that compares a right-side column directly (``=``, ``<>``, ``<``, ``<=``, ``>``,
``>=``) is NULL on those rows, so WHERE drops every one of them: the left join returns what
the inner join returns.  Decorrelating a scalar subquery (TPC-H Q17, Q20: ``l_quantity <
(SELECT 0.2 * avg(…) … WHERE l_partkey = p_partkey)``) makes exactly this shape.

For a DO plan the inner join is much cheaper: one release instead of two (the join size
and the unmatched rows), a smaller sensitivity (``s_L·deg_R + s_R·deg_L``, not
``s_L·max(deg_R, 1) + 2·s_R·deg_L``; docs/design.md §Operators and stability), so less
padding — and inner joins may be reordered.  Runs after sqlglot's rules, on the final AST.

Example:
    >>> import sqlglot
    >>> e = sqlglot.parse_one("SELECT a.x FROM a LEFT JOIN b ON a.k = b.k WHERE a.x < b.m AND a.y = 1")
    >>> null_rejecting_joins(e).sql()
    'SELECT a.x FROM a JOIN b ON a.k = b.k WHERE a.x < b.m AND a.y = 1'
    >>> e = sqlglot.parse_one("SELECT a.x FROM a LEFT JOIN b ON a.k = b.k WHERE a.x < b.m OR a.y = 1")
    >>> null_rejecting_joins(e).sql()  # an OR keeps rows whose b.m is NULL
    'SELECT a.x FROM a LEFT JOIN b ON a.k = b.k WHERE a.x < b.m OR a.y = 1'
"""
from __future__ import annotations

from sqlglot import exp

from ..exprs import conjuncts

__all__ = ["null_rejecting_joins"]

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


def _rejected_tables(where: exp.Expression | None) -> set[str]:
    """Tables (aliases) whose NULL columns a WHERE conjunct always rejects: a comparison with
    one of their columns as a bare operand.

    >>> import sqlglot
    >>> sorted(_rejected_tables(sqlglot.parse_one("a.x < b.m AND coalesce(c.z, 0) = 1 AND d.w IS NULL")))
    ['a', 'b']
    """
    out: set[str] = set()
    for c in conjuncts(where):
        if isinstance(c, _COMPARISONS):
            for side in (c.left, c.right):
                if isinstance(side, exp.Column) and side.table:
                    out.add(side.table)
    return out


def null_rejecting_joins(expression: exp.Expression) -> exp.Expression:
    """Make every LEFT join of a SELECT whose WHERE rejects its right side's NULLs an inner
    join, in place (module doc)."""
    for select in list(expression.find_all(exp.Select)):
        rejected = _rejected_tables(select.args.get("where") and select.args["where"].this)
        if not rejected:
            continue
        for join in select.args.get("joins") or []:
            if join.side.upper() == "LEFT" and join.kind.upper() in ("", "OUTER") and \
                    join.this.alias_or_name in rejected:
                join.set("side", None)
                join.set("kind", None)
    return expression
