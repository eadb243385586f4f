"""Privacy events: *what* leaked, kept separate from *how* it is composed.

Modelled on Google's ``dp_accounting`` (``DpEvent`` vs ``PrivacyAccountant``).  A
:class:`PrivacyEvent` is either a *leaf* describing one leak exactly, or a composition
of events (a query, a session history).  Accountants (``basic.py`` … ``pld.py``) walk
the leaves and compose them by one method each.

Leaf kinds
----------
``padding``   a count released as ``true + noise`` with one of the exact samplers of
              :mod:`dodb.oblivious.noise` (shifted truncated discrete Laplace /
              Gaussian — one-sided padding noise — or the untruncated two-sided
              discrete Laplace / Gaussian), with the count's sensitivity.
``generic``   an ``(epsilon, delta)``-NPDO leak of unknown form.
``gaussian``  a ``mu``-Gaussian NPDO leak (004 Def 6.15).
``renyi``     a Rényi-NPDO curve ``alpha -> rho(alpha)`` (004 Def 6.1), optionally
              ``delta``-approximate; ``zcdp(rho)`` is the curve ``rho * alpha``
              (004 Def 6.4).

Every leaf has, where it exists, a *nominal* ``(epsilon, delta)`` (used by basic /
advanced / optimal composition) and an *approximate part*: the weight ``delta_A`` of
the outcomes one neighbour can produce and the other cannot.  For padding noise that
is the truncation mass ``sum_{k<Delta} pmf(k)``; removing it (conditioning both
neighbours on the common support — both lose exactly ``delta_A`` by the symmetry of
the noise) leaves a *core* pair with finite divergences.  Rényi accounting composes
the cores and adds the ``delta_A`` separately (see ``renyi.py``).

Nothing here (or in any accountant) materialises a pmf over a huge support: the
planner emits shifts up to ~1e10 and sensitivities up to ~1e7, so per-leaf facts come
from the closed forms and bounds of ``_closed.py``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, Callable, Iterable, Mapping, Union

import numpy as np

from dodb.oblivious.noise import (
    DiscreteGaussian,
    DiscreteLaplace,
    ShiftedTruncatedDiscreteGaussian,
    ShiftedTruncatedDiscreteLaplace,
)

from ._closed import truncation_delta
from ._math import check_delta, check_epsilon
from .errors import NotApplicableError

__all__ = ["PrivacyEvent", "NoiseMechanism", "check_sensitivity"]

# kind -> (leaf, delta) -> the leaf's epsilon at delta; filled by the accountant modules
# (gaussian, renyi, pld) when dodb.accountant is imported, so that events import no accountant
NOMINAL_EPSILON: dict[str, Callable[["PrivacyEvent", float], float]] = {}

NoiseMechanism = Union[
    ShiftedTruncatedDiscreteLaplace,
    ShiftedTruncatedDiscreteGaussian,
    DiscreteLaplace,
    DiscreteGaussian,
]
_NOISE_TYPES = (
    ShiftedTruncatedDiscreteLaplace,
    ShiftedTruncatedDiscreteGaussian,
    DiscreteLaplace,
    DiscreteGaussian,
)
LEAF_KINDS = ("padding", "generic", "gaussian", "renyi")


def check_sensitivity(sensitivity: Any) -> int:
    """A sensitivity must be a non-negative integer (counts change by whole rows)."""
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, (int, np.integer, float, Fraction)):
        raise ValueError(f"sensitivity must be a non-negative integer, got {sensitivity!r}")
    if isinstance(sensitivity, float) and math.isnan(sensitivity):
        raise ValueError("sensitivity must not be NaN")
    if sensitivity < 0:
        raise ValueError(f"sensitivity must be non-negative, got {sensitivity!r}")
    if int(sensitivity) != sensitivity:
        raise ValueError(f"sensitivity must be an integer number of rows, got {sensitivity!r}")
    return int(sensitivity)


@dataclass(frozen=True)
class PrivacyEvent:
    """One leak (a leaf) or a composition of leaks.  Build with the classmethods."""

    kind: str
    mechanism: NoiseMechanism | None = None
    sensitivity: int = 0
    epsilon: float | None = None
    delta: float | None = None
    mu: float | None = None
    curve: tuple[tuple[float, float], ...] | None = None
    curve_fn: Callable[[float], float] | None = field(default=None, compare=False)
    children: tuple[tuple["PrivacyEvent", int], ...] = ()
    nominal_delta: float | None = None
    operator: str | None = None
    query: str | None = None

    # -- constructors ---------------------------------------------------------------

    @classmethod
    def padding(cls, mechanism: NoiseMechanism, sensitivity: int, *, operator: str | None = None,
                query: str | None = None, nominal_delta: float | None = None) -> "PrivacyEvent":
        """A noisy size ``true + noise`` for a count of the given sensitivity.

        For ``ShiftedTruncatedDiscreteLaplace`` the nominal guarantee is
        ``(Delta/scale, truncation_delta(Delta))`` (exact, see noise.py).  Gaussian noise
        has no pure epsilon: pass ``nominal_delta`` to give it a nominal pair (its exact
        epsilon at that delta) for the (epsilon, delta) composition methods.
        """
        if not isinstance(mechanism, _NOISE_TYPES):
            raise ValueError(f"mechanism must be one of the noise samplers, got {type(mechanism).__name__}")
        s = check_sensitivity(sensitivity)
        nd = None if nominal_delta is None else check_delta(nominal_delta, "nominal_delta", allow_zero=False)
        ev = cls("padding", mechanism=mechanism, sensitivity=s, nominal_delta=nd, operator=operator, query=query)
        if nd is not None:
            _ = ev.nominal  # validate now (planning time), not when the ledger needs it
        return ev

    @classmethod
    def generic(cls, epsilon: float, delta: float = 0.0, *, operator: str | None = None,
                query: str | None = None) -> "PrivacyEvent":
        """An ``(epsilon, delta)``-NPDO leak whose mechanism is not described further."""
        e = check_epsilon(epsilon)
        d = check_delta(delta)
        return cls("generic", epsilon=e, delta=d, operator=operator, query=query)

    @classmethod
    def gaussian(cls, mu: float, *, operator: str | None = None, query: str | None = None,
                 nominal_delta: float | None = None) -> "PrivacyEvent":
        """A ``mu``-Gaussian NPDO leak (004 Def 6.15)."""
        m = check_epsilon(mu, "mu")
        nd = None if nominal_delta is None else check_delta(nominal_delta, "nominal_delta", allow_zero=False)
        return cls("gaussian", mu=m, nominal_delta=nd, operator=operator, query=query)

    @classmethod
    def renyi(cls, curve: Mapping[float, float] | Callable[[float], float], delta: float = 0.0, *,
              operator: str | None = None, query: str | None = None,
              nominal_delta: float | None = None) -> "PrivacyEvent":
        """A (``delta``-approximate) Rényi NPDO curve (004 Def 6.1).

        ``curve`` maps orders ``alpha > 1`` to ``rho(alpha)``, either as a mapping (the
        curve is read as the smallest listed order ``>= alpha``, sound because Rényi
        divergence is non-decreasing in the order) or as a callable.  ``delta`` is the
        weight of an excluded part common to both neighbours (Bun–Steinke 2016 §8).
        """
        d = check_delta(delta)
        nd = None if nominal_delta is None else check_delta(nominal_delta, "nominal_delta", allow_zero=False)
        if callable(curve):
            return cls("renyi", curve_fn=curve, delta=d, nominal_delta=nd, operator=operator, query=query)
        if not isinstance(curve, Mapping) or not curve:
            raise ValueError("curve must be a non-empty mapping alpha -> rho or a callable")
        pts = []
        for a, r in curve.items():
            a, r = float(a), float(r)
            if not a > 1:
                raise ValueError(f"Rényi orders must be > 1, got {a}")
            if math.isnan(r) or r < 0:
                raise ValueError(f"Rényi divergence must be >= 0, got {r} at order {a}")
            pts.append((a, r))
        return cls("renyi", curve=tuple(sorted(pts)), delta=d, nominal_delta=nd, operator=operator, query=query)

    @classmethod
    def zcdp(cls, rho: float, delta: float = 0.0, **kw: Any) -> "PrivacyEvent":
        """A ``rho``-zNPDO leak (004 Def 6.4): the Rényi curve ``alpha -> rho * alpha``."""
        r = check_epsilon(rho, "rho")
        return cls.renyi(_ZcdpCurve(r), delta, **kw)

    @classmethod
    def compose(cls, events: Iterable["PrivacyEvent"], *, query: str | None = None) -> "PrivacyEvent":
        """The composition of several events (a query, or a history of queries)."""
        evs = tuple(events)
        for e in evs:
            if not isinstance(e, PrivacyEvent):
                raise ValueError(f"can only compose PrivacyEvents, got {type(e).__name__}")
        return cls("composed", children=tuple((e, 1) for e in evs), query=query)

    @classmethod
    def self_compose(cls, event: "PrivacyEvent", count: int, *, query: str | None = None) -> "PrivacyEvent":
        """``count`` independent repetitions of ``event``."""
        if not isinstance(event, PrivacyEvent):
            raise ValueError("event must be a PrivacyEvent")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ValueError(f"count must be a non-negative integer, got {count!r}")
        return cls("composed", children=((event, int(count)),), query=query)

    # -- structure ------------------------------------------------------------------

    @property
    def is_leaf(self) -> bool:
        return self.kind != "composed"

    @property
    def privacy_key(self) -> tuple:
        """Identifies leaves with identical privacy behaviour (labels ignored)."""
        fn = None if self.curve_fn is None else id(self.curve_fn)
        if isinstance(self.curve_fn, _ZcdpCurve):
            fn = ("zcdp", self.curve_fn.rho)
        return (self.kind, self.mechanism, self.sensitivity, self.epsilon, self.delta, self.mu,
                self.curve, fn, self.nominal_delta)

    def leaves(self) -> list[tuple["PrivacyEvent", int]]:
        """Flatten to ``(leaf, multiplicity)`` pairs, merging identical leaves."""
        acc: dict[tuple, list] = {}
        self._collect(1, acc)
        return [(leaf, n) for leaf, n in acc.values() if n > 0]

    def _collect(self, mult: int, acc: dict[tuple, list]) -> None:
        if self.is_leaf:
            slot = acc.setdefault(self.privacy_key, [self, 0])
            slot[1] += mult
            return
        for child, n in self.children:
            child._collect(mult * n, acc)

    @property
    def count(self) -> int:
        """Number of leaf leaks, counted with multiplicity."""
        return sum(n for _, n in self.leaves())

    # -- per-leaf privacy facts -----------------------------------------------------

    @cached_property
    def nominal(self) -> tuple[float, float] | None:
        """The leaf's ``(epsilon, delta)`` guarantee, or ``None`` if it has none."""
        self._require_leaf()
        if self.kind == "generic":
            return (float(self.epsilon), float(self.delta))
        if self.kind == "padding":
            m = self.mechanism
            if self.sensitivity == 0:
                return (0.0, 0.0)
            if isinstance(m, ShiftedTruncatedDiscreteLaplace):
                return (m.epsilon(self.sensitivity), m.truncation_delta(self.sensitivity))
            if isinstance(m, DiscreteLaplace):
                return (float(Fraction(self.sensitivity) / m.scale), 0.0)
        if self.nominal_delta is None:
            return None
        # the leak's own epsilon at nominal_delta, from the accountant that certifies it
        # (registered by that accountant's module: events do not import accountants)
        kind = self.kind if self.kind in ("gaussian", "renyi") else "pld"
        try:
            eps = NOMINAL_EPSILON[kind](self, self.nominal_delta)
        except NotApplicableError:  # support too large for an exact PLD: Rényi bound
            eps = NOMINAL_EPSILON["renyi"](self, self.nominal_delta)
        if not math.isfinite(eps):
            raise ValueError(f"nominal_delta={self.nominal_delta:g} is below what this leak can certify "
                             f"(its excluded mass is {self.approx_delta:g})")
        return (eps, self.nominal_delta)

    @cached_property
    def approx_delta(self) -> float:
        """Weight of the outcomes only one neighbour can produce (see module doc).

        O(1) in the support: the Laplace closed form; for Gaussian noise on supports
        above ``_closed.SUPPORT_LIMIT`` a proven upper bound (sound wherever it is used:
        every composed delta is non-decreasing in it)."""
        self._require_leaf()
        if self.kind in ("generic", "renyi"):
            return float(self.delta)
        if self.kind == "padding" and isinstance(self.mechanism, (ShiftedTruncatedDiscreteLaplace,
                                                                  ShiftedTruncatedDiscreteGaussian)):
            return truncation_delta(self.mechanism, self.sensitivity)  # O(1) in the support
        return 0.0

    @cached_property
    def pure_epsilon(self) -> float | None:
        """The core's pure epsilon (max privacy loss after removing ``approx_delta``)."""
        self._require_leaf()
        if self.kind == "generic":
            return float(self.epsilon)
        if self.kind == "padding" and isinstance(self.mechanism, (ShiftedTruncatedDiscreteLaplace, DiscreteLaplace)):
            return float(Fraction(self.sensitivity) / self.mechanism.scale)
        return None

    def _require_leaf(self) -> None:
        if not self.is_leaf:
            raise ValueError("this property is defined for leaf events only; use leaves()")

    # -- description ----------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """A JSON-serialisable description (stored in the ledger, shown by EXPLAIN)."""
        if not self.is_leaf:
            return {"kind": "composed", "query": self.query,
                    "children": [{"count": n, "event": c.describe()} for c, n in self.children]}
        d: dict[str, Any] = {"kind": self.kind}
        if self.mechanism is not None:
            m = self.mechanism
            d["mechanism"] = type(m).__name__
            for attr in ("scale", "sigma2", "shift"):
                if hasattr(m, attr):
                    v = getattr(m, attr)
                    d[attr] = str(v) if isinstance(v, Fraction) else v
            if hasattr(m, "shift"):
                d["support"] = [0, 2 * m.shift]
            d["sensitivity"] = self.sensitivity
        for attr in ("epsilon", "delta", "mu", "nominal_delta", "operator", "query"):
            v = getattr(self, attr)
            if v is not None:
                d[attr] = v
        if self.curve is not None:
            d["curve"] = [list(p) for p in self.curve]
        if self.curve_fn is not None:
            d["curve"] = repr(self.curve_fn)
        return d

    def __repr__(self) -> str:
        if not self.is_leaf:
            return f"PrivacyEvent.composed({self.count} leaks, query={self.query!r})"
        desc = self.describe()
        desc.pop("kind")
        inner = ", ".join(f"{k}={v!r}" for k, v in desc.items())
        return f"PrivacyEvent.{self.kind}({inner})"


@dataclass(frozen=True)
class _ZcdpCurve:
    """``alpha -> rho * alpha``: the Rényi curve of a rho-zCDP / zNPDO leak."""

    rho: float

    def __call__(self, alpha: float) -> float:
        return self.rho * alpha

    def __repr__(self) -> str:
        return f"zcdp(rho={self.rho})"
