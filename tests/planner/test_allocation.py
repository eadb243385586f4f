"""Budget allocation: shares sum to the query's budget; cost-aware moves budget to where it pays."""
from __future__ import annotations

import math

import pytest

from dodb.datasets import tpch_query
from dodb.planner.logical import leaks, walk
from dodb.planner.plan import allocate

from ..tpch_fixture import tpch_database


@pytest.fixture(scope="module")
def db():
    d = tpch_database(0.002)
    yield d
    d.close()


@pytest.mark.parametrize("q", [3, 5, 10, 18, 21])
@pytest.mark.parametrize("strategy", ["even", "cost"])
def test_shares_sum_to_the_budget(db, q, strategy):
    p = db.plan(tpch_query(q), epsilon=0.8, delta=1e-6, allocation=strategy)
    alloc = p.allocation
    assert alloc and math.isclose(sum(e for e, _ in alloc.values()), 0.8, rel_tol=1e-9)
    assert math.isclose(sum(d for _, d in alloc.values()), 1e-6, rel_tol=1e-9)
    assert all(e > 0 for e, _ in alloc.values())
    # every leaking node got a share, and the basic composition of the events is the budget
    assert {n.node_id for n in walk(p.root) if leaks(n)} == set(alloc)
    assert math.isclose(sum(ev.nominal[0] for ev in p.events), 0.8, rel_tol=1e-6)


def test_cost_allocation_favours_expensive_downstream(db):
    p = db.plan(tpch_query(3), epsilon=1.0, delta=1e-6)
    even = allocate(p.root, 1.0, 1e-6, "even")
    cost = allocate(p.root, 1.0, 1e-6, "cost")
    assert even != cost
    assert len(set(round(e, 12) for e, _ in even.values())) == 1


def test_unknown_strategy():
    with pytest.raises(ValueError, match="allocation"):
        allocate(None, 1.0, 1e-6, "magic")
