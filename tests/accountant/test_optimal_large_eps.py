"""KOV composition with large per-mechanism epsilon must not underflow (regression)."""
import math

from dodb.accountant import OptimalAccountant, PrivacyEvent


def test_large_epsilon_composes_without_error():
    ev = PrivacyEvent.generic(150.0, 1e-9)
    acc = OptimalAccountant().compose([ev] * 7)
    eps = acc.get_epsilon(1e-6)
    assert math.isfinite(eps) and 0 < eps <= 7 * 150.0 + 1e-9
