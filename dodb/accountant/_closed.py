"""Closed forms and sound bounds for the padding noise — nothing scales with the support.

The planner produces padding noise with sensitivities up to ~1e7 and shifts up to
~1e10, so no accountant may materialise a pmf over the support.  This module gives
every quantity the accountants need in O(1) (Rényi) or O(number of PLD grid buckets)
time, independent of shift, scale and sensitivity:

Discrete Laplace (two-sided geometric, ``w(j) = e^{-a|j|}``, ``a = 1/scale``), truncated
to ``[-S, S]`` (``S = inf``: untruncated).  For a neighbour at distance ``d`` the common
support is ``j in [d-S, S]`` (``j`` = outcome minus ``shift``) and the log likelihood
ratio is piecewise linear in ``j``::

    L(j) = a (|j - d| - |j|) =  a d          for j <= 0
                                a (d - 2j)   for 0 < j < d
                               -a d          for j >= d

so masses of ranges of ``j`` are geometric sums (:func:`lgeo`), the Rényi divergence of
the conditioned pair is a sum of three geometric series (:func:`lap_core_rdp`), and the
privacy-loss distribution is three pieces, the middle one linear
(``pld.py`` aggregates it per grid bucket).

Discrete Gaussian (``w(j) = e^{-j^2 / (2 sigma^2)}``): no closed form for partial sums,
so for supports above :data:`SUPPORT_LIMIT` only *upper bounds* are given
(:func:`gauss_trunc_delta_ub`, :func:`gauss_core_rdp_ub`), each proved in its docstring.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dodb.oblivious.noise import (
    DiscreteGaussian,
    DiscreteLaplace,
    ShiftedTruncatedDiscreteGaussian,
    ShiftedTruncatedDiscreteLaplace,
)

__all__ = [
    "SUPPORT_LIMIT",
    "LOG_ERR",
    "lgeo",
    "Geometric",
    "lap_core_rdp",
    "lap_core_rdp_ub",
    "gauss_tail_ub",
    "gauss_trunc_delta_ub",
    "gauss_core_rdp_ub",
    "truncation_delta",
    "support_size",
]

# Largest number of points for which an exact pmf is ever materialised (8 MB per array).
SUPPORT_LIMIT = 1 << 20
# Absolute error allowed per unit of magnitude of a computed logarithm: a few dozen ulps
# (each log/expm1/product contributes <= 1 ulp relative to the magnitudes involved).
LOG_ERR = 2e-14
_UB_REL = 1e-12  # relative slack on erfc-based upper bounds (libm erfc is ~1 ulp accurate)


def lgeo(c: Any, n: Any) -> np.ndarray:
    """``log sum_{t=0}^{n-1} e^{-c t}`` for ``c > 0`` and ``n >= 0`` (``n`` may be inf;
    ``-inf`` for ``n <= 0``), elementwise."""
    c = np.asarray(c, dtype=np.float64)
    n = np.maximum(np.asarray(n, dtype=np.float64), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(-np.expm1(-c * n)) - np.log(-np.expm1(-c))


def _f(x: Any) -> float:
    return float(np.asarray(x).reshape(()))


@dataclass(frozen=True)
class Geometric:
    """Weights ``e^{-a|j|}`` on ``j in [-S, S]`` (``S = inf`` for untruncated noise)."""

    a: float
    S: float

    @classmethod
    def of(cls, mech: Any) -> "Geometric":
        if isinstance(mech, ShiftedTruncatedDiscreteLaplace):
            return cls(1.0 / float(mech.scale), float(mech.shift))
        if isinstance(mech, DiscreteLaplace):
            return cls(1.0 / float(mech.scale), math.inf)
        raise TypeError(f"not a discrete Laplace: {type(mech).__name__}")

    def log_weight(self, lo: Any, hi: Any) -> np.ndarray:
        """``log sum_{j=lo}^{hi} e^{-a|j|}`` over ``[lo, hi] ∩ [-S, S]`` (elementwise;
        ``lo``/``hi`` may be infinite; ``-inf`` for an empty range)."""
        a, S = self.a, self.S
        lo = np.maximum(np.asarray(lo, dtype=np.float64), -S)
        hi = np.minimum(np.asarray(hi, dtype=np.float64), S)
        # j < 0: t = -j in [max(1, -hi), -lo]
        t0 = np.maximum(1.0, -hi)
        neg = -a * t0 + lgeo(a, -lo - t0 + 1)
        # j >= 0: j in [max(lo, 0), hi]
        j0 = np.maximum(lo, 0.0)
        with np.errstate(invalid="ignore"):
            pos = -a * j0 + lgeo(a, hi - j0 + 1)
        neg = np.where(-lo >= t0, neg, -np.inf)
        pos = np.where(hi >= j0, pos, -np.inf)
        return np.logaddexp(neg, pos)

    @property
    def log_z(self) -> float:
        return _f(self.log_weight(-math.inf, math.inf))


def lap_core_rdp(g: Geometric, d: Any, alpha: Any) -> tuple[np.ndarray, np.ndarray]:
    """Exact Rényi divergence ``D_alpha(P'_d || Q'_d)`` of the pair at distance ``d``
    conditioned on its common support (``renyi.py``), for ``d`` and ``alpha`` broadcast
    against each other, plus a bound on its floating-point error.

    ``sum P'^alpha Q'^(1-alpha) = sum_j e^{-a(alpha|j| + (1-alpha)|j-d|)} / N_d`` over
    ``j in [d-S, S]``, ``N_d = sum_j e^{-a|j|}`` (the common mass); the exponent is
    ``a(alpha-1)d + a j`` for ``j <= 0``, ``a(alpha-1)d - a(2 alpha - 1) j`` for
    ``0 < j < d`` and ``-a(alpha-1)d - a j`` for ``j >= d``: three geometric series.
    ``inf`` where there is no common support (``d > 2S``).
    """
    a, S = g.a, g.S
    al = np.asarray(alpha, dtype=np.float64)
    d = np.asarray(d, dtype=np.float64)
    am1 = al - 1
    n_ac = S - d + 1  # terms with j <= 0 and with j >= d (equal counts by symmetry)
    jlo = np.maximum(1.0, d - S)
    jhi = np.minimum(d - 1, S)
    c = a * (2 * al - 1)
    la = lgeo(a, n_ac)
    lb = lgeo(c, jhi - jlo + 1)
    lin = a * am1 * d
    with np.errstate(invalid="ignore"):
        log_a = lin + la
        log_b = lin - c * jlo + lb
        log_c = -lin - a * d + la
    log_n = g.log_weight(d - S, S)
    with np.errstate(invalid="ignore"):
        top = np.logaddexp(np.logaddexp(log_a, log_b), log_c)
        out = (top - log_n) / am1
    mag = (np.abs(lin) + c * jlo + a * d + np.abs(np.where(np.isfinite(la), la, 0.0))
           + np.abs(np.where(np.isfinite(lb), lb, 0.0)) + np.abs(log_n) + np.abs(top) + 1.0)
    err = LOG_ERR * mag / am1
    empty = d > 2 * S
    out = np.where(empty, np.inf, out)
    return out, np.where(empty, 0.0, err)


def lap_core_rdp_ub(g: Geometric, sensitivity: int, alpha: Any) -> np.ndarray:
    """Upper bound on ``max_{d <= Delta} D_alpha(P'_d || Q'_d)`` (conditioned pairs),
    without looping over ``d``.  Proof: ``P'_d(x) = c_d N(x - S)`` and
    ``Q'_d(x) = c_d N(x - S - d)`` on the common support, where ``N`` is the
    *untruncated* discrete Laplace pmf and ``c_d = Z_inf / N_d >= 1``.  Dropping the
    restriction to the common support only adds non-negative terms, so
    ``D_alpha(P'_d||Q'_d) <= D_alpha(N || N+d) + log(c_d)/(alpha-1)``.  Both terms are
    non-decreasing in ``d``: ``N_d`` shrinks as ``d`` grows, and ``(N, N+d)`` is
    Blackwell-dominated by ``(N, N+Delta)`` for ``d <= Delta`` (log-concave noise has a
    monotone likelihood ratio, so threshold tests are optimal for every shift and the
    tradeoff curve decreases with the shift; Rényi divergence obeys data processing).
    """
    al = np.asarray(alpha, dtype=np.float64)
    D = float(sensitivity)
    if D > 2 * g.S:
        return np.full_like(al, np.inf)
    untr, err = lap_core_rdp(Geometric(g.a, math.inf), D, al)
    if math.isinf(g.S):
        log_c, c_err = 0.0, 0.0
    elif D <= g.S:
        # Z_inf - N_D = sum_{j > S} + sum_{j < D - S} = (e^{-a(S+1)} + e^{-a(S-D+1)}) / (1 - e^{-a})
        out_frac = (math.exp(-g.a * (g.S + 1)) + math.exp(-g.a * (g.S - D + 1))) / (1 + math.exp(-g.a))
        log_c = -math.log1p(-out_frac) if out_frac < 1 else math.inf
        c_err = 1e-15 * abs(log_c)
    else:
        log_z = g.log_z
        log_n = _f(g.log_weight(D - g.S, g.S))
        log_c = max(0.0, log_z - log_n)
        c_err = LOG_ERR * (abs(log_z) + abs(log_n) + 1)
    return untr + err + (log_c * (1 + 1e-12) + c_err) / (al - 1)


# -- discrete Gaussian bounds ------------------------------------------------------------

def gauss_tail_ub(sigma: float, t: float) -> float:
    """Upper bound on ``2 sum_{k > t} e^{-k^2/(2 sigma^2)} / Z`` with ``Z`` the full
    normaliser: ``erfc(t / (sigma sqrt 2))``.  Proof: the summand decreases on
    ``[t, inf)`` so the sum is ``<= int_t^inf = sigma sqrt(pi/2) erfc(t/(sigma sqrt 2))``,
    and ``Z = sigma sqrt(2 pi) sum_n e^{-2 pi^2 sigma^2 n^2} >= sigma sqrt(2 pi)``
    (Poisson summation, every term positive)."""
    if t < 0:
        return 1.0
    return min(1.0, math.erfc(t / (sigma * math.sqrt(2))) * (1 + _UB_REL))


def gauss_trunc_delta_ub(sigma: float, shift: int, sensitivity: int) -> float:
    """Upper bound on ``truncation_delta(Delta)`` of ``shift + DGauss`` truncated to
    ``[0, 2 shift]``: the mass of the ``Delta`` lowest outcomes, i.e.
    ``sum_{j=l}^{S} w(j) / Z_S`` with ``l = S - Delta + 1``.  For ``l >= 0`` the summand
    decreases, so the sum is ``<= w(l) + int_l^S w <= w(l) + sigma sqrt(pi/2)
    erfc(l/(sigma sqrt 2))``; ``Z_S >= max(1, sigma sqrt(2 pi) (1 - tau))`` with ``tau``
    from :func:`gauss_tail_ub`.  For ``l < 0`` (more than half the support) returns 1."""
    S, D = int(shift), int(sensitivity)
    if D <= 0:
        return 0.0
    lo = S - D + 1
    if lo < 0:
        return 1.0
    num = math.exp(-(lo * lo) / (2 * sigma * sigma)) + sigma * math.sqrt(math.pi / 2) * math.erfc(
        lo / (sigma * math.sqrt(2)))
    den = max(1.0, sigma * math.sqrt(2 * math.pi) * (1 - gauss_tail_ub(sigma, S)))
    return min(1.0, num / den * (1 + _UB_REL))


def gauss_core_rdp_ub(sigma2: float, shift: int, sensitivity: int, delta_ub: float, alpha: Any) -> np.ndarray:
    """Upper bound on ``max_{d <= Delta} D_alpha(P'_d || Q'_d)`` for the shifted
    truncated discrete Gaussian, given ``delta_ub >= truncation_delta(Delta)``::

        alpha Delta^2 / (2 sigma^2) + (-log(1 - tau) - log(1 - delta_ub)) / (alpha - 1)

    Proof: as for :func:`lap_core_rdp_ub`, ``P'_d = c_d N``, ``Q'_d = c_d N(. - d)`` on
    the common support with ``N`` the untruncated discrete Gaussian and
    ``c_d = Z / (Z_S (1 - delta_d))``; dropping the support restriction gives
    ``D_alpha <= D_alpha(N || N + d) + log(c_d)/(alpha-1)``.  ``D_alpha(N||N+d) <=
    alpha d^2/(2 sigma^2)`` (Canonne–Kamath–Steinke 2020): completing the square,
    ``sum_j N(j)^alpha N(j-d)^(1-alpha) = e^{alpha(alpha-1)d^2/(2 sigma^2)}
    theta((1-alpha)d) / theta(0)`` with ``theta(c) = sum_j e^{-(j-c)^2/(2 sigma^2)}``,
    and ``theta(c) <= theta(0)`` by Poisson summation (positive Fourier coefficients).
    Finally ``Z/Z_S <= 1/(1 - tau)`` and ``delta_d <= delta_Delta``."""
    al = np.asarray(alpha, dtype=np.float64)
    D = float(sensitivity)
    if D > 2 * shift or delta_ub >= 1:
        return np.full_like(al, np.inf)
    tau = gauss_tail_ub(math.sqrt(sigma2), float(shift))
    if tau >= 1:
        return np.full_like(al, np.inf)
    log_c = (-math.log1p(-tau) - math.log1p(-delta_ub)) * (1 + 1e-12)
    return (al * (D * D / (2 * sigma2))) * (1 + 1e-15) + log_c / (al - 1)


# -- dispatch helpers ----------------------------------------------------------------------

def support_size(mech: Any) -> float:
    """Points of the (effective) support an exact pmf of ``mech`` would need."""
    if hasattr(mech, "shift"):
        return 2.0 * mech.shift + 1
    if isinstance(mech, DiscreteGaussian):
        return 2.0 * mech.tail_bound(1e-30) + 1  # the window of its numerical normaliser
    return math.inf


def truncation_delta(mech: Any, sensitivity: int) -> float:
    """``truncation_delta`` of a shifted truncated sampler, never O(support): the
    Laplace closed form of noise.py; for the Gaussian the exact sum on supports up to
    :data:`SUPPORT_LIMIT`, else the upper bound :func:`gauss_trunc_delta_ub`."""
    if sensitivity <= 0:
        return 0.0
    if isinstance(mech, ShiftedTruncatedDiscreteLaplace):
        return mech.truncation_delta(sensitivity)
    if isinstance(mech, ShiftedTruncatedDiscreteGaussian):
        if support_size(mech) <= SUPPORT_LIMIT:
            return mech.truncation_delta(sensitivity)
        return gauss_trunc_delta_ub(math.sqrt(float(mech.sigma2)), mech.shift, sensitivity)
    return 0.0
