"""Partition-aware admission against the loss bounds of paper 000 evaluated directly.

Reference: for basic composition the history's loss for one neighbouring change is the
sum of the ε of the charges that change affects (Thm IV.11 with every mechanism
``p_S``-dependent); over all changes, add/remove gives ``G + max_p S_p`` (Thm IV.12) and
replace ``G + max_{i≠j} (S_i + S_j)`` (Cor IV.13; Example IV.14: districts i, j at
ε_i, ε_j cost ε_i + ε_j, one district ε_i).  Those sums are computed here from the list
of charges, by brute force over every change — not through ``scopes.py``.
"""
from __future__ import annotations

import itertools
import math
import random

import pytest

from dodb.accountant.errors import Budget
from dodb.accountant.filters import AdvancedFilter, BasicFilter, QueryCharge
from dodb.accountant.events import PrivacyEvent
from dodb.accountant.scopes import ScopedState, admits, partition_status, worst_spent

PARTS = ["a", "b", "c", "d"]


def state_of(filt, history):
    """What the ledger would read back: coordinates and plain sums per scope."""
    st = ScopedState()
    for eps, scope in history:
        cost = filt.cost(QueryCharge(eps, 0.0, PrivacyEvent.generic(eps)))
        targets = [None] if scope is None else sorted(scope)
        for p in targets:
            tot = st.global_totals if p is None else st.parts.setdefault(p, {})
            for k, v in cost.items():
                tot[k] = tot.get(k, 0.0) + v
            sums = st.global_sums if p is None else st.part_sums.get(p, Budget(0.0, 0.0))
            sums = Budget(sums.epsilon + eps, 0.0)
            if p is None:
                st.global_sums = sums
            else:
                st.part_sums[p] = sums
    return st


def affected(history, change):
    """Charges a change can alter: global ones and those whose scope meets the change's partitions,
    counted once per partition of the change they touch (the bound of Cor IV.13)."""
    out = []
    for eps, scope in history:
        hits = 1 if scope is None else sum(1 for p in change if p in scope)
        out += [eps] * hits
    return out


def changes(neighbour):
    fresh = ["fresh1", "fresh2"]  # partitions nobody charged
    names = PARTS + fresh
    if neighbour == "add_remove":
        return [(p,) for p in names]
    return [(i, j) for i, j in itertools.combinations(names, 2)] + [(p,) for p in names]


def random_history(rng, n):
    out = []
    for _ in range(n):
        r = rng.random()
        scope = None if r < 0.25 else frozenset(rng.sample(PARTS, 1 if r < 0.8 else 2))
        out.append((round(rng.uniform(0.05, 0.6), 3), scope))
    return out


@pytest.mark.parametrize("neighbour", ["add_remove", "replace"])
@pytest.mark.parametrize("seed", range(40))
def test_basic_filter_matches_the_direct_bound(neighbour, seed):
    rng = random.Random(seed)
    filt = BasicFilter(2.0, 1e-6)
    history = random_history(rng, rng.randint(0, 8))
    eps, scope = random_history(rng, 1)[0]
    worst = max(math.fsum(affected(history + [(eps, scope)], ch)) for ch in changes(neighbour))
    cost = filt.cost(QueryCharge(eps, 0.0, PrivacyEvent.generic(eps)))
    got = admits(filt, state_of(filt, history), cost, scope, neighbour)
    before = max(math.fsum(affected(history, ch)) for ch in changes(neighbour))
    if before <= 2.0 + 1e-9:  # the ledger only ever holds admitted histories
        assert got == (worst <= 2.0 + 1e-9)
        assert worst_spent(state_of(filt, history), neighbour).epsilon <= before + 1e-9


@pytest.mark.parametrize("neighbour", ["add_remove", "replace"])
@pytest.mark.parametrize("seed", range(20))
def test_advanced_filter_matches_the_direct_bound(neighbour, seed):
    """Whitehouse et al.'s condition sqrt(2 ln(1/δ') V) + V/2 <= ε per change, V = Σ ε_q² of its charges."""
    rng = random.Random(100 + seed)
    eps_budget, delta = 3.0, 1e-6
    filt = AdvancedFilter(eps_budget, delta)
    history = random_history(rng, rng.randint(0, 10))
    eps, scope = random_history(rng, 1)[0]
    lg = math.log(1 / (delta / 2))  # δ' = (1 - approx_share) δ

    def fits(h):
        for ch in changes(neighbour):
            v = math.fsum(e * e for e in affected(h, ch))
            if math.sqrt(2 * lg * v) + v / 2 > eps_budget * (1 + 1e-12):
                return False
        return True

    if fits(history):
        cost = filt.cost(QueryCharge(eps, 0.0, PrivacyEvent.generic(eps)))
        assert admits(filt, state_of(filt, history), cost, scope, neighbour) == fits(history + [(eps, scope)])


def test_example_iv_14_districts():
    """k districts at ε_i: any one change costs max ε_i (add/remove), ε_i + ε_j (replace, i ≠ j)."""
    eps = {"a": 0.5, "b": 0.3, "c": 0.2}
    filt = BasicFilter(10.0, 1e-6)
    st = state_of(filt, [(e, frozenset({p})) for p, e in eps.items()])
    assert worst_spent(st, "add_remove").epsilon == pytest.approx(0.5)
    assert worst_spent(st, "replace").epsilon == pytest.approx(0.8)
    per = partition_status(filt, st, "add_remove")
    assert {p: round(v["spent"].epsilon, 9) for p, v in per.items()} == eps
    assert per["a"]["remaining"].epsilon == pytest.approx(9.5)
    assert partition_status(filt, st, "replace")["c"]["remaining"].epsilon == pytest.approx(10 - 0.2 - 0.5)


def test_many_partitions_use_a_dominating_bound():
    """Above EXACT_LIMIT partitions the check is coarser but never admits more than the exact one."""
    from dodb.accountant import scopes

    filt = BasicFilter(2.0, 1e-6)
    history = [(1.0, frozenset({f"p{i}"})) for i in range(scopes.EXACT_LIMIT + 5)]
    st = state_of(filt, history)
    def cost(e):
        return filt.cost(QueryCharge(e, 0.0, PrivacyEvent.generic(e)))

    assert admits(filt, st, cost(1.5), frozenset({"p0"}), "add_remove") is False
    assert admits(filt, st, cost(1.0), frozenset({"new"}), "add_remove") is True
    assert admits(filt, st, cost(1.0), None, "add_remove") is True
    # coarser than exact: a fresh partition is checked against the largest one
    assert admits(filt, st, cost(1.5), frozenset({"new"}), "add_remove") is False
    assert admits(filt, st, cost(0.1), frozenset({"new"}), "replace") is False  # 2 x max + 0.1


@pytest.mark.parametrize("seed", range(5))
def test_headroom_over_the_frontier_equals_over_every_case(seed):
    from dodb.accountant.filters import UnionFilter
    from dodb.accountant.scopes import frontier, worst_headroom

    rng = random.Random(seed)
    filt = UnionFilter(5.0, 1e-4)
    st = state_of(filt, random_history(rng, 12))
    for neighbour in ("add_remove", "replace"):
        every = [filt.headroom(t) for _, t in st._cases(neighbour, None)]
        assert worst_headroom(filt, st, neighbour) == min(every, key=lambda b: (b.epsilon, b.delta))
        assert len(frontier([t for _, t in st._cases(neighbour, None)])) <= len(every)
