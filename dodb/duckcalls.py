"""The engine's calls into DuckDB, in one place, so the audit can log them (docs/design.md §Audit).

What an observer sees of a call is the SQL text (built by dodb from its plan), the Arrow
data handed over, and the size of what comes back — for an Arrow result, the length and
the size of every buffer of every column.  :func:`recording` collects those for the
calls made inside it; outside it the functions are thin wrappers.
"""
from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

import duckdb
import pyarrow as pa

__all__ = ["fetch_arrow", "register", "recording", "arrow_shape", "scratch", "scratch_registered", "union_types"]

_LOG: ContextVar[list | None] = ContextVar("dodb_duck_calls", default=None)
_scratch = threading.local()


def scratch() -> duckdb.DuckDBPyConnection:
    """This thread's empty in-memory DuckDB, for questions about types, casts of data that is
    public or already the analyst's, and public batches (opening a database costs ~15 ms;
    this is made once).  It never sees user tables.

    It never holds user tables: callers register Arrow data only for one statement
    (:func:`scratch_registered`).
    """
    con = getattr(_scratch, "con", None)
    if con is None:
        con = _scratch.con = duckdb.connect()
        con.execute("SET preserve_insertion_order = true")  # projections keep their batch's row order
        # constants are folded in UTC whatever the machine's zone, and so are its cursors' (a
        # zone-dependent TIMESTAMPTZ operation is evaluated only in a UTC session: expressions/zoned.py)
        con.execute("SET GLOBAL TimeZone = 'UTC'")
    return con


@contextmanager
def scratch_registered(**tables: pa.Table) -> Iterator[duckdb.DuckDBPyConnection]:
    """The scratch connection with ``tables`` registered under their keyword names, for one use."""
    con = scratch()
    try:
        for name, t in tables.items():
            con.register(name, t)
        yield con
    finally:
        for name in tables:
            con.unregister(name)


@functools.lru_cache(maxsize=1024)
def union_types(left: tuple[pa.DataType, ...], right: tuple[pa.DataType, ...]) -> tuple[pa.DataType, ...]:
    """DuckDB's common types of two column lists (as ``UNION ALL`` makes them), asked of empty
    columns: a pure function of the types, so each pair is asked once per process.

    >>> union_types((pa.int32(),), (pa.int64(),))
    (DataType(int64),)
    """
    ea = pa.table({f"c{i}": pa.array([], type=t) for i, t in enumerate(left)})
    eb = pa.table({f"c{i}": pa.array([], type=t) for i, t in enumerate(right)})
    with scratch_registered(ea=ea, eb=eb) as con:
        return tuple(con.sql("SELECT * FROM ea UNION ALL SELECT * FROM eb").to_arrow_table().schema.types)


def arrow_shape(table: pa.Table) -> tuple:
    """``(rows, ((column, type, (buffer sizes…)), …))``: what the sizes of ``table`` show."""
    cols = []
    for name, col in zip(table.column_names, table.columns):
        sizes = tuple(b.size if b is not None else -1 for chunk in col.chunks for b in chunk.buffers())
        cols.append((name, str(col.type), sizes))
    return table.num_rows, tuple(cols)


def fetch_arrow(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """Run ``sql`` (built by dodb) and return the result as Arrow; logged when recording."""
    out = con.sql(sql).to_arrow_table()
    log = _LOG.get()
    if log is not None:
        log.append(("sql", sql, arrow_shape(out)))
    return out


def register(con: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> None:
    """Hand an Arrow table to DuckDB under ``name``; logged when recording."""
    con.register(name, table)
    log = _LOG.get()
    if log is not None:
        log.append(("register", name, arrow_shape(table)))


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh cursor inside ``BEGIN``…``COMMIT``; rolled back if the block raises."""
    w = con.cursor()
    try:
        w.execute("BEGIN TRANSACTION").fetchall()
        try:
            yield w
        except BaseException:
            try:
                w.execute("ROLLBACK").fetchall()
            except duckdb.Error:
                pass
            raise
        w.execute("COMMIT").fetchall()
    finally:
        w.close()


@contextmanager
def recording() -> Iterator[list]:
    """Collect every call made through this module (in this context) into a list."""
    log: list = []
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)
