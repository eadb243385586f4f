"""Physical layout of a private table's canonical slot array (docs/design.md §Storage).

A private table is stored in DuckDB as ``capacity`` slots with fixed-width columns only,
so that reading it touches the same bytes whatever the data:

* ``__dodb_slot`` BIGINT — the slot number ``0 … capacity-1`` (public), in storage order;
* ``__dodb_real`` BOOLEAN — whether the slot holds a real row or a dummy;
* per logical column ``c``: ``c`` itself, NOT NULL, with its logical DuckDB type
  (numbers, decimals, dates, times, timestamps with or without time zone, booleans), or for a string/blob column a
  BLOB of exactly the column's public width (zero-padded) plus ``__dodb_len__c`` INTEGER;
  a nullable column also gets ``__dodb_valid__c`` BOOLEAN (NULL never reaches storage, so
  no validity bitmap's presence or compression depends on the data).

Every column is created ``USING COMPRESSION uncompressed``: DuckDB's compression picks
encodings and segment sizes by the values (constant, RLE, dictionary, FSST), which
would make the stored bytes and the scan's reads depend on the data.

:func:`to_physical` turns a :class:`~dodb.operators.table.PaddedTable` into the physical
Arrow table (owner side, at protect and at data changes); :func:`from_physical` turns a
scan's Arrow result back into lanes (the engine side; sizes depend only on the capacity
and the public widths).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ..errors import CatalogError
from ..operators.table import Column, PaddedTable, _physical_dtype

__all__ = ["SLOT", "REAL", "valid_name", "length_name", "LogicalColumn", "physical_columns",
           "physical_ddl", "to_physical", "from_physical", "check_storable", "STRING_TYPES"]

SLOT = "__dodb_slot"
REAL = "__dodb_real"
RESERVED_PREFIX = "__dodb_"
STRING_TYPES = ("VARCHAR", "BLOB")


def valid_name(col: str) -> str:
    return f"{RESERVED_PREFIX}valid__{col}"


def length_name(col: str) -> str:
    return f"{RESERVED_PREFIX}len__{col}"


@dataclass(frozen=True)
class LogicalColumn:
    """A column as the analyst sees it: name, DuckDB type, nullability, public width."""

    name: str
    type: str            # DuckDB type, e.g. 'INTEGER', 'DECIMAL(15,2)', 'VARCHAR'
    nullable: bool
    width: int = 0       # public byte width of a string/blob column (0 otherwise)

    @property
    def is_string(self) -> bool:
        return self.type.upper() in STRING_TYPES


_STORABLE = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
             "UBIGINT", "FLOAT", "DOUBLE", "BOOLEAN", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE",
             "INTERVAL", "VARCHAR", "BLOB")


def check_storable(table: str, col: str, duck_type: str) -> None:
    """Refuse types the fixed-width slot array cannot hold (nested, intervals, …)."""
    t = duck_type.upper()
    if t in _STORABLE or t.startswith("DECIMAL"):
        return
    raise CatalogError(f"column {table}.{col} has type {duck_type}, which dodb cannot store privately "
                       f"(supported: numbers, DECIMAL, BOOLEAN, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL, VARCHAR, BLOB)")


def physical_columns(cols: list[LogicalColumn]) -> list[tuple[str, str]]:
    """(name, DuckDB type) of every stored column, slot columns first."""
    out = [(SLOT, "BIGINT"), (REAL, "BOOLEAN")]
    for c in cols:
        if c.is_string:
            out += [(c.name, "BLOB"), (length_name(c.name), "INTEGER")]
        else:
            out.append((c.name, c.type))
        if c.nullable:
            out.append((valid_name(c.name), "BOOLEAN"))
    return out


def physical_ddl(schema: str, table: str, cols: list[LogicalColumn]) -> str:
    """``CREATE OR REPLACE TABLE`` for the slot array: every column NOT NULL and uncompressed."""
    defs = ", ".join(f"{exp.to_identifier(n, quoted=True).sql(dialect='duckdb')} {t} NOT NULL "
                     f"USING COMPRESSION uncompressed" for n, t in physical_columns(cols))
    target = exp.table_(table, db=schema, quoted=True).sql(dialect="duckdb")
    return f"CREATE OR REPLACE TABLE {target} ({defs})"


def _fixed_binary(values: np.ndarray) -> pa.Array:
    """An Arrow binary array whose every value is one row of ``values`` ((n, w) uint8)."""
    n, w = values.shape
    total = n * w
    off_type, off_dtype = (pa.binary(), np.int32) if total < 2**31 else (pa.large_binary(), np.int64)
    offsets = np.arange(n + 1, dtype=off_dtype) * w
    return pa.Array.from_buffers(off_type, n, [None, pa.py_buffer(offsets.tobytes()),
                                               pa.py_buffer(np.ascontiguousarray(values).tobytes())])


def to_physical(t: PaddedTable, cols: list[LogicalColumn]) -> pa.Table:
    """The physical Arrow table of a slot array (slot = position in ``t``)."""
    n = t.padded_size
    arrays: dict[str, pa.Array] = {SLOT: pa.array(np.arange(n, dtype=np.int64)), REAL: pa.array(t.is_real)}
    for c in cols:
        col = t.column(c.name)
        if not c.nullable and bool(np.any(t.is_real & ~col.valid)):
            # owner side (outside the observed window); ingest refuses these first, this
            # keeps a NULL from ever being written as the placeholder 0 of a NOT NULL column
            raise ValueError(f"column {c.name!r} is NOT NULL but a row holds NULL")
        if c.is_string:
            vals = np.zeros((n, c.width), dtype=np.uint8)
            vals[:, :col.values.shape[1]] = col.values
            arrays[c.name] = _fixed_binary(vals)
            arrays[length_name(c.name)] = pa.array(col.lengths.astype(np.int32))
        else:
            zeroed = Column(col.type, col.values, np.ones(n, dtype=bool), None)
            arrays[c.name] = zeroed.to_arrow()
        if c.nullable:
            arrays[valid_name(c.name)] = pa.array(col.valid)
    return pa.table(arrays)


def _contiguous(arr: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        return arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    return arr


def _bools(arr) -> np.ndarray:
    return np.asarray(_contiguous(arr).to_numpy(zero_copy_only=False), dtype=bool)


def from_physical(data: pa.Table, cols: list[LogicalColumn], n: int) -> tuple[np.ndarray, dict[str, Column]]:
    """``(is_real, {name: Column})`` from a scan of the slot array (``n`` = capacity).

    Every buffer touched has a size fixed by ``n`` and the public widths: numbers are
    copied from their value buffers, a BLOB column's data buffer is exactly ``n × width``
    bytes and is reshaped, validity and lengths come from their own columns.
    """
    if data.num_rows != n:
        raise CatalogError(f"private storage holds {data.num_rows} slots, its capacity is {n}: "
                           "it was changed outside dodb (the owner must load the data again with dodb)")
    is_real = _bools(data.column(REAL))
    out: dict[str, Column] = {}
    for c in cols:
        arr = _contiguous(data.column(c.name))
        valid = _bools(data.column(valid_name(c.name))) if c.nullable else np.ones(n, dtype=bool)
        if c.is_string:
            buf = arr.buffers()[2]
            flat = np.frombuffer(buf, dtype=np.uint8, count=n * c.width) if n * c.width else np.zeros(0, np.uint8)
            values = flat.reshape(n, c.width).copy() if c.width else np.zeros((n, 1), np.uint8)
            lengths = np.asarray(_contiguous(data.column(length_name(c.name))).to_numpy(zero_copy_only=False),
                                 dtype=np.int32)
            typ = pa.string() if c.type.upper() == "VARCHAR" else pa.binary()
            out[c.name] = Column(typ, values, valid, lengths)
            continue
        typ = arr.type
        if pa.types.is_boolean(typ):
            out[c.name] = Column(typ, _bools(arr), valid)
        elif pa.types.is_decimal128(typ) or typ == pa.month_day_nano_interval():  # two words a value
            words = np.frombuffer(arr.buffers()[1], dtype=np.uint64, count=2 * (n + arr.offset))[2 * arr.offset:]
            # a DECIMAL column-major: each word one contiguous lane (docs/design.md §Expressions)
            out[c.name] = Column(typ, np.array(words.reshape(n, 2), order="F" if pa.types.is_decimal128(typ) else "C"),
                                 valid)
        else:
            dt = _physical_dtype(typ)
            if dt is None:
                raise CatalogError(f"private column {c.name} came back from storage as {typ}")
            vals = np.frombuffer(arr.buffers()[1], dtype=dt, count=n + arr.offset)[arr.offset:].copy()
            out[c.name] = Column(typ, vals, valid)
    return is_real, out
