"""Canonical padded storage: write and read a private table's slot array (docs/design.md §Storage).

``capacity`` slots hold the table's real rows at positions chosen by an oblivious random
permutation; every other slot is a dummy (zeroed, ``__dodb_real`` false).  The capacity is
public: the true size plus one-sided DP noise released when the data was loaded (and
charged), or a bound the owner declared.  Queries read all ``capacity`` slots and nothing
else, so a table's scan reveals the capacity only.

Neighbours under this layout (docs/neighbours.md): the coupled neighbour of a database
keeps the same slots and turns one unit's rows into dummies (add/remove) or into another
unit's rows (replace).  A uniformly random placement makes that coupling exact: removing
one unit's rows from a uniform placement of ``n`` rows leaves a uniform placement of the
others in the same slots.

Integrity: a checksum per stored column, computed with a linear pass when the slots are
written and checked on every scan, detects a table changed behind dodb's back (the
declared bounds the charges rely on would no longer be verified).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from sqlglot import exp

from .. import duckcalls, sqlbuild
from ..errors import CatalogError
from ..oblivious import oblivious_sort
from ..oblivious.backend import use_compiled
from ..oblivious.rows import row_words
from ..oblivious.noise import numpy_generator
from ..oblivious.rng import RandomSource
from ..operators.table import Column, PaddedTable
from .layout import REAL, SLOT, LogicalColumn, from_physical, physical_columns, physical_ddl, to_physical

__all__ = ["PRIVATE_SCHEMA", "pad_and_shuffle", "shuffle_slots", "write_slots", "read_slots", "column_checksums"]

PRIVATE_SCHEMA = "dodb_private"

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, element-wise (uint64 arithmetic wraps)."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def _checksum(a: np.ndarray) -> int:
    """Order-sensitive 64-bit checksum of a lane array (one linear pass)."""
    w = row_words(a)  # the rows as zero-padded uint64 words (oblivious/rows.py)
    n, k = w.shape
    if use_compiled():  # one pass, no temporaries (compiled.checksum_words); the same value
        from ..oblivious import compiled

        return int(compiled.checksum_words(np.ascontiguousarray(w).reshape(-1), n * k)) if n else 0
    pos = np.arange(n * k, dtype=np.uint64).reshape(n, k)
    return int(np.bitwise_xor.reduce(_mix(w ^ (pos * _GOLDEN)), axis=None)) if n else 0


def column_checksums(data: pa.Table) -> dict[str, int]:
    """Checksum of every stored column of a physical table, as lanes."""
    out = {}
    for name in data.column_names:
        arr = data.column(name)
        arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
            buf = arr.buffers()[2]
            lanes = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
            lanes = lanes.reshape(len(arr), -1) if len(arr) else lanes.reshape(0, 1)
        elif pa.types.is_boolean(arr.type):
            lanes = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)
        elif pa.types.is_decimal128(arr.type) or arr.type == pa.month_day_nano_interval():
            lanes = np.frombuffer(arr.buffers()[1], dtype=np.uint64, count=2 * (len(arr) + arr.offset))[
                2 * arr.offset:].reshape(len(arr), 2) if len(arr) else np.zeros((0, 2), np.uint64)
        elif pa.types.is_time(arr.type):  # numpy has no TIME: the stored integers (µs or ms of the day)
            lanes = np.asarray(arr.view(pa.int64() if arr.type.bit_width == 64 else pa.int32()).to_numpy())
        else:
            lanes = np.asarray(arr.to_numpy(zero_copy_only=False))
            if lanes.dtype.kind in "mM":
                lanes = lanes.view(np.int64)
        out[name] = _checksum(lanes)
    return out


def pad_and_shuffle(real: PaddedTable, capacity: int, rng: RandomSource) -> PaddedTable:
    """``capacity`` slots: the rows of ``real`` at uniformly random positions, dummies elsewhere.

    The placement is an oblivious random permutation: every slot gets a 64-bit key from
    the CSPRNG-seeded generator (ties broken by position) and one oblivious sort puts the
    rows in key order, so whoever watches the loading learns the input size only, not
    which slots hold real rows.  Key collisions (probability below capacity²/2^65) only
    order the colliding rows by position.
    """
    n = real.padded_size
    if capacity < n:
        raise CatalogError(f"capacity {capacity} is smaller than the table's {n} rows")
    arrays = []
    for a in real.arrays():
        z = np.zeros((capacity,) + a.shape[1:], dtype=a.dtype)
        z[:n] = a
        arrays.append(z)
    arrays[-1][:n] = True  # is_real: every input row is real
    return shuffle_slots(real.with_arrays(arrays), rng)


def shuffle_slots(slots: PaddedTable, rng: RandomSource) -> PaddedTable:
    """The rows of ``slots`` (real and dummy) in a uniformly random order, obliviously.

    Every slot gets a 64-bit key from the CSPRNG-seeded generator (ties broken by
    position) and one oblivious sort puts the rows in key order, so whoever watches
    learns the number of slots only.
    """
    capacity = slots.padded_size
    g = numpy_generator(rng)
    keys = g.integers(0, 2**63, size=capacity, dtype=np.int64).astype(np.uint64) << np.uint64(1)
    _, moved = oblivious_sort([keys, np.arange(capacity, dtype=np.uint64)], slots.arrays(), unique=True)
    return slots.with_arrays(moved, aligned=True)


def write_slots(con, table: str, cols: list[LogicalColumn], slots: PaddedTable) -> dict[str, int]:
    """Create (or replace) the slot array in DuckDB; returns the stored columns' checksums.

    Runs in the caller's transaction.  The rows are inserted in slot order and read
    back in that order (``preserve_insertion_order``); the scan checks ``__dodb_slot``.
    """
    data = to_physical(slots, cols)
    con.execute(sqlbuild.create_schema(PRIVATE_SCHEMA)).fetchall()
    con.execute(physical_ddl(PRIVATE_SCHEMA, table, cols)).fetchall()
    view = "__dodb_slots_in"
    con.register(view, data)
    try:
        target = exp.table_(table, db=PRIVATE_SCHEMA, quoted=True)
        insert = exp.insert(exp.select(*[exp.column(n, quoted=True) for n, _ in physical_columns(cols)])
                            .from_(exp.to_identifier(view, quoted=True)), target)
        con.execute(insert.sql(dialect="duckdb")).fetchall()
    finally:
        con.unregister(view)
    return column_checksums(data)


def read_slots(con, table: str, cols: list[LogicalColumn], capacity: int,
               checksums: dict[str, int] | None = None) -> tuple[np.ndarray, dict[str, Column]]:
    """Read every slot of ``table``'s columns ``cols``: ``(is_real, {name: Column})``.

    The SQL is built here from the catalog (a full scan, no predicate), so DuckDB reads
    all ``capacity`` slots of those fixed-width columns whatever the data.  With
    ``checksums`` every column read is verified (a table changed outside dodb fails here).
    """
    names = [n for n, _ in physical_columns(cols)]
    q = exp.select(*[exp.column(n, quoted=True) for n in names]).from_(
        exp.table_(table, db=PRIVATE_SCHEMA, quoted=True))
    data = duckcalls.fetch_arrow(con, q.sql(dialect="duckdb"))
    if data.num_rows == capacity:
        slot = data.column(SLOT).to_numpy()
        if not np.array_equal(slot, np.arange(capacity, dtype=slot.dtype)):  # slot numbers are public
            raise CatalogError(f"private storage of {table!r} is out of slot order: it was changed outside dodb")
    if checksums is not None and data.num_rows == capacity:
        got = column_checksums(data.select([n for n in names if n != SLOT]))
        bad = sorted(n for n, v in got.items() if checksums.get(n) != v)
        if bad:
            raise CatalogError(f"private storage of {table!r} was changed outside dodb (columns {bad}); "
                               "the owner must load the data again with dodb")
    return from_physical(data, cols, capacity)


def real_rows(is_real: np.ndarray, columns: dict[str, Column], cols: list[LogicalColumn]) -> pa.Table:
    """The real rows as a logical Arrow table (owner side only: data changes and audits)."""
    arrays = [columns[c.name].to_arrow(is_real) for c in cols]
    return pa.table(arrays, names=[c.name for c in cols])
