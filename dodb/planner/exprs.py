"""Small helpers over sqlglot expressions shared by the planner's passes."""
from __future__ import annotations

from sqlglot import exp

__all__ = ["conjuncts"]


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
