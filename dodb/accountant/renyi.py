"""Rényi / zero-concentrated NPDO composition (004 Thms 6.3, 6.5).

Per leaf we compute the Rényi divergence curve ``rho(alpha)`` of the *actual* noise
pair (not a generic bound), add the curves (Thm 6.3; Thm 6.5 is the special case
``rho(alpha) = rho * alpha``), and convert to (eps, delta) with the tight conversion
of Canonne–Kamath–Steinke 2020 Prop 12 (= Balle et al. 2020 Thm 21; also the KL /
Bretagnolle–Huber bound ``delta(0) <= sqrt(1 - e^-KL)`` as ``dp_accounting`` does).

Truncation — the choice made here.  The shifted truncated noise has support
``[0, 2 shift]``, so a neighbour at distance d produces outcomes the other cannot and
the plain Rényi divergence is infinite.  We *condition*: both neighbours put exactly
the same mass ``delta_d = sum_{k<d} pmf(k)`` outside the common support (the noise is
symmetric about ``shift``), so ``P = (1 - delta_d) P' + delta_d P''`` and likewise for
Q with the same weight, and ``P'``, ``Q'`` (both conditioned on the common support)
have finite divergence.  This is delta-approximate RDP (Bun–Steinke 2016 Def 8.1).
Composition: with ``delta_A = 1 - prod (1 - delta_i)``, the composed pair satisfies
``delta(eps) <= 1 - (1 - delta_A)(1 - delta_core(eps))`` where ``delta_core`` comes
from the summed core curves — on the event that no step lands outside its common
support the privacy loss equals the core loss (the equal weights cancel), and that
event has probability ``1 - delta_A``.  The curve is the maximum over every distance
``d = 1..Delta`` (not just ``Delta``: conditioning is not a divergence, so the
monotone-likelihood-ratio argument used by the PLD accountant does not apply).

Bounded cost (any shift, scale, sensitivity; see ``_closed.py``).  Discrete Laplace
noise (truncated or not) uses closed forms: the conditioned pair's Rényi divergence is
a sum of three geometric series, computed exactly for every ``d <= Delta`` when
``Delta <= EXACT_MAX_SENSITIVITY`` and otherwise replaced by the upper bound
``D_alpha(N || N + Delta) + log(Z / N_Delta) / (alpha - 1)`` (untruncated divergence
plus the conditioning correction, ``_closed.lap_core_rdp_ub``).  Every pure-epsilon
core is also capped by randomized response at that epsilon (its dominating pair, so
``D_alpha <= D_alpha(RR_eps)`` by data processing).  The shifted truncated discrete
Gaussian is summed numerically only on small supports (``Delta * (2 shift + 1) <=
EXACT_MAX_WORK``); otherwise ``_closed.gauss_core_rdp_ub`` bounds it.  Each closed
form carries an explicit floating-point error bound that is added to the curve.

Other leaves: generic (eps, delta) -> its dominating pair, i.e. randomized response
with the delta atoms removed; mu-GDP -> ``alpha mu^2 / 2``; discrete Gaussian ->
``alpha Delta^2 / (2 sigma^2)`` (CKS 2020: it is ``Delta^2/(2 sigma^2)``-zCDP);
untruncated discrete Laplace -> exact closed form (three geometric series).
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Sequence

import numpy as np

from dodb.oblivious.noise import (
    DiscreteGaussian,
    DiscreteLaplace,
    ShiftedTruncatedDiscreteGaussian,
    ShiftedTruncatedDiscreteLaplace,
)

from ._closed import (
    LOG_ERR,
    SUPPORT_LIMIT,
    Geometric,
    gauss_core_rdp_ub,
    lap_core_rdp,
    lap_core_rdp_ub,
    truncation_delta,
)
from ._math import grid_min, log_keep, logsumexp
from .base import Accountant
from .events import NOMINAL_EPSILON, PrivacyEvent

__all__ = [
    "RenyiAccountant",
    "DEFAULT_ORDERS",
    "FILTER_ORDERS",
    "leaf_rdp",
    "rdp_to_epsilon",
    "rdp_to_delta",
    "leaf_epsilon_at",
]

# Same coverage as dp_accounting's default orders.
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024]
)
# A short grid for the cross-query Rényi filter (its delta is split across orders).
FILTER_ORDERS: tuple[float, ...] = (1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 128, 256)

# Relative/absolute slack added to numerically summed curves: the pmfs of noise.py
# are exact closed forms evaluated in doubles (relative error ~1e-15).
_REL_SLACK, _ABS_SLACK = 1e-10, 1e-14
# Discrete Laplace: exact maximum over every distance d <= Delta up to this sensitivity
# (cost Delta x orders), the closed-form upper bound beyond it.
EXACT_MAX_SENSITIVITY = 256
# Shifted truncated discrete Gaussian: numerical sums only while Delta * (2 shift + 1)
# stays below this (cost Delta x support x orders), the closed-form bound beyond it.
EXACT_MAX_WORK = 20_000


# -- per-leaf curves ----------------------------------------------------------------

def _rr_rdp(eps: float, a: np.ndarray) -> np.ndarray:
    """Rényi divergence of randomized response with parameter eps (the dominating
    pair of eps-DP, KOV15): ``log((e^{a eps} + e^{(1-a) eps}) / (1 + e^eps)) / (a-1)``."""
    if eps == 0:
        return np.zeros_like(a)
    num = np.logaddexp(a * eps, (1 - a) * eps)
    return (num - (eps + math.log1p(math.exp(-eps)))) / (a - 1)


def _rr_rdp_ub(eps: float, a: np.ndarray) -> np.ndarray:
    """``_rr_rdp`` plus a bound on its floating-point error (used as a cap)."""
    return _rr_rdp(eps, a) + LOG_ERR * (a * eps + eps + 1) / (a - 1)


def _truncated_rdp(mech, sensitivity: int, a: np.ndarray) -> np.ndarray:
    """Core curve of shifted truncated noise: max over d = 1..Delta (module doc),
    summed numerically over the support — only for small supports (the Gaussian
    below ``EXACT_MAX_WORK``; the tests use it as the reference for the closed forms)."""
    n = 2 * mech.shift + 1
    lp = np.asarray(mech.log_pmf(np.arange(n)), dtype=np.float64)
    out = np.zeros_like(a)
    for d in range(1, sensitivity + 1):
        if d >= n:
            return np.full_like(a, np.inf)  # no common support: all mass is "bad"
        lp_p, lp_q = lp[d:], lp[: n - d]  # P' on [d, 2s], Q' = shifted noise on [d, 2s]
        log_in = logsumexp(lp_p)  # log(1 - delta_d); equal for P and Q by symmetry
        step = max(1, 2_000_000 // len(lp_p))  # bound the (orders x support) temporaries
        for i in range(0, len(a), step):
            ai = a[i: i + step]
            s = logsumexp(ai[:, None] * lp_p[None, :] + (1 - ai)[:, None] * lp_q[None, :], axis=1)
            out[i: i + step] = np.maximum(out[i: i + step], (s - log_in) / (ai - 1))
    return out


@functools.lru_cache(maxsize=4096)
def _laplace_rdp_cached(mech, sensitivity: int, orders: bytes) -> np.ndarray:
    """:func:`_laplace_rdp` kept per (mechanism, sensitivity, orders): queries repeat the
    same calibrated leaves, and admission re-prices the history (read-only result)."""
    out = _laplace_rdp(mech, sensitivity, np.frombuffer(orders, dtype=np.float64))
    out.setflags(write=False)
    return out


def _laplace_rdp(mech, sensitivity: int, a: np.ndarray) -> np.ndarray:
    """Core curve of (shifted truncated or plain) discrete Laplace noise, closed form.

    Untruncated: ``D_alpha(N || N + d)`` is non-decreasing in ``d`` (monotone
    likelihood ratio, see ``_closed.lap_core_rdp_ub``), so ``d = Delta`` is exact.
    Truncated: the maximum over ``d = 1..Delta`` of the exact conditioned divergence
    while ``Delta <= EXACT_MAX_SENSITIVITY``, else the closed-form upper bound."""
    g = Geometric.of(mech)
    if sensitivity > 2 * g.S:
        return np.full_like(a, np.inf)  # no common support
    if math.isinf(g.S):
        rho, err = lap_core_rdp(g, float(sensitivity), a)
        return rho + err
    if sensitivity <= EXACT_MAX_SENSITIVITY:
        ds = np.arange(1, sensitivity + 1, dtype=np.float64)[None, :]
        out = np.empty_like(a)
        step = max(1, 1_000_000 // sensitivity)  # bound the (orders x distances) temporaries
        for i in range(0, len(a), step):
            rho, err = lap_core_rdp(g, ds, a[i: i + step, None])
            out[i: i + step] = np.max(rho + err, axis=1)
        return out
    return lap_core_rdp_ub(g, sensitivity, a)


def _truncated_gauss_rdp(mech: ShiftedTruncatedDiscreteGaussian, sensitivity: int, a: np.ndarray) -> np.ndarray:
    """Core curve of the shifted truncated discrete Gaussian: numerical on small
    supports, ``_closed.gauss_core_rdp_ub`` otherwise."""
    n = 2 * mech.shift + 1
    if n <= SUPPORT_LIMIT and sensitivity * n <= EXACT_MAX_WORK:
        return _truncated_rdp(mech, sensitivity, a)
    delta_ub = truncation_delta(mech, sensitivity) * (1 + 1e-9)
    return gauss_core_rdp_ub(float(mech.sigma2), mech.shift, sensitivity, delta_ub, a)


def _curve_lookup(curve: tuple[tuple[float, float], ...], a: np.ndarray) -> np.ndarray:
    """Smallest listed order >= alpha (Rényi divergence is non-decreasing in alpha)."""
    orders = np.array([p[0] for p in curve])
    vals = np.array([p[1] for p in curve])
    idx = np.searchsorted(orders, a, side="left")
    out = np.full_like(a, np.inf)
    ok = idx < len(orders)
    out[ok] = vals[idx[ok]]
    return out


def leaf_rdp(leaf: PrivacyEvent, orders: Sequence[float] | np.ndarray) -> np.ndarray:
    """The core Rényi curve of one leaf at the given orders (all > 1)."""
    a = np.asarray(orders, dtype=np.float64)
    if leaf.kind == "generic":
        out = _rr_rdp(float(leaf.epsilon), a)
    elif leaf.kind == "gaussian":
        out = a * leaf.mu**2 / 2
    elif leaf.kind == "renyi":
        if leaf.curve is not None:
            out = _curve_lookup(leaf.curve, a)
        else:
            out = np.array([float(leaf.curve_fn(float(x))) for x in a])
            if np.any(np.isnan(out)) or np.any(out < 0):
                raise ValueError("Rényi curve returned a negative or NaN divergence")
    elif leaf.kind == "padding":
        m, s = leaf.mechanism, leaf.sensitivity
        if s == 0:
            out = np.zeros_like(a)
        elif isinstance(m, (ShiftedTruncatedDiscreteLaplace, DiscreteLaplace)):
            out = _laplace_rdp_cached(m, s, a.tobytes())
        elif isinstance(m, ShiftedTruncatedDiscreteGaussian):
            out = _truncated_gauss_rdp(m, s, a)
        elif isinstance(m, DiscreteGaussian):
            out = a * float(Fraction(s * s) / m.sigma2) / 2
        else:  # pragma: no cover - PrivacyEvent.padding validates the type
            raise TypeError(type(m))
        if isinstance(m, (ShiftedTruncatedDiscreteLaplace, ShiftedTruncatedDiscreteGaussian, DiscreteLaplace)):
            out = out * (1 + _REL_SLACK) + _ABS_SLACK
    else:
        raise ValueError(f"not a leaf: {leaf.kind}")
    if leaf.pure_epsilon is not None:  # a pure-eps core never exceeds its eps
        out = np.minimum(out, leaf.pure_epsilon * (1 + _REL_SLACK) + _ABS_SLACK)
        if leaf.kind == "padding":  # ... nor randomized response at eps, its dominating pair
            with np.errstate(invalid="ignore", over="ignore"):
                rr = _rr_rdp_ub(leaf.pure_epsilon, a) * (1 + _REL_SLACK) + _ABS_SLACK
            out = np.minimum(out, np.where(np.isnan(rr), np.inf, rr))
    return np.maximum(out, 0.0)


# -- conversions ----------------------------------------------------------------------

def _eps_per_order(a: np.ndarray, rho: np.ndarray, delta: float, conversion: str) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if conversion == "mironov":  # Mironov 2017 Prop 3
            eps = rho + math.log(1 / delta) / (a - 1)
        else:  # CKS 2020 Prop 12 / Balle et al. 2020 Thm 21
            eps = rho + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)
    return np.where(np.isnan(eps), np.inf, eps)


def rdp_to_epsilon(orders: Sequence[float], rho: Sequence[float], delta: float,
                   conversion: str = "tight") -> tuple[float, float]:
    """(epsilon, best order) for a Rényi curve at ``delta``; conversion 'tight' or 'mironov'."""
    a = np.asarray(orders, dtype=np.float64)
    r = np.asarray(rho, dtype=np.float64)
    if delta <= 0:
        return (0.0, float(a[0])) if np.all(r == 0) else (math.inf, float(a[0]))
    if conversion == "tight" and np.isfinite(r.min()) and delta**2 + math.expm1(-float(r.min())) > 0:
        return 0.0, float(a[int(np.argmin(r))])  # KL bound: TV <= sqrt(1 - e^-KL) <= delta
    eps = _eps_per_order(a, r, delta, conversion)
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), float(a[i])


def rdp_to_delta(orders: Sequence[float], rho: Sequence[float], epsilon: float) -> tuple[float, float]:
    """(delta, best order): tight conversion (CKS 2020 Prop 12) and the KL bound."""
    a = np.asarray(orders, dtype=np.float64)
    r = np.asarray(rho, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        logd = (a - 1) * (r - epsilon + np.log1p(-1 / a)) - np.log(a)
    logd = np.where(np.isnan(logd), np.inf, logd)
    i = int(np.argmin(logd))
    best = float(logd[i])
    rmin = float(r.min())
    kl = 0.5 * math.log1p(-math.exp(-rmin)) if 0 < rmin < math.inf else (-math.inf if rmin == 0 else 0.0)
    return min(1.0, math.exp(min(best, kl))), float(a[i])


# -- accountant -------------------------------------------------------------------------

class RenyiAccountant(Accountant):
    """Rényi NPDO composition (004 Thm 6.3) with the tight conversion.

    ``refine=True`` also searches orders between grid points (every order gives a
    valid bound, so this only tightens); ``conversion='mironov'`` is for comparison.
    """

    name = "renyi"
    theorem = "004 Thm 6.3 / 6.5"

    def __init__(self, orders: Sequence[float] | None = None, refine: bool = True,
                 conversion: str = "tight") -> None:
        super().__init__()
        orders = DEFAULT_ORDERS if orders is None else tuple(float(x) for x in orders)
        if not orders or min(orders) <= 1:
            raise ValueError("Rényi orders must be > 1")
        if conversion not in ("tight", "mironov"):
            raise ValueError("conversion must be 'tight' or 'mironov'")
        self.orders = np.array(sorted(set(orders)), dtype=np.float64)
        self.refine = refine
        self.conversion = conversion
        self._rho: np.ndarray | None = None

    def _invalidate(self) -> None:
        self._rho = None

    def rdp_at(self, orders: Sequence[float] | np.ndarray) -> np.ndarray:
        """Summed core curve (004 Thm 6.3)."""
        a = np.asarray(orders, dtype=np.float64)
        tot = np.zeros_like(a)
        for leaf, n in self.leaves:
            with np.errstate(invalid="ignore"):
                tot = tot + n * leaf_rdp(leaf, a)
        return np.where(np.isnan(tot), np.inf, tot)

    @property
    def rdp(self) -> np.ndarray:
        if self._rho is None:
            self._rho = self.rdp_at(self.orders)
        return self._rho

    @property
    def approx_delta(self) -> float:
        """``delta_A = 1 - prod (1 - delta_i)`` over the leaves' excluded parts."""
        return -math.expm1(log_keep((leaf.approx_delta, n) for leaf, n in self.leaves))

    def get_epsilon(self, delta: float) -> float:
        delta = self._delta_arg(delta)
        da = self.approx_delta
        if delta <= da:
            return math.inf
        dcore = -math.expm1(math.log1p(-delta) - math.log1p(-da))  # 1 - (1-delta)/(1-da)
        eps, alpha = rdp_to_epsilon(self.orders, self.rdp, dcore, self.conversion)
        if self.refine and 0 < eps < math.inf:
            eps = min(eps, self._refine_eps(alpha, dcore))
        return eps

    def _refine_eps(self, alpha: float, dcore: float) -> float:
        i = int(np.searchsorted(self.orders, alpha))
        lo = float(self.orders[i - 1]) if i > 0 else max(1.0 + 1e-6, alpha / 2)
        hi = float(self.orders[i + 1]) if i + 1 < len(self.orders) else alpha * 2
        lo = max(lo, 1.0 + 1e-6)

        def f(xs: np.ndarray) -> tuple[float, float]:
            return rdp_to_epsilon(xs, self.rdp_at(xs), dcore, self.conversion)

        _, val = grid_min(f, lo, hi)
        return val

    def get_delta(self, epsilon: float) -> float:
        epsilon = self._epsilon_arg(epsilon)
        da = self.approx_delta
        if epsilon == math.inf:
            return da
        dcore, alpha = rdp_to_delta(self.orders, self.rdp, epsilon)
        if self.refine and 0 < dcore < 1:
            i = int(np.searchsorted(self.orders, alpha))
            lo = max(float(self.orders[i - 1]) if i > 0 else 1.0 + 1e-6, 1.0 + 1e-6)
            hi = float(self.orders[i + 1]) if i + 1 < len(self.orders) else alpha * 2
            _, d2 = grid_min(lambda xs: rdp_to_delta(xs, self.rdp_at(xs), epsilon), lo, hi)
            dcore = min(dcore, d2)
        return min(1.0, -math.expm1(math.log1p(-da) + math.log1p(-dcore)) if dcore < 1 else 1.0)


def leaf_epsilon_at(leaf: PrivacyEvent, delta: float) -> float:
    """Epsilon of a single (Rényi) leaf at ``delta`` — used for nominal pairs."""
    return RenyiAccountant().compose(leaf).get_epsilon(delta)


NOMINAL_EPSILON["renyi"] = leaf_epsilon_at  # the nominal pair of a renyi leaf (events.py)
