"""Checks of a ``partition_by`` declaration (docs/design.md §Partitions).

The partition of a privacy unit must be a *public function of the unit*: every row of
one unit carries the same partition value, so a neighbouring change (one unit added,
removed or replaced) touches exactly one partition (two under replace).  This is the
``p``-dependency hypothesis of paper 000, Thm IV.11 / Cor IV.13.  A unit keeps its partition
for the life of the dataset: charges confined to its old partition and to its new one
would both concern it (``check_units_keep_partition``).  Only the table that
defines the unit directly (no ``parent=``) may declare it: the partition of a child row
is its parent unit's, reached through the foreign-key path by the planner.
"""
from __future__ import annotations

import duckdb

from ..errors import CatalogError

__all__ = ["PARTITION_TYPES", "check_partition_declaration", "check_partition_column", "check_units_keep_partition"]

# integer and text columns: the planner reads `col = literal` / `col IN (...)` on them exactly
PARTITION_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
                   "VARCHAR")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check_partition_declaration(table: str, columns: dict[str, str], unit: str, parent, column: str) -> None:
    """The declaration alone (before any row is read)."""
    if not isinstance(column, str) or column not in columns:
        raise CatalogError(f"partition_by: table {table!r} has no column {column!r}")
    if parent is not None:
        raise CatalogError(f"partition_by: {table!r} reaches its privacy unit through {parent[0]!r}; declare the "
                           f"partition on the table that defines the unit")
    if column == unit:
        raise CatalogError(f"partition_by: {column!r} is the privacy unit itself; a partition groups many units")
    if columns[column].upper() not in PARTITION_TYPES:
        raise CatalogError(f"partition_by: {table}.{column} has type {columns[column]}; partitions are integer or "
                           f"VARCHAR columns")


def check_partition_column(cur: duckdb.DuckDBPyConnection, view: str, table: str, unit: str, column: str) -> None:
    """Refuse rows where one unit lies in two partitions (a NULL partition is its own value)."""
    u, c = _quote(unit), _quote(column)
    bad = cur.execute(
        f"SELECT count(*) FROM (SELECT {u} FROM {_quote(view)} WHERE {u} IS NOT NULL GROUP BY {u} "
        f"HAVING count(DISTINCT {c}) > 1 OR (count({c}) > 0 AND count({c}) < count(*)))").fetchall()[0][0]
    if bad:
        raise CatalogError(f"partition_by: {bad} privacy units of {table!r} have rows in more than one partition of "
                           f"{column!r}; the partition must be a function of the unit")


def check_units_keep_partition(con: duckdb.DuckDBPyConnection, table: str, old, new, unit: str,
                               column: str) -> None:
    """Refuse new data that moves a unit to another partition once anything was charged.

    Past charges confined to the unit's old partition and later ones confined to its new
    partition would both depend on it, which the per-partition ledger does not count.
    ``old`` and ``new`` are Arrow tables (the owner's trusted loading phase).
    """
    u, c = _quote(unit), _quote(column)
    cur = con.cursor()
    try:
        cur.register("__dodb_old_rows", old)
        cur.register("__dodb_new_rows", new)
        moved = cur.execute(
            f"SELECT count(*) FROM (SELECT DISTINCT {u}, {c} FROM __dodb_old_rows WHERE {u} IS NOT NULL) o "
            f"JOIN (SELECT DISTINCT {u}, {c} FROM __dodb_new_rows WHERE {u} IS NOT NULL) n "
            f"ON o.{u} = n.{u} WHERE o.{c} IS DISTINCT FROM n.{c}").fetchall()[0][0]
    finally:
        cur.close()
    if moved:
        raise CatalogError(f"partition_by: the new rows of {table!r} move {moved} privacy units to another partition "
                           f"of {column!r}; a unit keeps its partition once charges were made")
