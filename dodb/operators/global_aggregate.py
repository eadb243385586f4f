"""A global aggregate (no GROUP BY) as one scan per input column (docs/design.md §Aggregates).

Without keys, ``group_by`` makes the whole table one run and reads each aggregate from
the last row of segmented scans (``aggregate._aggregate``): several full-length scans per
aggregate, plus the numpy passes that prepare their inputs.  Here the same totals come
from one compiled pass per column (:mod:`dodb.oblivious.compiled_reduce`):

* ``count(*)``, ``count(c)``, ``sum``/``avg`` of integers, DECIMALs and booleans (the exact
  128-bit total from 32-bit limb sums, the same limbs the scans add) and of doubles (added
  in the scan's row order, so it rounds the same).  Other aggregates (MIN/MAX, DISTINCT,
  statistics, string_agg, list) keep the scans: :func:`global_row` returns ``None``.
* **The view is the reference's.**  Every scan the reference would run is recorded as the
  same trace events (:meth:`~dodb.operators.kernels.Kernels.scan_events`): same buffers,
  same sizes, same order.  Each pass reads every row whatever its flags, so the access
  pattern is that of the scans it stands for (one linear pass; docs/design.md §Segmented
  scans).  ``tests/operators/test_global_aggregate.py`` checks values, status and trace
  against the reference on random tables.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..oblivious.backend import use_compiled
from .table import Column, PaddedTable
from .wide_sums import avg_column, carry_limbs, exceeds_38_digits, int128_parts, sum_column

__all__ = ["global_row", "FAST_FUNCS"]

FAST_FUNCS = ("count_star", "count", "sum", "avg")


def _kind(agg, table: PaddedTable) -> str | None:
    """How ``agg`` is totalled here: "rows", "float", "int128", "null" — or ``None``."""
    if agg.func not in FAST_FUNCS:
        return None
    if agg.func == "count_star":
        return "rows"
    t = table.column(agg.column).type
    if agg.func == "count":
        return "rows"
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t):
        return "int128"
    return None


def global_row(kern, table: PaddedTable, aggs: list) -> tuple[list[Column], np.ndarray] | None:
    """The one output row's columns of ``aggs`` over every row of ``table`` (``padded_size``
    at least 1) and whether a 38-digit SUM overflowed (a one-element array); ``None`` when an aggregate is not
    one this path totals or the compiled kernels are off (the reference runs)."""
    if not use_compiled():
        return None
    kinds = [_kind(a, table) for a in aggs]
    if any(k is None for k in kinds):  # lint: public the aggregates and declared types
        return None
    from ..oblivious import compiled_reduce as k

    n = table.padded_size
    real = np.ascontiguousarray(table.is_real, dtype=np.bool_)
    kern.trace.record("group_by:scan", -1, n, len(aggs))
    cols, overflow = [], np.zeros(1, bool)
    for agg, kind in zip(aggs, kinds):
        if agg.func == "count_star":
            kern.scan_events(n, "count")
            cols.append(Column(pa.int64(), _count(real), np.ones(1, bool)))
            continue
        col = table.column(agg.column)
        inc = np.ascontiguousarray(real & col.valid, dtype=np.bool_)
        kern.scan_events(n, "count")
        count = _count(inc)
        if agg.func == "count":
            cols.append(Column(pa.int64(), count, np.ones(1, bool)))
            continue
        nonnull = count > 0
        if kind == "null":  # SUM(NULL): all NULL
            cols.append(Column(col.type, np.zeros(1, np.int8), np.zeros(1, bool)))
        elif kind == "float":
            kern.scan_events(n, "sum")
            out = np.zeros(1, np.float64)
            k.fsum_rows(np.ascontiguousarray(col.values, dtype=np.float64), inc, out, n)
            if agg.func == "avg":
                kern.scan_events(n, "count")
                out = out / np.maximum(count, 1)
            cols.append(Column(pa.float64(), out, nonnull))
        else:
            column, wide_overflow = _int128_total(k, kern, agg, col, inc, n, nonnull)
            cols.append(column)
            overflow = overflow | wide_overflow
    return cols, overflow


def _count(flags: np.ndarray) -> np.ndarray:
    """The number of set flags as a one-element int64 array: kept an array, since a Python
    int of a private count is made by a branch on its value (the address audit)."""
    return flags.sum(keepdims=True, dtype=np.int64)


def _int128_total(k, kern, agg, col: Column, inc: np.ndarray, n: int,
                  nonnull: np.ndarray) -> tuple[Column, np.ndarray]:
    """SUM/AVG of an integer/DECIMAL/boolean column: the exact total ``T`` from limb sums;
    the low and high words are ``T mod 2^128`` (the reference's wrapping words).  The limbs
    are carried in one-element arrays, never Python ints (whose size and digits follow the
    value); the overflow flag is a one-element array too."""
    t = col.type
    lo, hi = int128_parts(col)
    limbs = np.zeros(5, np.int64)
    k.sum128_limbs(np.ascontiguousarray(lo, dtype=np.uint64), np.ascontiguousarray(hi, dtype=np.int64).view(np.uint64),
                   inc, limbs, n)
    for _ in range(3):  # the reference's three limb scans (_sum128)
        kern.scan_events(n, "sum")
    sums = [limbs[i:i + 1] for i in range(1, 5)]  # Σ of each 32-bit limb, low first (the top one signed)
    w = [x.view(np.uint64) for x in carry_limbs(sums)]  # 32-bit limbs of T mod 2^128 (the top one's low bits used)
    lo_t = w[0] | (w[1] << np.uint64(32))
    hi_t = (w[2] | (w[3] << np.uint64(32))).view(np.int64)
    if agg.func == "avg":
        kern.scan_events(n, "count")
        return avg_column(col, lo_t, hi_t, limbs[0:1].copy(), nonnull), np.zeros(1, bool)
    overflow = np.zeros(1, bool)
    if pa.types.is_decimal(t) and t.precision > 18:  # the reference's overflow scans (_sum_overflows)
        for _ in range(4):
            kern.scan_events(n, "sum")
        overflow = nonnull & exceeds_38_digits(sums)
    return sum_column(col, lo_t, hi_t, nonnull), overflow
