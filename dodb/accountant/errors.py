"""Exceptions raised by the privacy accountant."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import DodbError

__all__ = [
    "AccountantError",
    "NotApplicableError",
    "BudgetExceededError",
    "BudgetNotSetError",
    "LedgerError",
    "Budget",
]


@dataclass(frozen=True)
class Budget:
    """An ``(epsilon, delta)`` pair used in reports and errors."""

    epsilon: float
    delta: float

    def __iter__(self):
        yield self.epsilon
        yield self.delta

    def __str__(self) -> str:
        return f"(ε={self.epsilon:.6g}, δ={self.delta:.3g})"


class AccountantError(DodbError):
    """Base class of every accountant error (a :class:`~dodb.errors.DodbError`)."""


class NotApplicableError(AccountantError, ValueError):
    """A composition method cannot handle one of the events (e.g. Gaussian NPDO
    asked to compose a truncated Laplace event)."""


class LedgerError(AccountantError):
    """The ledger tables are missing, corrupt, or configured inconsistently."""


class BudgetNotSetError(LedgerError):
    """``admit`` was called before ``set_budget``."""


class BudgetExceededError(AccountantError):
    """A query would exceed the dataset's privacy budget; nothing was charged.

    ``requested`` is the query's own ``(epsilon, delta)``; ``spent`` is the sum of the
    charges in the history and ``remaining`` what a next query can still be charged
    (docs/design.md §Budget defaults); ``exhausted`` says what ran out: 'epsilon',
    'delta' or 'epsilon and delta'.
    """

    def __init__(self, requested: Budget, spent: Budget, remaining: Budget, filter_name: str = "",
                 exhausted: str | None = None) -> None:
        self.requested = requested
        self.spent = spent
        self.remaining = remaining
        self.filter_name = filter_name
        self.exhausted = exhausted
        how = f" under the {filter_name!r} filter" if filter_name else ""
        what = f" ({exhausted.replace('epsilon', 'ε').replace('delta', 'δ')} ran out)" if exhausted else ""
        super().__init__(
            f"privacy budget exceeded{how}{what}: query requests {requested}, "
            f"remaining {remaining} for a next query (the charges so far sum to {spent}, a plain sum the "
            "filter composes more tightly); nothing was charged"
        )
