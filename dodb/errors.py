"""Errors users see.  Each names what went wrong precisely in one line; none leaves state
changed, except :class:`QueryExecutionError`, which says what was charged and why.

Every error a user can cause is a :class:`DodbError` (the accountant's budget and ledger
errors too, :mod:`dodb.accountant.errors`); a few also keep a Python base class where
callers expect it (an invalid ε is a ``ValueError`` as well).
"""
from __future__ import annotations

__all__ = ["DodbError", "UnsupportedQueryError", "PlanningError", "CatalogError", "InvalidParameterError",
           "QueryExecutionError", "ReadOnlyError", "DatabaseBusyError", "StaleShardsError", "ClusterError", "one_line", "did_you_mean"]


# DuckDB's one-line hints after the first line of an error, kept (issue 29): the schema they
# name is public; a hint naming dodb's own schemas (a protected table's storage) is dropped.
_HINTS = ("Did you mean", "Candidate bindings:")


def one_line(message: object, limit: int = 300) -> str:
    """``message`` on one line (DuckDB's errors carry a caret diagram on later lines), with
    DuckDB's "Did you mean" and "Candidate bindings" hints kept.

    >>> one_line('Binder Error: Referenced column "gg" not found in FROM clause!\\nCandidate bindings: "g"')
    'Binder Error: Referenced column "gg" not found in FROM clause! Candidate bindings: "g"'
    """
    first, *rest = str(message).split("\n")
    hints = [" ".join(line.split()) for line in rest if line.strip().startswith(_HINTS) and "dodb_" not in line]
    text = " ".join([" ".join(first.split()), *hints])
    return text if len(text) <= limit else text[:limit - 1] + "…"


def did_you_mean(name: str, names: "list[str]") -> str:
    """``'; did you mean "x"?'`` for the closest of ``names`` to a misspelt ``name``, or ``''``.

    >>> did_you_mean("lineitm", ["orders", "lineitem"])
    '; did you mean "lineitem"?'
    """
    import difflib

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f'; did you mean "{close[0]}"?' if close else ""


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


class InvalidParameterError(DodbError, ValueError):
    """An invalid argument (ε, δ, mode, neighbour relation, filter …); also a ``ValueError``."""


class MemoryLimitError(DodbError):
    """The plan's estimated peak memory is above the session's limit (refused before admission;
    docs/design.md §Memory guard)."""


class QueryExecutionError(DodbError):
    """The query failed while it ran, after it was admitted (docs/design.md §Bind before charge).

    ``charged`` is the ``(ε, δ)`` the ledger kept for it (the query may have run on private
    rows before it failed) or ``None`` when nothing was charged; ``query_id`` its ledger id.
    A DodbError raised while running (e.g. a CatalogError for storage changed outside dodb)
    keeps its class and gets the same attributes and sentence.
    """

    def __init__(self, message: str, charged: tuple[float, float] | None = None, query_id: int | None = None):
        self.charged = charged
        self.query_id = query_id
        super().__init__(message)


class ReadOnlyError(DodbError):
    """The session was opened ``read_only=True`` and the action would write (a charge, an owner action)."""


class DatabaseBusyError(DodbError):
    """Another process holds the database file (DuckDB lets one process write a file)."""


class StaleShardsError(DodbError):
    """The shards were cut from older data than the tables now hold, for another worker
    count, or are missing (docs/distributed.md §Sharded storage); refused before any charge."""


class ClusterError(DodbError):
    """A worker of the cluster failed while running a query (docs/distributed.md §Ray)."""
