"""Every applicable bound, and the tightest one (for a fixed sequence of leaks).

Inside one query the plan fixes every operator's parameters before execution, so all
fixed-sequence composition theorems apply and the smallest epsilon at the target
delta is valid: each bound is a certified upper bound on the same quantity, hence so
is their minimum.  (Across queries the ledger uses adaptive filters instead, see
``filters.py``.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

from .advanced import AdvancedAccountant
from .base import Accountant, EventsLike, as_event
from .basic import BasicAccountant
from .errors import NotApplicableError
from .gaussian import GaussianAccountant
from .optimal import OptimalAccountant
from .pld import PLDAccountant
from .renyi import RenyiAccountant

__all__ = ["METHODS", "Bound", "CompositionReport", "compose_all", "make_accountant", "BestAccountant"]

# Reporting order; ties go to the earlier (simpler) method.
METHODS: dict[str, Callable[[], Accountant]] = {
    "basic": BasicAccountant,
    "advanced": AdvancedAccountant,
    "optimal": OptimalAccountant,
    "gaussian": GaussianAccountant,
    "renyi": RenyiAccountant,
    "pld": PLDAccountant,
}


def make_accountant(method: str, **kwargs: Any) -> Accountant:
    """A fresh accountant for ``method`` (one of :data:`METHODS` or ``'best'``)."""
    if method == "best":
        return BestAccountant(**kwargs)
    try:
        return METHODS[method](**kwargs)
    except KeyError:
        raise ValueError(f"unknown composition method {method!r}; choose from {sorted(METHODS) + ['best']}") from None


@dataclass(frozen=True)
class Bound:
    """One method's composed guarantee; iterates as ``(epsilon, delta)``."""

    method: str
    epsilon: float
    delta: float
    theorem: str = ""
    chosen: bool = False
    note: str = ""

    @property
    def applicable(self) -> bool:
        return self.epsilon < math.inf

    def __iter__(self) -> Iterator[float]:
        yield self.epsilon
        yield self.delta

    def as_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "theorem": self.theorem,
                "chosen": self.chosen, "note": self.note}


class CompositionReport(Mapping[str, Bound]):
    """``method -> Bound`` at one target delta; ``best`` is the tightest valid one."""

    def __init__(self, bounds: dict[str, Bound], target_delta: float) -> None:
        self._bounds = bounds
        self.target_delta = target_delta

    def __getitem__(self, key: str) -> Bound:
        return self._bounds[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._bounds)

    def __len__(self) -> int:
        return len(self._bounds)

    @property
    def best(self) -> Bound:
        for b in self._bounds.values():
            if b.chosen:
                return b
        return Bound("none", math.inf, self.target_delta, note="no method applies")

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {k: b.as_dict() for k, b in self._bounds.items()}

    def explain(self) -> str:
        """Human-readable lines for EXPLAIN; the bound in use is marked with ``*``."""
        lines = [f"privacy composition at target δ={self.target_delta:.3g}:"]
        for name, b in self._bounds.items():
            mark = "*" if b.chosen else " "
            if b.applicable:
                lines.append(f" {mark} {name:<9} ε={b.epsilon:<12.6g} δ={b.delta:<10.3g} [{b.theorem}]")
            else:
                lines.append(f"   {name:<9} n/a  ({b.note})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.explain()


def _bound(method: str, acc: Accountant, delta: float) -> Bound:
    if isinstance(acc, BasicAccountant):
        # basic certifies exactly (sum eps, sum delta); usable if sum delta <= target
        if acc.delta <= delta:
            return Bound(method, acc.epsilon, acc.delta, acc.theorem)
        return Bound(method, math.inf, acc.delta, acc.theorem,
                     note=f"needs δ >= {acc.delta:.3g} (sum of the leaks' deltas)")
    eps = acc.get_epsilon(delta)
    note = "" if eps < math.inf else ("no finite ε at this δ with this method "
                                      "(the leaks' own deltas or infinite-loss mass exceed it)")
    return Bound(method, eps, delta, acc.theorem, note=note)


def sampler_slack(event) -> float:
    """Privacy loss the fixed-work padding sampler may add over its ideal pmf, for all leaves.

    Each padding release samples at most ``MAX_SAMPLES_PER_RELEASE`` values, each within
    ``LOSS_PER_SAMPLE`` of the ideal loss (``dodb/oblivious/fixed_work.py``); every method's
    epsilon is raised by the sum (rounded up), so it bounds the mechanism actually run.
    """
    from ..oblivious.fixed_work import LOSS_PER_RELEASE
    from ..oblivious.noise import ShiftedTruncatedDiscreteLaplace

    n = sum(k for leaf, k in event.leaves()
            if leaf.kind == "padding" and isinstance(leaf.mechanism, ShiftedTruncatedDiscreteLaplace))
    return n * LOSS_PER_RELEASE


def compose_all(events: EventsLike, delta: float, methods: Sequence[str] | None = None,
                **options: Mapping[str, Any]) -> CompositionReport:
    """Compose ``events`` with every method (or ``methods``) at target ``delta``.

    ``options`` may give constructor arguments per method, e.g.
    ``pld={"value_discretization_interval": 1e-5}``.  Inapplicable methods are
    reported with ``epsilon = inf`` and a note; the tightest applicable bound is
    marked ``chosen``.
    """
    ev = as_event(events)
    delta = Accountant._delta_arg(delta)
    names = list(METHODS) if methods is None else list(methods)
    raw: dict[str, Bound] = {}
    for name in names:
        if name not in METHODS:
            raise ValueError(f"unknown composition method {name!r}; choose from {sorted(METHODS)}")
        acc = METHODS[name](**dict(options.get(name, {})))
        try:
            acc.compose(ev)
            raw[name] = _bound(name, acc, delta)
        except NotApplicableError as exc:
            raw[name] = Bound(name, math.inf, delta, acc.theorem, note=str(exc))
    slack = sampler_slack(ev)
    if slack:
        raw = {k: (Bound(b.method, math.nextafter(b.epsilon + slack, math.inf), b.delta, b.theorem, note=b.note)
                   if b.applicable else b) for k, b in raw.items()}
    best = min((b for b in raw.values() if b.applicable), key=lambda b: b.epsilon, default=None)
    out = {k: (Bound(b.method, b.epsilon, b.delta, b.theorem, True, b.note) if b is best else b)
           for k, b in raw.items()}
    return CompositionReport(out, delta)


class BestAccountant(Accountant):
    """Composes with every applicable method and reports the tightest bound."""

    name = "best"
    theorem = "min over valid bounds"

    def __init__(self, methods: Sequence[str] | None = None) -> None:
        super().__init__()
        self.methods = list(METHODS) if methods is None else list(methods)
        for m in self.methods:
            if m not in METHODS:
                raise ValueError(f"unknown composition method {m!r}")
        self._subs: dict[str, Accountant] | None = None

    def _invalidate(self) -> None:
        self._subs = None

    def _accountants(self) -> dict[str, Accountant]:
        if self._subs is None:
            subs = {}
            for m in self.methods:
                acc = METHODS[m]()
                try:
                    for leaf, n in self.leaves:
                        acc.compose(leaf, n)
                except NotApplicableError:
                    continue
                subs[m] = acc
            self._subs = subs
        return self._subs

    def report(self, delta: float) -> CompositionReport:
        return compose_all(_expand(self.leaves), delta, self.methods)

    def get_epsilon(self, delta: float) -> float:
        delta = self._delta_arg(delta)
        return min((_bound(m, a, delta).epsilon for m, a in self._accountants().items()), default=math.inf)

    def get_delta(self, epsilon: float) -> float:
        epsilon = self._epsilon_arg(epsilon)
        return min((a.get_delta(epsilon) for a in self._accountants().values()), default=1.0)


def _expand(leaves: list) -> Any:
    from .events import PrivacyEvent
    return PrivacyEvent.compose(PrivacyEvent.self_compose(leaf, n) for leaf, n in leaves)
