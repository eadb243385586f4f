"""Basic NPDO composition (004 Thm 1.3): epsilons and deltas add up.

Valid for any sequence, including fully adaptive parameter choices (the basic
filter of Rogers et al. 2016 is the same sum), so the ledger may use it across queries.
"""
from __future__ import annotations

import math

from .base import Accountant
from .events import PrivacyEvent

__all__ = ["BasicAccountant"]


class BasicAccountant(Accountant):
    """``(sum eps_i, sum delta_i)`` — 004 Thm 1.3 applied k-1 times."""

    name = "basic"
    theorem = "004 Thm 1.3"

    def check(self, leaf: PrivacyEvent) -> None:
        self._require_nominal(leaf, "basic")

    @property
    def epsilon(self) -> float:
        return math.fsum(e * n for e, _, n in self._nominals())

    @property
    def delta(self) -> float:
        return min(1.0, math.fsum(d * n for _, d, n in self._nominals()))

    def get_epsilon(self, delta: float) -> float:
        delta = self._delta_arg(delta)
        return self.epsilon if self.delta <= delta else math.inf

    def get_delta(self, epsilon: float) -> float:
        epsilon = self._epsilon_arg(epsilon)
        return self.delta if epsilon >= self.epsilon else 1.0
