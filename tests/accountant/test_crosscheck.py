"""Cross-checks against Google's dp-accounting (a test-only dependency)."""
import math

import numpy as np
import pytest

dpa = pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as dpa_pld  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp  # noqa: E402

from dodb.accountant import OptimalAccountant, PLDAccountant, PrivacyEvent, RenyiAccountant  # noqa: E402
from dodb.accountant.renyi import leaf_rdp  # noqa: E402
from dodb.oblivious.noise import (  # noqa: E402
    DiscreteGaussian,
    DiscreteLaplace,
    ShiftedTruncatedDiscreteLaplace,
)

ORDERS = dpa_rdp.DEFAULT_RDP_ORDERS


def test_rdp_gaussian_matches_dp_accounting():
    ours = RenyiAccountant(orders=ORDERS, refine=False).compose(
        PrivacyEvent.self_compose(PrivacyEvent.gaussian(1 / 3), 250))
    theirs = dpa.rdp.RdpAccountant(ORDERS)
    theirs.compose(dpa.GaussianDpEvent(3.0), 250)
    for delta in (1e-3, 1e-6, 1e-9):
        assert ours.get_epsilon(delta) == pytest.approx(theirs.get_epsilon(delta), rel=1e-9)
    for eps in (2.0, 5.0):
        assert ours.get_delta(eps) == pytest.approx(theirs.get_delta(eps), rel=1e-6)


def test_rdp_of_truncated_laplace_padding_is_randomized_response():
    """With sensitivity 1 the conditioned discrete-Laplace pair has a two-valued privacy
    loss +-1/scale: it is exactly randomized response, whose RDP dp-accounting knows."""
    eps = 0.2
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(eps, 1e-9, 1)
    leaf = PrivacyEvent.padding(m, 1)
    rr = dpa.RandomizedResponseDpEvent(noise_parameter=2 / (1 + math.exp(eps)), num_buckets=2)
    theirs = dpa.rdp.RdpAccountant(ORDERS, neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    theirs.compose(rr, 60)
    np.testing.assert_allclose(60 * leaf_rdp(leaf, ORDERS), theirs._rdp, rtol=1e-8, atol=1e-12)
    ours = RenyiAccountant(orders=ORDERS, refine=False).compose(PrivacyEvent.self_compose(leaf, 60))
    da = ours.approx_delta
    assert da == pytest.approx(-math.expm1(60 * math.log1p(-m.truncation_delta(1))))
    # ours adds the truncation part: delta_total = 1 - (1 - delta_A)(1 - delta_core)
    total = 1 - (1 - da) * (1 - 1e-6)
    assert ours.get_epsilon(total) == pytest.approx(theirs.get_epsilon(1e-6), rel=1e-6)


def test_rdp_discrete_laplace_between_continuous_laplace_and_rr():
    leaf = PrivacyEvent.padding(DiscreteLaplace(5), 1)
    ours = leaf_rdp(leaf, ORDERS)
    cont = dpa.rdp.RdpAccountant(ORDERS)
    cont.compose(dpa.LaplaceDpEvent(5.0))
    rr = leaf_rdp(PrivacyEvent.generic(0.2), ORDERS)
    assert np.all(ours >= cont._rdp - 1e-12)  # integer shifts: discrete is RR-like
    assert np.all(ours <= rr + 1e-9)


def test_pld_discrete_laplace_matches_dp_accounting():
    ours = PLDAccountant(1e-4).compose(PrivacyEvent.self_compose(PrivacyEvent.padding(DiscreteLaplace(10), 1), 100))
    theirs = dpa_pld.from_discrete_laplace_mechanism(0.1, sensitivity=1, value_discretization_interval=1e-4)
    theirs = theirs.self_compose(100)
    assert ours.get_epsilon(1e-5) == pytest.approx(theirs.get_epsilon_for_delta(1e-5), abs=1e-4)
    # discrete Laplace at integer sensitivity is randomized response: KOV is exact
    kov = OptimalAccountant().compose(PrivacyEvent.self_compose(PrivacyEvent.generic(0.1), 100))
    assert ours.get_epsilon(1e-5) == pytest.approx(kov.get_epsilon(1e-5), abs=1e-5)


def test_pld_discrete_gaussian_matches_dp_accounting():
    ours = PLDAccountant(1e-4).compose(PrivacyEvent.self_compose(PrivacyEvent.padding(DiscreteGaussian(100), 1), 100))
    theirs = dpa_pld.from_discrete_gaussian_mechanism(10.0, sensitivity=1, value_discretization_interval=1e-4)
    theirs = theirs.self_compose(100)
    assert ours.get_epsilon(1e-5) == pytest.approx(theirs.get_epsilon_for_delta(1e-5), abs=2e-3)
    for eps in (1.0, 3.0):
        assert ours.get_delta(eps) == pytest.approx(theirs.get_delta_for_epsilon(eps), rel=5e-3, abs=1e-9)


def test_pld_truncated_laplace_matches_dp_accounting_pmf_pld():
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(0.3, 1e-7, 2)
    lp = m.log_pmf(np.arange(2 * m.shift + 1))
    lower = {k: float(v) for k, v in enumerate(lp)}
    upper = {k + 2: float(v) for k, v in enumerate(lp)}
    theirs = dpa_pld.from_two_probability_mass_functions(lower, upper, value_discretization_interval=1e-4)
    theirs = theirs.self_compose(30)
    ours = PLDAccountant(1e-4).compose(PrivacyEvent.self_compose(PrivacyEvent.padding(m, 2), 30))
    for delta in (1e-4, 1e-5):
        a, b = ours.get_epsilon(delta), theirs.get_epsilon_for_delta(delta)
        assert a == pytest.approx(b, abs=3e-3)
    # infinite-loss mass 1 - prod(1 - delta_i); ours adds its certified float-error bound
    assert ours.get_delta(math.inf) == pytest.approx(theirs.get_delta_for_epsilon(math.inf), rel=1e-4)
    assert ours.get_delta(math.inf) >= -math.expm1(30 * math.log1p(-m.truncation_delta(2)))
