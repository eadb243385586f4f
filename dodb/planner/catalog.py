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


PRIVATE_SCHEMA = "dodb_private"


@dataclass
class TableInfo:
    name: str
    columns: dict[str, str]                  # column -> DuckDB type
    schema: str | None = None                # None: the connection's current schema
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
            "SELECT table_schema = current_schema(), table_name, column_name, data_type, is_nullable "
            "FROM information_schema.columns WHERE table_schema = current_schema() OR table_schema = ? "
            "ORDER BY table_schema, table_name, ordinal_position", [PRIVATE_SCHEMA]).fetchall()
        tables: dict[str, TableInfo] = {}
        # guarded private tables live in dodb_private; a same-named table there wins
        for in_main, t, c, ty, nullable in sorted(rows, key=lambda r: r[0]):
            schema = None if in_main else PRIVATE_SCHEMA
            info = tables.get(t)
            if info is None or info.schema != schema:
                if info is not None and schema is None:
                    continue
                info = tables[t] = TableInfo(t, {}, schema=schema)
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

    @property
    def has_private_schema(self) -> bool:
        return any(i.schema == PRIVATE_SCHEMA for i in self.tables.values())

    def reader(self) -> duckdb.DuckDBPyConnection:
        """A cursor on the same database that also resolves guarded tables (DESCRIBE etc.)."""
        cur = self.con.cursor()
        if self.has_private_schema:
            cur.execute("SET search_path = 'main,dodb_private'")
        return cur

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

def _max_per_value(con: duckdb.DuckDBPyConnection, table: str, cols: list[str], schema: str | None = None) -> int:
    return int(con.execute(sqlbuild.max_rows_per_value(table, cols, schema)).fetchall()[0][0])


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
            max_degree[c] = d = max(1, _max_per_value(con, table, [c], info.schema))
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
        orphans = con.execute(sqlbuild.count_orphans(table, privacy_unit, ptable, pkey, info.schema, pinfo.schema)).fetchall()[0][0]
        if orphans:
            raise CatalogError(f"{orphans} rows of {table!r} have no parent row in {ptable!r}")
    nulls = con.execute(sqlbuild.count_where_null(table, privacy_unit, info.schema)).fetchall()[0][0]
    if nulls:
        raise CatalogError(f"{nulls} rows of {table!r} have a NULL privacy unit {privacy_unit!r}")
    actual = _max_per_value(con, table, [privacy_unit], info.schema)
    if max_contributions is None:
        max_contributions = max(1, actual)
    if not isinstance(max_contributions, int) or max_contributions < 1:
        raise CatalogError("max_contributions must be a positive integer")
    if actual > max_contributions:
        raise CatalogError(f"{table!r}: a privacy unit has {actual} rows, more than max_contributions="
                           f"{max_contributions}")
    for k in keys:
        if _max_per_value(con, table, k, info.schema) > 1:
            raise CatalogError(f"{table!r}: declared key {k} is not unique")
    for c, d in max_degree.items():
        got = _max_per_value(con, table, [c], info.schema)
        if got > d:
            raise CatalogError(f"{table!r}: {got} rows share one value of {c!r}, more than max_degree={d}")
    widths = {}
    for c, ty in info.columns.items():
        if ty.upper().startswith(("VARCHAR", "BLOB", "TEXT")):
            # byte length: strlen for strings (a ::BLOB cast rejects non-ASCII text)
            fn = "octet_length" if ty.upper().startswith("BLOB") else "strlen"
            widths[c] = max(1, int(con.execute(sqlbuild.max_length(table, c, fn, info.schema)).fetchall()[0][0]))
    rows = int(con.execute(sqlbuild.count_rows(table, info.schema)).fetchall()[0][0])
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {META_SCHEMA}")
    con.execute(f"CREATE TABLE IF NOT EXISTS {META_SCHEMA}.protected (table_name VARCHAR PRIMARY KEY, "
                "privacy_unit VARCHAR, parent_table VARCHAR, parent_key VARCHAR, max_contributions BIGINT, "
                "keys VARCHAR, max_degree VARCHAR, widths VARCHAR, verified_rows BIGINT)")
    con.execute(f"INSERT OR REPLACE INTO {META_SCHEMA}.protected VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [table, privacy_unit, parent[0] if parent else None, parent[1] if parent else None,
                 max_contributions, json.dumps(keys), json.dumps(max_degree), json.dumps(widths), rows])
    catalog.refresh()
    return catalog.table(table)


def guard_table(catalog: Catalog, table: str) -> None:
    """Move a protected table into the ``dodb_private`` schema (same database file).

    Plain DuckDB on the same connection then no longer finds it by its name (``SELECT *
    FROM orders`` fails), so it cannot be read *by accident*; dodb keeps reading it.
    This is not access control: ``dodb_private.orders`` stays readable on purpose.
    The move keeps the table's definition (types, NOT NULL, keys) and is atomic.
    """
    import sqlglot
    from sqlglot import exp

    info = catalog.table(table)
    if info.schema == PRIVATE_SCHEMA:
        return
    con = catalog.con
    ddl = con.execute("SELECT sql FROM duckdb_tables() WHERE schema_name = current_schema() AND table_name = ?",
                      [table]).fetchall()
    if not ddl:
        raise CatalogError(f"cannot guard {table!r}: it is not a base table of this schema")
    create = sqlglot.parse_one(ddl[0][0], read="duckdb")
    target = create.find(exp.Table)
    target.set("db", exp.to_identifier(PRIVATE_SCHEMA, quoted=True))
    src, dst = sqlbuild.table(table), sqlbuild.table(table, PRIVATE_SCHEMA)
    con.execute("BEGIN TRANSACTION").fetchall()
    try:
        con.execute(sqlbuild.create_schema(PRIVATE_SCHEMA)).fetchall()
        con.execute(create.sql(dialect="duckdb")).fetchall()
        con.execute(sqlbuild.render(exp.insert(exp.select(exp.Star()).from_(src), dst))).fetchall()
        con.execute(sqlbuild.render(exp.Drop(tables=[src], kind="TABLE"))).fetchall()
        con.execute("COMMIT").fetchall()
    except BaseException:
        con.execute("ROLLBACK").fetchall()
        raise
    catalog.refresh()
