"""Privacy filters: budget enforcement across queries under full adaptivity.

An analyst picks each query — and so its privacy parameters — after seeing earlier
answers.  Fixed-sequence theorems (Thm 1.4, KOV, PLD, …) do not cover adaptively
chosen *parameters*; privacy filters do (Rogers, Roth, Ullman, Vadhan 2016): a
stopping rule that admits the next query only if a condition on the parameters
spent so far still holds guarantees ``(epsilon, delta)`` for the whole interaction.
Queries themselves are charged with the tight fixed-sequence bound (``best.py``),
because inside one query the plan fixes every parameter before execution.

Every filter here works on *additive coordinates*: a query's cost is a dict of
non-negative numbers, the ledger stores them per query and sums them (so the state
is recomputed from the rows, crash-safe), and ``admits(totals, cost)`` is monotone:
once a condition fails it stays failed.  Comparisons allow a relative 1e-12 for the
float rounding of the sums (so ten queries of 0.1 fit a budget of 1.0).  Rejected
queries cost nothing: rejection depends only on parameters, which are functions of
public history.

* ``basic``     sum eps_q <= eps, sum delta_q <= delta (basic filter, Rogers et al. 2016;
                004 Thm 1.3 for NPDO).
* ``advanced``  Whitehouse, Ramdas, Rogers, Wu 2023 (ICML), the filter matching
                advanced composition: with ``delta = delta' + delta''`` admit while
                ``sqrt(2 ln(1/delta') V) + V/2 <= eps`` for ``V = sum eps_q^2`` and
                ``sum delta_q <= delta''``.  (Why it holds: conditionally each pure
                core's loss lies in [-eps_q, eps_q] with mean <= eps_q^2/2, so
                ``exp(lam (L_n - V_n/2) - lam^2 V_n / 2)`` is a supermartingale by
                Hoeffding; Ville's inequality with ``lam`` tuned to the cap ``V*``
                bounds ``P[L > eps] <= delta'``.)
* ``renyi``     Rényi filter per order (Feldman & Zrnic 2021; Lécuyer 2021): for a
                fixed order, ``sum rho_q(alpha) <= B`` a.s. gives (alpha, B)-RDP of
                the stopped interaction.  With several orders the interaction runs
                while *some* order is within budget; its end is one of the per-order
                stopping times, so the hockey-stick integrand splits over orders and
                delta is shared: each order converts at ``delta_R / |orders|``
                (tight conversion, CKS 2020 Prop 12, which is a pointwise bound and
                so applies to stopped interactions).  The truncation parts
                (``delta_A`` of every leak, see ``renyi.py``) are capped separately:
                ``sum delta_A <= delta''``; the probability that any step leaves its
                common support is at most that sum.
* ``best``      the union of the three above, each with a third of delta: admit if
                any admits.  The same stopping-time argument gives delta = sum of the
                parts.  A part that rejects an admitted query is exceeded for good.

Within each filter, ``delta`` is split as ``delta'' = approx_share * delta`` for the
leaks' own deltas and the rest for the concentration / conversion term.

What users see (docs/design.md §Budget defaults): ``query_delta_cap`` is the most the
queries' own deltas may sum to (the default query delta is that cap over the owner's
horizon), and ``headroom`` is the most the *next* query can be charged — the largest
epsilon of a pure release and the delta left — by the part of the filter that would
admit it.

NPDO note: 004 proves fixed-sequence composition for NPDO by reducing it to ordinary
divergences of refined distributions (§3, §5); we apply the DP filter theorems
through the same reduction.  004 itself does not state adaptive filters.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ._math import check_delta, check_epsilon
from .errors import Budget
from ..errors import InvalidParameterError
from .events import PrivacyEvent
from .renyi import FILTER_ORDERS, leaf_rdp, rdp_to_epsilon

__all__ = ["QueryCharge", "PrivacyFilter", "BasicFilter", "AdvancedFilter", "RenyiFilter", "UnionFilter",
           "FILTERS", "make_filter"]


@dataclass(frozen=True)
class QueryCharge:
    """What a query costs: its fixed-sequence bound and its event (for Rényi)."""

    epsilon: float
    delta: float
    event: PrivacyEvent


_ROUND = 1e-12  # relative slack for float rounding of stored sums (10 x 0.1 must fit in 1.0)


def _leq(total: float, cap: float) -> bool:
    """``total <= cap`` up to float rounding of the summed coordinates."""
    return total <= cap + _ROUND * abs(cap)


def _check_share(share: float) -> float:
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
        raise InvalidParameterError(f"approx_share must lie in (0, 1), got {share!r}")
    return float(share)


class PrivacyFilter(ABC):
    """A stopping rule guaranteeing ``(epsilon, delta)`` under full adaptivity."""

    name = "abstract"

    def __init__(self, epsilon: float, delta: float) -> None:
        self.epsilon = check_epsilon(epsilon, "budget epsilon")
        self.delta = check_delta(delta, "budget delta", allow_zero=False)

    @abstractmethod
    def cost(self, charge: QueryCharge) -> dict[str, float]:
        """The query's additive coordinates."""

    @abstractmethod
    def admits(self, totals: Mapping[str, float], cost: Mapping[str, float]) -> bool:
        """Whether the filter still holds after adding ``cost`` to ``totals``."""

    @abstractmethod
    def spent(self, totals: Mapping[str, float]) -> Budget:
        """Filter-equivalent (epsilon, delta) used so far — for display: a filter
        certifies its budget at the end, it is not an odometer."""

    def remaining(self, totals: Mapping[str, float]) -> Budget:
        s = self.spent(totals)
        return Budget(max(0.0, self.epsilon - s.epsilon), max(0.0, self.delta - s.delta))

    def config(self) -> dict[str, Any]:
        return {}

    @property
    def query_delta_cap(self) -> float:
        """The most the queries' own deltas may sum to under this filter."""
        return self.delta

    @abstractmethod
    def epsilon_headroom(self, totals: Mapping[str, float]) -> float:
        """The largest epsilon of a pure release the filter still admits (delta ignored)."""

    @abstractmethod
    def delta_headroom(self, totals: Mapping[str, float]) -> float:
        """How much of ``query_delta_cap`` is left."""

    def headroom(self, totals: Mapping[str, float]) -> Budget:
        """What the next query can be charged: (epsilon of a pure release, delta left)."""
        if not self.admits(totals, {}):
            return Budget(0.0, 0.0)
        return Budget(max(0.0, self.epsilon_headroom(totals)), max(0.0, self.delta_headroom(totals)))

    @staticmethod
    def _get(totals: Mapping[str, float], key: str) -> float:
        return float(totals.get(key, 0.0) or 0.0)


class BasicFilter(PrivacyFilter):
    """Sum of epsilons and deltas (Rogers et al. 2016; 004 Thm 1.3)."""

    name = "basic"

    def cost(self, charge: QueryCharge) -> dict[str, float]:
        return {"eps": charge.epsilon, "delta": charge.delta}

    def admits(self, totals: Mapping[str, float], cost: Mapping[str, float]) -> bool:
        e = math.fsum([self._get(totals, "eps"), cost.get("eps", 0.0)])
        d = math.fsum([self._get(totals, "delta"), cost.get("delta", 0.0)])
        return _leq(e, self.epsilon) and _leq(d, self.delta)

    def spent(self, totals: Mapping[str, float]) -> Budget:
        return Budget(self._get(totals, "eps"), self._get(totals, "delta"))

    def epsilon_headroom(self, totals: Mapping[str, float]) -> float:
        return self.epsilon - self._get(totals, "eps")

    def delta_headroom(self, totals: Mapping[str, float]) -> float:
        return self.delta - self._get(totals, "delta")


class AdvancedFilter(PrivacyFilter):
    """Whitehouse et al. 2023 advanced-composition filter (module doc)."""

    name = "advanced"

    def __init__(self, epsilon: float, delta: float, approx_share: float = 0.5) -> None:
        super().__init__(epsilon, delta)
        self.approx_share = _check_share(approx_share)
        self.delta_cap = self.delta * self.approx_share  # delta'': sum of the queries' deltas
        self.delta_conc = self.delta - self.delta_cap  # delta': concentration
        lg = math.log(1 / self.delta_conc)
        # largest V with sqrt(2 lg V) + V/2 <= eps
        self.v_max = (math.sqrt(2 * lg + 2 * self.epsilon) - math.sqrt(2 * lg)) ** 2

    def cost(self, charge: QueryCharge) -> dict[str, float]:
        return {"eps_sq": charge.epsilon**2, "delta": charge.delta}

    def admits(self, totals: Mapping[str, float], cost: Mapping[str, float]) -> bool:
        v = math.fsum([self._get(totals, "eps_sq"), cost.get("eps_sq", 0.0)])
        d = math.fsum([self._get(totals, "delta"), cost.get("delta", 0.0)])
        return _leq(v, self.v_max) and _leq(d, self.delta_cap)

    def spent(self, totals: Mapping[str, float]) -> Budget:
        v = self._get(totals, "eps_sq")
        e = math.sqrt(2 * math.log(1 / self.delta_conc) * v) + v / 2
        return Budget(e, self._get(totals, "delta") + (self.delta_conc if v > 0 else 0.0))

    @property
    def query_delta_cap(self) -> float:
        return self.delta_cap

    def epsilon_headroom(self, totals: Mapping[str, float]) -> float:
        return math.sqrt(max(0.0, self.v_max - self._get(totals, "eps_sq")))

    def delta_headroom(self, totals: Mapping[str, float]) -> float:
        return self.delta_cap - self._get(totals, "delta")

    def config(self) -> dict[str, Any]:
        return {"approx_share": self.approx_share}


def _okey(alpha: float) -> str:
    return f"rdp@{alpha!r}"


class RenyiFilter(PrivacyFilter):
    """Per-order Rényi filters sharing delta (module doc)."""

    name = "renyi"

    def __init__(self, epsilon: float, delta: float, orders: Sequence[float] | None = None,
                 approx_share: float = 0.5) -> None:
        super().__init__(epsilon, delta)
        orders = FILTER_ORDERS if orders is None else orders
        self.orders = tuple(sorted({float(a) for a in orders}))
        if not self.orders or self.orders[0] <= 1:
            raise InvalidParameterError("Rényi filter orders must be > 1")
        self.approx_share = _check_share(approx_share)
        self.delta_cap = self.delta * self.approx_share
        self.delta_conv = (self.delta - self.delta_cap) / len(self.orders)  # per order
        a = np.array(self.orders)
        # budget per order: the rho at which the tight conversion gives exactly epsilon
        self.rho_max = self.epsilon - np.log1p(-1 / a) + (math.log(self.delta_conv) + np.log(a)) / (a - 1)

    def cost(self, charge: QueryCharge) -> dict[str, float]:
        a = np.array(self.orders)
        rho = np.zeros_like(a)
        approx_keep = 0.0  # log prod (1 - delta_A) within the query
        for leaf, n in charge.event.leaves():
            rho = rho + n * leaf_rdp(leaf, a)
            if leaf.approx_delta >= 1:
                approx_keep = -math.inf
            else:
                approx_keep += n * math.log1p(-leaf.approx_delta)
        # the fixed-work sampler's pmf is within e^{±gamma} of the ideal one pointwise, which
        # raises each order's divergence by at most gamma (2a - 1)/(a - 1) (best.sampler_slack)
        from .best import sampler_slack

        gamma = sampler_slack(charge.event)
        rho = rho + gamma * (2 * a - 1) / (a - 1)
        out = {_okey(x): float(np.nextafter(r, np.inf)) if gamma else float(r) for x, r in zip(self.orders, rho)}
        out["approx_delta"] = -math.expm1(approx_keep)
        return out

    def _alive(self, totals: Mapping[str, float], cost: Mapping[str, float]) -> np.ndarray:
        tot = np.array([math.fsum([self._get(totals, _okey(x)), cost.get(_okey(x), 0.0)]) for x in self.orders])
        return tot <= self.rho_max + _ROUND * np.abs(self.rho_max)

    def admits(self, totals: Mapping[str, float], cost: Mapping[str, float]) -> bool:
        d = math.fsum([self._get(totals, "approx_delta"), cost.get("approx_delta", 0.0)])
        return _leq(d, self.delta_cap) and bool(self._alive(totals, cost).any())

    def spent(self, totals: Mapping[str, float]) -> Budget:
        rho = [self._get(totals, _okey(x)) for x in self.orders]
        if all(r == 0 for r in rho):
            e = 0.0
        else:
            e, _ = rdp_to_epsilon(self.orders, rho, self.delta_conv)
        d = self._get(totals, "approx_delta")
        return Budget(e, d + (self.delta - self.delta_cap if e > 0 else 0.0))

    @property
    def query_delta_cap(self) -> float:
        return self.delta_cap

    def epsilon_headroom(self, totals: Mapping[str, float]) -> float:
        """Bisection on the epsilon of a pure release (randomized response, the dominating
        pair of every pure-epsilon core) that some order still admits."""
        if not self._alive(totals, {}).any():
            return 0.0

        def fits(e: float) -> bool:
            cost = self.cost(QueryCharge(e, 0.0, PrivacyEvent.generic(e)))
            return bool(self._alive(totals, cost).any())

        lo, hi = 0.0, self.epsilon
        if fits(hi):
            return hi
        for _ in range(48):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
            if hi - lo <= 1e-6 * hi:
                break
        return lo

    def delta_headroom(self, totals: Mapping[str, float]) -> float:
        return self.delta_cap - self._get(totals, "approx_delta")

    def config(self) -> dict[str, Any]:
        return {"orders": list(self.orders), "approx_share": self.approx_share}


class UnionFilter(PrivacyFilter):
    """``best``: basic, advanced and Rényi filters, each with delta/3; admit if any admits."""

    name = "best"

    def __init__(self, epsilon: float, delta: float, orders: Sequence[float] | None = None,
                 approx_share: float = 0.5) -> None:
        super().__init__(epsilon, delta)
        part = self.delta / 3
        self.parts: dict[str, PrivacyFilter] = {
            "basic": BasicFilter(epsilon, part),
            "advanced": AdvancedFilter(epsilon, part, approx_share),
            "renyi": RenyiFilter(epsilon, part, orders, approx_share),
        }

    def cost(self, charge: QueryCharge) -> dict[str, float]:
        out = {}
        for name, f in self.parts.items():
            out.update({f"{name}.{k}": v for k, v in f.cost(charge).items()})
        return out

    @staticmethod
    def _sub(d: Mapping[str, float], name: str) -> dict[str, float]:
        pre = name + "."
        return {k[len(pre):]: v for k, v in d.items() if k.startswith(pre)}

    def admitting_parts(self, totals: Mapping[str, float], cost: Mapping[str, float]) -> list[str]:
        return [n for n, f in self.parts.items() if f.admits(self._sub(totals, n), self._sub(cost, n))]

    def admits(self, totals: Mapping[str, float], cost: Mapping[str, float]) -> bool:
        return bool(self.admitting_parts(totals, cost))

    def spent(self, totals: Mapping[str, float]) -> Budget:
        # the part that is furthest from exhaustion (alive parts first)
        alive = self.admitting_parts(totals, {})
        names = alive or list(self.parts)
        return min((self.parts[n].spent(self._sub(totals, n)) for n in names), key=lambda b: b.epsilon)

    def remaining(self, totals: Mapping[str, float]) -> Budget:
        if not self.admitting_parts(totals, {}):
            return Budget(0.0, 0.0)
        s = self.spent(totals)
        return Budget(max(0.0, self.epsilon - s.epsilon), max(0.0, self.delta - s.delta))

    @property
    def query_delta_cap(self) -> float:
        return max(f.query_delta_cap for f in self.parts.values())

    def _alive_parts(self, totals: Mapping[str, float]) -> list[PrivacyFilter]:
        return [self.parts[n] for n in self.admitting_parts(totals, {})]

    def epsilon_headroom(self, totals: Mapping[str, float]) -> float:
        return max([p.epsilon_headroom(self._sub(totals, p.name)) for p in self._alive_parts(totals)], default=0.0)

    def delta_headroom(self, totals: Mapping[str, float]) -> float:
        return max([p.delta_headroom(self._sub(totals, p.name)) for p in self._alive_parts(totals)], default=0.0)

    def config(self) -> dict[str, Any]:
        return self.parts["renyi"].config()


FILTERS = {"basic": BasicFilter, "advanced": AdvancedFilter, "renyi": RenyiFilter, "best": UnionFilter}


def make_filter(name: str, epsilon: float, delta: float, **config: Any) -> PrivacyFilter:
    """Build a filter by name with its persisted configuration."""
    if name not in FILTERS:
        raise InvalidParameterError(f"unknown filter {name!r}; choose from {sorted(FILTERS)}")
    cls = FILTERS[name]
    allowed = {"basic": set(), "advanced": {"approx_share"}}.get(name, {"orders", "approx_share"})
    bad = set(config) - allowed
    if bad:
        raise InvalidParameterError(f"filter {name!r} does not take {sorted(bad)}")
    return cls(epsilon, delta, **config)
