"""A GROUP BY's SUM/AVG of integers, DECIMALs and booleans in one compiled pass
(docs/design.md §Aggregates; issue 26 item 5).

The reference (``aggregate._aggregate``) runs up to nine segmented scans over the sorted
rows for one such aggregate — the non-NULL count, three limb sums for the 128-bit total,
four more for a 38-digit SUM's overflow test, and a count for AVG — each after numpy
passes that prepare its input.  The running per-run prefixes of all of them follow from
five numbers per row (count and four 32-bit limb sums), which
:func:`dodb.oblivious.compiled_reduce.seg_sum128_limbs` computes in one pass.

**The view is the reference's.**  Every scan the reference would run is recorded as the
same trace event (:meth:`~dodb.operators.kernels.Kernels.scan_events`), in its order; the
pass reads every row once whatever its flags and run boundaries (arithmetic masks), so its
access pattern is that of one scan (docs/design.md §Segmented scans).
``tests/operators/test_grouped_sums.py`` checks values, status and trace against the
reference on random tables with keys.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..oblivious.backend import use_compiled
from ..oblivious.scan import segment_ids
from .table import Column
from .wide_sums import avg_column, exceeds_38_digits, int128_parts, sum_column

__all__ = ["grouped_int128"]


def grouped_int128(kern, func: str, col: Column, inc: np.ndarray, starts: np.ndarray,
                   overflow: np.ndarray | None, run_ids: np.ndarray | None = None) -> Column | None:
    """SUM/AVG (``func``) of an integer/DECIMAL/boolean ``col`` over the rows where ``inc``
    is set, per run of ``starts``, on every row (the reference's running values); a 38-digit
    SUM ORs its per-run overflow flags into ``overflow``.  ``None`` when the compiled
    kernels are off (the reference runs).  ``run_ids``: ``segment_ids(starts)`` if known."""
    if not use_compiled():
        return None
    from ..oblivious import compiled_reduce

    n = int(inc.shape[0])
    t = col.type
    lo, hi = int128_parts(col)
    check = func == "sum" and overflow is not None and pa.types.is_decimal(t) and t.precision > 18
    out = np.empty((7 if check else 3) * n, dtype=np.int64)
    compiled_reduce.seg_sum128_limbs(np.ascontiguousarray(lo, dtype=np.uint64),
                                     np.ascontiguousarray(hi, dtype=np.int64).view(np.uint64),
                                     np.ascontiguousarray(inc, dtype=np.bool_),
                                     segment_ids(starts) if run_ids is None else run_ids, out, n, check)
    rows = out.reshape(7 if check else 3, n)
    count, lo_t, hi_t = rows[0], rows[1].view(np.uint64), rows[2]
    kern.scan_events(n, "count")  # the reference's non-NULL count
    nonnull = count > 0
    for _ in range(3):  # _sum128's three scans
        kern.scan_events(n, "sum")
    if func == "avg":
        kern.scan_events(n, "count")
        return avg_column(col, lo_t, hi_t, count, nonnull)
    if check:
        for _ in range(4):  # _sum_overflows's four limb scans
            kern.scan_events(n, "sum")
        overflow[:] = overflow | (exceeds_38_digits(list(rows[3:7])) & nonnull)  # the caller's flags
    return sum_column(col, lo_t, hi_t, nonnull)
