import json
import math
from fractions import Fraction

import pytest

from dodb.accountant import PrivacyEvent
from dodb.oblivious.noise import (
    DiscreteGaussian,
    DiscreteLaplace,
    ShiftedTruncatedDiscreteGaussian,
    ShiftedTruncatedDiscreteLaplace,
)


def test_padding_laplace_nominal_matches_sampler():
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(0.25, 1e-7, 2)
    ev = PrivacyEvent.padding(m, 2, operator="filter#1", query="q1")
    eps, delta = ev.nominal
    assert eps == pytest.approx(0.25)
    assert delta == m.truncation_delta(2) and 0 < delta <= 1e-7
    assert ev.approx_delta == delta
    assert ev.pure_epsilon == pytest.approx(0.25)
    d = ev.describe()
    assert d["mechanism"] == "ShiftedTruncatedDiscreteLaplace"
    assert d["shift"] == m.shift and d["support"] == [0, 2 * m.shift]
    assert d["operator"] == "filter#1" and d["sensitivity"] == 2
    json.dumps(d)  # serialisable for the ledger


def test_padding_sensitivity_zero_is_free():
    m = ShiftedTruncatedDiscreteLaplace(Fraction(10), 5)
    ev = PrivacyEvent.padding(m, 0)
    assert ev.nominal == (0.0, 0.0) and ev.approx_delta == 0.0


def test_untruncated_noise_and_gaussian_nominals():
    lap = PrivacyEvent.padding(DiscreteLaplace(4), 1)
    assert lap.nominal == (0.25, 0.0) and lap.approx_delta == 0.0
    g = PrivacyEvent.padding(DiscreteGaussian(25), 1)
    assert g.nominal is None  # Gaussian noise has no pure epsilon
    g2 = PrivacyEvent.padding(DiscreteGaussian(25), 1, nominal_delta=1e-6)
    eps, d = g2.nominal
    assert d == 1e-6 and 0.5 < eps < 1.2  # continuous Gaussian at sigma=5 is ~0.96
    tg = PrivacyEvent.padding(ShiftedTruncatedDiscreteGaussian.for_tail(25, 1e-9, 1), 1)
    assert 0 < tg.approx_delta <= 1e-9 and tg.nominal is None


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "1", None, True])
def test_generic_rejects_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyEvent.generic(bad)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, float("nan")])
def test_generic_rejects_bad_delta(bad):
    with pytest.raises(ValueError, match="delta"):
        PrivacyEvent.generic(0.5, bad)


@pytest.mark.parametrize("bad", [-1, 1.5, float("nan"), "2", True])
def test_padding_rejects_bad_sensitivity(bad):
    m = ShiftedTruncatedDiscreteLaplace(Fraction(10), 50)
    with pytest.raises(ValueError, match="sensitivity"):
        PrivacyEvent.padding(m, bad)


def test_padding_rejects_non_sampler():
    with pytest.raises(ValueError, match="mechanism"):
        PrivacyEvent.padding(object(), 1)


def test_gaussian_and_renyi_validation():
    with pytest.raises(ValueError, match="mu"):
        PrivacyEvent.gaussian(0)
    with pytest.raises(ValueError, match="orders must be > 1"):
        PrivacyEvent.renyi({1.0: 0.1})
    with pytest.raises(ValueError, match=">= 0"):
        PrivacyEvent.renyi({2.0: -0.1})
    with pytest.raises(ValueError, match="rho"):
        PrivacyEvent.zcdp(-1)


def test_leaves_merge_identical_mechanisms_ignoring_labels():
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(0.1, 1e-8, 1)
    a = PrivacyEvent.padding(m, 1, operator="filter#1")
    b = PrivacyEvent.padding(m, 1, operator="join#2")
    c = PrivacyEvent.generic(0.3)
    q = PrivacyEvent.compose([a, b, c], query="q")
    hist = PrivacyEvent.compose([q, PrivacyEvent.self_compose(q, 3)])
    leaves = dict((leaf.kind, n) for leaf, n in hist.leaves())
    assert leaves == {"padding": 8, "generic": 4}
    assert hist.count == 12
    assert "composed" in repr(hist)
    with pytest.raises(ValueError):
        _ = q.nominal  # composite events have no leaf facts


def test_self_compose_validation():
    with pytest.raises(ValueError, match="count"):
        PrivacyEvent.self_compose(PrivacyEvent.generic(1.0), -1)
    with pytest.raises(ValueError):
        PrivacyEvent.compose([1, 2])


def test_renyi_nominal_uses_conversion():
    ev = PrivacyEvent.zcdp(0.005, nominal_delta=1e-5)
    eps, d = ev.nominal
    # rho-zCDP -> eps ~ rho + 2 sqrt(rho log(1/delta)) (Bun-Steinke) is an upper bound
    assert 0 < eps < 0.005 + 2 * math.sqrt(0.005 * math.log(1e5))


def test_nominal_delta_below_truncation_mass_is_rejected():
    m = ShiftedTruncatedDiscreteGaussian.for_tail(25, 1e-6, 1)
    with pytest.raises(ValueError, match="nominal_delta"):
        PrivacyEvent.padding(m, 1, nominal_delta=m.truncation_delta(1) / 2)
    ok = PrivacyEvent.padding(m, 1, nominal_delta=1e-5)
    assert ok.nominal[1] == 1e-5 and math.isfinite(ok.nominal[0])
    g = PrivacyEvent.gaussian(1.0, nominal_delta=1e-5)
    assert g.nominal[0] == pytest.approx(4.3772, abs=1e-3)  # mu = 1 at delta = 1e-5
