"""Coupled neighbours of a protected database (docs/neighbours.md, docs/design.md §Audit).

The audit reads every private table's slot array, assigns each real slot to its privacy
unit by following the unit path (a child row belongs to the unit of the parent row its
key names; an orphan to the unit its key names; a NULL key is a unit of its own), and
builds the coupled neighbour **in the same slots**:

* add/remove: unit ``u``'s rows become dummies (zeroed, not real);
* replace: ``u``'s slots receive the rows of a new unit ``v`` — a copy of another unit
  ``w``'s rows with fresh key values — extra rows go to uniformly random dummy slots and
  ``u``'s leftover slots become dummies.  The copy keeps every declared bound (checked).
  With ``extreme=True`` every free column of ``v``'s rows (not a key, the unit, a foreign
  key, a degree-bounded or partition column) then holds, row by row, its type's smallest
  or largest value, ±infinity, NaN, a full-width string of the largest code point, an
  empty string or NULL: values the data never had (:func:`extreme_values`).

This is owner tooling: it reads private rows in the clear, outside the observer model.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Hashable

import duckdb
import numpy as np
import pyarrow as pa

from ..duckcalls import transaction
from ..errors import DodbError
from ..operators.expressions.format import DATE_INFINITY, TS_INFINITY  # DuckDB's ±infinity
from ..operators.table import Column, PaddedTable
from ..planner.catalog import META_SCHEMA, META_TABLE, Catalog, TableInfo
from ..storage.canonical import read_slots, write_slots
from ..storage.units import slot_units

__all__ = ["AuditError", "SlotState", "Neighbourhood"]


class AuditError(DodbError):
    """The audit cannot be run as asked (no private table, no unit to sample, ...)."""


@dataclass
class SlotState:
    """One private table's slots as the audit holds them (owner side)."""

    info: TableInfo
    is_real: np.ndarray
    columns: dict[str, Column]

    def copy(self) -> "SlotState":
        cols = {n: Column(c.type, c.values.copy(), c.valid.copy(), None if c.lengths is None else c.lengths.copy(), huge=c.huge)
                for n, c in self.columns.items()}
        return SlotState(self.info, self.is_real.copy(), cols)

    def values(self, name: str) -> list:
        """The column's Python values per slot (None on NULLs and dummies)."""
        c = self.columns[name]
        arr = c.to_arrow().to_pylist()
        return [v if (r and ok) else None for v, r, ok in zip(arr, self.is_real, c.valid)]

    def clear(self, slots: np.ndarray) -> None:
        """Turn ``slots`` into dummies: not real, zeroed contents (what loading writes)."""
        self.is_real[slots] = False
        for c in self.columns.values():
            c.values[slots] = 0
            c.valid[slots] = False
            if c.lengths is not None:
                c.lengths[slots] = 0

    def move(self, src: "SlotState", i: int, j: int) -> None:
        """Copy slot ``i`` of ``src`` into slot ``j`` of this table (as a real row)."""
        self.is_real[j] = True
        for n, c in self.columns.items():
            s = src.columns[n]
            c.values[j] = s.values[i]
            c.valid[j] = s.valid[i]
            if c.lengths is not None:
                c.lengths[j] = s.lengths[i]


@dataclass
class Neighbourhood:
    """A protected database's private tables, their units, and its coupled neighbours."""

    con: duckdb.DuckDBPyConnection
    catalog: Catalog
    states: dict[str, SlotState] = field(default_factory=dict)
    units: dict[str, list[Hashable]] = field(default_factory=dict)
    _specs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, con: duckdb.DuckDBPyConnection, catalog: Catalog) -> "Neighbourhood":
        catalog.refresh()
        private = [t for t, i in catalog.tables.items() if i.private]
        if not private:
            raise AuditError("the database has no protected table: nothing to audit")
        nb = cls(con, catalog)
        cur = con.cursor()
        try:
            for t in private:
                info = catalog.table(t)
                is_real, columns = read_slots(cur, t, info.logical_columns, int(info.capacity), info.checksums)
                nb.states[t] = SlotState(info, is_real.copy(), columns)
                nb._specs[t] = cur.execute(f"SELECT spec FROM {META_SCHEMA}.{META_TABLE} WHERE table_name = ?",
                                           [t]).fetchall()[0][0]
        finally:
            cur.close()
        nb.units = slot_units(nb.order(), lambda t: nb.states[t].info.parent,
                              lambda t: nb.states[t].info.privacy_unit,
                              lambda t, c: nb.states[t].values(c), lambda t: nb.states[t].is_real)
        return nb

    def order(self) -> list[str]:
        """Private tables, parents before children."""
        return sorted(self.states, key=lambda t: len(self.catalog.unit_path(t)))

    # -- sampling ----------------------------------------------------------------------
    def root_units(self) -> list[Hashable]:
        """Units owning rows, the unit owning most rows first, then in first-slot order."""
        count: dict[Hashable, int] = {}
        for t in self.order():
            for u in self.units[t]:
                if u is not None:
                    count[u] = count.get(u, 0) + 1
        return sorted(count, key=lambda u: -count[u])

    def sample(self, k: int, rng: random.Random) -> list[Hashable]:
        """``k`` distinct units: the busiest one (most rows) and ``k - 1`` uniformly at random."""
        units = self.root_units()
        if not units:
            raise AuditError("no privacy unit owns a row: nothing to audit")
        rest = units[1:]
        return units[:1] + rng.sample(rest, min(k - 1, len(rest)))

    def stress_units(self) -> list[tuple[Hashable, str]]:
        """Units that stress the declared bounds, each with why it was chosen (no repeats):
        the busiest unit; per table, the unit owning its last real slot, a unit at
        ``max_contributions`` (rows per unit, or per parent row for a hop), the unit of a row
        holding the most frequent value of each degree-bounded column; every kind of orphan
        and NULL unit (the first of each per table)."""
        chosen: dict[Hashable, str] = {}

        def pick(u: Hashable | None, why: str) -> None:
            # a unit that stresses two bounds is audited once, with both reasons (which unit
            # owns the last slot depends on the slot placement, drawn at random)
            if u is not None:
                chosen[u] = f"{chosen[u]}; {why}" if u in chosen else why

        units = self.root_units()
        if units:
            pick(units[0], "busiest unit")
        for t in self.order():
            st, owners = self.states[t], self.units[t]
            real = np.flatnonzero(st.is_real)
            if real.size:
                pick(owners[int(real[-1])], f"owns the last real slot of {t}")
            info = st.info
            per = _slots_by_value(st, info.privacy_unit)
            full = next((rows for rows in per.values() if len(rows) >= info.max_contributions), None)
            if full:
                pick(owners[full[0]], f"{info.max_contributions} rows of {t} under one key (max_contributions)")
            for c in sorted(info.max_degree):
                counts = _slots_by_value(st, c)
                if counts:
                    heavy = max(counts.values(), key=len)
                    pick(owners[heavy[0]], f"in the heaviest value of {t}.{c} ({len(heavy)} rows)")
            for kind in ("orphan", "null"):
                u = next((u for u in owners if isinstance(u, tuple) and u and u[0] == kind), None)
                pick(u, f"{'an orphan' if kind == 'orphan' else 'a NULL-key'} unit of {t}")
        return list(chosen.items())

    # -- neighbours --------------------------------------------------------------------
    def removed(self, u: Hashable) -> dict[str, SlotState]:
        """The add/remove neighbour: ``u``'s rows turned into dummies in the same slots."""
        out = {}
        for t, st in self.states.items():
            new = st.copy()
            slots = np.array([i for i, x in enumerate(self.units[t]) if x == u], dtype=np.int64)
            if slots.size:
                new.clear(slots)
            out[t] = new
        return out

    def replaced(self, u: Hashable, rng: random.Random, tries: int = 20,
                 extreme: bool = False) -> dict[str, SlotState]:
        """The replace neighbour: ``u``'s rows replaced by a fresh unit copying another unit's
        rows; ``extreme``: with extreme values in its free columns (module doc)."""
        others = [w for w in self.root_units() if w != u and w[0] == "unit"]
        rng.shuffle(others)
        last = "no other unit to copy"
        for w in others[:tries]:
            try:
                out = self._replace(u, w, rng, extreme)
            except AuditError as e:
                last = str(e)
                continue
            bad = self._violations(out)
            if not bad:
                return out
            last = bad
        raise AuditError(f"cannot build a replace neighbour of unit {u[1]!r}: {last}")

    def _replace(self, u: Hashable, w: Hashable, rng: random.Random, extreme: bool = False) -> dict[str, SlotState]:
        out = {t: st.copy() for t, st in self.states.items()}
        fresh: dict[str, dict[str, dict]] = {}   # table -> column -> old value -> new value
        for t in self.order():
            st, new, info = self.states[t], out[t], self.states[t].info
            mine = [i for i, x in enumerate(self.units[t]) if x == u]
            rows = [i for i, x in enumerate(self.units[t]) if x == w]
            dummies = [i for i in self.free_slots(t, u) if not st.is_real[i]]
            if mine:
                new.clear(np.array(mine, dtype=np.int64))
            extra = max(0, len(rows) - len(mine))
            if extra > len(dummies):
                raise AuditError(f"{t!r} has too few dummy slots for the replacing unit's rows")
            targets = mine[:len(rows)] + rng.sample(dummies, extra)
            remap = self._remapped_columns(t, fresh)
            hop = info.privacy_unit if info.parent is not None and info.privacy_unit in remap else None
            vals = {c: st.values(c) for c in remap}
            fresh[t] = {c: {} for c in remap if c != hop}
            nxt = {}
            for c in fresh[t]:
                present = [v for v in vals[c] if v is not None]
                if present and not isinstance(present[0], int):
                    raise AuditError(f"key column {t}.{c} is not an integer: a fresh unit cannot be made")
                nxt[c] = max(present, default=0) + 1
            for i, j in zip(rows, targets):
                new.move(st, i, j)
                for c in remap:
                    old = vals[c][i]
                    if c == hop:
                        value = fresh[info.parent[0]][info.parent[1]].get(old, old)
                    else:
                        m = fresh[t][c]
                        if old not in m:
                            m[old], nxt[c] = nxt[c], nxt[c] + 1
                        value = m[old]
                    if value is not None:
                        new.columns[c].values[j] = value
            if extreme:
                free = [c for c in st.columns if c not in self._bound_columns(info, remap)]
                for j in targets:
                    for c in free:
                        _set_extreme(new.columns[c], j, rng, nullable=c not in info.not_null)
        return out

    def free_slots(self, t: str, u: Hashable) -> range:
        """Slots of ``t`` where the unit replacing ``u`` may put rows (all of them here; one
        shard's in a sharded database)."""
        return range(len(self.states[t].is_real))

    @staticmethod
    def _bound_columns(info: TableInfo, remap: list[str]) -> set[str]:
        """Columns whose values carry structure the neighbour must keep: the unit and key
        columns, the remapped keys, the parent key, degree-bounded and partition columns."""
        cols = set(remap) | {info.privacy_unit} | {c for key in info.keys for c in key} | set(info.max_degree)
        if info.parent is not None:
            cols.add(info.privacy_unit)
        if info.partition_by:
            cols.add(info.partition_by)
        return cols

    def _remapped_columns(self, t: str, fresh: dict) -> list[str]:
        """Columns whose values a copied unit must not share with the original: the unit
        column of a root table, single-column integer keys, and foreign keys into remapped
        parent keys.  A multi-column key that keeps none of them cannot be copied."""
        info = self.catalog.table(t)
        cols = [info.privacy_unit] if info.parent is None else []
        if info.parent is not None and info.parent[1] in fresh.get(info.parent[0], {}):
            cols.append(info.privacy_unit)
        for key in info.keys:
            if len(key) == 1 and key[0] not in cols:
                cols.append(key[0])
            elif len(key) > 1 and not set(key) & set(cols):
                raise AuditError(f"key {key} of {t!r} would repeat in the copied unit")
        return cols

    def _violations(self, states: dict[str, SlotState]) -> str:
        """'' if every declared bound holds in ``states``, else the first violation."""
        for t, st in states.items():
            info = st.info
            for c, bound in [*info.max_degree.items(), *[(k[0], 1) for k in info.keys if len(k) == 1]]:
                vals = [v for v in st.values(c) if v is not None]
                if vals:
                    most = max(np.unique(np.array(vals, dtype=object), return_counts=True)[1])
                    if most > bound:
                        return f"{t}.{c} would have {most} rows per value (bound {bound})"
        return ""

    # -- writing -----------------------------------------------------------------------
    def write(self, states: dict[str, SlotState]) -> None:
        """Store ``states`` as the database's private tables (same capacities), in one transaction."""
        with transaction(self.con) as w:
            for t, st in states.items():
                slots = PaddedTable(list(st.columns), list(st.columns.values()), st.is_real, 0)
                cols = st.info.logical_columns
                spec = json.loads(self._specs[t])
                spec["checksums"] = write_slots(w, t, [c for c in cols if c.name in st.columns], slots)
                w.execute(f"UPDATE {META_SCHEMA}.{META_TABLE} SET spec = ? WHERE table_name = ?",
                          [json.dumps(spec), t]).fetchall()
        self.catalog.refresh()
        # every run after a write starts with no slot arrays kept (docs/design.md §Slot cache):
        # whether a scan is served from memory depends on which storage versions earlier
        # queries read, the same on both sides of a pair only if both start empty
        self.catalog.slot_cache.clear()

    def restore(self) -> None:
        """Put the original slots back."""
        self.write(self.states)


_DATE_EDGES = (-719162, 2932896)  # 0001-01-01 and 9999-12-31 in days since 1970
_US_PER_DAY = 86_400_000_000
_LARGEST_CHAR = "\U0010ffff".encode()  # the largest code point, four bytes in UTF-8


def extreme_values(c: Column) -> list:
    """Extreme lane values of ``c``'s type: ``(values, length)`` pairs as stored (``length``
    for strings only), the type's ends, ±infinity and NaN where it has them."""
    t = c.type
    if c.lengths is not None:
        w = int(c.values.shape[1])
        full = (_LARGEST_CHAR * (w // 4) + b"\x7f" * (w % 4))[:w]
        return [(np.frombuffer(full, np.uint8), w), (np.zeros(w, np.uint8), 0)]
    if pa.types.is_decimal(t):
        top = 10 ** t.precision - 1
        return [_words(top, c.values.ndim), _words(-top, c.values.ndim), _words(0, c.values.ndim)]
    if pa.types.is_boolean(t):
        return [True, False]
    if pa.types.is_floating(t):
        big = float(np.finfo(c.values.dtype).max)
        return [big, -big, float("inf"), float("-inf"), float("nan"), -0.0]
    if pa.types.is_date(t):
        return [DATE_INFINITY, -DATE_INFINITY, *_DATE_EDGES]
    if pa.types.is_timestamp(t):
        return [TS_INFINITY, -TS_INFINITY, _DATE_EDGES[0] * _US_PER_DAY, (_DATE_EDGES[1] + 1) * _US_PER_DAY - 1]
    if np.issubdtype(c.values.dtype, np.integer):
        info = np.iinfo(c.values.dtype)
        return [int(info.min), int(info.max), 0]
    return []  # a type without an ordering to stress: left as copied


def _words(v: int, ndim: int):
    """A DECIMAL's unscaled value as its stored lanes: two's-complement (low, high) words, or one word."""
    u = v & ((1 << 128) - 1)
    if ndim == 1:
        return np.int64(v)
    return np.array([u & ((1 << 64) - 1), u >> 64], dtype=np.uint64)


def _set_extreme(c: Column, j: int, rng: random.Random, nullable: bool) -> None:
    """Slot ``j`` of ``c`` gets one extreme value, or NULL (a nullable column, one time in four)."""
    choices = extreme_values(c)
    if nullable and (not choices or rng.random() < 0.25):
        c.values[j] = 0
        c.valid[j] = False
        if c.lengths is not None:
            c.lengths[j] = 0
        return
    if not choices:
        return
    v = choices[rng.randrange(len(choices))]
    c.valid[j] = True
    if c.lengths is not None:
        c.values[j], c.lengths[j] = v
    else:
        c.values[j] = v


def _slots_by_value(st: SlotState, column: str) -> dict[Any, list[int]]:
    """The real slots holding each non-NULL value of ``column``, in slot order."""
    out: dict[Any, list[int]] = {}
    for i, v in enumerate(st.values(column)):
        if v is not None:
            out.setdefault(v, []).append(i)
    return out
