"""Equi-joins on expressions: ``f(a.x) = g(b.y)`` becomes a join on computed key columns.

Each side's key expression is evaluated into a fresh column (over private rows by the
oblivious evaluator, docs/design.md §Expressions), then the sort-based equi-join runs on
those columns (docs/design.md §Expression and cross joins).  The key columns carry no
degree bound: a bound on ``x`` does not bound ``f(x)`` unless ``f`` is injective, so the
planner falls back to the exact degree of public data or the side's public size bound.

Example:
    >>> import sqlglot
    >>> p = sqlglot.parse_one("substr(a.z, 1, 2) = substr(b.z, 1, 2)")
    >>> l, r = expression_equality(p, {"a"}, {"b"})
    >>> l.sql(), r.sql()
    ('SUBSTRING(a.z, 1, 2)', 'SUBSTRING(b.z, 1, 2)')
    >>> expression_equality(sqlglot.parse_one("a.k = b.k"), {"a"}, {"b"}) is None  # a plain key
    True
"""
from __future__ import annotations

from sqlglot import exp

__all__ = ["expression_equality"]


def _tables(e: exp.Expression) -> set[str]:
    return {c.table for c in e.find_all(exp.Column)}


def _side_only(e: exp.Expression, aliases: set[str]) -> bool:
    """``e`` reads columns of ``aliases`` only, at least one, and no subquery or aggregate."""
    refs = _tables(e)
    if not refs or "" in refs or not refs <= aliases:
        return False
    return not any(isinstance(n, (exp.Subquery, exp.Exists, exp.AggFunc, exp.Window)) for n in e.walk())


def expression_equality(p: exp.Expression, left: set[str], right: set[str]
                        ) -> tuple[exp.Expression, exp.Expression] | None:
    """(left key expression, right key expression) of ``p`` if it is ``f(left) = g(right)``
    with at least one side more than a plain column; ``None`` otherwise."""
    if not isinstance(p, exp.EQ):
        return None
    a, b = p.left, p.right
    if isinstance(a, exp.Column) and isinstance(b, exp.Column):
        return None  # a plain column equality: the planner's ordinary join key
    if _side_only(a, left) and _side_only(b, right):
        return a, b
    if _side_only(b, left) and _side_only(a, right):
        return b, a
    return None
