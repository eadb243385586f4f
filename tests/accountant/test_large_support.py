"""Padding with huge sensitivities and shifts: bounded cost, and the closed forms /
bounds agree with (or dominate) the old exact computations on moderate sizes."""
import math
import random
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest

from dodb.accountant import (
    BasicAccountant,
    NotApplicableError,
    PLDAccountant,
    PrivacyEvent,
    RenyiAccountant,
    compose_all,
)
from dodb.accountant import pld as pld_mod
from dodb.accountant import renyi as renyi_mod
from dodb.accountant._closed import (
    Geometric,
    gauss_core_rdp_ub,
    gauss_trunc_delta_ub,
    lap_core_rdp,
    lap_core_rdp_ub,
)
from dodb.accountant._math import logsumexp
from dodb.accountant.renyi import DEFAULT_ORDERS, _truncated_rdp, leaf_rdp
from dodb.oblivious.noise import (
    DiscreteGaussian,
    DiscreteLaplace,
    ShiftedTruncatedDiscreteGaussian,
    ShiftedTruncatedDiscreteLaplace,
)

ORDERS = np.array(DEFAULT_ORDERS)
MAX_BYTES = 80_000_000  # 1e7 float64: far below any pmf over these supports (> 1e7 points)


def _within_memory(fn):
    """Run ``fn`` and return (result, peak bytes allocated meanwhile, numpy included)."""
    tracemalloc.start()
    try:
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak


# -- (a) huge supports complete, in bounded memory ------------------------------------------

def test_compose_all_20_events_sensitivity_21210():
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(0.05, 2.5e-8, 21210)
    assert m.shift > 10**6  # support of ~1.2e7 points: the old accountants never finished
    events = [PrivacyEvent.padding(m, 21210, operator=f"join#{i}") for i in range(20)]
    rep, peak = _within_memory(lambda: compose_all(events, 1e-6))
    assert peak < MAX_BYTES
    best = rep.best
    for name in ("basic", "advanced", "optimal", "renyi", "pld"):
        assert rep[name].applicable and math.isfinite(rep[name].epsilon), name
        assert rep[name].epsilon >= best.epsilon
    assert rep["basic"].epsilon == pytest.approx(1.0)
    assert best.epsilon <= rep["optimal"].epsilon < 1.0
    assert not rep["gaussian"].applicable


def test_compose_all_unequal_huge_events():
    # sensitivities up to 1e7 and shifts up to ~1e10, each leaf different
    events = [PrivacyEvent.padding(ShiftedTruncatedDiscreteLaplace.for_privacy(0.05 * (1 + i / 10), 1e-9, s), s)
              for i, s in enumerate([21210, 10**5, 10**6, 10**7, 3 * 10**7])]
    assert max(e.mechanism.shift for e in events) > 10**9
    rep, peak = _within_memory(lambda: compose_all(events, 1e-6))
    assert peak < MAX_BYTES
    for name in ("basic", "advanced", "renyi", "pld"):
        assert math.isfinite(rep[name].epsilon) and rep[name].epsilon >= rep.best.epsilon
    assert not rep["optimal"].applicable  # unequal epsilons
    assert rep.best.method == "pld"


def test_untruncated_and_gaussian_huge_events_complete():
    lap = PrivacyEvent.padding(DiscreteLaplace(Fraction(10**8)), 10**7)  # eps 0.1, no truncation
    tg = PrivacyEvent.padding(ShiftedTruncatedDiscreteGaussian(Fraction(10**12), 10**8), 10**5)
    dg = PrivacyEvent.padding(DiscreteGaussian(Fraction(10**14)), 10**6, nominal_delta=1e-7)
    rep, peak = _within_memory(lambda: compose_all([lap] * 5 + [tg] * 5 + [dg] * 5, 1e-5))
    assert peak < MAX_BYTES
    assert math.isfinite(rep["renyi"].epsilon) and rep.best.method == "renyi"
    assert not rep["pld"].applicable and "support too large" in rep["pld"].note
    # the Gaussian's nominal (needed by basic/advanced) falls back to the Rényi bound
    eps, d = dg.nominal
    assert d == 1e-7 and 0 < eps < 1
    r = compose_all([lap] * 20, 1e-6)
    assert r.best.method == "pld" and r["pld"].epsilon < r["basic"].epsilon == pytest.approx(2.0)


# -- (b) closed forms agree with the old exact computations (shift <= 1e4) -------------------

LAPLACE_CASES = [(0.5, 1e-6, 1), (0.3, 1e-7, 7), (1.0, 1e-5, 50), (0.1, 1e-6, 30), (2.0, 1e-3, 300)]


@pytest.mark.parametrize("eps,delta,sens", LAPLACE_CASES)
def test_renyi_closed_form_matches_numerical_sum(eps, delta, sens, monkeypatch):
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(eps, delta, sens)
    assert m.shift <= 10**4
    monkeypatch.setattr(renyi_mod, "EXACT_MAX_SENSITIVITY", 10**4)  # exact maximum over every d
    old = _truncated_rdp(m, sens, ORDERS)  # the old O(support x Delta) computation
    new = renyi_mod._laplace_rdp(m, sens, ORDERS)
    assert np.all(new >= old)  # new adds its float-error bound
    np.testing.assert_allclose(new, old, rtol=2e-9)
    # and through leaf_rdp (slack and the eps / randomized-response caps)
    assert np.all(leaf_rdp(PrivacyEvent.padding(m, sens), ORDERS) >= old)


@pytest.mark.parametrize("eps,delta,sens", LAPLACE_CASES)
def test_renyi_bound_path_dominates_exact(eps, delta, sens, monkeypatch):
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(eps, delta, sens)
    old = _truncated_rdp(m, sens, ORDERS)
    monkeypatch.setattr(renyi_mod, "EXACT_MAX_SENSITIVITY", 0)  # force the closed-form bound
    ub = renyi_mod._laplace_rdp(m, sens, ORDERS)
    assert np.all(ub >= old)
    assert np.all(ub <= old * 1.05 + 1e-9)  # and it is not loose
    leaf = PrivacyEvent.padding(m, sens)
    assert np.all(leaf_rdp(leaf, ORDERS) >= old)
    assert RenyiAccountant().compose(PrivacyEvent.self_compose(leaf, 10)).get_epsilon(20 * delta) < math.inf


def _old_dlap_rdp(mech, sensitivity, a):
    """The previous implementation (window summed explicitly, geometric tails)."""
    inv_b = float(1 / mech.scale)
    dl = sensitivity * inv_b
    xs = np.arange(-1, sensitivity + 2)
    lp = np.asarray(mech.log_pmf(xs))
    lq = np.asarray(mech.log_pmf(xs - sensitivity))
    win = a[:, None] * lp[None, :] + (1 - a)[:, None] * lq[None, :]
    log_norm = math.log1p(math.exp(-inv_b))
    left = -2 * inv_b - log_norm + (a - 1) * dl
    right = -(sensitivity + 2) * inv_b - log_norm - (a - 1) * dl
    s = logsumexp(np.concatenate([win, left[:, None], right[:, None]], axis=1), axis=1)
    return s / (a - 1)


@pytest.mark.parametrize("scale,sens", [(Fraction(5), 1), (Fraction(7, 2), 3), (Fraction(40), 25),
                                        (Fraction(1000), 9000)])
def test_untruncated_laplace_closed_form_matches_window_sum(scale, sens):
    m = DiscreteLaplace(scale)
    old = _old_dlap_rdp(m, sens, ORDERS)
    new = renyi_mod._laplace_rdp(m, sens, ORDERS)
    assert np.all(new >= old - 1e-15)
    np.testing.assert_allclose(new, old, rtol=1e-8)


def _assert_same_pld(a, b):
    assert a.h == b.h and a.offset == b.offset and len(a.probs) == len(b.probs)
    np.testing.assert_allclose(a.probs, b.probs, rtol=1e-9, atol=1e-300)
    assert a.inf_mass == pytest.approx(b.inf_mass, rel=1e-9, abs=1e-300)


PLD_CASES = [
    (ShiftedTruncatedDiscreteLaplace.for_privacy(0.3, 1e-7, 7), 7, 1e-4),
    (ShiftedTruncatedDiscreteLaplace.for_privacy(2.0, 1e-3, 300), 300, 1e-4),
    (ShiftedTruncatedDiscreteLaplace(Fraction(2000), 8000), 3000, 1e-2),  # many outcomes per bucket
    (ShiftedTruncatedDiscreteLaplace(Fraction(2000), 2000), 3000, 1e-2),  # Delta > shift
    (ShiftedTruncatedDiscreteLaplace(Fraction(30), 9000), 9000, 0.1),  # losses beyond the +-60 cap
    (ShiftedTruncatedDiscreteLaplace(Fraction(3), 4), 9, 1e-4),  # Delta > 2 shift: no common support
]


@pytest.mark.parametrize("m,sens,h", PLD_CASES)
@pytest.mark.parametrize("segments", [False, True])
def test_pld_closed_form_matches_per_outcome_pld(m, sens, h, segments, monkeypatch):
    assert m.shift <= 10**4
    old = pld_mod._shift_pair_pld(m.log_pmf, 0, 2 * m.shift, sens, 0.0, 0.0, h)  # the old construction
    if segments:
        monkeypatch.setattr(pld_mod, "_DIRECT_J", 0)  # aggregate per bucket wherever possible
    new = pld_mod._laplace_pld(m, sens, h)
    _assert_same_pld(new, old)


def test_pld_accountant_unchanged_on_moderate_sizes(monkeypatch):
    m = ShiftedTruncatedDiscreteLaplace(Fraction(400), 6000)  # eps 0.5 at sensitivity 200
    ev = PrivacyEvent.self_compose(PrivacyEvent.padding(m, 200), 8)
    ref = pld_mod.DiscretePLD.identity(1e-4)
    ref = ref.compose(pld_mod._shift_pair_pld(m.log_pmf, 0, 2 * m.shift, 200, 0.0, 0.0, 1e-4).self_compose(8, 1e-15),
                      1e-15)
    monkeypatch.setattr(pld_mod, "_DIRECT_J", 0)
    acc = PLDAccountant().compose(ev)
    for delta in (1e-3, 1e-5):
        assert acc.get_epsilon(delta) == pytest.approx(ref.get_epsilon(delta), abs=1e-12)


def test_closed_form_error_bound_holds_against_high_precision():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    rnd = random.Random(7)

    def geo(c, lo, hi):  # sum_{j=lo}^{hi} e^{-c j}
        if hi < lo:
            return mp.mpf(0)
        if hi == mp.inf:
            return mp.e ** (-c * lo) / (1 - mp.e ** (-c))
        return mp.e ** (-c * lo) * (1 - mp.e ** (-c * (hi - lo + 1))) / (1 - mp.e ** (-c))

    for _ in range(60):
        a, d = 10 ** rnd.uniform(-7, 0), rnd.randint(1, 5000)
        S = rnd.choice([math.inf, rnd.randint((d + 1) // 2, 10**10)])
        al = rnd.choice([1.001, 1.01, 1.1, 2.0, 10.0, 256.0])
        rho, err = lap_core_rdp(Geometric(a, float(S)), float(d), np.array([al]))
        A, AL, SS = mp.mpf(a), mp.mpf(al), (mp.inf if S == math.inf else S)
        n_ac = mp.inf if S == math.inf else S - d
        norm = (geo(A, 1, n_ac) if d - SS <= -1 else 0) + geo(A, max(d - SS, 0), SS)
        top = (mp.e ** (A * (AL - 1) * d) * (geo(A, 0, n_ac) if SS >= d else 0)
               + mp.e ** (A * (AL - 1) * d) * geo(A * (2 * AL - 1), max(1, d - SS), min(d - 1, SS))
               + mp.e ** (-A * (AL - 1) * d - A * d) * (geo(A, 0, n_ac) if SS >= d else 0))
        exact = mp.log(top / norm) / (AL - 1)
        assert abs(mp.mpf(float(rho[0])) - exact) <= err[0], (a, d, S, al)


def test_laplace_bound_dominates_every_distance():
    rnd = random.Random(3)
    for _ in range(40):
        a, D = 10 ** rnd.uniform(-5, 0.5), rnd.randint(1, 2000)
        g = Geometric(a, float(rnd.randint((D + 1) // 2, 20000)))
        rho, err = lap_core_rdp(g, np.arange(1, D + 1, dtype=float)[None, :], ORDERS[:, None])
        assert np.all(lap_core_rdp_ub(g, D, ORDERS) >= np.max(rho - err, axis=1))


@pytest.mark.parametrize("sigma2,shift,sens", [(0.5, 3, 1), (2, 10, 3), (10, 25, 6), (50, 40, 2), (200, 60, 5)])
def test_gaussian_bounds_dominate_exact(sigma2, shift, sens):
    m = ShiftedTruncatedDiscreteGaussian(Fraction(sigma2), shift)
    td = m.truncation_delta(sens)
    tub = gauss_trunc_delta_ub(math.sqrt(sigma2), shift, sens)
    assert tub >= td
    exact = _truncated_rdp(m, sens, ORDERS)
    assert np.all(gauss_core_rdp_ub(sigma2, shift, sens, tub, ORDERS) >= exact - 1e-12)


def test_huge_gaussian_uses_bounds_not_the_pmf():
    m = ShiftedTruncatedDiscreteGaussian(Fraction(10**6), 10**7)  # sigma 1000, support 2e7 + 1
    leaf = PrivacyEvent.padding(m, 1000)
    assert 0 <= leaf.approx_delta <= gauss_trunc_delta_ub(1000.0, 10**7, 1000)
    rho, peak = _within_memory(lambda: leaf_rdp(leaf, ORDERS))
    assert peak < MAX_BYTES
    np.testing.assert_allclose(rho, ORDERS * 0.5, rtol=1e-6)  # alpha Delta^2 / (2 sigma^2) + ~0
    with pytest.raises(NotApplicableError, match="support too large"):
        PLDAccountant().compose(leaf)


def test_pure_epsilon_cores_are_capped_by_randomized_response():
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(0.4, 1e-6, 1)
    leaf = PrivacyEvent.padding(m, 1)  # sensitivity 1: the core *is* randomized response
    rr = renyi_mod._rr_rdp(0.4, ORDERS)
    np.testing.assert_allclose(leaf_rdp(leaf, ORDERS), rr, rtol=1e-9)
    assert np.all(leaf_rdp(leaf, ORDERS) >= rr)


def test_coarsened_pld_is_pessimistic(monkeypatch):
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(0.3, 1e-7, 40)
    p = pld_mod.leaf_pld(PrivacyEvent.padding(m, 40), 1e-4)
    c = p.coarsened(7)
    assert c.h == pytest.approx(7e-4) and c.probs.sum() == pytest.approx(p.probs.sum())
    for eps in (0.0, 0.1, 0.25, 0.3, 0.31):
        assert c.get_delta(eps) >= p.get_delta(eps)
    ev = PrivacyEvent.self_compose(PrivacyEvent.padding(m, 40), 30)
    fine = PLDAccountant().compose(ev).get_epsilon(1e-5)
    monkeypatch.setattr(pld_mod, "_MAX_GRID", 2000)  # force a coarser grid for the composition
    coarse = PLDAccountant().compose(ev).get_epsilon(1e-5)
    assert fine <= coarse < BasicAccountant().compose(ev).epsilon


def _brute_delta(leaves, eps):
    """Exact hockey-stick divergence of the composed padding leaves, maximised over the
    neighbour distance of every leaf and both directions (as in test_soundness)."""
    import itertools
    per_leaf = []
    for m, s in leaves:
        p = m.pmf_array()
        per_leaf.append([(np.concatenate([p, np.zeros(d)]), np.concatenate([np.zeros(d), p]))
                         for d in range(1, s + 1)])
    worst = 0.0
    for choice in itertools.product(*per_leaf):
        P, Q = np.ones(1), np.ones(1)
        for p, q in choice:
            P, Q = np.multiply.outer(P, p).ravel(), np.multiply.outer(Q, q).ravel()
        for A, B in ((P, Q), (Q, P)):
            worst = max(worst, float(np.sum(np.maximum(A - math.exp(eps) * B, 0.0))))
    return worst


@pytest.mark.parametrize("leaves", [
    [(ShiftedTruncatedDiscreteLaplace(Fraction(3, 2), 14), 3), (ShiftedTruncatedDiscreteLaplace(Fraction(2), 16), 2)],
    [(ShiftedTruncatedDiscreteLaplace(Fraction(5, 4), 12), 3)] * 2,
    [(ShiftedTruncatedDiscreteGaussian(Fraction(3), 9), 2), (ShiftedTruncatedDiscreteLaplace(Fraction(4), 30), 3)],
])
@pytest.mark.parametrize("delta", [1e-2, 0.05])
def test_forced_bound_paths_dominate_brute_force(leaves, delta, monkeypatch):
    """The closed-form bounds (forced on small supports) still dominate the exact profile."""
    monkeypatch.setattr(renyi_mod, "EXACT_MAX_SENSITIVITY", 0)
    monkeypatch.setattr(renyi_mod, "EXACT_MAX_WORK", 0)
    monkeypatch.setattr(pld_mod, "_DIRECT_J", 0)
    rep = compose_all([PrivacyEvent.padding(m, s) for m, s in leaves], delta)
    assert rep["renyi"].applicable
    for name, b in rep.items():
        if b.applicable:
            assert _brute_delta(leaves, b.epsilon) <= b.delta * (1 + 1e-9) + 1e-12, name
