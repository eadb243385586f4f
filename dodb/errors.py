"""Errors users see.  Each names what went wrong precisely; none leaves state changed."""
from __future__ import annotations

__all__ = ["DodbError", "UnsupportedQueryError", "PlanningError", "CatalogError"]


class DodbError(Exception):
    """Base class of dodb's user-facing errors."""


class UnsupportedQueryError(DodbError):
    """The SQL uses a construct dodb cannot run privately; names it and its position."""

    def __init__(self, construct: str, position: str | None = None):
        self.construct = construct
        self.position = position
        super().__init__(f"unsupported SQL: {construct}" + (f" (at {position})" if position else ""))


class PlanningError(DodbError):
    """The query is well-formed but cannot be planned (unknown table/column, bad parameter)."""


class CatalogError(DodbError):
    """Unknown table, or an invalid privacy declaration."""
