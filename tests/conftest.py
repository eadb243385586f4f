"""Test-wide settings: seeded noise is allowed in tests (explicit test mode)."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from dodb.oblivious.rng import enable_seeding

enable_seeding()

# 25 examples per property in CI (lean, so that the suite stays near 15 minutes on 2 cores);
# DODB_HYPOTHESIS_EXAMPLES=200 for a deeper run before a release
settings.register_profile(
    "dodb",
    max_examples=int(os.environ.get("DODB_HYPOTHESIS_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
settings.load_profile("dodb")


@pytest.fixture(autouse=True)
def _plans_follow_monkeypatch(monkeypatch):
    """A test that patches dodb's code (a planted bug) and plans the same query again must
    get a plan made with the patch, and after ``undo`` one made without it, not the plan
    cached before (dodb/planner/plan_cache.py): every patch and undo forgets cached plans."""
    from dodb.planner import plan_cache

    real_setattr, real_undo = monkeypatch.setattr, monkeypatch.undo

    def setattr_(*args, **kwargs):
        real_setattr(*args, **kwargs)
        plan_cache.forget_plans()

    def undo():
        real_undo()
        plan_cache.forget_plans()

    monkeypatch.setattr = setattr_
    monkeypatch.undo = undo
    yield
