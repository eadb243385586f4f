"""Whole-column values during expression evaluation, and the bridge to padded columns.
See docs/design.md §Expressions.

A :class:`Val` is one expression's result over every padded row: lanes of a fixed public
shape (``data``), validity (False = SQL NULL), a per-row error code (0 = none) and, for
strings, byte lengths.  Lanes by kind: ``bool`` bool; ``int`` int64 (whatever DuckDB's
width: the width is checked, not stored); ``float`` float64; ``dec`` :class:`I128`
(unscaled); ``date`` int64 days; ``ts`` and ``tstz`` int64 microseconds; ``str`` ``(n, w)`` uint8;
``interval`` ``(n, 3)`` int64 (months, days, µs).
"""
from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..table import Column
from . import int128 as i128
from .types import SqlType, arrow_type
from ...oblivious.select import select

__all__ = ["Val", "from_column", "constant", "to_column", "no_errors"]

_EPOCH = dt.date(1970, 1, 1)


@dataclass
class Val:
    type: SqlType
    data: object
    valid: np.ndarray
    err: np.ndarray
    lengths: np.ndarray | None = None
    const: bytes | None = None  # a public constant string: every row's lanes hold these bytes
    scalar: int | None = None   # a public integer/DECIMAL constant: every row holds this (unscaled) integer

    @property
    def n(self) -> int:
        return int(self.valid.shape[0])

    @property
    def width(self) -> int:
        return int(self.data.shape[1]) if self.type.kind == "str" else 0


def no_errors(n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.int32)


def from_column(c: Column, t: SqlType) -> Val:
    """Lanes of a padded column, as the type DuckDB binds it to.

    The lanes may be the column's own arrays (no copy where the dtype already fits): the
    evaluator never writes into a value's arrays, every node makes new ones.  A read-only
    array (a scan's, kept by the slot cache) is copied: the compiled kernels are typed by
    writability, and one typing of each keeps them compiled once (``kernel_signatures``)."""
    n = int(c.valid.shape[0])
    valid = _writable(c.valid)
    if t.kind == "str":
        return Val(t, _writable(c.values), valid, no_errors(n), c.lengths.astype(np.int64))
    if t.kind == "dec":
        return Val(t, i128.from_words(c.values), valid, no_errors(n))
    if t.kind == "bool":
        return Val(t, _writable(c.values.astype(bool, copy=False)), valid, no_errors(n))
    if t.kind == "float":
        return Val(t, _writable(c.values.astype(np.float64, copy=False)), valid, no_errors(n))
    if t.kind in ("int", "date", "ts", "tstz", "time"):
        return Val(t, _writable(c.values.astype(np.int64, copy=False)), valid, no_errors(n))
    if t.kind == "null":
        return Val(t, np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), no_errors(n))
    if t.kind == "interval":  # (n, 3) months, days, µs
        from .interval_lanes import from_words
        return Val(t, from_words(c.values), valid, no_errors(n))
    raise TypeError(f"unsupported column type {t}")


def _writable(a: np.ndarray) -> np.ndarray:
    """``a``, or a copy of it when it is read-only (whether it is depends on the plan only)."""
    return a if a.flags.writeable else a.copy()


def _string_lanes(data: bytes, n: int) -> tuple[np.ndarray, np.ndarray]:
    w = max(1, len(data))
    row = np.zeros(w, dtype=np.uint8)
    row[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return np.broadcast_to(row, (n, w)).copy(), np.full(n, len(data), dtype=np.int64)


def constant(t: SqlType, value, n: int) -> Val:
    """A public constant (a literal or a constant sub-expression folded by DuckDB)."""
    valid = np.full(n, value is not None)
    err = no_errors(n)
    if t.kind == "str":
        raw = b"" if value is None else str(value).encode()
        data, lengths = _string_lanes(raw, n)
        return Val(t, data, valid, err, lengths, raw)
    if value is None:
        if t.kind == "interval":
            return Val(t, np.zeros((n, 3), np.int64), valid, err)
        if t.kind == "dec":
            return Val(t, i128.const(0, n), valid, err)
        zero = {"bool": np.zeros(n, bool), "float": np.zeros(n)}.get(t.kind, np.zeros(n, np.int64))
        return Val(t, zero, valid, err)
    if t.kind == "dec":
        with decimal.localcontext(decimal.Context(prec=80)):  # exact: the default context keeps 28 digits
            unscaled = int(decimal.Decimal(value).scaleb(t.scale).to_integral_value())
        return Val(t, i128.const(unscaled, n), valid, err, scalar=unscaled)
    if t.kind == "bool":
        return Val(t, np.full(n, bool(value)), valid, err)
    if t.kind == "float":
        return Val(t, np.full(n, float(value)), valid, err)
    if t.kind == "int":
        return Val(t, np.full(n, int(value), dtype=np.int64), valid, err, scalar=int(value))
    if t.kind == "date":
        return Val(t, np.full(n, (value - _EPOCH).days, dtype=np.int64), valid, err)
    if t.kind == "time":  # a datetime.time: microseconds since midnight
        us = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        return Val(t, np.full(n, us, dtype=np.int64), valid, err)
    if t.kind == "tstz":  # an aware datetime: its instant
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if t.kind in ("ts", "tstz"):
        delta = value - dt.datetime(1970, 1, 1)
        us = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        return Val(t, np.full(n, us, dtype=np.int64), valid, err)
    raise TypeError(f"unsupported constant type {t}")


def to_column(v: Val, width: int | None = None) -> Column:
    """The padded column of a result (NULL rows hold zeros; strings padded to ``width``)."""
    t = arrow_type(v.type)
    valid = v.valid.copy()
    if v.type.kind == "str":
        w = max(1, v.width if width is None else max(width, v.width))
        data = np.zeros((v.n, w), dtype=np.uint8)
        data[:, : v.width] = v.data
        np.multiply(data, valid[:, None], out=data)  # zero bytes where NULL (times 0/1: no branch)
        return Column(t, data, valid, np.multiply(v.lengths, valid).astype(np.int32))
    if v.type.kind == "dec":  # each word times the 0/1 validity, straight into column-major words
        words = np.empty((2, v.n), dtype=np.uint64)
        np.multiply(np.asarray(v.data.lo, np.uint64), valid, out=words[0])
        np.multiply(np.asarray(v.data.hi).view(np.uint64), valid, out=words[1])
        return Column(t, words.T, valid, huge=v.type.huge)
    if v.type.kind == "null":
        return Column(pa.null(), np.zeros(v.n, dtype=np.int8), valid)
    if v.type.kind == "interval":
        from .interval_lanes import to_words
        return Column(t, to_words(select(valid[:, None], v.data, np.zeros(1, np.int64))), valid)
    if v.type.kind == "bool":  # false where NULL: one AND
        return Column(t, np.logical_and(v.data, valid), valid)
    dtype = {"float": np.float64 if v.type.bits == 64 else np.float32, "date": np.int32,
             "ts": np.int64, "tstz": np.int64, "time": np.int64}.get(v.type.kind)
    if v.type.kind == "int":
        dtype = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[v.type.bits]
    if v.type.kind == "float":  # NaN times 0 is NaN: a select
        vals = select(valid, v.data, np.zeros(1, dtype=v.data.dtype)).astype(dtype)
    else:  # integers, dates, times: zero where NULL by a 0/1 factor
        vals = np.multiply(v.data, valid).astype(dtype, copy=False)
    return Column(t, vals, valid)
