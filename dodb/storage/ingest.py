"""Owner actions on private data: protect a table, insert rows, replace its data.

Each action (docs/design.md §Storage, docs/threat-model.md §Loading):

1. takes the table's full new content (the raw table, or the current real rows plus the
   new ones) — the data owner's side, in the clear;
2. verifies every declared bound against it (contributions per unit, keys, degree
   bounds, string widths), refusing with a :class:`~dodb.errors.CatalogError` that names
   the violation and changing nothing;
3. releases what the planner will need and the owner did not declare — the capacity
   (true size + one-sided noise) and any degree bound asked for with ``None`` (true
   maximum + one-sided noise) — as privacy events charged to the dataset's ledger
   before anything is written (a refusal charges nothing);
4. writes the canonical slot array (random placement), the zero-row shadow used for
   binding, and the declaration with its capacity and checksums, in one transaction;
   the raw table leaves the current schema; the action is recorded in the ledger's
   owner history.

Sensitivities (docs/neighbours.md): one unit owns at most ``s`` = stability rows of the
table, so the table size and every per-value row count change by at most ``s`` between
neighbours (add/remove or replace).
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ..accountant import PrivacyEvent
from ..errors import CatalogError, one_line
from ..oblivious.noise import ShiftedTruncatedDiscreteLaplace
from ..operators.table import from_arrow
from ..planner.catalog import META_SCHEMA, META_TABLE, SHADOW_SCHEMA, Catalog, TableInfo
from .canonical import PRIVATE_SCHEMA, pad_and_shuffle, read_slots, real_rows, write_slots
from .layout import RESERVED_PREFIX, LogicalColumn, check_storable
from .partitioning import check_partition_column, check_partition_declaration, check_units_keep_partition

__all__ = ["Declaration", "IngestResult", "protect", "load", "unprotect", "ORPHAN_POLICIES"]

ORPHAN_POLICIES = ("keep", "refuse")
_VIEW = "__dodb_ingest"


@dataclass
class Declaration:
    """What the owner declares about a private table (all of it public policy)."""

    privacy_unit: str
    parent: tuple[str, str] | None = None
    max_contributions: int | None = None
    keys: list[list[str]] = field(default_factory=list)
    max_degree: dict[str, int | None] = field(default_factory=dict)  # None: release a DP bound
    widths: dict[str, int] = field(default_factory=dict)
    orphans: str = "keep"        # child rows whose parent key names no parent row
    null_units: str = "keep"     # rows whose unit key is NULL (each is a unit of its own)
    partition_by: str | None = None  # a public function of the unit (docs/design.md §Partitions)


@dataclass
class IngestResult:
    """What an owner action released and stored."""

    table: str
    rows: int                    # true row count (the owner's view only; never stored)
    capacity: int
    capacity_source: str
    releases: list[dict[str, Any]]
    charge_id: int | None
    charged_epsilon: float = 0.0
    charged_delta: float = 0.0
    null_unit_rows: int = 0              # rows with a NULL unit, kept (null_units='keep'): each its own unit
    orphan_rows: int | None = None       # rows naming no parent row, kept (orphans='keep'); None: no parent

    def __str__(self) -> str:
        parts = [f"{self.table}: {self.rows} rows stored in {self.capacity} slots ({self.capacity_source} capacity)"]
        if self.null_unit_rows:
            parts.append(f"  kept {self.null_unit_rows} rows with a NULL privacy unit (each a unit of its own)")
        if self.orphan_rows:
            parts.append(f"  kept {self.orphan_rows} orphan rows (no parent row; each belongs to the unit its key names)")
        for r in self.releases:
            parts.append(f"  released {r['name']} = {r['value']} (sensitivity {r['sensitivity']}, ε={r['epsilon']:.4g})")
        if self.charge_id is not None:
            parts.append(f"  charged ε={self.charged_epsilon:.4g}, δ={self.charged_delta:.3g} (ledger #{self.charge_id})")
        return "\n".join(parts)


# -- reading the new content ------------------------------------------------------------

@contextmanager
def _reader(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of its own for a read, so that a result the owner left unfetched on ``con``
    never blocks loading (and is not consumed by it)."""
    cur = con.cursor()
    try:
        yield cur
    finally:
        cur.close()


def _raw_table(con: duckdb.DuckDBPyConnection, name: str) -> pa.Table:
    q = exp.select(exp.Star()).from_(exp.table_(name, quoted=True))
    with _reader(con) as cur:
        return cur.sql(q.sql(dialect="duckdb")).to_arrow_table()


def _current_rows(con, info: TableInfo, only: list[str] | None = None) -> pa.Table:
    """The real rows of a protected table (owner side); ``only``: just these columns."""
    cols = [c for c in info.logical_columns if only is None or c.name in only]
    with _reader(con) as cur:
        is_real, columns = read_slots(cur, info.name, cols, int(info.capacity), info.checksums)
    return real_rows(is_real, columns, cols)


def _as_arrow(con, rows: Any, like: pa.Schema | None) -> pa.Table:
    """Rows to add, from Arrow, pandas/polars, a DuckDB relation or a table name of the current schema."""
    if isinstance(rows, str):
        try:
            data = _raw_table(con, rows)
        except duckdb.Error as e:
            raise CatalogError(f"cannot read rows from table {rows!r}: {one_line(e)}") from None
    elif isinstance(rows, pa.Table):
        data = rows
    elif isinstance(rows, pa.RecordBatchReader):  # what a DuckDB 2 relation's .arrow() returns
        data = rows.read_all()
    elif isinstance(rows, duckdb.DuckDBPyRelation):
        data = rows.to_arrow_table()
    elif hasattr(rows, "to_arrow"):          # polars
        data = rows.to_arrow()
    else:
        try:
            data = pa.Table.from_pandas(rows, preserve_index=False)
        except Exception as e:  # noqa: BLE001 - any unreadable input is the caller's error
            raise CatalogError(f"cannot read rows of type {type(rows).__name__}: give an Arrow table or "
                               "record batch reader, a pandas/polars DataFrame, a DuckDB relation or a table name") from e
    if like is not None:
        if data.column_names != like.names:
            raise CatalogError(f"rows have columns {data.column_names}, the table has {like.names}")
        try:
            data = data.cast(like)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise CatalogError(f"rows do not match the table's column types: {e}") from None
    return data


# -- verification (owner side, in the clear) ----------------------------------------------

def _scalar(cur, q: exp.Expression) -> Any:
    return cur.execute(q.sql(dialect="duckdb")).fetchall()[0][0]


def _max_per_value(cur, cols: Sequence[str], skip_null: bool = True) -> int:
    inner = exp.select(exp.Count(this=exp.Star()).as_("c")).from_(_VIEW).group_by(
        *[exp.column(c, quoted=True) for c in cols])
    if skip_null:
        inner = inner.where(exp.and_(*[exp.Not(this=exp.Is(this=exp.column(c, quoted=True), expression=exp.Null()))
                                       for c in cols]))
    q = exp.select(exp.Coalesce(this=exp.Max(this=exp.column("c")), expressions=[exp.Literal.number(0)])).from_(
        inner.subquery("g"))
    return int(_scalar(cur, q))


def _count_null(cur, col: str) -> int:
    return int(_scalar(cur, exp.select(exp.Count(this=exp.Star())).from_(_VIEW).where(
        exp.Is(this=exp.column(col, quoted=True), expression=exp.Null()))))


_PARENT_KEYS = "__dodb_parent_keys"


def _count_orphans(cur, column: str, parent_keys: pa.Array) -> int:
    """Rows of the ingest view whose non-NULL ``column`` names no key in ``parent_keys``
    (owner side; DuckDB compares, so the two key types need only be comparable)."""
    cur.register(_PARENT_KEYS, pa.table({"k": parent_keys}))
    try:
        col = exp.column(column, table=_VIEW, quoted=True)
        match = exp.select("1").from_(_PARENT_KEYS).where(exp.EQ(this=exp.column("k", table=_PARENT_KEYS),
                                                                 expression=col))
        q = exp.select(exp.Count(this=exp.Star())).from_(_VIEW).where(
            exp.and_(exp.Not(this=exp.Is(this=col, expression=exp.Null())),
                     exp.Not(this=exp.Exists(this=match))))
        return int(_scalar(cur, q))
    finally:
        cur.unregister(_PARENT_KEYS)


def _check_not_null(cur, table: str, not_null: set[str], columns: dict[str, str]) -> None:
    """Refuse NULLs in NOT NULL columns (docs/design.md §Storage, *NOT NULL*).

    A NOT NULL column is stored without a validity lane, and the planner relies on it
    (a degree bound caps a NULL partition only where there is none): a NULL there would
    be stored as the placeholder 0 and merge into a real value, breaking the declared
    bounds.  Checked on the owner's side before anything is charged or stored.
    """
    for c in (c for c in columns if c in not_null):
        nulls = _count_null(cur, c)
        if nulls:
            raise CatalogError(f"{table!r}: {nulls} row{'s' if nulls != 1 else ''} "
                               f"{'have' if nulls != 1 else 'has'} a NULL in column {c!r}, which is NOT NULL; "
                               "nothing was stored or charged")


def _unit_policy_violation(table: str, d: Declaration, nulls: int, orphans: int | None) -> str | None:
    """The refusal message for rows the ``orphans``/``null_units`` policies refuse, or None.

    Both kinds are counted separately (docs/neighbours.md §Privacy units): an orphan names
    a unit the parent table lacks, a NULL key names no unit at all.
    """
    refused, kept = [], []
    if nulls:
        (refused if d.null_units == "refuse" else kept).append(
            f"{nulls} rows have a NULL {d.privacy_unit!r}" + (" (null_units='refuse'; with 'keep' each is a unit "
                                                               "of its own)" if d.null_units == "refuse" else ""))
    if orphans:
        (refused if d.orphans == "refuse" else kept).append(
            f"{orphans} rows name a {d.parent[0]}.{d.parent[1]} that has no row in {d.parent[0]!r}"
            + (" (orphans='refuse'; with 'keep' each belongs to the unit its key names)"
               if d.orphans == "refuse" else ""))
    if not refused:
        return None
    return f"{table!r}: " + " and ".join(refused) + (f"; {kept[0]} (kept)" if kept else "")


def _verify(cur, table: str, d: Declaration, data: pa.Table,
            parent_keys: pa.Array | None) -> tuple[dict[str, int], int, int | None]:
    """Check every declared bound; returns the true maxima of the DP degree columns and the
    rows with a NULL unit and the orphan rows (``None`` without a parent) that were kept."""
    nulls = _count_null(cur, d.privacy_unit)
    orphans = _count_orphans(cur, d.privacy_unit, parent_keys) if parent_keys is not None else None
    problem = _unit_policy_violation(table, d, nulls, orphans)
    if problem:
        raise CatalogError(problem)
    actual = _max_per_value(cur, [d.privacy_unit])
    if actual > d.max_contributions:
        raise CatalogError(f"{table!r}: a privacy unit has {actual} rows, more than max_contributions="
                           f"{d.max_contributions}")
    for k in d.keys:
        if _max_per_value(cur, k, skip_null=False) > 1:
            raise CatalogError(f"{table!r}: declared key {k} is not unique")
    if d.partition_by is not None:
        check_partition_column(cur, _VIEW, table, d.privacy_unit, d.partition_by)
    dp_max = {}
    for c, bound in d.max_degree.items():
        got = _max_per_value(cur, [c])
        if bound is None:
            dp_max[c] = got
        elif got > bound:
            raise CatalogError(f"{table!r}: {got} rows share one value of {c!r}, more than max_degree={bound}")
    return dp_max, nulls, orphans


def _check_declaration(catalog: Catalog, table: str, columns: dict[str, str], d: Declaration) -> None:
    def need(col: str, where: dict[str, str], tname: str) -> None:
        if col not in where:
            raise CatalogError(f"table {tname!r} has no column {col!r}")

    if table.startswith("dodb_"):
        raise CatalogError("dodb's own tables cannot be protected")
    for c, ty in columns.items():
        if c.startswith(RESERVED_PREFIX):
            raise CatalogError(f"column name {c!r} is reserved for dodb's storage")
        check_storable(table, c, ty)
    need(d.privacy_unit, columns, table)
    if not isinstance(d.max_contributions, int) or isinstance(d.max_contributions, bool) or d.max_contributions < 1:
        raise CatalogError(f"{table!r}: declare max_contributions, a positive integer bound on the rows "
                           f"{'per parent row' if d.parent else 'per privacy unit'} (public policy; dodb does not "
                           f"publish a bound computed from the data)")
    for k in d.keys:
        for c in k:
            need(c, columns, table)
    for c, b in d.max_degree.items():
        need(c, columns, table)
        if b is not None and (not isinstance(b, int) or isinstance(b, bool) or b < 1):
            raise CatalogError(f"max_degree for {c!r} must be a positive integer, or None for a DP-released bound")
    strings = [c for c, ty in columns.items() if ty.upper() in ("VARCHAR", "BLOB")]
    for c, w in d.widths.items():
        need(c, columns, table)
        if c not in strings:
            raise CatalogError(f"widths: {table}.{c} is not a string column")
        if not isinstance(w, int) or isinstance(w, bool) or w < 1:
            raise CatalogError(f"widths: {table}.{c} must be a positive number of bytes")
    missing = [c for c in strings if c not in d.widths]
    if missing:
        raise CatalogError(f"{table!r}: declare a public byte width for the string columns {missing} "
                           f"(widths={{...}}); private strings are stored at a fixed width")
    if d.partition_by is not None:
        check_partition_declaration(table, columns, d.privacy_unit, d.parent, d.partition_by)
    for policy, value in (("orphans", d.orphans), ("null_units", d.null_units)):
        if value not in ORPHAN_POLICIES:
            raise CatalogError(f"{policy} must be one of {ORPHAN_POLICIES}")
    if d.parent is not None:
        ptable, pkey = d.parent
        pinfo = catalog.table(ptable)
        if not pinfo.private:
            raise CatalogError(f"parent table {ptable!r} must be protected first")
        need(pkey, pinfo.columns, ptable)
        if [pkey] not in pinfo.keys:
            raise CatalogError(f"parent key {ptable}.{pkey} must be a declared key of {ptable!r}")


def _looser(old: TableInfo, d: Declaration) -> list[str]:
    """Ways in which ``d`` promises less than ``old`` (charges were computed with ``old``)."""
    out = []
    if d.privacy_unit != old.privacy_unit or (tuple(d.parent) if d.parent else None) != old.parent:
        out.append("the privacy unit changed")
    if d.max_contributions > old.max_contributions:
        out.append(f"max_contributions {old.max_contributions} -> {d.max_contributions}")
    for k in old.keys:
        if k not in d.keys:
            out.append(f"key {k} dropped")
    for c, b in old.max_degree.items():
        nb = d.max_degree.get(c, "absent")
        if nb == "absent" or (nb is not None and nb > b):
            out.append(f"max_degree[{c}] {b} -> {nb}")
    if old.partition_by is not None and d.partition_by not in (None, old.partition_by):
        # regrouping units: past charges confined to old partitions would not be counted
        # together with new ones (declaring or dropping a partition keeps every charge sound)
        out.append(f"partition_by {old.partition_by!r} -> {d.partition_by!r}")
    for c, w in old.widths.items():
        if d.widths.get(c, w) != w:
            out.append(f"width of {c} {w} -> {d.widths.get(c)}")
    return out


def _regrouped(db, table: str, d: Declaration) -> list[str]:
    """Charges confined to partitions of ``table`` by another column than ``d.partition_by``
    (after a partition column was dropped, or the table unprotected, and another declared)."""
    if d.partition_by is None:
        return []
    other = sorted({p.split("=", 1)[0] for p in db.ledger.charged_partitions()
                    if p.startswith(f"{table}.") and p.split("=", 1)[0] != f"{table}.{d.partition_by}"})
    return [f"charges were confined to partitions of {c}, now {table}.{d.partition_by}" for c in other]


# -- the actions ---------------------------------------------------------------------------

def _shadow_ddl(table: str, cols: list[LogicalColumn]) -> str:
    defs = []
    for c in cols:
        ty = exp.DataType.build(c.type, dialect="duckdb").sql(dialect="duckdb")
        defs.append(f"{exp.to_identifier(c.name, quoted=True).sql(dialect='duckdb')} {ty}"
                    + ("" if c.nullable else " NOT NULL"))
    return (f"CREATE OR REPLACE TABLE {exp.table_(table, db=SHADOW_SCHEMA, quoted=True).sql(dialect='duckdb')} "
            f"({', '.join(defs)})")


def _stability(catalog: Catalog, d: Declaration) -> int:
    return d.max_contributions * (catalog.stability(d.parent[0]) if d.parent else 1)


def _run_action(db, table: str, action: str, d: Declaration, data: pa.Table, columns: dict[str, str],
                not_null: set[str], *, capacity: int | None, epsilon: float | None, delta: float | None,
                drop_raw: bool, old: TableInfo | None, forced: list[str]) -> IngestResult:
    catalog: Catalog = db.catalog
    con: duckdb.DuckDBPyConnection = db.con
    cols = [LogicalColumn(c, ty, c not in not_null, d.widths.get(c, 0)) for c, ty in columns.items()]
    parent_keys = None
    if d.parent is not None:  # orphans are counted under either policy (and reported when kept)
        pinfo = catalog.table(d.parent[0])
        parent_keys = _current_rows(con, pinfo, only=[d.parent[1]]).column(d.parent[1]).combine_chunks()
    cur = con.cursor()
    try:
        cur.register(_VIEW, data)
        _check_not_null(cur, table, not_null, columns)
        dp_max, null_unit_rows, orphan_rows = _verify(cur, table, d, data, parent_keys)
    finally:
        cur.close()
    try:
        padded = from_arrow(data, widths=d.widths)
    except ValueError as e:
        raise CatalogError(f"{table!r}: {e} (declare a larger width)") from None
    n = data.num_rows
    s = _stability(catalog, d)
    wanted = ([("capacity", n)] if capacity is None else []) + [(f"degree({c})", v) for c, v in dp_max.items()]
    if capacity is not None and (not isinstance(capacity, int) or capacity < n):
        raise CatalogError(f"{table!r}: the declared capacity {capacity} is smaller than the {n} rows to store")
    releases, charge = [], None
    if wanted:
        eps_total, delta_total = db._load_budget(epsilon, delta)
        eps_i, delta_i = eps_total / len(wanted), delta_total / len(wanted)
        mech = ShiftedTruncatedDiscreteLaplace.for_privacy(eps_i, delta_i, s)
        events = [PrivacyEvent.padding(mechanism=mech, sensitivity=s, operator=f"{action}:{table}:{name}")
                  for name, _ in wanted]
        charge = db.ledger.admit(events, sql=f"{action.upper()} {table}", operators=[e.operator for e in events],
                                 delta=delta_total, neighbour=db.neighbour, kind="owner")
        noise = mech.sample_many(db._rng, len(wanted))
        for (name, true), z in zip(wanted, noise):
            releases.append({"name": name, "value": int(true) + int(z), "sensitivity": s, "epsilon": eps_i,
                             "delta": delta_i, "scale": float(mech.scale), "shift": mech.shift})
    values = {r["name"]: r["value"] for r in releases}
    cap = int(values.get("capacity", capacity if capacity is not None else n))
    degrees = {c: b for c, b in d.max_degree.items() if b is not None}
    degrees.update({c: max(1, values[f"degree({c})"]) for c in dp_max})
    slots = pad_and_shuffle(padded, cap, db._rng)
    spec = {
        "columns": [{"name": c.name, "type": c.type, "nullable": c.nullable, "width": c.width} for c in cols],
        "privacy_unit": d.privacy_unit, "parent": list(d.parent) if d.parent else None,
        "max_contributions": d.max_contributions, "keys": d.keys, "max_degree": degrees,
        "degree_sources": {c: ("dp" if c in dp_max else "declared") for c in degrees},
        "capacity": cap, "capacity_source": "dp" if capacity is None else "declared",
        "capacity_charge": charge.query_id if charge is not None else None,
        "releases": releases, "version": (old.version + 1) if old is not None else 1,
        "policy": {"orphans": d.orphans, "null_units": d.null_units},
        "partition_by": d.partition_by,
    }
    w = con.cursor()
    try:
        w.execute("BEGIN TRANSACTION").fetchall()
        spec["checksums"] = write_slots(w, table, cols, slots)
        w.execute(f"CREATE SCHEMA IF NOT EXISTS {SHADOW_SCHEMA}").fetchall()
        w.execute(_shadow_ddl(table, cols)).fetchall()
        w.execute(f"CREATE SCHEMA IF NOT EXISTS {META_SCHEMA}").fetchall()
        w.execute(f"CREATE TABLE IF NOT EXISTS {META_SCHEMA}.{META_TABLE} "
                  "(table_name VARCHAR PRIMARY KEY, spec VARCHAR NOT NULL, updated_at TIMESTAMP NOT NULL)").fetchall()
        w.execute(f"INSERT OR REPLACE INTO {META_SCHEMA}.{META_TABLE} VALUES (?, ?, now()::TIMESTAMP)",
                  [table, json.dumps(spec)]).fetchall()
        if drop_raw:
            w.execute(exp.Drop(tables=[exp.table_(table, quoted=True)], kind="TABLE").sql(dialect="duckdb")).fetchall()
        db.ledger.record_owner_action(w, action, table, old=_public_spec(old), new=_public_spec_dict(spec),
                                      forced=forced, charge_id=charge.query_id if charge is not None else None)
        w.execute("COMMIT").fetchall()
    except BaseException as e:
        try:
            w.execute("ROLLBACK").fetchall()
        except duckdb.Error:
            pass
        if charge is not None:
            charge.fail(e)
        if isinstance(e, duckdb.Error):
            raise CatalogError(f"could not store {table!r}: {str(e).splitlines()[0]}") from None
        raise
    finally:
        w.close()
    if charge is not None:
        charge.complete()
    catalog.refresh(functions=False)
    return IngestResult(table, n, cap, spec["capacity_source"], releases,
                        charge.query_id if charge else None, charge.epsilon if charge else 0.0,
                        charge.delta if charge else 0.0, null_unit_rows, orphan_rows)


def _public_spec_dict(spec: dict) -> dict:
    keep = ("privacy_unit", "parent", "max_contributions", "keys", "max_degree", "capacity", "capacity_source", "policy",
            "partition_by")
    return {k: spec.get(k) for k in keep} | {"widths": {c["name"]: c["width"] for c in spec["columns"] if c["width"]}}


def _public_spec(info: TableInfo | None) -> dict | None:
    if info is None:
        return None
    return {"privacy_unit": info.privacy_unit, "parent": list(info.parent) if info.parent else None,
            "max_contributions": info.max_contributions, "keys": info.keys, "max_degree": info.max_degree,
            "capacity": info.capacity, "capacity_source": info.capacity_source, "policy": info.policy,
            "widths": info.widths, "partition_by": info.partition_by}


def protect(db, table: str, d: Declaration, *, capacity: int | None = None, epsilon: float | None = None,
            delta: float | None = None, force: bool = False) -> IngestResult:
    """Make ``table`` private (or change the declaration of a private table)."""
    catalog: Catalog = db.catalog
    catalog.refresh(functions=False)
    info = catalog.table(table)
    if info.kind == "view":
        raise CatalogError(f"{table!r} is a view: protect the tables it reads")
    forced: list[str] = []
    if info.private:
        looser = _looser(info, d)
        looser += [x for x in _regrouped(db, table, d) if x not in looser]
        if looser and db.ledger.has_charges():
            if not force:
                raise CatalogError(f"re-protecting {table!r} would loosen its declaration after queries were "
                                   f"charged ({'; '.join(looser)}); pass force=True to do it anyway (recorded)")
            forced = looser
        d.widths = {**info.widths, **d.widths}
        data = _current_rows(db.con, info)
        columns, not_null = dict(info.columns), set(info.not_null)
    else:
        regrouped = _regrouped(db, table, d)
        if regrouped and not force:
            raise CatalogError(f"protecting {table!r} would regroup its units after charges ({regrouped[0]}); "
                               f"pass force=True to do it anyway (recorded)")
        forced = regrouped
        data = _raw_table(db.con, table)
        columns, not_null = dict(info.columns), set(info.not_null)
    _check_declaration(catalog, table, columns, d)
    return _run_action(db, table, "protect", d, data, columns, not_null, capacity=capacity, epsilon=epsilon,
                       delta=delta, drop_raw=not info.private, old=info if info.private else None, forced=forced)


def load(db, table: str, rows: Any, *, append: bool, capacity: int | None = None, epsilon: float | None = None,
         delta: float | None = None) -> IngestResult:
    """Insert rows into (``append``) or replace the data of a private table."""
    catalog: Catalog = db.catalog
    catalog.refresh(functions=False)
    info = catalog.table(table)
    if not info.private:
        raise CatalogError(f"{table!r} is not private: load it with DuckDB, or protect it first")
    current = _current_rows(db.con, info)
    new = _as_arrow(db.con, rows, current.schema)
    data = pa.concat_tables([current, new]) if append else new
    d = Declaration(info.privacy_unit, info.parent, info.max_contributions, [list(k) for k in info.keys],
                    {c: (None if info.degree_sources.get(c) == "dp" else b) for c, b in info.max_degree.items()},
                    dict(info.widths), info.policy.get("orphans", "keep"), info.policy.get("null_units", "keep"),
                    info.partition_by)
    if not append:
        _check_children(db, table, data)
    if not append and info.partition_by is not None and db.ledger.has_charges():
        check_units_keep_partition(db.con, table, current, data, info.privacy_unit, info.partition_by)
    return _run_action(db, table, "insert" if append else "replace", d, data, dict(info.columns), set(info.not_null),
                       capacity=capacity, epsilon=epsilon, delta=delta, drop_raw=False, old=info, forced=[])


def _check_children(db, table: str, data: pa.Table) -> None:
    """New parent rows must not orphan a child that refuses orphans (the policy holds at
    every data change, docs/neighbours.md §Privacy units); checked before any charge."""
    for child, info in sorted(db.catalog.tables.items()):
        if not (info.private and info.parent and info.parent[0] == table
                and info.policy.get("orphans", "keep") == "refuse"):
            continue
        cur = db.con.cursor()
        try:
            cur.register(_VIEW, _current_rows(db.con, info))
            orphans = _count_orphans(cur, info.privacy_unit, data.column(info.parent[1]).combine_chunks())
        finally:
            cur.close()
        if orphans:
            raise CatalogError(f"replacing the rows of {table!r} would leave {orphans} rows of {child!r} naming a "
                               f"{table}.{info.parent[1]} that has no row in {table!r} ({child!r} has "
                               f"orphans='refuse')")


def unprotect(db, table: str, *, force: bool = False) -> None:
    """Make a private table public again: its real rows go back to a plain table of the
    current schema, its slot array, shadow and declaration are dropped, in one transaction.

    Refused if another private table reaches its unit through it, and — once anything
    was charged, since those charges were computed under its declaration — unless
    ``force``; recorded in the owner history (docs/design.md §Owner actions).
    """
    catalog: Catalog = db.catalog
    catalog.refresh(functions=False)
    info = catalog.table(table)
    if not info.private:
        raise CatalogError(f"{table!r} is not private")
    children = sorted(t for t, i in catalog.tables.items() if i.private and i.parent and i.parent[0] == table)
    if children:
        raise CatalogError(f"{table!r} is the parent of {children}: unprotect those first")
    forced = []
    if db.ledger.has_charges():
        why = f"{table!r} was private while queries were charged"
        if not force:
            raise CatalogError(f"{why}; unprotecting it makes its rows public: pass force=True to do it anyway "
                               "(recorded)")
        forced.append(why)
    rows = _current_rows(db.con, info)
    w = db.con.cursor()
    try:
        w.execute("BEGIN TRANSACTION").fetchall()
        w.register(_VIEW, rows)
        cols = [exp.column(c, quoted=True) for c in info.columns]
        w.execute(exp.Create(this=exp.table_(table, quoted=True), kind="TABLE",
                             expression=exp.select(*cols).from_(_VIEW)).sql(dialect="duckdb")).fetchall()
        w.unregister(_VIEW)
        for schema in (PRIVATE_SCHEMA, SHADOW_SCHEMA):
            w.execute(exp.Drop(tables=[exp.table_(table, db=schema, quoted=True)], kind="TABLE",
                               exists=True).sql(dialect="duckdb")).fetchall()
        w.execute(f"DELETE FROM {META_SCHEMA}.{META_TABLE} WHERE table_name = ?", [table]).fetchall()
        db.ledger.record_owner_action(w, "unprotect", table, old=_public_spec(info), new=None, forced=forced)
        w.execute("COMMIT").fetchall()
    except BaseException as e:
        try:
            w.execute("ROLLBACK").fetchall()
        except duckdb.Error:
            pass
        if isinstance(e, duckdb.Error):
            raise CatalogError(f"could not unprotect {table!r}: {str(e).splitlines()[0]}") from None
        raise
    finally:
        w.close()
    catalog.refresh(functions=False)
