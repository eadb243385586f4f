"""Datasets where one person appears in at most ``c`` of ``k`` (paper 002, §V-A).

Hartmann, Bindschaedler and West generalise the composition experiment to the choice
of databases each mechanism runs on.  If the owner knows that one person's data is in at
most ``c`` of the ``k`` datasets, a change of one person touches at most ``c`` of them
(add/remove, their Example 1: ``max_{i_1<…<i_c} CompGuarantee(M_{i_1}, …, M_{i_c})``) or
``2c`` (replace/bounded: two vectors with ``c`` one-entries at different positions);
``c = 1`` is their Example 2 (``max_i`` and ``max_{i≠j}``).  ``CompGuarantee`` is any
composition theorem compatible with the mechanisms, so every method of ``best.py``
applies — the worst ``m``-subset is taken per method, and the smallest result over
methods is the group's guarantee.

The worst subset is found exactly by enumeration when there are at most
``exact_limit`` subsets, or when every dataset carries the same events (any subset is
the worst).  Otherwise a bound that dominates every subset is used: basic composition
with the ``m`` largest per-dataset ε sums and δ sums, and advanced composition
(004 Thm 1.4 form ``sqrt(2 S2 ln 1/δ') + 2 S2``) with the ``m`` largest per-dataset
``S2 = Σ ε²`` — each term is monotone, so the largest terms dominate any subset.

:class:`DatasetGroup` applies this to protected datasets: each dataset's ledger
guarantees its whole budget ``(ε_i, δ_i)`` (its filter), so the group of ``k``
datasets with bound ``c`` is charged the worst ``c`` (or ``2c``) of those budgets.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Iterable, Mapping, Sequence

from ..errors import InvalidParameterError
from .base import EventsLike, as_event
from .best import METHODS, Bound, compose_all
from .events import PrivacyEvent

__all__ = ["ChoiceOfDatabasesAccountant", "DatasetGroup"]


class ChoiceOfDatabasesAccountant:
    """Composes per-dataset events when a person is in at most ``c`` of the datasets (module doc)."""

    name = "choice"
    theorem = "002 §V-A, Examples 1-2"

    def __init__(self, c: int, neighbour: str = "add_remove", methods: Sequence[str] | None = None,
                 exact_limit: int = 2000) -> None:
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise InvalidParameterError(f"c must be a positive integer, got {c!r}")
        if neighbour not in ("add_remove", "replace"):
            raise InvalidParameterError(f"neighbour must be 'add_remove' or 'replace', got {neighbour!r}")
        self.c, self.neighbour = c, neighbour
        self.methods = list(methods) if methods is not None else list(METHODS)
        self.exact_limit = exact_limit
        self._events: dict[str, list[PrivacyEvent]] = {}

    def compose(self, dataset: str, events: EventsLike) -> "ChoiceOfDatabasesAccountant":
        """Add ``events`` run on ``dataset`` (datasets are created on first use)."""
        self._events.setdefault(str(dataset), []).append(as_event(events))
        return self

    @property
    def datasets(self) -> list[str]:
        return sorted(self._events)

    @property
    def touched(self) -> int:
        """How many datasets one change can touch: ``c`` (add/remove) or ``2c`` (replace), at most ``k``."""
        return min(len(self._events), self.c * (1 if self.neighbour == "add_remove" else 2))

    def _event(self, names: Iterable[str]) -> PrivacyEvent:
        return PrivacyEvent.compose([e for n in names for e in self._events[n]])

    def report(self, delta: float) -> dict[str, Bound]:
        """Per method, the worst ``m``-subset's guarantee at total ``delta`` (inf where not applicable)."""
        names, m = self.datasets, self.touched
        if not names:
            raise InvalidParameterError("no dataset has events yet")
        homogeneous = len({tuple(sorted((repr(leaf.privacy_key), k) for leaf, k in self._event([n]).leaves()))
                           for n in names}) == 1
        if homogeneous:
            return dict(compose_all(self._event(names[:m]), delta, self.methods).items())
        if math.comb(len(names), m) <= self.exact_limit:
            worst: dict[str, Bound] = {}
            for subset in itertools.combinations(names, m):
                for k, b in compose_all(self._event(subset), delta, self.methods).items():
                    if k not in worst or b.epsilon > worst[k].epsilon:
                        worst[k] = b
            return worst
        return self._dominating(delta, names, m)

    def _dominating(self, delta: float, names: list[str], m: int) -> dict[str, Bound]:
        eps, s2, dl = [], [], []
        for n in names:
            noms = [(leaf.nominal, k) for leaf, k in self._event([n]).leaves()]
            if any(nom is None for nom, _ in noms):
                return {"basic": Bound("basic", math.inf, delta, note="a leak has no nominal (ε, δ)")}
            eps.append(math.fsum(e * k for (e, _), k in noms))
            s2.append(math.fsum(e * e * k for (e, _), k in noms))
            dl.append(math.fsum(d * k for (_, d), k in noms))

        def top(xs: list[float]) -> float:
            return math.fsum(sorted(xs, reverse=True)[:m])

        out = {}
        e_b, d_b = top(eps), top(dl)
        out["basic"] = Bound("basic", e_b if d_b <= delta else math.inf, d_b, "004 Thm 1.3 (largest m)")
        slack = delta - d_b
        if slack > 0:
            v = top(s2)
            out["advanced"] = Bound("advanced", math.sqrt(2 * v * math.log(1 / slack)) + 2 * v, delta,
                                    "004 Thm 1.4 (largest m)")
        return out

    def get_epsilon(self, delta: float) -> float:
        """The group's guarantee: the smallest worst-subset ε over the methods."""
        return min((b.epsilon for b in self.report(delta).values()), default=math.inf)


class DatasetGroup:
    """``k`` protected datasets (``Database`` handles, database file paths, ledgers or
    ``(ε, δ)`` budgets by name)
    in which one person appears in at most ``c``: the group's guarantee (module doc)."""

    def __init__(self, datasets: Mapping[str, Any], c: int, neighbour: str = "add_remove") -> None:
        if not datasets:
            raise InvalidParameterError("a dataset group needs at least one dataset")
        if c > len(datasets):
            raise InvalidParameterError(f"c={c} is more than the {len(datasets)} datasets of the group")
        self.datasets, self.c, self.neighbour = dict(datasets), c, neighbour

    @staticmethod
    def _budget(d: Any) -> tuple[float, float]:
        if isinstance(d, str):  # a database file: read its ledger's budget without writing
            import dodb

            db = dodb.connect(d, read_only=True)
            try:
                return DatasetGroup._budget(db)
            finally:
                db.close()
        ledger = getattr(d, "ledger", d)
        info = getattr(ledger, "budget", None)
        if info is not None and hasattr(info, "epsilon"):
            return float(info.epsilon), float(info.delta)
        if isinstance(d, (tuple, list)) and len(d) == 2:
            return float(d[0]), float(d[1])
        raise InvalidParameterError(f"cannot read a budget from {d!r} (set the dataset's budget first)")

    def accountant(self) -> ChoiceOfDatabasesAccountant:
        acc = ChoiceOfDatabasesAccountant(self.c, self.neighbour)
        for name, d in self.datasets.items():
            e, dl = self._budget(d)
            acc.compose(name, PrivacyEvent.generic(e, dl, operator=f"dataset:{name}"))
        return acc

    def guarantee(self, delta: float) -> float:
        """The ε the group of datasets guarantees at total ``delta``."""
        return self.accountant().get_epsilon(delta)

    def fits(self, epsilon: float, delta: float) -> bool:
        """Whether the datasets' budgets together stay within the group's ``(epsilon, delta)``."""
        return self.guarantee(delta) <= epsilon * (1 + 1e-12)
