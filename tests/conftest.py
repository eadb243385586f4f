"""Test-wide settings: seeded noise is allowed in tests (explicit test mode)."""
from __future__ import annotations

import os

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
