"""Exact samplers: pmfs, goodness of fit, the privacy ratio, one-sidedness, seeding rules."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy import stats

from dodb.oblivious import rng as rngmod
from dodb.oblivious.noise import (
    DiscreteGaussian,
    DiscreteLaplace,
    ShiftedTruncatedDiscreteGaussian,
    ShiftedTruncatedDiscreteLaplace,
    bernoulli_exp,
)


def chi_square_p(samples: list[int], pmf, lo: int, hi: int) -> float:
    """p-value of a chi-square fit, pooling outcomes into cells of expected count >= 5."""
    n = len(samples)
    ks = np.arange(lo, hi + 1)
    probs = pmf(ks)
    probs = probs / probs.sum()
    counts = np.array([sum(1 for s in samples if s == k) for k in ks], dtype=float)
    obs, exp, co, ce = [], [], 0.0, 0.0
    for c, p in zip(counts, probs):
        co += c
        ce += p * n
        if ce >= 5:
            obs.append(co)
            exp.append(ce)
            co, ce = 0.0, 0.0
    if exp:
        obs[-1] += co
        exp[-1] += ce
    return float(stats.chisquare(obs, exp).pvalue)


def test_bernoulli_exp_frequency():
    r = rngmod.new_rng(1)
    for gamma in (Fraction(0), Fraction(1, 3), Fraction(5, 2)):
        hits = sum(bernoulli_exp(gamma, r) for _ in range(20000))
        p = math.exp(-float(gamma))
        assert abs(hits / 20000 - p) < 4 * math.sqrt(p * (1 - p) / 20000) + 1e-9


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(3), Fraction(20, 3)])
def test_discrete_laplace_fit_and_pmf(scale):
    d = DiscreteLaplace(scale)
    m = d.tail_bound(1e-15)
    assert abs(d.pmf(np.arange(-m, m + 1)).sum() - 1) < 1e-12
    r = rngmod.new_rng(7)
    xs = [d.sample(r) for _ in range(8000)]
    assert chi_square_p(xs, d.pmf, -m, m) > 1e-3


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(4), Fraction(50)])
def test_discrete_gaussian_fit_and_pmf(sigma2):
    d = DiscreteGaussian(sigma2)
    m = d.tail_bound(1e-15)
    assert abs(d.pmf(np.arange(-m, m + 1)).sum() - 1) < 1e-12
    r = rngmod.new_rng(11)
    xs = [d.sample(r) for _ in range(8000)]
    assert chi_square_p(xs, d.pmf, -m, m) > 1e-3


def test_chi_square_detects_a_wrong_distribution():
    d = DiscreteLaplace(Fraction(3))
    wrong = DiscreteLaplace(Fraction(4))
    r = rngmod.new_rng(3)
    xs = [wrong.sample(r) for _ in range(8000)]
    assert chi_square_p(xs, d.pmf, -60, 60) < 1e-3


@given(st.floats(0.05, 4.0), st.sampled_from([1e-3, 1e-6, 1e-9]), st.integers(1, 20))
def test_padding_parameters_meet_privacy(eps, delta, sens):
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(eps, delta, sens)
    assert m.epsilon(sens) <= eps + 1e-12
    assert m.truncation_delta(sens) <= delta
    pmf = m.pmf_array()
    assert abs(pmf.sum() - 1) < 1e-9
    assert m.support()[0] == 0  # one-sided: never below the true count
    # privacy ratio, exhaustively over outputs, for neighbours c and c + d, |d| <= sens:
    # outside a set of mass <= delta, pmf(o - c) <= e^eps * pmf(o - c - d).
    S = 2 * m.shift
    for d in (sens, -sens, max(1, sens // 2)):
        o = np.arange(-abs(d), S + abs(d) + 1)
        p = m.pmf(o)
        q = m.pmf(o - d)
        bad = p > math.exp(eps) * q * (1 + 1e-9)
        assert p[bad].sum() <= delta * (1 + 1e-9)


def test_shift_is_minimal():
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(0.5, 1e-6, 1)
    smaller = ShiftedTruncatedDiscreteLaplace(m.scale, m.shift - 1)
    assert smaller.truncation_delta(1) > 1e-6


def test_padding_samples_fit_and_never_negative():
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(1.0, 1e-4, 2)
    r = rngmod.new_rng(5)
    xs = [m.sample(r) for _ in range(8000)]
    assert min(xs) >= 0 and max(xs) <= 2 * m.shift
    assert chi_square_p(xs, m.pmf, 0, 2 * m.shift) > 1e-3


def test_truncated_gaussian_padding():
    m = ShiftedTruncatedDiscreteGaussian.for_tail(25, 1e-6, 1)
    assert m.truncation_delta(1) <= 1e-6
    r = rngmod.new_rng(9)
    xs = [m.sample(r) for _ in range(3000)]
    assert min(xs) >= 0 and max(xs) <= 2 * m.shift
    assert chi_square_p(xs, m.pmf, 0, 2 * m.shift) > 1e-3


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_invalid_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        ShiftedTruncatedDiscreteLaplace.for_privacy(bad, 1e-6, 1)


@pytest.mark.parametrize("bad", [0, 1, -0.1, float("nan")])
def test_invalid_delta(bad):
    with pytest.raises(ValueError, match="delta"):
        ShiftedTruncatedDiscreteLaplace.for_privacy(1.0, bad, 1)


def test_seeding_requires_test_mode():
    rngmod.disable_seeding()
    try:
        with pytest.raises(rngmod.SeedingDisabledError):
            rngmod.new_rng(1)
        assert rngmod.new_rng() is not None  # the OS CSPRNG is always available
    finally:
        rngmod.enable_seeding()
    assert rngmod.new_rng(1).randrange(10**9) == rngmod.new_rng(1).randrange(10**9)


@pytest.mark.parametrize("eps,delta,sens", [(1.0, 1e-4, 1), (0.3, 1e-6, 5), (2.0, 1e-3, 2)])
def test_vectorised_padding_sampler_fits_the_pmf(eps, delta, sens):
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(eps, delta, sens)
    xs = m.sample_many(rngmod.new_rng(13), 20000).tolist()
    assert min(xs) >= 0 and max(xs) <= 2 * m.shift
    assert chi_square_p(xs, m.pmf, 0, 2 * m.shift) > 1e-3


def test_vectorised_sampler_detects_wrong_scale():
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(1.0, 1e-4, 1)
    other = ShiftedTruncatedDiscreteLaplace(m.scale * 2, m.shift)
    xs = other.sample_many(rngmod.new_rng(2), 20000).tolist()
    assert chi_square_p(xs, m.pmf, 0, 2 * m.shift) < 1e-3
