"""Optimal composition of k equal (eps, delta) leaks (Kairouz–Oh–Viswanath 2015).

004 Remark 4.3: the proof of Thm 1.4 reduces NPDO composition to the standard k-fold
DP composition, so any tighter analysis of the latter applies — in particular the
exact optimum of KOV15 (Thm 3.3), which is attained by composing k copies of the
dominating pair of (eps, delta)-DP.  For total privacy loss level ``eps_g``::

    delta_pure(eps_g) = sum_l C(k,l) [e^{(k-l)eps} - e^{eps_g} e^{l eps}]_+ / (1+e^eps)^k
    delta(eps_g)      = 1 - prod_i (1 - delta_i) * (1 - delta_pure(eps_g))

KOV state it on the grid ``eps_g = (k - 2i) eps``; the same sum is the exact
hockey-stick divergence of the dominating pair at *every* eps_g, so we solve for the
smallest eps_g exactly: between grid points ``delta_pure = A_i - e^{eps_g} B_i`` with
fixed partial sums, which inverts in closed form.  Leaks must share one epsilon
(their deltas may differ); use the PLD accountant for unequal epsilons.
"""
from __future__ import annotations

import math

import numpy as np

from ._math import bisect_decreasing, log_keep, logsumexp
from .base import Accountant, EventsLike, as_event
from .errors import NotApplicableError
from .events import PrivacyEvent

__all__ = ["OptimalAccountant", "kov_delta"]

_REL_TOL = 1e-9


def _log_terms(k: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """log P_l and log Q_l for l = 0..k: the binomial masses of the dominating pair."""
    j = np.arange(1, k + 1, dtype=np.float64)
    log_c = np.concatenate([[0.0], np.cumsum(np.log((k - j + 1) / j))])
    l = np.arange(k + 1, dtype=np.float64)
    norm = k * (eps + math.log1p(math.exp(-eps)))  # k log(1 + e^eps)
    return log_c + (k - l) * eps - norm, log_c + l * eps - norm


def kov_delta(k: int, eps: float, eps_g: float) -> float:
    """``delta_pure(eps_g)`` of k-fold composition of pure eps-DP (KOV15 Thm 3.3)."""
    if k == 0 or eps == 0:
        return 0.0
    lp, lq = _log_terms(k, eps)
    l = np.arange(k + 1)
    active = (k - 2 * l) * eps > eps_g
    if not active.any():
        return 0.0
    # log(P_l - e^{eps_g} Q_l) = log P_l + log(1 - e^{eps_g - (k - 2l) eps}); the exponent
    # is formed directly (not as lq - lp) so no rounding can flip its sign near a grid point
    diff = eps_g - (k - 2 * l[active]) * eps
    with np.errstate(divide="ignore"):
        terms = lp[active] + np.log(-np.expm1(diff))
    return float(min(1.0, math.exp(logsumexp(terms))))


class OptimalAccountant(Accountant):
    """Exact optimal composition of equal-epsilon leaks (004 Remark 4.3 + KOV15)."""

    name = "optimal"
    theorem = "004 Remark 4.3 (KOV15 Thm 3.3)"

    def check(self, leaf: PrivacyEvent) -> None:
        self._require_nominal(leaf, "optimal")

    def compose(self, events: EventsLike, count: int = 1) -> "OptimalAccountant":
        ev = as_event(events)
        for leaf, _ in ev.leaves():
            self.check(leaf)
        eps = [leaf.nominal[0] for leaf, _ in ev.leaves()] + [leaf.nominal[0] for leaf, _ in self.leaves]
        if eps and max(eps) - min(eps) > _REL_TOL * max(eps):
            raise NotApplicableError(
                "optimal (KOV) composition needs leaks with equal epsilon; "
                f"got epsilons from {min(eps):.6g} to {max(eps):.6g} (use the PLD accountant)")
        super().compose(ev, count)
        return self

    def _params(self) -> tuple[int, float, float]:
        noms = self._nominals()
        k = sum(n for _, _, n in noms)
        eps = max((e for e, _, _ in noms), default=0.0)  # equal up to _REL_TOL; max is safe
        lk = log_keep((d, n) for _, d, n in noms)  # log prod (1 - delta_i)
        return k, eps, lk

    def get_delta(self, epsilon: float) -> float:
        epsilon = self._epsilon_arg(epsilon)
        k, eps, lk = self._params()
        dp = 0.0 if epsilon == math.inf else kov_delta(k, eps, epsilon)
        if dp >= 1:
            return 1.0
        return min(1.0, -math.expm1(lk + math.log1p(-dp)))

    def get_epsilon(self, delta: float) -> float:
        delta = self._delta_arg(delta)
        k, eps, lk = self._params()
        # the pure part may use 1 - (1 - delta) / prod(1 - delta_i)
        target = -math.expm1(math.log1p(-delta) - lk)
        if not target >= 0:
            return math.inf
        if k == 0 or eps == 0 or kov_delta(k, eps, 0.0) <= target:
            return 0.0
        lp, lq = _log_terms(k, eps)

        # On the segment (g_{i+1}, g_i], g_i = (k - 2i) eps, the active terms are l <= i.
        # delta_pure is non-increasing, so binary-search the first segment whose lower
        # end is still above target.
        def d_low(i: int) -> float:
            return kov_delta(k, eps, max(0.0, (k - 2 * (i + 1)) * eps))

        lo_i, hi_i = 0, (k - 1) // 2
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            if d_low(mid) > target:
                hi_i = mid
            else:
                lo_i = mid + 1
        i = lo_i
        g_lo, g_hi = max(0.0, (k - 2 * (i + 1)) * eps), (k - 2 * i) * eps
        a = float(np.sum(np.exp(lp[: i + 1])))
        # b can underflow for large eps: take its logarithm directly
        mq = float(np.max(lq[: i + 1]))
        log_b = mq + math.log(float(np.sum(np.exp(lq[: i + 1] - mq))))
        x = math.log(a - target) - log_b if a > target else g_lo
        x = min(max(x, g_lo), g_hi)
        # float rounding may leave delta(x) a few ulps above target: nudge up
        step = 4e-16 * max(1.0, x)
        for _ in range(60):
            if kov_delta(k, eps, x) <= target or x >= g_hi:
                return min(x, g_hi)
            x += step
            step *= 2
        return bisect_decreasing(lambda g: kov_delta(k, eps, g), target, g_lo, g_hi)
