import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dodb.accountant import (
    AdvancedAccountant,
    BasicAccountant,
    BestAccountant,
    GaussianAccountant,
    NotApplicableError,
    OptimalAccountant,
    PLDAccountant,
    PrivacyEvent,
    RenyiAccountant,
    make_accountant,
)
from dodb.accountant.renyi import leaf_rdp
from dodb.oblivious.noise import DiscreteGaussian, ShiftedTruncatedDiscreteLaplace

generic = st.builds(PrivacyEvent.generic, st.floats(0.01, 1.0), st.sampled_from([0.0, 1e-8, 1e-6]))


@settings(max_examples=20, deadline=None)
@given(st.lists(generic, min_size=1, max_size=3), st.integers(1, 12), st.sampled_from([1e-6, 1e-4, 0.05]))
def test_get_delta_of_get_epsilon_is_within_target(events, reps, delta):
    ev = PrivacyEvent.self_compose(PrivacyEvent.compose(events), reps)
    for name in ("basic", "advanced", "renyi", "pld", "best"):
        acc = make_accountant(name).compose(ev)
        eps = acc.get_epsilon(delta)
        if math.isinf(eps):
            continue
        assert acc.get_delta(eps) <= delta * (1 + 1e-6) + 1e-15, name
        # monotone: a larger delta never needs a larger epsilon
        assert acc.get_epsilon(min(0.5, delta * 10)) <= eps + 1e-12, name


@settings(max_examples=30, deadline=None)
@given(st.floats(0.01, 1.2), st.integers(2, 300), st.sampled_from([1e-7, 1e-5, 1e-3]))
def test_advanced_forms_are_ordered_and_optimal_is_best(eps, k, delta):
    ev = PrivacyEvent.self_compose(PrivacyEvent.generic(eps), k)
    thm = AdvancedAccountant("thm1.4").compose(ev).get_epsilon(delta)
    drv = AdvancedAccountant("drv").compose(ev).get_epsilon(delta)
    kov = AdvancedAccountant("kov").compose(ev).get_epsilon(delta)
    opt = OptimalAccountant().compose(ev).get_epsilon(delta)
    assert thm == pytest.approx(eps * math.sqrt(2 * k * math.log(1 / delta)) + 2 * k * eps**2)
    assert opt <= kov + 1e-9 <= drv + 2e-9 <= thm + 3e-9
    assert opt <= k * eps + 1e-12


def test_advanced_heterogeneous_form():
    evs = [PrivacyEvent.generic(0.1, 1e-7)] * 10 + [PrivacyEvent.generic(0.3, 2e-7)] * 5
    acc = AdvancedAccountant().compose(evs)
    s2 = 10 * 0.01 + 5 * 0.09
    dprime = 1e-5 - (10 * 1e-7 + 5 * 2e-7)
    assert acc.get_epsilon(1e-5) == pytest.approx(math.sqrt(2 * s2 * math.log(1 / dprime)) + 2 * s2)
    with pytest.raises(NotApplicableError, match="equal epsilon"):
        OptimalAccountant().compose(evs)
    # the PLD handles unequal epsilons exactly and is the tightest
    pld = PLDAccountant().compose(evs).get_epsilon(1e-5)
    assert pld < acc.get_epsilon(1e-5) and pld < BasicAccountant().compose(evs).epsilon


def test_compose_is_all_or_nothing():
    acc = GaussianAccountant().compose(PrivacyEvent.gaussian(1.0))
    with pytest.raises(NotApplicableError):
        acc.compose([PrivacyEvent.gaussian(1.0), PrivacyEvent.generic(0.1)])
    assert acc.mu == pytest.approx(1.0)  # the failed call composed nothing
    assert not acc.supports(PrivacyEvent.generic(0.1)) and acc.supports(PrivacyEvent.gaussian(2.0))


def test_zcdp_curves_add_thm_6_5():
    a = RenyiAccountant().compose([PrivacyEvent.zcdp(0.1), PrivacyEvent.zcdp(0.2)])
    b = RenyiAccountant().compose(PrivacyEvent.zcdp(0.3))
    np.testing.assert_allclose(a.rdp, b.rdp)
    assert a.get_epsilon(1e-6) == pytest.approx(b.get_epsilon(1e-6))
    # rho-zCDP of the Gaussian mechanism equals mu-GDP's curve with rho = mu^2 / 2
    g = RenyiAccountant().compose(PrivacyEvent.gaussian(math.sqrt(0.6)))
    np.testing.assert_allclose(g.rdp, b.rdp)


def test_renyi_curve_lookup_rounds_up_to_the_next_listed_order():
    ev = PrivacyEvent.renyi({2.0: 0.1, 8.0: 0.5})
    np.testing.assert_allclose(leaf_rdp(ev, [1.5, 2.0, 3.0, 8.0, 9.0]), [0.1, 0.1, 0.5, 0.5, np.inf])


def test_renyi_approximate_part_adds_to_delta():
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(0.2, 1e-6, 1)
    ev = PrivacyEvent.self_compose(PrivacyEvent.padding(m, 1), 10)
    acc = RenyiAccountant().compose(ev)
    da = acc.approx_delta
    assert da == pytest.approx(1 - (1 - m.truncation_delta(1)) ** 10)
    assert acc.get_epsilon(da * 0.999) == math.inf  # cannot certify below the truncation mass
    assert acc.get_delta(math.inf) == pytest.approx(da)
    assert acc.get_delta(1.0) >= da


def test_discrete_gaussian_is_not_claimed_gdp():
    ev = PrivacyEvent.padding(DiscreteGaussian(4), 1)
    with pytest.raises(NotApplicableError):
        GaussianAccountant().compose(ev)
    r = RenyiAccountant().compose(ev)
    np.testing.assert_allclose(r.rdp, r.orders * 1 / (2 * 4))  # CKS: (1/(2 sigma^2))-zCDP


def test_best_accountant_is_the_minimum():
    ev = PrivacyEvent.self_compose(PrivacyEvent.generic(0.1), 100)
    best = BestAccountant().compose(ev)
    vals = [make_accountant(m).compose(ev).get_epsilon(1e-5) for m in ("basic", "advanced", "optimal", "pld")]
    assert best.get_epsilon(1e-5) == pytest.approx(min(vals))
    assert best.report(1e-5).best.epsilon == pytest.approx(min(vals))


def test_accountant_argument_validation():
    acc = BasicAccountant().compose(PrivacyEvent.generic(1.0))
    for bad in (-1e-3, 1.0, float("nan")):
        with pytest.raises(ValueError, match="delta"):
            acc.get_epsilon(bad)
    with pytest.raises(ValueError, match="epsilon"):
        acc.get_delta(-0.5)
    with pytest.raises(ValueError):
        AdvancedAccountant("fancy")
    with pytest.raises(ValueError):
        RenyiAccountant(orders=[1.0, 2.0])
    with pytest.raises(ValueError):
        PLDAccountant(0.0)
    with pytest.raises(ValueError, match="unknown composition method"):
        make_accountant("magic")
