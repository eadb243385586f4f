"""Coupled neighbours of a sharded database (docs/distributed.md §Audit across workers).

The neighbour is built in the shards' own slots: every table's shards side by side form
its slot array (the :class:`~dodb.audit.neighbour.Neighbourhood` logic runs unchanged on
it), a removed unit's rows become dummies where they were, and the unit that replaces
``u`` lands on ``u``'s shard — the coupling of the keyed shard function
(docs/distributed.md §Sharded storage) — in ``u``'s slots and that shard's dummy slots.
Writing a neighbour writes new shard files and points the shard manifest at them; the
original files stay, and :meth:`restore` points the manifest back.
"""
from __future__ import annotations

import json
from typing import Hashable

import duckdb
import numpy as np

from ..duckcalls import transaction

from ..operators.table import Column, PaddedTable
from ..planner.catalog import META_SCHEMA, Catalog
from ..storage.canonical import column_checksums
from ..storage.layout import SLOT, to_physical
from ..storage.shards import SHARDS_TABLE, manifest_rows, read_manifest, read_shard, write_arrow_file
from ..storage.units import slot_units
from .neighbour import AuditError, Neighbourhood, SlotState

__all__ = ["ShardedNeighbourhood"]


class ShardedNeighbourhood(Neighbourhood):
    """A :class:`Neighbourhood` over a database's shards (module doc)."""

    @classmethod
    def read_shards(cls, con: duckdb.DuckDBPyConnection, catalog: Catalog, directory) -> "ShardedNeighbourhood":
        catalog.refresh()
        shards = read_manifest(con, directory)
        if shards is None:
            raise AuditError("the database has no shards to audit on a cluster: run db.shard(workers=P) first")
        nb = cls(con, catalog)
        nb.shards, nb.directory = shards, directory
        nb.bounds = {}
        nb._original = manifest_rows(con)
        for t, ts in shards.tables.items():
            info = catalog.table(t)
            parts = [read_shard(shards, info, p, info.logical_columns) for p in range(shards.workers)]
            is_real = np.concatenate([r for r, _ in parts])
            cols = {}
            for c in info.logical_columns:
                pieces = [cs[c.name] for _, cs in parts]
                cols[c.name] = Column(pieces[0].type, np.concatenate([x.values for x in pieces]),
                                      np.concatenate([x.valid for x in pieces]),
                                      None if pieces[0].lengths is None else np.concatenate([x.lengths for x in pieces]),
                                      huge=pieces[0].huge)
            nb.states[t] = SlotState(info, is_real.copy(), cols)
            edges = np.concatenate([[0], np.cumsum(ts.capacities)]).astype(int)
            nb.bounds[t] = [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]
        nb.units = slot_units(nb.order(), lambda t: nb.states[t].info.parent,
                              lambda t: nb.states[t].info.privacy_unit,
                              lambda t, c: nb.states[t].values(c), lambda t: nb.states[t].is_real)
        return nb

    def shard_of_unit(self, u: Hashable) -> int:
        for t in self.order():
            for i, x in enumerate(self.units[t]):
                if x == u:
                    return next(p for p, (a, b) in enumerate(self.bounds[t]) if a <= i < b)
        raise AuditError(f"no row belongs to the unit {u!r}")

    def free_slots(self, t: str, u: Hashable) -> range:
        a, b = self.bounds[t][self.shard_of_unit(u)]
        return range(a, b)

    def write(self, states: dict[str, SlotState]) -> None:
        rows = {t: dict(r) for t, r in self._original.items()}
        for t, st in states.items():
            info = st.info
            spec = rows[t]
            files, checksums = [], []
            for p, (a, b) in enumerate(self.bounds[t]):
                names = [c.name for c in info.logical_columns]
                cols = [Column(st.columns[n].type, st.columns[n].values[a:b], st.columns[n].valid[a:b],
                               None if st.columns[n].lengths is None else st.columns[n].lengths[a:b],
                               huge=st.columns[n].huge) for n in names]
                data = to_physical(PaddedTable(names, cols, st.is_real[a:b], 0), info.logical_columns)
                name = f"{t}.audit.{p}.arrow"
                write_arrow_file(self.directory, name, data)
                files.append(name)
                checksums.append(column_checksums(data.drop_columns([SLOT])))
            spec["files"], spec["checksums"] = files, checksums
        self._store(rows)

    def restore(self) -> None:
        self._store(self._original)

    def _store(self, rows: dict[str, dict]) -> None:
        with transaction(self.con) as w:
            for t, spec in rows.items():
                w.execute(f"UPDATE {META_SCHEMA}.{SHARDS_TABLE} SET spec = ? WHERE table_name = ?",
                          [json.dumps(spec), t]).fetchall()
