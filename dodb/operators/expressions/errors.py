"""Per-row runtime error codes and their registry (code -> DuckDB-like message).
See docs/design.md §Expressions.

An expression that DuckDB would reject on some row (integer overflow, a string that is
no number, division by zero …) does not raise inside the engine: the evaluator sets a
per-row code instead, masked so that dummy rows and rows DuckDB would not evaluate
(untaken CASE branches, later COALESCE arguments) never carry one.  The caller folds
``max(code * is_real)`` into the query's status with one linear reduction, and the
analyst's side raises :class:`~dodb.wire.QueryRuntimeError` with the registered message
after the query (:class:`ExpressionError` when an operator is called without a query
context).  Codes are small positive integers, stable within a process; 0 means no error.
"""
from __future__ import annotations

import threading

from ...errors import DodbError

__all__ = ["ExpressionError", "code_for", "message_for", "raise_for_code"]

_lock = threading.Lock()
_codes: dict[str, int] = {}
_messages: dict[int, str] = {}


class ExpressionError(DodbError):
    """A scalar expression failed on a real row (as DuckDB would have failed the query)."""

    def __init__(self, code: int, message: str):
        self.code = code
        super().__init__(message)


def code_for(message: str) -> int:
    """The code registered for ``message`` (registered on first use, at bind time)."""
    with _lock:
        code = _codes.get(message)
        if code is None:
            code = len(_codes) + 1
            _codes[message] = code
            _messages[code] = message
        return code


def message_for(code: int) -> str:
    with _lock:
        return _messages.get(int(code), f"expression error #{int(code)}")


def raise_for_code(code: int) -> None:
    """Raise the registered error for a folded status code (no-op for 0)."""
    if int(code):
        raise ExpressionError(int(code), message_for(code))
