"""The catalog: the schema dodb plans against, and the privacy declarations.

Public tables are DuckDB base tables of the connection's current schema.  A *private*
table was protected (``db.protect``, :mod:`dodb.storage.ingest`): its rows live only in
canonical padded storage (``dodb_private``, :mod:`dodb.storage.canonical`), its logical
schema in ``dodb_meta.private_tables`` and as a zero-row *shadow* table in
``dodb_shadow`` (so DuckDB can bind queries without reading a row), and everything the
planner may use about it is public by construction (docs/threat-model.md §Public):
the declared privacy unit and bounds, public string widths, the capacity (DP-released
or declared) and DP-released degree bounds.  Nothing computed from the private rows
reaches the planner.

A private table names its privacy unit either directly — a column whose value
identifies the unit — or through a foreign-key hop to another private table
(``lineitem.l_orderkey`` → ``orders.o_orderkey``), like Qrlew's privacy-unit paths.
``max_contributions`` bounds rows per unit (direct) or rows per parent row (hop); the
stability of a base scan is the product of the bounds along the path.

Views are recorded with their SQL (planned by expanding them, never run by DuckDB over
private rows); user macros are listed so that the planner can refuse them.
"""
from __future__ import annotations

import itertools
import json
import os
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import duckdb
from sqlglot import exp

from .. import sqlbuild
from ..errors import CatalogError
from ..storage.canonical import PRIVATE_SCHEMA
from ..storage.layout import LogicalColumn
from .memory import physical_memory
from .public_cache import PublicFacts

_versions = itertools.count()  # catalog fingerprints: unique across Catalog objects of a process

__all__ = ["TableInfo", "Catalog", "META_SCHEMA", "SHADOW_SCHEMA", "PRIVATE_SCHEMA", "META_TABLE"]

META_SCHEMA = "dodb_meta"
SHADOW_SCHEMA = "dodb_shadow"
META_TABLE = "private_tables"


@dataclass
class TableInfo:
    name: str
    columns: dict[str, str]                  # column -> DuckDB type (logical)
    schema: str | None = None                # where the rows are: None = current schema, or dodb_private
    not_null: set[str] = field(default_factory=set)
    private: bool = False
    kind: str = "table"                      # 'table' or 'view'
    view_sql: str | None = None              # a view's definition
    privacy_unit: str | None = None           # column identifying the unit (direct) or the FK column (hop)
    parent: tuple[str, str] | None = None     # (parent table, parent key) for a hop
    max_contributions: int = 1
    keys: list[list[str]] = field(default_factory=list)      # declared unique keys
    max_degree: dict[str, int] = field(default_factory=dict)  # column -> public bound on rows per value
    degree_sources: dict[str, str] = field(default_factory=dict)  # column -> 'declared' or 'dp'
    widths: dict[str, int] = field(default_factory=dict)      # public byte widths of strings
    capacity: int | None = None               # public slot count of a private table
    capacity_source: str | None = None        # 'dp' (released and charged) or 'declared'
    capacity_charge: int | None = None        # ledger id of the charge that released it
    checksums: dict[str, int] = field(default_factory=dict)
    version: int = 0                          # bumped by every data change
    policy: dict[str, Any] = field(default_factory=dict)      # orphans / null units handling
    partition_by: str | None = None           # column whose value is the unit's partition (unit table only)

    def degree(self, column: str) -> int | None:
        """Public bound on rows per value of ``column`` (1 for a declared key)."""
        if [column] in self.keys:
            return 1
        if column in self.max_degree:
            return self.max_degree[column]
        if self.privacy_unit == column:  # rows per unit (direct) or per parent row (hop)
            return self.max_contributions
        return None

    @property
    def logical_columns(self) -> list[LogicalColumn]:
        return [LogicalColumn(c, t, c not in self.not_null, self.widths.get(c, 0)) for c, t in self.columns.items()]


SLOT_CACHE_BYTES = 1 << 30  # the least default; DODB_SLOT_CACHE_BYTES overrides (0 turns it off)
SLOT_CACHE_SHARE = 8  # by default a catalog keeps up to 1/8 of physical memory, at least SLOT_CACHE_BYTES


def slot_cache_bytes() -> int:
    """Bytes of decoded private slot arrays (and sorted sides) a catalog keeps between queries:
    ``DODB_SLOT_CACHE_BYTES``, else an eighth of physical memory and at least 1 GiB — a
    table's scan and its sorted side must fit together, or every query sorts again (TPC-H
    Q19 at sf 1: about 1.1 GB for lineitem's six columns, scan and sorted side)."""
    raw = os.environ.get("DODB_SLOT_CACHE_BYTES")
    if not raw:
        total = physical_memory()
        return SLOT_CACHE_BYTES if total is None else max(SLOT_CACHE_BYTES, total // SLOT_CACHE_SHARE)
    try:
        return max(0, int(raw))
    except ValueError:
        raise CatalogError(f"DODB_SLOT_CACHE_BYTES must be a number of bytes, got {raw!r}") from None


_POOL: list[ThreadPoolExecutor] = []
os.register_at_fork(after_in_child=_POOL.clear)  # a forked child has none of the parent's threads


def _functions_pool() -> ThreadPoolExecutor:
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(1, thread_name_prefix="dodb-catalog"))
    return _POOL[0]


def _user_functions(cur: duckdb.DuckDBPyConnection) -> set[str]:
    """Names of every user macro and function a fresh cursor sees (lower case); closes ``cur``."""
    try:
        return {r[0].lower() for r in cur.execute(
            "SELECT DISTINCT function_name FROM duckdb_functions() WHERE NOT internal").fetchall()}
    finally:
        cur.close()


# Every table definition (of every attached database: a view may read any of them) and the
# current schema's views, as DuckDB keeps them (an ALTER rewrites a table's SQL; a re-created
# one has a new oid); with the privacy specs once dodb's meta table exists.  One statement.
_KEY_SQL = (
    "SELECT current_database(), current_schema(), 't', database_name, schema_name, table_name, table_oid, sql "
    "FROM duckdb_tables() UNION ALL "
    "SELECT current_database(), current_schema(), 'v', database_name, schema_name, view_name, view_oid, sql "
    "FROM duckdb_views() WHERE NOT internal AND database_name = current_database() "
    "AND schema_name = current_schema() UNION ALL "
    # the session's time zone: zone-dependent TIMESTAMPTZ operations are planned only in UTC
    "SELECT current_database(), current_schema(), 'z', NULL, NULL, current_setting('TimeZone'), NULL, NULL")
_SPECS_SQL = f"SELECT table_name, spec FROM {META_SCHEMA}.{META_TABLE} ORDER BY table_name"
_KEY_SPECS_SQL = (_KEY_SQL + " UNION ALL SELECT NULL, NULL, 's', NULL, NULL, table_name, NULL, spec "
                  f"FROM {META_SCHEMA}.{META_TABLE}")


def _sorted(rows) -> tuple:
    """Key rows in a fixed order (UNION ALL gives no order)."""
    return tuple(sorted(rows, key=lambda r: tuple("" if v is None else str(v) for v in r)))


class Catalog:
    """Tables of one DuckDB database and their privacy declarations."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self.tables: dict[str, TableInfo] = {}
        self.macros: set[str] = set()
        self.database, self.schema = "memory", "main"  # where public tables live (read in _load)
        self.time_zone = "UTC"  # the connection's TimeZone setting (read in _load)
        # Facts that are pure functions of the catalog as read by the last refresh (e.g. the
        # dry run's zero-row scans): emptied whenever a refresh reads a different catalog.
        self.fingerprint: int | None = None  # a version number of everything the last refresh read
        self._state: tuple | None = None
        self._read: tuple = ()  # what the last refresh read besides the user functions
        self._key: tuple | None = None  # the cheap key of what it read (_KEY_SQL, specs)
        self.schema_cache = PublicFacts()
        # facts of public data, keyed by content fingerprints (planner/public_cache.py)
        self.public_facts = PublicFacts()
        # whole plans of repeated queries (planner/plan_cache.py): keyed by the fingerprint too
        self.plan_cache = PublicFacts(max_entries=64)
        # decoded, verified slot arrays of private tables, keyed by the storage they came from
        # (docs/design.md §Slot cache); weights are bytes
        self.slot_cache = PublicFacts(max_entries=64, max_weight=slot_cache_bytes())
        self.refresh(functions=False)

    # -- loading -----------------------------------------------------------------------
    def refresh(self, functions: bool = True) -> None:
        """Read the catalog again.  ``functions=False`` keeps the user functions of the last
        listing: for callers that plan nothing (loading data), since every query lists them
        again before it is admitted (``settle``; docs/design.md §Planning caches)."""
        self.end_refresh(self.begin_refresh() if functions else None)

    def begin_refresh(self) -> Future:
        """Start reading the user functions on another thread; the caller does other work,
        then :meth:`end_refresh` reads the rest and completes the refresh.  Listing functions
        is the slow part of a refresh (``duckdb_functions()`` builds every built-in's row) and
        DuckDB runs it without the GIL, so it overlaps whatever the caller does meanwhile."""
        cur = self.con.cursor()
        return _functions_pool().submit(_user_functions, cur)

    def end_refresh(self, functions: Future | None) -> None:
        """Read the rest of the catalog; with ``functions`` the listing is waited for and
        taken, with ``None`` the user functions of the last listing are kept for now (the
        caller plans meanwhile, then calls :meth:`settle`)."""
        cur = self.con.cursor()
        try:
            self._load(cur, functions)
        finally:
            cur.close()
            if functions is not None:
                wait([functions])  # never leave the listing running; its error, if any, was raised in _load

    def settle(self, functions: Future) -> bool:
        """Take the listing :meth:`begin_refresh` started after an ``end_refresh(None)``:
        ``True`` if the user functions are the ones the refresh assumed (what was planned
        meanwhile stands), ``False`` if they changed — the catalog now has them and a new
        fingerprint, and the caller plans again (docs/design.md §Planning caches)."""
        macros = functions.result()
        if macros == self.macros:
            return True
        self.macros = macros
        self._fingerprint_state()
        return False

    def _fingerprint_state(self) -> None:
        database, schema, rows, views, specs = self._read
        state = (database, schema, rows, views, tuple(sorted(self.macros)), specs, self.time_zone)
        if state != self._state:  # compared exactly: a new version number for any difference
            self._state = state
            self.schema_cache.clear()
            self.fingerprint = next(_versions)

    def _load(self, cur: duckdb.DuckDBPyConnection, functions: Future | None) -> None:
        # A cheap key first: every table's and view's definition (DuckDB keeps each one's SQL,
        # ALTERs included) and the privacy specs.  When it reads as last time, so would the
        # columns and views below (docs/design.md §Planning caches).
        key, specs = self._read_key(cur)
        if functions is not None:
            self.macros = functions.result()
        if self._key == (key, specs):
            self._fingerprint_state()
            return
        self._key = (key, specs)
        self.database, self.schema = self._where(cur, key)
        self.time_zone = next((str(r[5]) for r in key if r[2] == "z"), "UTC")
        # duckdb_columns()/duckdb_views() rather than information_schema: same facts, 3x faster
        rows = cur.execute(
            "SELECT c.table_name, c.column_name, c.data_type, c.is_nullable, v.view_name IS NOT NULL "
            "FROM duckdb_columns() c LEFT JOIN duckdb_views() v ON v.database_name = c.database_name "
            "AND v.schema_name = c.schema_name AND v.view_name = c.table_name "
            "WHERE c.schema_name = current_schema() AND c.database_name = current_database() "
            "ORDER BY c.table_name, c.column_index").fetchall()
        tables: dict[str, TableInfo] = {}
        for t, c, ty, nullable, is_view in rows:
            info = tables.get(t)
            if info is None:
                info = tables[t] = TableInfo(t, {}, kind="view" if is_view else "table")
            info.columns[c] = ty
            if not nullable:
                info.not_null.add(c)
        views = dict(cur.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal "
                                 "AND schema_name = current_schema() AND database_name = current_database()").fetchall())
        for name, sql in views.items():
            if name in tables:
                tables[name].view_sql = sql
        for name, spec in specs:
            tables[name] = _private_info(name, json.loads(spec))
        self.tables = tables
        self._read = (self.database, self.schema, tuple(rows), tuple(sorted(views.items())), tuple(specs))
        self._fingerprint_state()

    def _read_key(self, cur: duckdb.DuckDBPyConnection) -> tuple[tuple, list]:
        """``(definitions, specs)``: the cheap key of what :meth:`_load` reads (``_KEY_SQL``)."""
        if self._key is not None and self._key[1]:  # the meta table existed: one statement with the specs
            try:
                rows = cur.execute(_KEY_SPECS_SQL).fetchall()
                return _sorted(r for r in rows if r[2] != "s"), sorted((r[5], r[7]) for r in rows if r[2] == "s")
            except duckdb.CatalogException:
                pass  # it was dropped: read without it
        rows = _sorted(cur.execute(_KEY_SQL).fetchall())
        has_meta = any(r[2] == "t" and (r[3], r[4], r[5]) == (r[0], META_SCHEMA, META_TABLE) for r in rows)
        return rows, (cur.execute(_SPECS_SQL).fetchall() if has_meta else [])

    @staticmethod
    def _where(cur: duckdb.DuckDBPyConnection, key: tuple) -> tuple[str, str]:
        """The current database and schema (in every key row; read when there is none)."""
        if key:
            return key[0][0], key[0][1]
        return tuple(cur.execute("SELECT current_database(), current_schema()").fetchall()[0])

    # -- queries -----------------------------------------------------------------------
    def table(self, name: str) -> TableInfo:
        info = self.tables.get(name)
        if info is None:
            raise CatalogError(f"unknown table {name!r}")
        return info

    @property
    def has_private_schema(self) -> bool:
        return any(i.private for i in self.tables.values())

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A fresh connection to the database: it sees no temporary views or macros made on ``con``."""
        return self.con.cursor()

    def relation(self, name: str) -> exp.Table:
        """The fully qualified table holding ``name``'s rows (slot array of a private table)."""
        info = self.table(name)
        if info.private:
            return sqlbuild.table(name, PRIVATE_SCHEMA, self.database)
        if info.kind != "table":
            raise CatalogError(f"{name!r} is a view: dodb expands views, it never reads them as tables")
        return sqlbuild.table(name, self.schema, self.database)

    def shadow(self, name: str) -> exp.Table:
        """The relation a query is bound against: a private table's zero-row shadow, else the table."""
        info = self.table(name)
        return sqlbuild.table(name, SHADOW_SCHEMA, self.database) if info.private else self.relation(name)

    def sqlglot_schema(self) -> dict[str, dict[str, str]]:
        return {t: dict(i.columns) for t, i in self.tables.items() if not t.startswith("dodb_")}

    def stability(self, name: str, _seen: tuple[str, ...] = ()) -> int:
        """Rows of ``name`` one privacy unit can own (0 for public tables)."""
        info = self.table(name)
        if not info.private:
            return 0
        if info.parent is None:
            return info.max_contributions
        if name in _seen:
            raise CatalogError(f"privacy-unit path of {name!r} is cyclic")
        return info.max_contributions * self.stability(info.parent[0], _seen + (name,))

    def listing(self) -> dict[str, Any]:
        """The tables an analyst can name in a query: per table its protection (``private`` or
        ``public``), privacy unit path, public capacity (private tables) and columns with their
        DuckDB types — all public facts of the catalog, never a row count of a private table."""
        out = []
        for name in sorted(self.tables):
            info = self.tables[name]
            if name.startswith("dodb_"):
                continue  # dodb's own bookkeeping, never queryable
            out.append({"name": name, "kind": info.kind, "protection": "private" if info.private else "public",
                        "unit": self.unit_path(name) if info.private else None,
                        "privacy_unit": info.privacy_unit if info.private else None,
                        "capacity": info.capacity if info.private else None,
                        "capacity_source": info.capacity_source if info.private else None,
                        "columns": [{"name": c, "type": t, "nullable": c not in info.not_null}
                                    for c, t in info.columns.items()]})
        return {"database": self.database, "schema": self.schema, "tables": out}

    def unit_path(self, name: str) -> list[str]:
        info = self.table(name)
        path = [name]
        while info.parent is not None:
            path.append(info.parent[0])
            info = self.table(info.parent[0])
        return path

    def rows(self, name: str) -> int:
        """Public size of a table's scan: the capacity of a private table (never its row count)."""
        info = self.table(name)
        if info.private:
            return int(info.capacity)
        cur = self.cursor()
        try:
            return int(cur.execute(sqlbuild.count_rows(self.relation(name))).fetchall()[0][0])
        finally:
            cur.close()

    def describe(self) -> dict[str, Any]:
        return {t: {"private": i.private, "stability": self.stability(t), "unit_path": self.unit_path(t),
                    **({"capacity": i.capacity, "capacity_source": i.capacity_source} if i.private else {})}
                for t, i in self.tables.items()}


def _private_info(name: str, spec: dict[str, Any]) -> TableInfo:
    cols = spec["columns"]
    return TableInfo(
        name, {c["name"]: c["type"] for c in cols}, schema=PRIVATE_SCHEMA,
        not_null={c["name"] for c in cols if not c["nullable"]}, private=True,
        privacy_unit=spec["privacy_unit"], parent=tuple(spec["parent"]) if spec.get("parent") else None,
        max_contributions=int(spec["max_contributions"]), keys=[list(k) for k in spec.get("keys", [])],
        max_degree={k: int(v) for k, v in spec.get("max_degree", {}).items()},
        degree_sources=dict(spec.get("degree_sources", {})),
        widths={c["name"]: int(c["width"]) for c in cols if c.get("width")},
        capacity=int(spec["capacity"]), capacity_source=spec.get("capacity_source"),
        capacity_charge=spec.get("capacity_charge"),
        checksums={k: int(v) for k, v in spec.get("checksums", {}).items()},
        version=int(spec.get("version", 0)), policy=dict(spec.get("policy", {})),
        partition_by=spec.get("partition_by"))
