"""Where in the analyst's SQL a parsed node came from (for one-line errors that point at it).

Shared by the planner's rules and passes and the expression binder; sqlglot only.
"""
from __future__ import annotations

from sqlglot import exp

__all__ = ["position_of"]


def position_of(node: exp.Expression) -> str | None:
    """``line L, col C`` of the token behind ``node`` when the parser recorded it."""
    meta = getattr(node, "meta", None) or {}
    if "line" in meta:
        return f"line {meta['line']}, col {meta.get('col', '?')}"
    for child in node.walk():
        m = getattr(child, "meta", None) or {}
        if "line" in m:
            return f"line {m['line']}, col {m.get('col', '?')}"
    return None
