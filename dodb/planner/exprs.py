"""Small helpers over sqlglot expressions shared by the planner's passes."""
from __future__ import annotations

from sqlglot import exp

__all__ = ["aggregates", "clause_of", "conjuncts", "positive", "row_level"]


def conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    """The AND-ed parts of a condition (parentheses removed, literal TRUE dropped)."""
    if e is None:
        return []
    if isinstance(e, exp.And):
        return conjuncts(e.left) + conjuncts(e.right)
    if isinstance(e, exp.Paren):
        return conjuncts(e.this)
    if isinstance(e, exp.Boolean) and e.this is True:
        return []
    return [e]


def clause_of(node: exp.Expression, select: exp.Select) -> str:
    """The argument of ``select`` that holds ``node`` (``where``, ``expressions``, ``having``,
    ``joins``, ``order`` …), or ``""`` when ``node`` is not under ``select``."""
    while node is not None and node.parent is not select:
        node = node.parent
    return node.arg_key if node is not None else ""


def positive(node: exp.Expression) -> bool:
    """Whether ``node`` reaches a WHERE or JOIN … ON condition only through AND, OR and
    parentheses, so that NULL and FALSE keep or drop the same rows."""
    while isinstance(node.parent, (exp.And, exp.Or, exp.Paren)):
        node = node.parent
    return isinstance(node.parent, exp.Where) or (isinstance(node.parent, exp.Join) and node.arg_key == "on")


def aggregates(select: exp.Select) -> bool:
    """Whether ``select`` groups (a GROUP BY, or an aggregate of its own in its SELECT list)."""
    return bool(select.args.get("group")) or any(
        a.parent_select is select for p in select.expressions for a in p.find_all(exp.AggFunc))


def row_level(node: exp.Expression) -> bool:
    """Whether ``node`` is evaluated once per input row of its query — in WHERE, or in the SELECT
    list of a query without aggregates — so a value LEFT JOINed to each row can stand for it."""
    select = node.parent_select
    place = clause_of(node, select) if select is not None else ""
    return place == "where" or (place == "expressions" and not aggregates(select))
