import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dodb.accountant import (
    AdvancedFilter,
    BasicFilter,
    PLDAccountant,
    PrivacyEvent,
    QueryCharge,
    RenyiFilter,
    UnionFilter,
    make_filter,
    rdp_to_epsilon,
)
from dodb.oblivious.noise import ShiftedTruncatedDiscreteLaplace


def run(filt, charges):
    """Greedy analyst: submit every query, keep the admitted ones."""
    totals: dict[str, float] = {}
    admitted = []
    for ch in charges:
        cost = filt.cost(ch)
        if filt.admits(totals, cost):
            for k, v in cost.items():
                totals[k] = math.fsum([totals.get(k, 0.0), v])
            admitted.append(ch)
    return admitted, totals


def pure(eps):
    return QueryCharge(eps, 0.0, PrivacyEvent.generic(eps))


def test_basic_filter_exact_sums():
    f = BasicFilter(1.0, 1e-6)
    admitted, totals = run(f, [pure(0.1)] * 15)
    assert len(admitted) == 10  # 10 x 0.1 == 1.0 exactly, not rejected by rounding
    assert f.spent(totals).epsilon == pytest.approx(1.0)
    assert f.remaining(totals).epsilon == pytest.approx(0.0, abs=1e-12)
    # delta side
    f2 = BasicFilter(10.0, 1e-6)
    admitted, _ = run(f2, [QueryCharge(0.1, 3e-7, PrivacyEvent.generic(0.1, 3e-7))] * 5)
    assert len(admitted) == 3


def test_advanced_filter_cap_solves_whitehouse_condition():
    f = AdvancedFilter(1.0, 1e-6, approx_share=0.5)
    lg = math.log(1 / f.delta_conc)
    v = f.v_max
    assert math.sqrt(2 * lg * v) + v / 2 == pytest.approx(1.0, rel=1e-12)
    admitted, totals = run(f, [pure(0.01)] * 100000)
    assert len(admitted) == math.floor(v / 1e-4 + 1e-9)
    assert f.spent(totals).epsilon <= 1.0 + 1e-12
    # many small queries: the advanced filter beats basic composition by far
    assert len(admitted) > 100


def test_renyi_filter_budget_per_order_converts_to_epsilon():
    f = RenyiFilter(1.0, 1e-6, orders=[2, 4, 8, 16, 32], approx_share=0.5)
    assert f.rho_max[0] < 0 < f.rho_max[-1]  # low orders are useless at this delta
    for a, b in zip(f.orders, f.rho_max):
        if b > 0.05:  # the tight conversion (CKS Prop 12) of rho_max gives back epsilon
            eps, _ = rdp_to_epsilon([a], [b], f.delta_conv)
            assert eps == pytest.approx(1.0, abs=1e-9)
    assert f.delta_conv == pytest.approx(0.5e-6 / 5)
    zc = PrivacyEvent.zcdp(0.002)
    admitted, totals = run(f, [QueryCharge(0.1, 0.0, zc)] * 1000)
    n = len(admitted)
    # n * rho * alpha <= rho_max(alpha) for the best alpha, and n + 1 exceeds every order
    assert any(n * 0.002 * a <= b + 1e-12 for a, b in zip(f.orders, f.rho_max))
    assert all((n + 1) * 0.002 * a > b for a, b in zip(f.orders, f.rho_max))
    assert f.spent(totals).epsilon <= 1.0 + 1e-9


def test_renyi_filter_caps_truncation_deltas():
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(0.001, 1e-7, 1)
    ev = PrivacyEvent.padding(m, 1)
    f = RenyiFilter(100.0, 1e-6, approx_share=0.5)  # epsilon never binds here
    admitted, totals = run(f, [QueryCharge(0.001, ev.approx_delta, ev)] * 100)
    assert len(admitted) == math.floor(0.5e-6 / ev.approx_delta)
    assert totals["approx_delta"] <= 0.5e-6


def test_union_admits_if_any_part_admits_and_parts_stay_closed():
    f = UnionFilter(1.0, 3e-6)
    # small queries: basic closes after 100 of them, Rényi / advanced keep going
    admitted, totals = run(f, [pure(0.01)] * 400)
    assert len(admitted) > 100
    assert "basic" not in f.admitting_parts(totals, {})
    # once closed, a part never admits again, even the tiniest query
    assert not f.parts["basic"].admits(f._sub(totals, "basic"), f._sub(f.cost(pure(1e-9)), "basic"))
    # large queries: basic is the best part
    admitted_big, _ = run(UnionFilter(1.0, 3e-6), [pure(0.5)] * 5)
    assert len(admitted_big) == 2


def test_make_filter_validation():
    with pytest.raises(ValueError, match="unknown filter"):
        make_filter("odometer", 1.0, 1e-6)
    with pytest.raises(ValueError, match="does not take"):
        make_filter("basic", 1.0, 1e-6, orders=[2])
    with pytest.raises(ValueError, match="epsilon"):
        make_filter("basic", 0.0, 1e-6)
    with pytest.raises(ValueError, match="epsilon"):
        make_filter("renyi", float("nan"), 1e-6)
    with pytest.raises(ValueError, match="delta"):
        make_filter("advanced", 1.0, 0.0)
    with pytest.raises(ValueError, match="delta"):
        make_filter("best", 1.0, 1.0)
    with pytest.raises(ValueError, match="approx_share"):
        make_filter("renyi", 1.0, 1e-6, approx_share=1.0)
    with pytest.raises(ValueError, match="orders"):
        make_filter("renyi", 1.0, 1e-6, orders=[0.5, 2])


query = st.builds(
    lambda e, pad: (lambda ev: QueryCharge(ev.nominal[0], ev.nominal[1], ev))(
        PrivacyEvent.padding(ShiftedTruncatedDiscreteLaplace.for_privacy(e, 1e-9, 1), 1) if pad
        else PrivacyEvent.generic(e)),
    st.sampled_from([0.02, 0.05, 0.1, 0.3]), st.booleans())


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["basic", "advanced", "renyi", "best"]), st.lists(query, min_size=1, max_size=60))
def test_admitted_sequence_never_exceeds_the_exact_fixed_composition(name, charges):
    """Necessary condition for a sound filter: whatever it admits, the exact
    (fixed-sequence, PLD) guarantee of the admitted leaks is within the budget."""
    eps_g, delta_g = 1.0, 1e-5
    f = make_filter(name, eps_g, delta_g)
    admitted, _ = run(f, charges)
    if not admitted:
        return
    ev = PrivacyEvent.compose([c.event for c in admitted])
    assert PLDAccountant(1e-4).compose(ev).get_epsilon(delta_g) <= eps_g + 1e-9
