"""The common accountant interface (after ``dp_accounting.PrivacyAccountant``)."""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar, Iterable, Union

from ._math import check_delta, check_epsilon
from .errors import NotApplicableError
from .events import PrivacyEvent

__all__ = ["Accountant", "EventsLike", "as_event"]

EventsLike = Union[PrivacyEvent, Iterable[PrivacyEvent]]


def as_event(events: EventsLike) -> PrivacyEvent:
    """Accept one event or an iterable of events; return one (composed) event."""
    if isinstance(events, PrivacyEvent):
        return events
    return PrivacyEvent.compose(events)


class Accountant(ABC):
    """Composes privacy events by one method.

    ``compose(events)`` accumulates (returns ``self`` so calls chain);
    ``get_epsilon(delta)`` / ``get_delta(epsilon)`` report the composed guarantee.
    ``compose`` raises :class:`NotApplicableError` — and composes nothing — if the
    method cannot handle one of the leaves.  Results are always *upper bounds*:
    ``math.inf`` (epsilon) or ``1.0`` (delta) when the method certifies nothing.
    """

    name: ClassVar[str] = "abstract"
    theorem: ClassVar[str] = ""

    def __init__(self) -> None:
        self._acc: dict[tuple, list] = {}

    # -- composition --------------------------------------------------------------

    def compose(self, events: EventsLike, count: int = 1) -> "Accountant":
        ev = as_event(events)
        if count != 1:
            ev = PrivacyEvent.self_compose(ev, count)
        new = ev.leaves()
        for leaf, _ in new:
            self.check(leaf)
        for leaf, n in new:
            slot = self._acc.setdefault(leaf.privacy_key, [leaf, 0])
            slot[1] += n
        self._invalidate()
        return self

    def supports(self, events: EventsLike) -> bool:
        try:
            for leaf, _ in as_event(events).leaves():
                self.check(leaf)
        except NotApplicableError:
            return False
        return True

    @property
    def leaves(self) -> list[tuple[PrivacyEvent, int]]:
        return [(leaf, n) for leaf, n in self._acc.values() if n > 0]

    @property
    def count(self) -> int:
        return sum(n for _, n in self.leaves)

    def check(self, leaf: PrivacyEvent) -> None:
        """Raise :class:`NotApplicableError` if this method cannot compose ``leaf``."""

    def _invalidate(self) -> None:
        """Drop cached results after new events were composed."""

    def _nominals(self) -> list[tuple[float, float, int]]:
        out = []
        for leaf, n in self.leaves:
            nom = leaf.nominal
            if nom is None:  # pragma: no cover - check() rejects these earlier
                raise NotApplicableError(f"{leaf!r} has no nominal (epsilon, delta)")
            out.append((nom[0], nom[1], n))
        return out

    @staticmethod
    def _require_nominal(leaf: PrivacyEvent, method: str) -> None:
        if leaf.nominal is None:
            raise NotApplicableError(
                f"{method} composition needs an (epsilon, delta) guarantee per leak; {leaf!r} has none "
                "(pass nominal_delta= when building it)")

    # -- queries ------------------------------------------------------------------

    @abstractmethod
    def get_epsilon(self, delta: float) -> float:
        """Smallest epsilon this method certifies at total ``delta``."""

    @abstractmethod
    def get_delta(self, epsilon: float) -> float:
        """Smallest total delta this method certifies at ``epsilon``."""

    @staticmethod
    def _delta_arg(delta: float) -> float:
        return check_delta(delta)

    @staticmethod
    def _epsilon_arg(epsilon: float) -> float:
        if isinstance(epsilon, (int, float)) and epsilon == math.inf:
            return math.inf  # delta at eps = inf is the mass of infinite privacy loss
        return check_epsilon(epsilon, allow_zero=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.count} leaks)"


def clamp_delta(d: float) -> float:
    if math.isnan(d):
        return 1.0
    return min(1.0, max(0.0, d))
