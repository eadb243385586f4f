"""The row of a scalar subquery, checked like DuckDB checks it (docs/design.md §Subqueries).

DuckDB raises "More than one row returned by a subquery used as an expression" when a
scalar subquery yields several rows, and its value is NULL when it yields none.  Over
private rows the number of real rows is not public, so it is never branched on: one
linear pass counts the real rows, folds the error into the query's status word
(dodb.wire; raised on the analyst's side after the query, like an expression error) and
selects the first real row into a single slot with a masked OR over every slot (all
NULLs when there is none).  The pass touches every slot once whatever the data, so its
trace is ``("scalar:row", n)``; its output is one real row.

Example:
    >>> import pyarrow as pa
    >>> from dodb.operators.table import from_arrow
    >>> t = from_arrow(pa.table({"y": [None, 7, None]}), stability=1)
    >>> t = t.with_arrays(t.arrays()[:-1] + [t.is_real & [False, True, False]])
    >>> out, too_many = scalar_row(t)
    >>> out.to_arrow().column("y").to_pylist(), too_many
    ([7], False)
    >>> none, _ = scalar_row(t.with_arrays(t.arrays()[:-1] + [t.is_real & False]))
    >>> none.to_arrow().column("y").to_pylist()
    [None]
"""
from __future__ import annotations

import numpy as np

from .table import PaddedTable

__all__ = ["scalar_row", "SCALAR_ROWS", "SCALAR_ROWS_MESSAGE"]

# status code (dodb.wire) and DuckDB's message for a scalar subquery with several rows
SCALAR_ROWS = 1 << 22  # beside SUM_OVERFLOW and RANGE_OVERFLOW (operators/aggregate.py)
SCALAR_ROWS_MESSAGE = ("Invalid Input Error: More than one row returned by a subquery used as an expression - "
                       "scalar subqueries can only return a single row.")


def _select_first(a: np.ndarray, first: np.ndarray) -> np.ndarray:
    """``a[first.argmax()]`` without indexing by data: bytes OR-reduced under the one-hot
    mask ``first`` (all zero bytes when no slot is set); exact for every fixed-width dtype."""
    n = a.shape[0]
    if n == 0:  # public: no slot to read
        return np.zeros((1,) + a.shape[1:], dtype=a.dtype)
    raw = np.ascontiguousarray(a).view(np.uint8).reshape(n, -1)
    picked = np.bitwise_or.reduce(raw * first[:, None].astype(np.uint8), axis=0)
    return picked.view(a.dtype).reshape((1,) + a.shape[1:])


def scalar_row(t: PaddedTable, ctx=None) -> tuple[PaddedTable, bool]:
    """One real row holding ``t``'s first real row (NULLs when it has none), and whether
    ``t`` holds more than one real row (the caller's status error)."""
    n = t.padded_size
    real = np.asarray(t.is_real, dtype=bool)
    count = np.cumsum(real, dtype=np.int64) if n else np.zeros(0, np.int64)
    first = real & (count == 1)
    total = int(count[-1]) if n else 0
    if ctx is not None:
        ctx.trace.record("scalar:row", -1, n)
    lanes = [_select_first(a, first) for a in t.arrays()[:-1]]
    out = t.with_arrays(lanes + [np.ones(1, dtype=bool)], stability=t.stability)
    return out, total > 1
