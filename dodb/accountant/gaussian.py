"""Gaussian NPDO composition (004 Thm 6.16): mu = sqrt(sum mu_i^2).

Only ``PrivacyEvent.gaussian`` leaks are mu-GDP by construction.  (The discrete
Gaussian is *not* claimed to be GDP here — its exact privacy-loss distribution is
composed by the PLD accountant instead.)  The conversion to (eps, delta) is exact for
mu-GDP (Dong, Roth, Su 2022, Cor 2.13).  The GDP filter of Smith & Thakurta 2022 makes
the same sum valid under fully adaptive choices, but the ledger does not need it
because no padding mechanism is GDP.
"""
from __future__ import annotations

import math

from ._math import bisect_decreasing, gdp_delta
from .base import Accountant
from .errors import NotApplicableError
from .events import NOMINAL_EPSILON, PrivacyEvent

__all__ = ["GaussianAccountant", "gdp_delta", "gdp_epsilon"]


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon with ``gdp_delta(mu, epsilon) <= delta``."""
    if mu == 0:
        return 0.0
    if gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = mu * mu / 2 + mu * 40.0
    return bisect_decreasing(lambda e: gdp_delta(mu, e), delta, 0.0, hi, tol=1e-13)


class GaussianAccountant(Accountant):
    """mu-Gaussian NPDO composition, 004 Thm 6.16."""

    name = "gaussian"
    theorem = "004 Thm 6.16"

    def check(self, leaf: PrivacyEvent) -> None:
        if leaf.kind != "gaussian":
            what = f"{leaf.kind} event" + (f" from {leaf.operator}" if getattr(leaf, "operator", None) else "")
            raise NotApplicableError(f"Gaussian NPDO composition applies to mu-GDP leaks only; got a {what}")

    @property
    def mu(self) -> float:
        return math.sqrt(math.fsum(leaf.mu * leaf.mu * n for leaf, n in self.leaves))

    def get_delta(self, epsilon: float) -> float:
        epsilon = self._epsilon_arg(epsilon)
        if epsilon == math.inf:
            return 0.0
        return gdp_delta(self.mu, epsilon)

    def get_epsilon(self, delta: float) -> float:
        delta = self._delta_arg(delta)
        if delta == 0:
            return 0.0 if self.mu == 0 else math.inf
        return gdp_epsilon(self.mu, delta)


def leaf_epsilon_at(leaf: PrivacyEvent, delta: float) -> float:
    """Epsilon of one mu-GDP leaf at ``delta`` — its nominal pair (events.py)."""
    return gdp_epsilon(float(leaf.mu), delta)


NOMINAL_EPSILON["gaussian"] = leaf_epsilon_at
