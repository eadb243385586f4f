"""Exact integer noise samplers for padding sizes.

All sampling is exact: rational parameters, integer uniforms from a
:class:`~dodb.oblivious.rng.RandomSource` and Bernoulli(exp(-gamma)) by the
algorithms of Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential
Privacy" (NeurIPS 2020): Algorithm 1 (Bernoulli(exp(-gamma))), Algorithm 2 (discrete
Laplace) and Algorithm 3 (discrete Gaussian).  No floating point touches a sample.

Every distribution exposes its exact probability mass function (``pmf``/``log_pmf``
evaluated in floating point from the closed form, normaliser summed to full double
precision) and its support, so the accountant can compose exact privacy-loss
distributions.

Padding uses the *shifted truncated* variants: ``shift + N`` conditioned on lying in
``[0, 2*shift]``.  Because the noise is never negative a padded size is never smaller
than the true size (docs/design.md §Invariants, 3, no row is ever dropped).  The truncation is
what costs delta: for a count of sensitivity ``Delta`` the outputs that one neighbour
can produce and the other cannot carry mass ``sum_{k < Delta} pmf(k)``, which
:meth:`ShiftedTruncatedDiscreteLaplace.for_privacy` keeps below the requested delta.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Union

import numpy as np

from .rng import RandomSource
from .select import select

__all__ = [
    "bernoulli",
    "bernoulli_exp",
    "DiscreteLaplace",
    "DiscreteGaussian",
    "ShiftedTruncatedDiscreteLaplace",
    "ShiftedTruncatedDiscreteGaussian",
    "to_fraction",
]

Number = Union[int, float, Fraction]
# Per-release cap on ε (ShiftedTruncatedDiscreteLaplace.for_privacy): at ε = 40 the noise is
# 0 with probability 1 - 8e-18, and the fixed-work sampler's tables stay a few hundred bits wide.
MAX_RELEASE_EPSILON = 40.0
_DENOM = 1 << 20  # resolution used when a float parameter must become a rational


def to_fraction(x: Number, round_up: bool = False) -> Fraction:
    """A rational close to ``x``; with ``round_up`` never below it.

    Floats are first taken exactly (``Fraction(float)`` is exact) and then rounded to
    a denominator of 2**20 so that the samplers' big-integer arithmetic stays cheap.
    """
    f = Fraction(x)
    if f.denominator <= _DENOM:
        return f
    scaled = f * _DENOM
    n = math.ceil(scaled) if round_up else math.floor(scaled)
    return Fraction(n, _DENOM)


# -- exact Bernoulli samplers (CKS 2020, Algorithm 1) ---------------------------------

def bernoulli(p: Fraction, rng: RandomSource) -> bool:
    """Exact Bernoulli(p) for rational ``0 <= p <= 1``."""
    if p <= 0:
        return False
    if p >= 1:
        return True
    return rng.randrange(p.denominator) < p.numerator


def bernoulli_exp(gamma: Fraction, rng: RandomSource) -> bool:
    """Exact Bernoulli(exp(-gamma)) for rational ``gamma >= 0`` (CKS Algorithm 1)."""
    if gamma < 0:
        raise ValueError("gamma must be non-negative")
    while gamma > 1:
        if not _bernoulli_exp_le1(Fraction(1), rng):
            return False
        gamma -= 1
    return _bernoulli_exp_le1(gamma, rng)


def _bernoulli_exp_le1(gamma: Fraction, rng: RandomSource) -> bool:
    k = 1
    while bernoulli(gamma / k, rng):
        k += 1
    return k % 2 == 1


# -- vectorised exact sampling (the same algorithms, many draws at once) ---------------

def numpy_generator(rng: RandomSource) -> np.random.Generator:
    """A numpy generator seeded with 128 bits from ``rng`` (the OS CSPRNG in production)."""
    return np.random.Generator(np.random.PCG64(rng.getrandbits(128)))


def _bernoulli_exp_vec(num: np.ndarray, den: int, g: np.random.Generator) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for integer arrays ``0 <= num <= den`` (CKS Alg. 1).

    ``K`` counts successes of Bernoulli(gamma/K); the result is ``K`` odd.  Each draw is an
    exact integer comparison ``uniform[0, den*K) < num``.
    """
    k = np.ones(num.shape, dtype=np.int64)
    active = np.ones(num.shape, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        hit = g.integers(0, den * k[idx]) < num[idx]
        k[idx] += hit
        active[idx] = hit
    return (k % 2) == 1


_VEC_LIMIT = 1 << 55  # integer ranges must stay well inside int64


def _discrete_laplace_vec(scale: Fraction, count: int, g: np.random.Generator) -> np.ndarray:
    """``count`` exact draws of DLap(scale) (CKS Alg. 2, vectorised rejection)."""
    t, s = scale.numerator, scale.denominator
    out = np.empty(count, dtype=np.int64)
    todo = np.arange(count)
    while todo.size:
        m = todo.size
        u = g.integers(0, t, size=m)
        ok = _bernoulli_exp_vec(u, t, g)
        v = np.zeros(m, dtype=np.int64)
        going = ok.copy()
        while going.any():  # V = number of successes of Bernoulli(exp(-1)) before a failure
            idx = np.flatnonzero(going)
            succ = _bernoulli_exp_vec(np.ones(idx.size, dtype=np.int64), 1, g)
            v[idx] += succ
            going[idx] = succ
        y = (u + t * v) // s
        b = g.integers(0, 2, size=m)
        ok = ok & ~((b == 1) & (y == 0))
        out[todo[ok]] = ((1 - 2 * b) * y)[ok]
        todo = todo[~ok]
    return out


# -- distributions ----------------------------------------------------------------------

def _ks(k) -> np.ndarray:
    return np.asarray(k, dtype=np.float64)


@dataclass(frozen=True)
class DiscreteLaplace:
    """Two-sided geometric distribution: ``P[Z=z] ∝ exp(-|z| / scale)`` on the integers.

    Sampled exactly by CKS 2020, Algorithm 2.  Adding it to a count of sensitivity
    ``Delta`` gives ``(Delta/scale, 0)``-DP.
    """

    scale: Fraction

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", to_fraction(self.scale, round_up=True))
        if self.scale <= 0:
            raise ValueError("scale must be positive")

    @classmethod
    def for_privacy(cls, epsilon: float, sensitivity: int = 1) -> "DiscreteLaplace":
        _check_epsilon(epsilon)
        return cls(to_fraction(Fraction(sensitivity) / Fraction(epsilon), round_up=True))

    @property
    def epsilon_per_unit(self) -> float:
        """Privacy loss per unit of sensitivity: ``1/scale``."""
        return float(1 / self.scale)

    def sample(self, rng: RandomSource) -> int:
        # Lap_Z(t/s) with scale = t/s.
        t, s = self.scale.numerator, self.scale.denominator
        while True:
            u = rng.randrange(t)
            if not bernoulli_exp(Fraction(u, t), rng):
                continue
            v = 0
            while bernoulli_exp(Fraction(1), rng):
                v += 1
            y = (u + t * v) // s
            b = rng.randrange(2)
            if b == 1 and y == 0:
                continue
            return (1 - 2 * b) * y

    def log_pmf(self, k) -> np.ndarray:
        a = 1.0 / float(self.scale)
        # normaliser: (1 - e^-a) / (1 + e^-a) = tanh(a/2)
        return -a * np.abs(_ks(k)) + math.log(math.tanh(a / 2))

    def pmf(self, k) -> np.ndarray:
        return np.exp(self.log_pmf(k))

    def support(self) -> tuple[float, float]:
        return (-math.inf, math.inf)

    def tail_bound(self, mass: float) -> int:
        """Smallest ``m`` with ``P[|Z| > m] <= mass``."""
        a = 1.0 / float(self.scale)
        # P[|Z| > m] = 2 e^{-a(m+1)} / (1 + e^{-a})
        m = math.log(2.0 / ((1 + math.exp(-a)) * mass)) / a - 1
        return max(0, math.ceil(m))


@dataclass(frozen=True)
class DiscreteGaussian:
    """Discrete Gaussian ``P[Z=z] ∝ exp(-z^2 / (2 sigma^2))`` (CKS 2020, Algorithm 3)."""

    sigma2: Fraction

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", to_fraction(self.sigma2, round_up=True))
        if self.sigma2 <= 0:
            raise ValueError("sigma^2 must be positive")

    @property
    def sigma(self) -> float:
        return math.sqrt(float(self.sigma2))

    def sample(self, rng: RandomSource) -> int:
        t = math.isqrt(self.sigma2.numerator // self.sigma2.denominator) + 1
        lap = DiscreteLaplace(Fraction(t))
        s2 = self.sigma2
        while True:
            y = lap.sample(rng)
            gamma = (abs(y) - s2 / t) ** 2 / (2 * s2)
            if bernoulli_exp(gamma, rng):
                return y

    def _log_norm(self) -> float:
        m = self.tail_bound(1e-30)
        ks = np.arange(-m, m + 1, dtype=np.float64)
        return float(np.log(np.sum(np.exp(-(ks**2) / (2 * float(self.sigma2))))))

    def log_pmf(self, k) -> np.ndarray:
        return -(_ks(k) ** 2) / (2 * float(self.sigma2)) - self._log_norm()

    def pmf(self, k) -> np.ndarray:
        return np.exp(self.log_pmf(k))

    def support(self) -> tuple[float, float]:
        return (-math.inf, math.inf)

    def tail_bound(self, mass: float) -> int:
        """An ``m`` with ``P[|Z| > m] <= mass`` (Gaussian tail bound, conservative)."""
        # P[Z > m] <= exp(-m^2/(2 s^2)) / (1 - exp(-1/s^2))... use a safe sub-Gaussian bound.
        s = self.sigma
        m = s * math.sqrt(2 * math.log(2.0 / mass)) + 2
        return math.ceil(m)


def _check_epsilon(epsilon: float) -> None:
    if not (isinstance(epsilon, (int, float, Fraction)) and math.isfinite(float(epsilon)) and epsilon > 0):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")


def _check_delta(delta: float) -> None:
    if not (isinstance(delta, (int, float, Fraction)) and 0 < float(delta) < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")


class _ShiftedTruncated:
    """``shift + N`` conditioned on ``[0, 2*shift]`` for a symmetric base noise ``N``.

    The pmf is the base pmf renormalised on the support.  ``sample`` here is exact
    rejection with a data-dependent number of draws (CKS); the padding mechanism
    (:class:`ShiftedTruncatedDiscreteLaplace`) overrides it with the fixed-work sampler.
    """

    base: DiscreteLaplace | DiscreteGaussian
    shift: int

    def sample(self, rng: RandomSource) -> int:
        while True:
            z = self.base.sample(rng)
            if -self.shift <= z <= self.shift:
                return z + self.shift

    def sample_many(self, rng: RandomSource, count: int) -> np.ndarray:
        """``count`` independent exact draws (vectorised for the discrete Laplace)."""
        base = self.base
        if not isinstance(base, DiscreteLaplace) or base.scale.numerator * 64 > _VEC_LIMIT or count < 8:
            return np.array([self.sample(rng) for _ in range(count)], dtype=np.int64)
        g = numpy_generator(rng)
        out = np.empty(count, dtype=np.int64)
        todo = np.arange(count)
        while todo.size:
            z = _discrete_laplace_vec(base.scale, todo.size, g)
            ok = np.abs(z) <= self.shift
            out[todo[ok]] = z[ok] + self.shift
            todo = todo[~ok]
        return out

    def support(self) -> tuple[int, int]:
        return (0, 2 * self.shift)

    def log_pmf(self, k) -> np.ndarray:
        k = _ks(k)
        inside = (k >= 0) & (k <= 2 * self.shift)
        ks = np.arange(-self.shift, self.shift + 1)
        base_lp = self.base.log_pmf(ks)
        mx = base_lp.max()
        log_z = mx + math.log(float(np.sum(np.exp(base_lp - mx))))
        out = self.base.log_pmf(k - self.shift) - log_z
        return select(inside, out, -np.inf)

    def pmf(self, k) -> np.ndarray:
        return np.exp(self.log_pmf(k))

    def pmf_array(self) -> np.ndarray:
        """The pmf on its whole support ``0 .. 2*shift``."""
        return self.pmf(np.arange(2 * self.shift + 1))

    def truncation_delta(self, sensitivity: int) -> float:
        """Mass a neighbour at distance ``sensitivity`` cannot reproduce (see module doc)."""
        return float(np.sum(self.pmf(np.arange(min(sensitivity, 2 * self.shift + 1)))))

    @property
    def mean(self) -> int:
        return self.shift


def _smallest_shift(make, sensitivity: int, delta: float) -> int:
    """Smallest shift whose truncation delta is at most ``delta`` (exponential + binary search)."""
    target = delta * (1 - 1e-9)  # guard against the last-ulp rounding of the float pmf
    hi = max(1, sensitivity)
    while make(hi).truncation_delta(sensitivity) > target:
        hi *= 2
        if hi > 1 << 62:
            raise ValueError("no shift achieves the requested delta")
    lo = 0
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if make(mid).truncation_delta(sensitivity) > target:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True)
class ShiftedTruncatedDiscreteLaplace(_ShiftedTruncated):
    """One-sided padding noise: ``shift + DLap(scale)`` truncated to ``[0, 2*shift]``.

    Adding it to a count of sensitivity ``Delta`` is ``(Delta/scale, delta)``-DP with
    ``delta = truncation_delta(Delta)`` — the Laplace ratio bound holds wherever both
    neighbours have support, the rest is the mass of the ``Delta`` lowest outcomes.
    """

    scale: Fraction
    shift: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", to_fraction(self.scale, round_up=True))
        if self.shift < 0:
            raise ValueError("shift must be non-negative")

    @property
    def base(self) -> DiscreteLaplace:  # type: ignore[override]
        return DiscreteLaplace(self.scale)

    def sample(self, rng: RandomSource) -> int:
        """One draw with the fixed-work sampler (:mod:`dodb.oblivious.fixed_work`)."""
        return int(self.sample_many(rng, 1)[0])

    def sample_many(self, rng: RandomSource, count: int) -> np.ndarray:
        """``count`` draws with a fixed amount of work (:mod:`dodb.oblivious.fixed_work`):
        the same random draws and passes whatever the values, within a factor
        ``e^{±2^-118}`` of this distribution's pmf on every outcome."""
        from .fixed_work import fixed_work_sampler

        return fixed_work_sampler(self.scale, self.shift).sample_many(rng, int(count))

    def sample_rejection(self, rng: RandomSource) -> int:
        """The exact rejection sampler (CKS): variable work, for tests only — never for padding."""
        return _ShiftedTruncated.sample(self, rng)

    @classmethod
    def for_privacy(cls, epsilon: float, delta: float, sensitivity: int = 1) -> "ShiftedTruncatedDiscreteLaplace":
        """Parameters for an ``(epsilon, delta)`` count release with the given sensitivity.

        ``epsilon`` is capped at :data:`MAX_RELEASE_EPSILON`: a smaller ε is only more
        private (and the charge follows the mechanism, :meth:`epsilon`), while the
        fixed-work sampler's tables need ~``1.5·ε`` bits per entry (docs/design.md §Samplers).
        """
        _check_epsilon(epsilon)
        _check_delta(delta)
        if sensitivity < 1 or int(sensitivity) != sensitivity:
            raise ValueError("sensitivity must be a positive integer")
        epsilon = min(float(epsilon), MAX_RELEASE_EPSILON)
        scale = to_fraction(Fraction(int(sensitivity)) / Fraction(epsilon), round_up=True)
        shift = _smallest_shift(lambda s: cls(scale, s), int(sensitivity), delta)
        return cls(scale, shift)

    def epsilon(self, sensitivity: int) -> float:
        return float(Fraction(sensitivity) / self.scale)

    def truncation_delta(self, sensitivity: int) -> float:
        """Closed form of the mass of the ``sensitivity`` lowest outcomes (O(1), any shift).

        With ``a = 1/scale`` and ``S = shift``:
        ``sum_{k<D} e^{-a(S-k)} / Z``, ``Z = (1 + e^{-a} - 2 e^{-a(S+1)}) / (1 - e^{-a})``.
        """
        a = 1.0 / float(self.scale)
        S = self.shift
        d = min(int(sensitivity), 2 * S + 1)
        if d <= 0:
            return 0.0
        if d > S + 1:  # past the mode: by symmetry, one minus the mass of the top 2S+1-d outcomes
            return max(0.0, 1.0 - self.truncation_delta(2 * S + 1 - d))
        # log of the numerator: e^{-aS} * (e^{aD} - 1) / (e^a - 1), computed without overflow
        log_num = -a * S + a * d + math.log(-math.expm1(-a * d)) - (a + math.log(-math.expm1(-a)))
        log_z = math.log1p(math.exp(-a) - 2 * math.exp(-a * (S + 1))) - math.log(-math.expm1(-a))
        return min(1.0, math.exp(log_num - log_z))


@dataclass(frozen=True)
class ShiftedTruncatedDiscreteGaussian(_ShiftedTruncated):
    """One-sided padding noise: ``shift + DGauss(sigma^2)`` truncated to ``[0, 2*shift]``."""

    sigma2: Fraction
    shift: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", to_fraction(self.sigma2, round_up=True))
        if self.shift < 0:
            raise ValueError("shift must be non-negative")

    @property
    def base(self) -> DiscreteGaussian:  # type: ignore[override]
        return DiscreteGaussian(self.sigma2)

    @classmethod
    def for_tail(cls, sigma2: Number, delta: float, sensitivity: int = 1) -> "ShiftedTruncatedDiscreteGaussian":
        """Smallest shift whose truncation costs at most ``delta``."""
        _check_delta(delta)
        s2 = to_fraction(sigma2, round_up=True)
        shift = _smallest_shift(lambda s: cls(s2, s), int(sensitivity), delta)
        return cls(s2, shift)
