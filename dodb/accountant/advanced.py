"""Advanced NPDO composition (004 Thm 1.4 / 4.2) and its heterogeneous forms.

004 Thm 1.4: k leaks that are each (eps, delta)-NPDO compose to
``(eps * sqrt(2k ln(1/delta')) + 2k eps^2, delta' + k delta)`` for every delta' > 0.
The proof (Thm 4.2) reduces NPDO to the standard DP statement (Thm 4.1), so every
tighter DP form transfers too (Remark 4.3).  Three forms are offered, all written for
unequal epsilons with ``S2 = sum eps_i^2``:

``thm1.4`` (default)  ``sqrt(2 S2 ln(1/delta')) + 2 S2``, total ``delta' + sum delta_i``.
                      For equal eps this *is* Thm 1.4.  For unequal eps it is still
                      valid because ``2 eps^2 >= eps tanh(eps/2)``, so it dominates
                      Kairouz–Oh–Viswanath 2015 Thm 3.5 (third term).
``drv``               Dwork–Rothblum–Vadhan: linear term ``sum eps_i (e^eps_i - 1)``.
``kov``               KOV15 Thm 3.5 (min of its three closed forms), total
                      ``1 - (1 - delta') prod (1 - delta_i)``.

Choosing delta': every form is decreasing in delta', so for a target total delta the
optimal delta' is all the slack left after the leaks' own deltas — solved in closed
form, no search needed.  Theorem 1.4 is stated for k >= 2; for k = 1 the formula is
still an upper bound (it dominates min(basic, DRV)).
"""
from __future__ import annotations

import math

from ._math import log_keep
from .base import Accountant
from .events import PrivacyEvent

__all__ = ["AdvancedAccountant"]

FORMS = ("thm1.4", "drv", "kov")


class AdvancedAccountant(Accountant):
    """Advanced composition, 004 Thm 1.4 (heterogeneous forms: see module doc)."""

    name = "advanced"
    theorem = "004 Thm 1.4"

    def __init__(self, form: str = "thm1.4") -> None:
        super().__init__()
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        self.form = form

    def check(self, leaf: PrivacyEvent) -> None:
        self._require_nominal(leaf, "advanced")

    # sums used by every form
    def _sums(self) -> tuple[float, float, float, float, float]:
        noms = self._nominals()
        s1 = math.fsum(e * n for e, _, n in noms)
        s2 = math.fsum(e * e * n for e, _, n in noms)
        if self.form == "thm1.4":
            lin = 2 * s2
        elif self.form == "drv":
            lin = math.fsum(e * math.expm1(e) * n for e, _, n in noms)
        else:
            lin = math.fsum(e * math.tanh(e / 2) * n for e, _, n in noms)
        dsum = math.fsum(d * n for _, d, n in noms)
        # log prod (1 - delta_i), for the KOV form
        lprod = log_keep((d, n) for _, d, n in noms)
        return s1, s2, lin, dsum, lprod

    def _slack(self, delta: float, dsum: float, lprod: float) -> float:
        """delta' left for the concentration term at total ``delta``."""
        if self.form == "kov":
            return -math.expm1(math.log1p(-delta) - lprod)  # 1 - (1-delta)/prod(1-delta_i)
        return delta - dsum

    def _total(self, dprime: float, dsum: float, lprod: float) -> float:
        if self.form == "kov":
            return -math.expm1(math.log1p(-dprime) + lprod)
        return dprime + dsum

    def get_epsilon(self, delta: float) -> float:
        delta = self._delta_arg(delta)
        if not self.leaves:
            return 0.0
        s1, s2, lin, dsum, lprod = self._sums()
        dp = self._slack(delta, dsum, lprod)
        if not dp > 0:
            return math.inf
        if s2 == 0:
            return 0.0
        eps = math.sqrt(2 * s2 * math.log(1 / dp)) + lin
        if self.form == "kov":
            eps = min(eps, s1, lin + math.sqrt(2 * s2 * math.log(math.e + math.sqrt(s2) / dp)))
        return eps

    def get_delta(self, epsilon: float) -> float:
        epsilon = self._epsilon_arg(epsilon)
        if not self.leaves:
            return 0.0
        s1, s2, lin, dsum, lprod = self._sums()
        if s2 == 0:
            return min(1.0, self._total(0.0, dsum, lprod))
        cands = [1.0]
        if epsilon > lin:
            cands.append(math.exp(-((epsilon - lin) ** 2) / (2 * s2)))
        if self.form == "kov":
            if epsilon >= s1:
                cands.append(0.0)
            if epsilon > lin:
                den = math.expm1((epsilon - lin) ** 2 / (2 * s2) - 1) * math.e  # e^x - e
                if den > 0:
                    cands.append(math.sqrt(s2) / den)
        return min(1.0, self._total(min(cands), dsum, lprod))
