"""The reference numbers of the accountant issue (paper 004's examples)."""
import math

import pytest

from dodb.accountant import (
    AdvancedAccountant,
    BasicAccountant,
    GaussianAccountant,
    OptimalAccountant,
    PLDAccountant,
    PrivacyEvent,
    RenyiAccountant,
    compose_all,
)

HUNDRED = PrivacyEvent.self_compose(PrivacyEvent.generic(0.1), 100)


def test_basic_100_x_0_1():
    acc = BasicAccountant().compose(HUNDRED)
    assert acc.get_epsilon(1e-5) == pytest.approx(10.0, abs=1e-12)
    assert acc.get_delta(10.0) == 0.0


def test_advanced_thm_1_4_as_stated():
    assert AdvancedAccountant().compose(HUNDRED).get_epsilon(1e-5) == pytest.approx(6.7985, abs=1e-4)


def test_advanced_drv_form():
    assert AdvancedAccountant("drv").compose(HUNDRED).get_epsilon(1e-5) == pytest.approx(5.8502, abs=1e-4)


def test_optimal_kov_solved_for_smallest_epsilon():
    acc = OptimalAccountant().compose(HUNDRED)
    eps = acc.get_epsilon(1e-5)
    assert eps == pytest.approx(4.3068, abs=1e-3)
    # exactly at the optimum: delta(eps) <= target, and a hair smaller eps violates it
    assert acc.get_delta(eps) <= 1e-5
    assert acc.get_delta(eps - 1e-7) > 1e-5
    # not a grid value: the KOV grid is (k - 2i) * 0.1
    assert min(abs(eps - 0.1 * j) for j in range(101)) > 1e-3


def test_kov_three_fold():
    acc = OptimalAccountant().compose(PrivacyEvent.self_compose(PrivacyEvent.generic(0.5), 3))
    assert acc.get_delta(0.5) == pytest.approx(0.15245191, abs=1e-8)
    assert acc.get_epsilon(0.15245191) == pytest.approx(0.5, abs=1e-6)


def test_gaussian_npdo_thm_6_16():
    acc = GaussianAccountant().compose([PrivacyEvent.gaussian(0.5), PrivacyEvent.gaussian(1.0)])
    assert acc.mu == pytest.approx(math.sqrt(1.25))
    assert acc.get_delta(1.0) == pytest.approx(0.170087, abs=1e-6)


GAUSS100 = PrivacyEvent.self_compose(PrivacyEvent.gaussian(0.1), 100)  # sigma = 10, sensitivity 1


def test_gaussian_100_exact():
    assert GaussianAccountant().compose(GAUSS100).get_epsilon(1e-5) == pytest.approx(4.3772, abs=1e-3)


def test_gaussian_100_renyi_tight_and_mironov():
    tight = RenyiAccountant().compose(GAUSS100).get_epsilon(1e-5)
    mironov = RenyiAccountant(conversion="mironov").compose(GAUSS100).get_epsilon(1e-5)
    assert tight == pytest.approx(4.7285, abs=1e-3)
    assert mironov == pytest.approx(5.2985, abs=1e-3)


def test_gaussian_100_pld_is_close_upper_bound():
    eps = PLDAccountant().compose(GAUSS100).get_epsilon(1e-5)
    # pessimistic rounding raises each of 100 losses by < h = 1e-4
    assert 4.3772 - 1e-4 <= eps <= 4.3772 + 100 * 1e-4


def test_compose_all_marks_tightest():
    rep = compose_all(HUNDRED, 1e-5)
    assert rep["basic"].epsilon == pytest.approx(10)
    assert rep["advanced"].epsilon == pytest.approx(6.7985, abs=1e-4)
    assert not rep["gaussian"].applicable and "mu-GDP" in rep["gaussian"].note
    best = rep.best
    assert best.chosen and best.method in ("optimal", "pld")
    assert best.epsilon == pytest.approx(4.3068, abs=1e-3)
    assert sum(b.chosen for b in rep.values()) == 1
    assert all(best.epsilon <= b.epsilon for b in rep.values())
    eps, delta = rep["renyi"]  # unpacks as (eps, delta)
    assert delta == 1e-5 and eps > best.epsilon
    text = rep.explain()
    assert "* " in text and "n/a" in text
