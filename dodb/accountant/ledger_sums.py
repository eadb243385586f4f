"""The ledger's summed charges, exact, and kept between admissions (docs/design.md §Ledger).

Admission needs the sums of every earlier charge's coordinates (``ScopedState``).  They
are sums over the ledger's rows, read in the admitting transaction.  Two things here:

* **Exact sums.**  Each sum is kept as Shewchuk's non-overlapping partials, so its value
  is the correctly rounded sum of the stored values whatever their order, the same as
  ``math.fsum`` over all of them.  A sum read from the rows and a sum grown by one charge
  at a time are therefore the same float, bit for bit.
* **Reuse.**  Every charge and every budget or neighbour change bumps ``budget.version``
  in its transaction (``Ledger.admit``, ``set_budget``, ``set_neighbour``), and nothing
  else writes the charge tables.  So the sums as of version ``v`` are a function of ``v``:
  an admission that bumps the version from ``v`` to ``v + 1`` may take the sums it kept
  at ``v`` and add its own charge, instead of summing the rows again.  Any other writer
  (another session or process) moves the version by more than one, and the rows are
  read afresh.  The reuse is only a cache: both ways give identical sums.

>>> s = ExactSum(); [s.add(x) for x in (1e16, 1.0, -1e16)] and s.value()
1.0
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import duckdb

from .errors import Budget
from .scopes import ScopedState

__all__ = ["ExactSum", "LedgerSums", "read_sums", "CAP", "finite"]

CAP = 1e250  # stored coordinates are capped so no sum meets inf (an uncapped cost is infinite anyway)


def finite(v: float | None) -> float:
    """A summed coordinate as admission reads it: capped or undefined sums are infinite."""
    return math.inf if v is None or math.isnan(v) or v >= CAP else float(v)


class ExactSum:
    """A float sum kept exactly as non-overlapping partials (Shewchuk; ``math.fsum``'s own)."""

    __slots__ = ("partials", "special")

    def __init__(self, values: Iterable[float] = ()) -> None:
        self.partials: list[float] = []
        self.special = 0.0  # inf or nan seen (no partial arithmetic with them)
        for v in values:
            self.add(v)

    def add(self, x: float) -> None:
        x = float(x)
        if not math.isfinite(x):
            self.special += x
            return
        i = 0
        for y in self.partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                self.partials[i] = lo
                i += 1
            x = hi
        if not math.isfinite(x):  # the exact sum left the float range
            self.special += x
            x = 0.0
        self.partials[i:] = [x]

    def value(self) -> float:
        return self.special if self.special else math.fsum(self.partials)

    def __deepcopy__(self, memo) -> "ExactSum":
        out = ExactSum()
        out.partials, out.special = list(self.partials), self.special
        return out


def _sums(values: Iterable[float]) -> ExactSum:
    return ExactSum(v for v in values if v is not None)


@dataclass
class LedgerSums:
    """One account's summed charges as of one budget version (what ``ScopedState`` holds,
    kept exactly).  ``next_query_id`` is the ledger's next query id at that version."""

    coords: dict[str, ExactSum] = field(default_factory=dict)
    parts: dict[str, dict[str, ExactSum]] = field(default_factory=dict)
    epsilon: ExactSum = field(default_factory=ExactSum)
    delta: ExactSum = field(default_factory=ExactSum)
    part_epsilon: dict[str, ExactSum] = field(default_factory=dict)
    part_delta: dict[str, ExactSum] = field(default_factory=dict)
    next_query_id: int = 1

    def totals(self) -> dict[str, float]:
        """The global coordinates (``ledger_cost`` summed)."""
        return {k: finite(s.value()) for k, s in self.coords.items()}

    def state(self) -> ScopedState:
        return ScopedState(
            global_totals=self.totals(),
            parts={p: {k: finite(s.value()) for k, s in c.items()} for p, c in self.parts.items()},
            global_sums=Budget(self.epsilon.value(), self.delta.value()),
            part_sums={p: Budget(self.part_epsilon[p].value(), self.part_delta[p].value())
                       for p in self.part_epsilon})

    def next_query(self) -> "LedgerSums":
        """These sums after a charge that is not the dataset account's (an analyst session's)."""
        out = copy.deepcopy(self)
        out.next_query_id += 1
        return out

    def charged(self, cost: Mapping[str, float], partitions: frozenset[str] | None, epsilon: float,
                delta: float) -> "LedgerSums":
        """These sums with one more charge of the dataset account, as ``admit`` writes it."""
        out = copy.deepcopy(self)
        values = {k: min(float(v), CAP) for k, v in cost.items()}
        if partitions is None:
            for k, v in values.items():
                out.coords.setdefault(k, ExactSum()).add(v)
            out.epsilon.add(epsilon)
            out.delta.add(delta)
        else:
            for p in partitions:
                for k, v in values.items():
                    out.parts.setdefault(p, {}).setdefault(k, ExactSum()).add(v)
                out.part_epsilon.setdefault(p, ExactSum()).add(epsilon)
                out.part_delta.setdefault(p, ExactSum()).add(delta)
        out.next_query_id += 1
        return out


def read_sums(cur: duckdb.DuckDBPyConnection, schema: str, account: str, scoped: bool,
              run) -> LedgerSums:
    """Sum one account's charges from the ledger's rows ('' is the dataset; ``scopes.py``).
    ``scoped``: whether the ledger has the scoped-cost table; ``run`` executes a statement."""
    s = schema
    out = LedgerSums(next_query_id=run(cur, f"SELECT coalesce(max(query_id), 0) + 1 FROM {s}.ledger")[0][0])
    if account == "":
        out.coords = {k: _sums(v) for k, v in run(cur, f"SELECT coord, list(value) FROM {s}.ledger_cost GROUP BY coord")}
        skip = f"WHERE query_id NOT IN (SELECT query_id FROM {s}.ledger_scoped_cost)" if scoped else ""
        e, d = run(cur, f"SELECT list(epsilon), list(delta) FROM {s}.ledger {skip}")[0]
        out.epsilon, out.delta = _sums(e or ()), _sums(d or ())
    if not scoped:
        return out
    for part, coord, v in run(cur, f"SELECT part, coord, list(value) FROM {s}.ledger_scoped_cost "
                                   "WHERE account = ? GROUP BY part, coord", [account]):
        target = out.coords if part == "" else out.parts.setdefault(part, {})
        target[coord] = _sums(v)
    for part, e, d in run(cur, f"SELECT s.part, list(l.epsilon), list(l.delta) FROM {s}.ledger l JOIN "
                               f"(SELECT DISTINCT query_id, part FROM {s}.ledger_scoped_cost "
                               "WHERE account = ?) s USING (query_id) GROUP BY s.part", [account]):
        if part == "":
            out.epsilon, out.delta = _sums(e), _sums(d)
        else:
            out.part_epsilon[part], out.part_delta[part] = _sums(e), _sums(d)
    return out
