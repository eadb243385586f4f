"""Concurrent sessions (paper 001 Thms 1.3, 5.1) against direct formulas.

Interleaved sessions compose like the non-interactive mechanisms with the same
guarantees, so a dataset with a given filter admits exactly as many sessions of
``(ε_s, δ_s)`` as that filter admits ``(ε_s, δ_s)`` mechanisms.  The counts below are
computed from the filters' published conditions, not from dodb's filter code.
"""
from __future__ import annotations

import math

import duckdb
import pytest

from dodb.accountant import BudgetExceededError, Ledger
from dodb.accountant.renyi import FILTER_ORDERS


def sessions_admitted(filt: str, eps_b: float, delta_b: float, eps_s: float, delta_s: float) -> int:
    led = Ledger(duckdb.connect())
    led.set_budget(eps_b, delta_b, filter=filt)
    n = 0
    while n < 500:
        try:
            led.open_session(f"s{n}", eps_s, delta_s)
        except BudgetExceededError:
            return n
        n += 1
    return n


def test_basic_sum():
    """Thm 1.3 with basic composition: k ε_s <= ε and k δ_s <= δ."""
    assert sessions_admitted("basic", 2.0, 1e-3, 0.5, 1e-6) == 4
    assert sessions_admitted("basic", 2.0, 1e-5, 0.1, 3e-6) == 3  # δ runs out first


@pytest.mark.parametrize("eps_s", [0.02, 0.05, 0.1])
def test_advanced_filter(eps_s):
    """Whitehouse et al. 2023: admit while sqrt(2 ln(1/δ') k ε²) + k ε²/2 <= ε, δ' = δ/2; Σ δ_s <= δ/2."""
    eps_b, delta_b, delta_s = 1.0, 1e-6, 1e-12
    lg = math.log(1 / (delta_b / 2))
    k = 0
    while math.sqrt(2 * lg * (k + 1) * eps_s**2) + (k + 1) * eps_s**2 / 2 <= eps_b and (k + 1) * delta_s <= delta_b / 2:
        k += 1
    assert sessions_admitted("advanced", eps_b, delta_b, eps_s, delta_s) == k
    if eps_s <= 0.02:  # small sessions: better than the sum (concurrent sessions compose like mechanisms)
        assert k > eps_b / eps_s


def _rr_rdp(eps: float, a: float) -> float:
    """Rényi divergence of order a between the two outputs of ε-randomized response."""
    p = math.exp(eps) / (1 + math.exp(eps))
    q = 1 - p
    return math.log(p**a * q ** (1 - a) + q**a * p ** (1 - a)) / (a - 1)


def test_renyi_filter():
    """Thm 5.1 (Rényi concurrent composition) with the per-order filter and the conversion of
    Canonne-Kamath-Steinke (ε = ρ + log1p(-1/α) - (log δ + log α)/(α - 1)) at δ_R / |orders|."""
    eps_b, delta_b, eps_s, delta_s = 1.0, 1e-6, 0.05, 1e-12
    conv = (delta_b / 2) / len(FILTER_ORDERS)
    k = 0
    while True:
        n = k + 1
        ok = any(n * _rr_rdp(eps_s, a) + math.log1p(-1 / a) - (math.log(conv) + math.log(a)) / (a - 1)
                 <= eps_b * (1 + 1e-12) for a in FILTER_ORDERS)
        if not ok or n * delta_s > delta_b / 2:
            break
        k = n
    assert sessions_admitted("renyi", eps_b, delta_b, eps_s, delta_s) == k
