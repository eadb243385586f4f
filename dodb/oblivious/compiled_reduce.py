"""Whole-table totals in one compiled pass (a global aggregate; issue 26 item 5).

A global aggregate (no GROUP BY) is one segment: the value a segmented scan
(:mod:`.scan`) leaves on the last row is the table's total.  These kernels compute that
total directly, without the scan's per-row output and the numpy passes that prepare its
inputs; ``operators/global_aggregate.py`` records the same trace events as the scans it
replaces and checks values and traces against them (``tests/operators/test_global_aggregate.py``).

* :func:`sum128_limbs` — the counts and 32-bit limb sums from which the exact 128-bit total
  of an integer/DECIMAL column follows (the limbs ``group_by``'s ``_sum128`` and
  ``_sum_overflows`` scan, all in one pass);
* :func:`seg_sum128_limbs` — the same five numbers as running per-run prefixes on every row
  (a GROUP BY's SUM/AVG: the five segmented scans ``_aggregate`` would run, in one pass);
* :func:`fsum_rows` — the float64 sum in the scan's order (row 0 first, each row added to
  the running value as the scan does), so it rounds exactly as the reference.

Rules, as in :mod:`.compiled`: data only in arrays, scalar arguments are sizes; rows left
out (dummies, NULLs) are masked with arithmetic masks (``word & (0 - flag)``), never
skipped: every row is read whatever its flag.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as _ix

from .compiled import _OPTS, _f2u, _u2f

__all__ = ["sum128_limbs", "seg_sum128_limbs", "fsum_rows"]

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


@njit(**_OPTS)
def sum128_limbs(lo, hi, inc, out, n):
    """Over the rows where ``inc`` is set: ``out = [count, Σ lo & M32, Σ lo >> 32,
    Σ hi & M32, Σ hi >> 32 (signed)]`` for two's-complement words ``(hi, lo)`` (``hi`` as
    its ``uint64`` view).  Exact below ``2^31`` rows: each limb is below ``2^32``."""
    c = np.int64(0)
    s0 = np.int64(0)
    s1 = np.int64(0)
    h0 = np.int64(0)
    h1 = np.int64(0)
    for i in range(n):
        f = np.uint64(inc[_ix(i)])
        m = np.uint64(0) - f
        x = lo[_ix(i)] & m
        h = hi[_ix(i)] & m
        c += np.int64(f)
        s0 += np.int64(x & _M32)
        s1 += np.int64(x >> _S32)
        h0 += np.int64(h & _M32)
        h1 += np.int64(h) >> np.int64(32)
    out[0] = c
    out[1] = s0
    out[2] = s1
    out[3] = h0
    out[4] = h1


@njit(**_OPTS)
def seg_sum128_limbs(lo, hi, inc, seg, out, n, limbs):
    """Per row ``i``, over the rows ``j <= i`` of its run (same ``seg``) where ``inc`` is set:
    the count and the exact 128-bit total (mod 2^128) as ``out[0:3, i] = [count, low word,
    high word]``, and when ``limbs`` (a public flag: a 38-digit SUM's overflow test) also
    ``out[3:7, i] = [Σ lo & M32, Σ lo >> 32, Σ hi & M32, Σ hi >> 32 (signed)]`` — the
    prefixes the reference's segmented scans (``scan.segmented_scan``, sum/count) leave and
    the words ``_sum128`` makes of them, in one pass.  ``out`` is ``(3 or 7, n)`` int64, flat.
    Each row is read once whatever its flags; the run boundary is an arithmetic mask."""
    c = np.int64(0)
    s0 = np.int64(0)
    s1 = np.int64(0)
    h0 = np.int64(0)
    h1 = np.int64(0)
    prev = np.int64(0)
    for i in range(n):
        f = np.uint64(inc[_ix(i)])
        m = np.uint64(0) - f
        x = lo[_ix(i)] & m
        h = hi[_ix(i)] & m
        g = seg[_ix(i)]
        keep = np.int64(0) - np.int64(g == prev)  # all ones inside a run, zero on its first row
        prev = g
        c = (c & keep) + np.int64(f)
        s0 = (s0 & keep) + np.int64(x & _M32)
        s1 = (s1 & keep) + np.int64(x >> _S32)
        h0 = (h0 & keep) + np.int64(h & _M32)
        h1 = (h1 & keep) + (np.int64(h) >> np.int64(32))
        # _sum128: low word s0 + (s1 mod 2^32)·2^32 with its carry; high word Σ hi + s1 >> 32 + carry
        u0 = np.uint64(s0)
        u1 = np.uint64(s1)
        low = u0 + ((u1 & _M32) << _S32)
        carry = np.uint64(low < u0)
        sh = np.uint64(h0) + (np.uint64(h1) << _S32)  # the wrapping 64-bit Σ hi
        out[_ix(i)] = c
        out[_ix(n + i)] = np.int64(low)
        out[_ix(2 * n + i)] = np.int64(sh + (u1 >> _S32) + carry)
        if limbs:  # a public flag, the same for every row
            out[_ix(3 * n + i)] = s0
            out[_ix(4 * n + i)] = s1
            out[_ix(5 * n + i)] = h0
            out[_ix(6 * n + i)] = h1


@njit(**_OPTS)
def fsum_rows(x, inc, out, n):
    """``out[0]`` = the sum of ``x`` over the rows where ``inc`` is set (0.0 elsewhere), added
    in row order as the segmented scan adds (row ``i``'s value plus the running value)."""
    acc = np.uint64(0)
    for i in range(n):
        m = np.uint64(0) - np.uint64(inc[_ix(i)])
        v = _f2u(x[_ix(i)]) & m
        if i == 0:  # the loop counter, not data: the scan starts from row 0's own value
            acc = v
        else:
            acc = _f2u(_u2f(v) + _u2f(acc))
    out[0] = _u2f(acc)
