"""Mark scalar subqueries after sqlglot unnests them, and keep them out of its merge.

sqlglot's ``unnest_subqueries`` turns an uncorrelated scalar subquery into ``CROSS JOIN
(SELECT …) AS _u_N``.  ``merge_subqueries`` would then inline a plain one (``(SELECT y FROM
t WHERE a = 2)``) into ``JOIN t``, mixing the subquery's own WHERE with the outer query's
conditions on its value: afterwards neither the row count DuckDB checks ("More than one
row returned by a subquery") nor the NULL of an empty subquery can be recovered.  The mark
(``meta["dodb_scalar"]`` on the subquery and its select, which survives the move into a
CTE) tells the planner to pass the source through a ScalarRow node
(docs/design.md §Expression and cross joins); :func:`pushdown_keeping_scalar_sources` and
:func:`merge_keeping_scalar_sources` run sqlglot's predicate pushdown and merge with
marked selects held back (an outer ``WHERE (SELECT y …) > 5`` stays outside too).  Aggregates without GROUP BY or HAVING are
left unmarked: they always hold exactly one row.

Example:
    >>> import sqlglot
    >>> e = mark_scalar_sources(sqlglot.parse_one("SELECT p.id FROM p CROSS JOIN (SELECT t.y FROM t) AS _u_0"))
    >>> merge_keeping_scalar_sources(e).sql()
    'SELECT p.id FROM p CROSS JOIN (SELECT t.y FROM t) AS _u_0'
    >>> [s.meta.get("dodb_scalar") for s in e.find_all(sqlglot.exp.Subquery)]
    [True]
"""
from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.optimizer.merge_subqueries import UNMERGABLE_ARGS, merge_subqueries
from sqlglot.optimizer.pushdown_predicates import pushdown_predicates

__all__ = ["mark_scalar_sources", "merge_keeping_scalar_sources", "pushdown_keeping_scalar_sources", "SCALAR_MARK"]

SCALAR_MARK = "dodb_scalar"
_UNNESTED = re.compile(r"_u_\d+")
# an argument sqlglot never merges a select with; set only while its merge runs
_HOLD = "qualify"
assert _HOLD in UNMERGABLE_ARGS


def _one_row_aggregate(select: exp.Expression) -> bool:
    return (isinstance(select, exp.Select) and not select.args.get("group") and not select.args.get("having")
            and all(e.find(exp.AggFunc) for e in select.expressions))


def mark_scalar_sources(expression: exp.Expression) -> exp.Expression:
    for j in list(expression.find_all(exp.Join)):
        sub = j.this
        if (j.args.get("kind") or "").upper() != "CROSS" or not isinstance(sub, exp.Subquery) \
                or not _UNNESTED.fullmatch(sub.alias_or_name or "") or _one_row_aggregate(sub.this):
            continue
        sub.meta[SCALAR_MARK] = True  # kept as a derived table
        sub.this.meta[SCALAR_MARK] = True  # or moved into a CTE (eliminate_subqueries)
    return expression


def _holding(expression: exp.Expression, rule, *args):
    """Run ``rule`` with every marked select holding a QUALIFY placeholder, which both
    sqlglot's merge (UNMERGABLE_ARGS) and its predicate pushdown (rows chosen before an
    outer predicate runs) leave alone; the placeholder is removed afterwards."""
    held = [sel for sel in expression.find_all(exp.Select)
            if sel.meta.get(SCALAR_MARK) and not sel.args.get(_HOLD)]
    for sel in held:
        sel.set(_HOLD, exp.Qualify(this=exp.true()))
    try:
        return rule(expression, *args)
    finally:
        for sel in held:
            sel.set(_HOLD, None)


def merge_keeping_scalar_sources(expression: exp.Expression) -> exp.Expression:
    """sqlglot's ``merge_subqueries``, leaving marked scalar subqueries as they are."""
    return _holding(expression, merge_subqueries)


def pushdown_keeping_scalar_sources(expression: exp.Expression, dialect=None) -> exp.Expression:
    """sqlglot's ``pushdown_predicates``, pushing no outer condition into a marked scalar
    subquery: a condition on its value applies after DuckDB's one-row check, not to the
    rows it checks."""
    return _holding(expression, pushdown_predicates, dialect)
