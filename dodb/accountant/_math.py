"""Small numerical helpers (scipy is not a runtime dependency).

Everything here is plain ``math``/``numpy``; accuracy notes are next to each helper.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..errors import InvalidParameterError

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def check_epsilon(epsilon: float, name: str = "epsilon", allow_zero: bool = False) -> float:
    """Validate a privacy parameter epsilon; return it as a float."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"{name} must be a real number, got {epsilon!r}")
    e = float(epsilon)
    if math.isnan(e):
        raise InvalidParameterError(f"{name} must not be NaN")
    if math.isinf(e):
        raise InvalidParameterError(f"{name} must be finite, got {e}")
    if e < 0 or (e == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InvalidParameterError(f"{name} must be {bound}, got {e}")
    return e


def check_delta(delta: float, name: str = "delta", allow_zero: bool = True) -> float:
    """Validate a privacy parameter delta in ``[0, 1)`` (or ``(0, 1)``)."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"{name} must be a real number, got {delta!r}")
    d = float(delta)
    if math.isnan(d):
        raise InvalidParameterError(f"{name} must not be NaN")
    lo_ok = d >= 0 if allow_zero else d > 0
    if not (lo_ok and d < 1):
        rng = "[0, 1)" if allow_zero else "(0, 1)"
        raise InvalidParameterError(f"{name} must lie in {rng}, got {d}")
    return d


def ndtr(x: float) -> float:
    """Standard normal CDF, accurate in the lower tail (``erfc`` is relative-accurate)."""
    return 0.5 * math.erfc(-x / _SQRT2)


def log_ndtr(x: float) -> float:
    """``log Phi(x)``; uses ``erfc`` down to x=-37 and the asymptotic series below."""
    if x > -37.0:
        v = ndtr(x)
        if x > 5:  # Phi(x) ~ 1: use log1p of the upper tail
            return math.log1p(-ndtr(-x))
        return math.log(v)
    # Mills-ratio series; for |x| >= 37 the truncation error is < 1e-13 relative.
    z = 1.0 / (x * x)
    series = 1 - z + 3 * z**2 - 15 * z**3 + 105 * z**4 - 945 * z**5
    return -0.5 * x * x - math.log(-x) - _LOG_SQRT_2PI + math.log(series)


def logsumexp(a: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """Stable ``log(sum(exp(a)))``; ``-inf`` entries are ignored."""
    a = np.asarray(a, dtype=np.float64)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    if axis is None:
        return float(out.reshape(()))
    return np.squeeze(out, axis=axis)


def log_binom(n: int, k: np.ndarray) -> np.ndarray:
    """``log C(n, k)`` elementwise, via lgamma."""
    k = np.asarray(k, dtype=np.float64)
    lg = np.vectorize(math.lgamma, otypes=[np.float64])
    return math.lgamma(n + 1) - lg(k + 1) - lg(n - k + 1)


def gdp_delta(mu: float, epsilon: float) -> float:
    """Exact delta(epsilon) of mu-GDP (Dong, Roth, Su 2022, Cor 2.13):
    ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, computed in log space."""
    if mu <= 0:
        return 0.0
    la = log_ndtr(-epsilon / mu + mu / 2)
    lb = epsilon + log_ndtr(-epsilon / mu - mu / 2)
    if lb >= la:
        return 0.0
    return math.exp(la) * -math.expm1(lb - la)


def bisect_decreasing(f: Callable[[float], float], target: float, lo: float, hi: float,
                      tol: float = 1e-12, max_iter: int = 200) -> float:
    """Smallest x in [lo, hi] (up to ``tol``) with ``f(x) <= target`` for a
    non-increasing ``f``; returns the *upper* end so the answer is always safe.
    Returns ``inf`` if even ``f(hi) > target``."""
    if f(hi) > target:
        return math.inf
    if f(lo) <= target:
        return lo
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        if f(mid) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= tol * max(1.0, abs(hi)):
            break
    return hi


def golden_min(f: Callable[[float], float], lo: float, hi: float, iters: int = 60) -> tuple[float, float]:
    """Golden-section search for a minimum of ``f`` on ``[lo, hi]``; returns (x, f(x)).
    Any x is a valid choice for the callers (every order gives a valid bound), so a
    non-unimodal ``f`` only costs tightness, never soundness."""
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (c, fc) if fc <= fd else (d, fd)


def grid_min(f: Callable[[np.ndarray], tuple[float, float]], lo: float, hi: float, points: int = 48,
             rounds: int = 5) -> tuple[float, float]:
    """Minimum of ``f`` on ``[lo, hi]`` by nested grids; ``f`` maps an array of points to
    ``(min value, argmin point)`` in one vectorised call.  Each round zooms to the two grid
    cells around the best point (``rounds`` calls instead of a golden search's ~50 scalar
    ones).  Returns (x, f(x)), the best point seen; as for :func:`golden_min`, any point is a
    valid choice for the callers, so a non-unimodal ``f`` only costs tightness."""
    best_x, best = lo, math.inf
    for _ in range(rounds):
        xs = np.linspace(lo, hi, points)
        val, x = f(xs)
        if val < best:
            best, best_x = val, x
        step = (hi - lo) / (points - 1)
        lo, hi = max(lo, best_x - step), min(hi, best_x + step)
        if hi <= lo:
            break
    return best_x, best


def log_keep(pairs) -> float:
    """``log prod (1 - d)^n`` over ``(d, n)`` pairs; ``-inf`` if some ``d >= 1``."""
    out = 0.0
    for d, n in pairs:
        if n == 0:
            continue
        if d >= 1:
            return -math.inf
        out += n * math.log1p(-d)
    return out
