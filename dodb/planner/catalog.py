"""The catalog: schema read from DuckDB plus dodb's privacy declarations.

A table is *private* when it has been protected (``db.protect``); every other table is
public.  A private table names its privacy unit either directly — a column whose value
identifies the unit (``orders.o_custkey`` → customers) — or through a foreign-key hop to
another private table (``lineitem.l_orderkey`` → ``orders.o_orderkey``), like Qrlew's
privacy-unit paths.  ``max_contributions`` bounds rows per unit (direct) or rows per
parent row (hop).  The stability of a base scan — the rows one privacy unit can own —
is the product of the bounds along the path.

Declarations are kept in ``dodb_meta.protected`` inside the same DuckDB database, so
they travel with the data.  Bounds are verified against the data when declared and
re-verified when the table's row count has changed since (see :meth:`Catalog.verify`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import duckdb

from .. import sqlbuild
from ..errors import CatalogError

__all__ = ["TableInfo", "Catalog", "META_SCHEMA"]

META_SCHEMA = "dodb_meta"


@dataclass
class TableInfo:
    name: str
    columns: dict[str, str]                  # column -> DuckDB type
    not_null: set[str] = field(default_factory=set)
    private: bool = False
    privacy_unit: str | None = None           # column identifying the unit (direct) or the FK column (hop)
    parent: tuple[str, str] | None = None     # (parent table, parent key) for a hop
    max_contributions: int = 1
    keys: list[list[str]] = field(default_factory=list)      # declared unique keys
    max_degree: dict[str, int] = field(default_factory=dict)  # column -> max rows per value
    widths: dict[str, int] = field(default_factory=dict)      # public byte widths of strings
    verified_rows: int | None = None

    def degree(self, column: str) -> int | None:
        """Declared bound on rows per value of ``column`` (1 for a declared key)."""
        if [column] in self.keys:
            return 1
        if column in self.max_degree:
            return self.max_degree[column]
        if self.privacy_unit == column:
            return self.max_contributions
        return None


class Catalog:
    """Tables of one DuckDB database and their privacy declarations."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self.tables: dict[str, TableInfo] = {}
        self.refresh()

    # -- loading -----------------------------------------------------------------------
    def refresh(self) -> None:
        rows = self.con.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position").fetchall()
        tables: dict[str, TableInfo] = {}
        for t, c, ty, nullable in rows:
            info = tables.setdefault(t, TableInfo(t, {}))
            info.columns[c] = ty
            if nullable == "NO":
                info.not_null.add(c)
        self.tables = tables
        if self._has_meta():
            for row in self.con.execute(
                    f"SELECT table_name, privacy_unit, parent_table, parent_key, max_contributions, "
                    f"keys, max_degree, widths, verified_rows FROM {META_SCHEMA}.protected").fetchall():
                name, unit, pt, pk, mc, keys, md, widths, vr = row
                if name not in self.tables:
                    continue  # the table was dropped; its declaration is inert
                info = self.tables[name]
                info.private = True
                info.privacy_unit = unit
                info.parent = (pt, pk) if pt else None
                info.max_contributions = int(mc)
                info.keys = json.loads(keys or "[]")
                info.max_degree = {k: int(v) for k, v in json.loads(md or "{}").items()}
                info.widths = {k: int(v) for k, v in json.loads(widths or "{}").items()}
                info.verified_rows = vr

    def _has_meta(self) -> bool:
        return bool(self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = 'protected'",
            [META_SCHEMA]).fetchall()[0][0])

    # -- queries -----------------------------------------------------------------------
    def table(self, name: str) -> TableInfo:
        info = self.tables.get(name)
        if info is None:
            raise CatalogError(f"unknown table {name!r}")
        return info

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

    def unit_path(self, name: str) -> list[str]:
        info = self.table(name)
        path = [name]
        while info.parent is not None:
            path.append(info.parent[0])
            info = self.table(info.parent[0])
        return path

    def describe(self) -> dict[str, Any]:
        return {t: {"private": i.private, "stability": self.stability(t), "unit_path": self.unit_path(t)}
                for t, i in self.tables.items()}


# -- declaring private tables --------------------------------------------------------------

def _max_per_value(con: duckdb.DuckDBPyConnection, table: str, cols: list[str]) -> int:
    return int(con.execute(sqlbuild.max_rows_per_value(table, cols)).fetchall()[0][0])


def protect_table(catalog: Catalog, table: str, *, privacy_unit: str, parent: tuple[str, str] | None = None,
                  max_contributions: int | None = None, keys: list[list[str]] | None = None,
                  max_degree: dict[str, int] | None = None) -> TableInfo:
    """Declare ``table`` private; verify every bound against the data; persist the declaration.

    ``privacy_unit``: the column identifying the unit, or — with ``parent=(table, key)`` —
    the foreign-key column pointing at a protected parent.  ``max_contributions``: rows
    per unit (or per parent row); computed from the data when omitted (and public from
    then on).  ``keys``: unique column sets; ``max_degree``: rows per value of a column.
    Violated declarations raise :class:`CatalogError` and change nothing.
    """
    con = catalog.con
    info = catalog.table(table)
    if table.startswith("dodb_"):
        raise CatalogError("dodb's own tables cannot be protected")

    def need(col: str, where: TableInfo) -> None:
        if col not in where.columns:
            raise CatalogError(f"table {where.name!r} has no column {col!r}")

    need(privacy_unit, info)
    keys = [list(k) for k in (keys or [])]
    max_degree = dict(max_degree or {})
    for k in keys:
        for c in k:
            need(c, info)
    for c, d in list(max_degree.items()):
        need(c, info)
        if d is None:  # "use the data's maximum" (public from now on, like the widths)
            max_degree[c] = d = max(1, _max_per_value(con, table, [c]))
        if not isinstance(d, int) or d < 1:
            raise CatalogError(f"max_degree for {c!r} must be a positive integer or None (computed)")
    if parent is not None:
        ptable, pkey = parent
        pinfo = catalog.table(ptable)
        if not pinfo.private:
            raise CatalogError(f"parent table {ptable!r} must be protected first")
        need(pkey, pinfo)
        if [pkey] not in pinfo.keys:
            raise CatalogError(f"parent key {ptable}.{pkey} must be a declared key of {ptable!r}")
        orphans = con.execute(sqlbuild.count_orphans(table, privacy_unit, ptable, pkey)).fetchall()[0][0]
        if orphans:
            raise CatalogError(f"{orphans} rows of {table!r} have no parent row in {ptable!r}")
    nulls = con.execute(sqlbuild.count_where_null(table, privacy_unit)).fetchall()[0][0]
    if nulls:
        raise CatalogError(f"{nulls} rows of {table!r} have a NULL privacy unit {privacy_unit!r}")
    actual = _max_per_value(con, table, [privacy_unit])
    if max_contributions is None:
        max_contributions = max(1, actual)
    if not isinstance(max_contributions, int) or max_contributions < 1:
        raise CatalogError("max_contributions must be a positive integer")
    if actual > max_contributions:
        raise CatalogError(f"{table!r}: a privacy unit has {actual} rows, more than max_contributions="
                           f"{max_contributions}")
    for k in keys:
        if _max_per_value(con, table, k) > 1:
            raise CatalogError(f"{table!r}: declared key {k} is not unique")
    for c, d in max_degree.items():
        got = _max_per_value(con, table, [c])
        if got > d:
            raise CatalogError(f"{table!r}: {got} rows share one value of {c!r}, more than max_degree={d}")
    widths = {}
    for c, ty in info.columns.items():
        if ty.upper().startswith(("VARCHAR", "BLOB", "TEXT")):
            # byte length: strlen for strings (a ::BLOB cast rejects non-ASCII text)
            fn = "octet_length" if ty.upper().startswith("BLOB") else "strlen"
            widths[c] = max(1, int(con.execute(sqlbuild.max_length(table, c, fn)).fetchall()[0][0]))
    rows = int(con.execute(sqlbuild.count_rows(table)).fetchall()[0][0])
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {META_SCHEMA}")
    con.execute(f"CREATE TABLE IF NOT EXISTS {META_SCHEMA}.protected (table_name VARCHAR PRIMARY KEY, "
                "privacy_unit VARCHAR, parent_table VARCHAR, parent_key VARCHAR, max_contributions BIGINT, "
                "keys VARCHAR, max_degree VARCHAR, widths VARCHAR, verified_rows BIGINT)")
    con.execute(f"INSERT OR REPLACE INTO {META_SCHEMA}.protected VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [table, privacy_unit, parent[0] if parent else None, parent[1] if parent else None,
                 max_contributions, json.dumps(keys), json.dumps(max_degree), json.dumps(widths), rows])
    catalog.refresh()
    return catalog.table(table)
