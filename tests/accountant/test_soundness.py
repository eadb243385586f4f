"""Every bound must dominate the exact privacy profile, computed by brute force.

The brute force builds the *joint* output distributions of the composed leaks on two
neighbouring inputs, for every neighbour distance d = 1..Delta and both directions,
and evaluates the hockey-stick divergence directly — no privacy-loss machinery.
"""
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dodb.accountant import PLDAccountant, PrivacyEvent, compose_all
from dodb.oblivious.noise import DiscreteLaplace, ShiftedTruncatedDiscreteGaussian, ShiftedTruncatedDiscreteLaplace


def _pairs(leaf):
    """All (P, Q) pairs of one leaf: arrays on a common support."""
    if leaf.kind == "generic":
        e, d = leaf.epsilon, leaf.delta
        a = (1 - d) * math.exp(e) / (1 + math.exp(e))
        b = (1 - d) / (1 + math.exp(e))
        return [(np.array([d, a, b, 0.0]), np.array([0.0, b, a, d]))]
    m, s = leaf.mechanism, leaf.sensitivity
    if hasattr(m, "shift"):
        p = m.pmf_array()
    else:  # untruncated: a window holding all but ~1e-16 of the mass
        w = m.tail_bound(1e-17)
        p = np.asarray(m.pmf(np.arange(-w, w + 1)))
    out = []
    for d in range(1, s + 1):
        P = np.concatenate([p, np.zeros(d)])
        Q = np.concatenate([np.zeros(d), p])
        out.append((P, Q))
    return out


def exact_delta(leaves, eps):
    """max over neighbour choices and directions of sum (P - e^eps Q)_+ of the product."""
    import itertools
    per_leaf = []
    for leaf, n in leaves:
        per_leaf += [_pairs(leaf)] * n
    worst = 0.0
    for choice in itertools.product(*per_leaf):
        P, Q = np.ones(1), np.ones(1)
        for p, q in choice:
            P = np.multiply.outer(P, p).ravel()
            Q = np.multiply.outer(Q, q).ravel()
        for A, B in ((P, Q), (Q, P)):
            worst = max(worst, float(np.sum(np.maximum(A - math.exp(eps) * B, 0.0))))
    return worst


def exact_epsilon(leaves, delta):
    lo, hi = 0.0, 50.0
    if exact_delta(leaves, 0.0) <= delta:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if exact_delta(leaves, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


padding_leaf = st.builds(
    lambda scale, shift, sens: PrivacyEvent.padding(
        ShiftedTruncatedDiscreteLaplace(Fraction(scale, 4), shift), sens),
    st.integers(2, 40), st.integers(1, 6), st.integers(1, 3))
gauss_padding_leaf = st.builds(
    lambda s2, shift: PrivacyEvent.padding(ShiftedTruncatedDiscreteGaussian(Fraction(s2, 2), shift), 1),
    st.integers(1, 20), st.integers(1, 5))
generic_leaf = st.builds(lambda e, d: PrivacyEvent.generic(e, d),
                         st.floats(0.05, 1.5), st.sampled_from([0.0, 1e-4, 0.01, 0.05]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(padding_leaf, generic_leaf, gauss_padding_leaf), min_size=1, max_size=3),
       st.sampled_from([1e-3, 0.02, 0.1, 0.3]))
def test_every_method_dominates_the_exact_profile(leaves, delta):
    ev = PrivacyEvent.compose(leaves)
    rep = compose_all(ev, delta)
    flat = ev.leaves()
    for name, b in rep.items():
        if not b.applicable:
            continue
        exact = exact_delta(flat, b.epsilon)
        assert exact <= b.delta * (1 + 1e-9) + 1e-12, (name, b, exact)


@settings(max_examples=15, deadline=None)
@given(st.lists(padding_leaf, min_size=1, max_size=3), st.sampled_from([1e-3, 0.05, 0.2]))
def test_pld_is_tight(leaves, delta):
    ev = PrivacyEvent.compose(leaves)
    h = 1e-4
    eps = PLDAccountant(h).compose(ev).get_epsilon(delta)
    exact = exact_epsilon(ev.leaves(), delta)
    if math.isinf(eps):  # only if the truncation mass alone exceeds delta
        assert exact_delta(ev.leaves(), 49.0) > delta * (1 - 1e-6)
        return
    assert exact - 1e-9 <= eps <= exact + ev.count * h + 1e-6


def test_pld_untruncated_laplace_matches_brute_force():
    ev = PrivacyEvent.self_compose(PrivacyEvent.padding(DiscreteLaplace(Fraction(3, 2)), 2), 2)
    acc = PLDAccountant(1e-4).compose(ev)
    for eps in (0.0, 0.5, 1.5, 2.4):
        exact = exact_delta(ev.leaves(), eps)
        assert exact - 1e-12 <= acc.get_delta(eps) <= exact + 1e-3


def test_sensitivity_two_dominated_by_shift_two():
    """The MLR argument: shift by the full sensitivity dominates every smaller shift."""
    m = ShiftedTruncatedDiscreteLaplace(Fraction(3), 4)
    leaf = PrivacyEvent.padding(m, 2)
    only_full = [(PrivacyEvent.padding(m, 2), 1)]
    pairs = _pairs(leaf)
    for eps in np.linspace(0, 1, 11):
        d2 = float(np.sum(np.maximum(pairs[1][0] - math.exp(eps) * pairs[1][1], 0)))
        d1 = float(np.sum(np.maximum(pairs[0][0] - math.exp(eps) * pairs[0][1], 0)))
        assert d1 <= d2 + 1e-15
    assert exact_delta(only_full, 0.3) == pytest.approx(
        float(np.sum(np.maximum(pairs[1][0] - math.exp(0.3) * pairs[1][1], 0))))
