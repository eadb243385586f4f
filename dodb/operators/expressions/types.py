"""SQL types of expressions, derived from DuckDB itself (the oracle), never guessed.
See docs/design.md §Expressions.

Every (sub)expression is bound by DuckDB against a zero-row Arrow table with the input
schema (``SELECT e1, e2, … FROM empty``): DuckDB resolves implicit casts, literal types
and function overloads, and no row is read.  Results are cached by (schema, SQL).
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Mapping, Sequence

import pyarrow as pa
from sqlglot import exp

from ...duckcalls import scratch_registered
from .zone_setting import current_zone

__all__ = ["SqlType", "parse_type", "bind_types", "INT_BITS", "arrow_type", "HUGEINT"]

# a schema entry for a HUGEINT lane (``Column.huge``): Arrow has no such type, and its export
# type DECIMAL(38, 0) would bind with decimal semantics
HUGEINT = "HUGEINT"

INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32, "BIGINT": 64}
# DuckDB's names of the physical integer types, as its error messages spell them
INT_NAME = {8: "INT8", 16: "INT16", 32: "INT32", 64: "INT64"}


@dataclass(frozen=True)
class SqlType:
    """A DuckDB logical type: ``kind`` in bool/int/dec/float/date/ts/tstz/time/str/null/interval/other
    (``time``: microseconds since midnight, 0 to 24:00:00 inclusive; ``tstz``: an instant in µs
    since 1970 UTC)."""

    name: str
    kind: str
    bits: int = 0          # integers: 8..64; floats: 32/64
    precision: int = 0     # decimals
    scale: int = 0

    @property
    def huge(self) -> bool:
        """HUGEINT: a 128-bit integer, held like ``DECIMAL(38,0)`` (as DuckDB exports it to
        Arrow) but with integer semantics (overflow at 2^127, ``//`` and ``%``)."""
        return self.kind == "dec" and self.bits == 128

    @property
    def wide(self) -> bool:
        """A decimal stored as 128 bits by DuckDB (precision > 18)."""
        return self.kind == "dec" and self.precision > 18

    def __str__(self) -> str:
        return self.name


_DEC = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")


def parse_type(name: str) -> SqlType:
    name = str(name).strip()
    up = name.upper()
    if up in INT_BITS:
        return SqlType(up, "int", INT_BITS[up])
    if up in ("HUGEINT", "INT128"):
        return SqlType("HUGEINT", "dec", 128, 38, 0)
    m = _DEC.fullmatch(up)
    if m:
        return SqlType(f"DECIMAL({m.group(1)},{m.group(2)})", "dec", 0, int(m.group(1)), int(m.group(2)))
    simple = {"DOUBLE": ("float", 64), "FLOAT": ("float", 32), "BOOLEAN": ("bool", 0), "VARCHAR": ("str", 0),
              "DATE": ("date", 0), "TIMESTAMP": ("ts", 0), "TIME": ("time", 0), "INTERVAL": ("interval", 0),
              "TIMESTAMP WITH TIME ZONE": ("tstz", 0), '"NULL"': ("null", 0),
              "NULL": ("null", 0)}
    if up in simple:
        kind, bits = simple[up]
        return SqlType("NULL" if kind == "null" else up, kind, bits)
    return SqlType(up, "other")


def arrow_type(t: SqlType) -> pa.DataType:
    """The Arrow type DuckDB exports for ``t`` (what the old DuckDB path produced)."""
    if t.kind == "int":
        return {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[t.bits]
    if t.kind == "dec":
        return pa.decimal128(t.precision, t.scale)
    return {"float": pa.float64() if t.bits == 64 else pa.float32(), "bool": pa.bool_(), "str": pa.string(),
            "date": pa.date32(), "ts": pa.timestamp("us"), "tstz": pa.timestamp("us", tz=current_zone()),
            "time": pa.time64("us"), "null": pa.null(),
            "interval": pa.month_day_nano_interval()}[t.kind]


_cache: dict[tuple, list[SqlType]] = {}
_lock = threading.Lock()
EMPTY = "__dodb_empty"


def bind_types(schema: Mapping[str, pa.DataType | str], sqls: Sequence[str]) -> list[SqlType]:
    """DuckDB's result type of each SQL expression over an empty table of ``schema``
    (Arrow types, or :data:`HUGEINT`).

    Raises ``duckdb.Error`` when DuckDB cannot bind an expression.
    """
    key = (tuple((n, str(t)) for n, t in schema.items()), tuple(sqls))
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    empty = pa.table({n: pa.array([], type=pa.decimal128(38, 0) if t == HUGEINT else t) for n, t in schema.items()}) \
        if schema else pa.table({"__dodb_none": pa.array([], type=pa.int8())})
    select = ", ".join(f"{s} AS {exp.to_identifier(f'e{i}', quoted=True).sql(dialect='duckdb')}"
                       for i, s in enumerate(sqls))
    huge = [exp.to_identifier(n, quoted=True).sql(dialect="duckdb") for n, t in schema.items() if t == HUGEINT]
    source = EMPTY if not huge else \
        f"(SELECT * REPLACE ({', '.join(f'CAST({h} AS HUGEINT) AS {h}' for h in huge)}) FROM {EMPTY}) AS {EMPTY}"
    with scratch_registered(**{EMPTY: empty}) as con:
        types = [parse_type(str(t)) for t in con.sql(f"SELECT {select} FROM {source}").types]
    with _lock:
        if len(_cache) > 4096:
            _cache.clear()
        _cache[key] = types
    return types
