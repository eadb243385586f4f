"""Sharded canonical storage: each private table split into ``P`` slot arrays by privacy unit
(docs/distributed.md §Sharded storage).

``db.shard(workers=P)`` is an owner action.  It reads every private table's slot array,
labels each real slot with its privacy unit (:mod:`dodb.storage.units`), and sends every
row to shard ``H_K(unit) mod P`` with ``H_K`` a keyed BLAKE2b under a secret key ``K``
kept in the database, so all of one unit's rows — in every table — share a shard.  The
split is the DO exchange (:mod:`dodb.operators.exchange`): each shard's capacity is its
real row count plus one-sided noise, released and charged to the ledger as an owner event
per table before anything is written; each shard is then shuffled by an oblivious random
permutation, so within a shard real rows sit in uniformly random slots as in the
canonical table.  Shards are Arrow IPC files beside the database (a folder of their own
for an in-memory one), written under fresh names and verified on every read against the
checksums recorded, with the table versions they were cut from, in ``dodb_meta.shards``.
A shard set older than any table's data is refused by the executors.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Hashable

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from ..accountant import PrivacyEvent
from ..duckcalls import transaction
from ..errors import CatalogError, DodbError, StaleShardsError
from ..operators.context import ExecContext
from ..operators.exchange import exchange, exchange_sensitivity
from ..operators.table import Column, PaddedTable
from ..planner.catalog import META_SCHEMA, Catalog, TableInfo
from .canonical import column_checksums, read_slots, shuffle_slots
from .layout import SLOT, LogicalColumn, from_physical, physical_columns, to_physical
from .units import slot_units

__all__ = ["ShardSet", "TableShards", "StaleShardsError", "read_manifest", "read_shard", "write_shards",
           "shard_of", "MAX_WORKERS", "SHARDS_TABLE", "manifest_rows", "write_arrow_file"]

SHARDS_TABLE = "shards"
SET_ROW = ""  # the row of dodb_meta.shards holding the worker count and the key
MAX_WORKERS = 256


@dataclass(frozen=True)
class TableShards:
    table: str
    version: int                      # the canonical table version the shards were cut from
    capacities: tuple[int, ...]       # public slot count per shard (released and charged)
    checksums: tuple[dict, ...]       # per shard, per stored column
    files: tuple[str, ...]            # file names inside the shard folder
    charge_id: int | None = None


@dataclass(frozen=True)
class ShardSet:
    """The shard layout of every private table: ``workers`` shards each, in ``directory``."""

    workers: int
    directory: str
    tables: dict[str, TableShards]

    def check_current(self, catalog: Catalog, tables: list[str], workers: int) -> None:
        """Refuse shards cut for another worker count or from another version of any of ``tables``."""
        if self.workers != workers:
            raise StaleShardsError(f"the database is sharded for {self.workers} workers, the cluster has "
                                   f"{workers}: the owner runs db.shard(workers={workers})")
        for t in sorted(tables):
            info = catalog.table(t)
            have = self.tables.get(t)
            if have is None:
                raise StaleShardsError(f"{t!r} has no shards: the owner runs db.shard(workers={self.workers}) "
                                       "after protecting it")
            if have.version != info.version:
                raise StaleShardsError(f"the shards of {t!r} were cut from an older version of its data: the owner "
                                       f"runs db.shard(workers={self.workers}) again")


def shard_of(label: Hashable, key: bytes, workers: int) -> int:
    """Shard of a privacy unit: a keyed hash of its label (secret key: the observer cannot
    tell where a unit, or its replacement, lands; docs/distributed.md §Sharded storage).

    >>> shard_of(("unit", 7), b"k" * 32, 4) == shard_of(("unit", 7), b"k" * 32, 4)
    True
    """
    digest = hashlib.blake2b(repr(label).encode(), key=key, digest_size=8).digest()
    return int.from_bytes(digest, "little") % workers


def _database_path(con: duckdb.DuckDBPyConnection) -> str | None:
    rows = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    path = rows[0][0] if rows else None
    return path or None


def shard_directory(con: duckdb.DuckDBPyConnection, fallback: str | None = None) -> Path:
    """``<database file>.shards`` beside the file; ``fallback`` (a temporary folder) in memory."""
    path = _database_path(con)
    if path is None:
        if fallback is None:
            raise DodbError("an in-memory database keeps its shards in a temporary folder it was not given")
        return Path(fallback)
    return Path(path + ".shards")


def _ensure_table(cur) -> None:
    cur.execute(f"CREATE SCHEMA IF NOT EXISTS {META_SCHEMA}").fetchall()
    cur.execute(f"CREATE TABLE IF NOT EXISTS {META_SCHEMA}.{SHARDS_TABLE} "
                "(table_name VARCHAR PRIMARY KEY, spec VARCHAR NOT NULL)").fetchall()


def manifest_rows(con) -> dict[str, dict]:
    """The rows of ``dodb_meta.shards`` (table name -> its spec; ``""`` -> workers and key)."""
    cur = con.cursor()
    try:
        exists = cur.execute("SELECT count(*) FROM duckdb_tables() WHERE schema_name = ? AND table_name = ?",
                             [META_SCHEMA, SHARDS_TABLE]).fetchall()[0][0]
        if not exists:
            return {}
        return {t: json.loads(s) for t, s in cur.execute(
            f"SELECT table_name, spec FROM {META_SCHEMA}.{SHARDS_TABLE}").fetchall()}
    finally:
        cur.close()


def read_manifest(con, directory: Path) -> ShardSet | None:
    """The shard set recorded in the database, or None when the owner never sharded it."""
    rows = manifest_rows(con)
    head = rows.pop(SET_ROW, None)
    if head is None:
        return None
    tables = {t: TableShards(t, int(r["version"]), tuple(r["capacities"]), tuple(r["checksums"]), tuple(r["files"]),
                             r.get("charge_id")) for t, r in rows.items()}
    return ShardSet(int(head["workers"]), str(directory), tables)


def _key(con) -> bytes | None:
    head = manifest_rows(con).get(SET_ROW)
    return None if head is None else bytes.fromhex(head["key"])


def read_shard(shards: ShardSet, info: TableInfo, p: int, cols: list[LogicalColumn]) -> tuple[np.ndarray, dict[str, Column]]:
    """Shard ``p`` of ``info``'s table, the columns ``cols``: every slot, verified."""
    ts = shards.tables[info.name]
    path = Path(shards.directory) / ts.files[p]
    try:
        with pa.memory_map(str(path)) as source:
            data = ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid) as e:
        raise CatalogError(f"shard {p} of {info.name!r} cannot be read ({e}); the owner runs db.shard() again") \
            from None
    capacity = ts.capacities[p]
    wanted = [n for n, _ in physical_columns(cols)]
    if data.num_rows != capacity or not np.array_equal(data.column(SLOT).to_numpy(), np.arange(capacity)):
        raise CatalogError(f"shard {p} of {info.name!r} was changed outside dodb; the owner runs db.shard() again")
    got = column_checksums(data.select([n for n in wanted if n != SLOT]))
    if any(ts.checksums[p].get(n) != v for n, v in got.items()):
        raise CatalogError(f"shard {p} of {info.name!r} was changed outside dodb; the owner runs db.shard() again")
    return from_physical(data, cols, capacity)


def write_arrow_file(directory: Path, name: str, data: pa.Table) -> None:
    """``data`` as the Arrow IPC file ``directory/name``, written under a fresh name and renamed."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".arrow")
    os.close(fd)
    try:
        with pa.OSFile(tmp, "wb") as sink, ipc.new_file(sink, data.schema) as writer:
            writer.write_table(data)
        os.replace(tmp, directory / name)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_shards(db, workers: int, *, epsilon: float, delta: float, directory: Path) -> list[dict]:
    """Cut every private table into ``workers`` shards (module doc); returns one report per table.

    Owner action: the shard sizes are charged as one owner charge, one event per table of
    sensitivity :func:`~dodb.operators.exchange.exchange_sensitivity` of its stability,
    before any file is written; nothing is charged if the arguments are refused.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise DodbError(f"workers must be an integer from 1 to {MAX_WORKERS}, got {workers!r}")
    catalog: Catalog = db.catalog
    catalog.refresh(functions=False)
    private = sorted((t for t, i in catalog.tables.items() if i.private), key=lambda t: len(catalog.unit_path(t)))
    if not private:
        raise DodbError("the database has no protected table to shard")
    key = _key(db.con) or db._rng.getrandbits(256).to_bytes(32, "little")
    slots: dict[str, tuple[np.ndarray, dict[str, Column]]] = {}
    cur = db.con.cursor()
    try:
        for t in private:
            info = catalog.table(t)
            slots[t] = read_slots(cur, t, info.logical_columns, int(info.capacity), info.checksums)
    finally:
        cur.close()

    def values(t: str, c: str) -> list:
        real, cols = slots[t]
        arr = cols[c].to_arrow().to_pylist()
        return [v if (r and ok) else None for v, r, ok in zip(arr, real, cols[c].valid)]

    units = slot_units(private, lambda t: catalog.table(t).parent, lambda t: catalog.table(t).privacy_unit,
                       values, lambda t: slots[t][0])
    eps_i, delta_i = epsilon / len(private), delta / len(private)
    sens = {t: exchange_sensitivity(catalog.stability(t), db.neighbour) for t in private}
    ctx = ExecContext(mode="do", rng=db._rng, neighbour=db.neighbour)
    events = [PrivacyEvent.padding(mechanism=ctx.mechanism(eps_i, delta_i, sens[t]), sensitivity=sens[t],
                                   operator=f"shard:{t}:capacities") for t in private]
    charge = db.ledger.admit(events, sql=f"SHARD workers={workers}", operators=[e.operator for e in events],
                             delta=delta, neighbour=db.neighbour, kind="owner")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        stamp = f"{charge.query_id}"
        specs, reports = {}, []
        for t in private:
            info = catalog.table(t)
            real, cols = slots[t]
            names = [c.name for c in info.logical_columns]
            table = PaddedTable(names, [cols[n] for n in names], real.copy(), catalog.stability(t), aligned=True)
            dest = np.array([0 if u is None else shard_of(u, key, workers) for u in units[t]], dtype=np.int64)
            ex = exchange(table, dest, workers, epsilon=eps_i, delta=delta_i, ctx=ctx)
            files, checksums = [], []
            for p, block in enumerate(ex.blocks):
                data = to_physical(shuffle_slots(block, db._rng), info.logical_columns)
                name = f"{t}.{stamp}.{p}.arrow"
                write_arrow_file(directory, name, data)
                files.append(name)
                checksums.append(column_checksums(data.drop_columns([SLOT])))
            specs[t] = {"version": info.version, "capacities": ex.sizes, "checksums": checksums, "files": files,
                        "charge_id": charge.query_id}
            reports.append({"table": t, "workers": workers, "capacities": list(ex.sizes),
                            "rows": int(real.sum())})
        with transaction(db.con) as w:
            _ensure_table(w)
            old = {r[0] for r in w.execute(f"SELECT table_name FROM {META_SCHEMA}.{SHARDS_TABLE}").fetchall()}
            w.execute(f"DELETE FROM {META_SCHEMA}.{SHARDS_TABLE}").fetchall()
            w.execute(f"INSERT INTO {META_SCHEMA}.{SHARDS_TABLE} VALUES (?, ?)",
                      [SET_ROW, json.dumps({"workers": workers, "key": key.hex()})]).fetchall()
            for t, spec in specs.items():
                w.execute(f"INSERT INTO {META_SCHEMA}.{SHARDS_TABLE} VALUES (?, ?)", [t, json.dumps(spec)]).fetchall()
            db.ledger.record_owner_action(w, "shard", None, old={"tables": sorted(old - {SET_ROW})},
                                          new={"workers": workers, "capacities": {t: s["capacities"]
                                                                                  for t, s in specs.items()}},
                                          charge_id=charge.query_id)
    except BaseException as e:
        charge.fail(e)
        raise
    charge.complete()
    _remove_unlisted(directory, {f for s in specs.values() for f in s["files"]})
    return reports


def _remove_unlisted(directory: Path, keep: set[str]) -> None:
    """Files of earlier shard sets (the manifest no longer names them)."""
    for f in directory.glob("*.arrow"):
        if f.name not in keep:
            try:
                f.unlink()
            except OSError:
                pass
