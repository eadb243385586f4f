"""Segmented scans over sorted runs (per-group prefix aggregates).

A segment is a maximal run of rows that starts where ``starts`` is true.  Every scan is
one linear pass (docs/design.md §Segmented scans): row ``i`` combines with the running
value of row ``i - 1`` (``i + 1`` for suffix scans) under a mask saying whether both lie
in the same segment.  Each row is read and written once, whatever the data, so the
access pattern depends on ``n`` alone, and the work is ``O(n)`` (doubling rounds, the
vectorised alternative, cost ``O(n log n)``).  The numpy reference below runs the same
pass row by row (slow; it is the reference the compiled kernels are tested against).

Supported operators: ``sum``, ``count`` (of a boolean), ``min``, ``max`` (numbers, or
lexicographic tuples of ``uint64`` words for strings), ``first`` (propagate each
segment's first row forward) and, with ``reverse=True``, suffix versions (``last``
propagates each segment's last row backwards).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .backend import use_compiled
from .rows import from_word_block, word_block
from .trace import Trace
from .select import select

__all__ = ["segment_ids", "segment_ends", "scan_events", "segmented_scan", "segmented_lex_scan", "forward_fill"]


def segment_ids(starts: np.ndarray) -> np.ndarray:
    """Running segment number (one linear scan)."""
    return np.cumsum(np.asarray(starts, dtype=np.int64))


def segment_ends(starts: np.ndarray) -> np.ndarray:
    """``True`` on the last row of every segment: the next row starts a new one, or it is last."""
    starts = np.asarray(starts, dtype=bool)
    ends = np.ones_like(starts)
    ends[:-1] = starts[1:]
    return ends


def _sel(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return select(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)


def _scan_code(dtype: np.dtype, op: str) -> tuple[str, np.dtype] | None:
    """The compiled scan's operator code and 64-bit working dtype for ``dtype``, or ``None``.

    Integers widen to 64 bits (sums wrap to the same low bits, orders are unchanged);
    float64 adds as float64; float min/max (NaN rules) and other types use the reference.
    """
    if op == "first" and dtype.kind in "biuf" and dtype.itemsize <= 8:
        return "first", np.dtype(np.uint64) if dtype.kind == "f" else np.dtype(f"{'i' if dtype.kind == 'i' else 'u'}8")
    if dtype.kind == "i" and dtype.itemsize <= 8:
        return {"sum": "add", "count": "add", "min": "smin", "max": "smax"}[op], np.dtype(np.int64)
    if dtype.kind == "u" and dtype.itemsize <= 8:
        return {"sum": "add", "count": "add", "min": "umin", "max": "umax"}[op], np.dtype(np.uint64)
    if dtype == np.float64 and op == "sum":
        return "fadd", np.dtype(np.uint64)
    return None


def _scan_compiled(values: np.ndarray, seg: np.ndarray, op: str, reverse: bool) -> np.ndarray | None:
    from . import compiled

    chosen = _scan_code(values.dtype, op) if values.ndim == 1 else None
    if chosen is None:
        return None
    name, work = chosen
    if values.dtype.kind == "f":
        acc = np.array(values, dtype=np.float64, copy=True).view(np.uint64)
    else:
        acc = values.astype(work).view(np.uint64)
    code = compiled.SCAN_OPS[name]  # lint: public operator name
    compiled.scan_pass(acc, seg, int(values.shape[0]), code, bool(reverse))
    if values.dtype.kind == "f":
        return acc.view(np.float64).astype(values.dtype)
    return acc.view(work).astype(values.dtype)


def scan_events(trace: Trace, n: int, op: str) -> None:
    """The view of one segmented scan over ``n`` rows (its buffer and its one pass): what
    :func:`segmented_scan` records, and what a whole-table total that stands for one records."""
    buf = trace.alloc(n, 2, f"scan:{op}")
    trace.record("scan:pass", buf, n, 1)


def segmented_scan(
    values: np.ndarray,
    starts: np.ndarray,
    op: str,
    *,
    reverse: bool = False,
    trace: Trace | None = None,
) -> np.ndarray:
    """Inclusive per-segment scan of ``values`` with ``op`` in sum/count/min/max/first.

    With ``reverse=True`` the scan runs from the end of each segment (suffix scan), so
    ``first`` then propagates each segment's *last* row.
    """
    if op not in ("sum", "count", "min", "max", "first"):
        raise ValueError(f"unknown scan operator {op!r}")
    values = np.asarray(values)
    if op == "count":
        values = values.astype(np.int64)
    n = int(values.shape[0])
    trace = trace if trace is not None else Trace()
    scan_events(trace, n, op)
    seg = segment_ids(starts)
    if use_compiled():
        out = _scan_compiled(values, seg, op, reverse)
        if out is not None:
            return out
    acc = values.copy()
    # a suffix scan is the prefix scan of the reversed views (writes go through)
    a, sg = (acc[::-1], seg[::-1]) if reverse else (acc, seg)
    for i in range(1, n):
        # row i against the running value of row i - 1, selected by the segment mask
        # (one-row slices, not scalars: integer sums wrap silently, as in the kernel)
        cur, prev, same = a[i:i + 1], a[i - 1:i], sg[i - 1:i] == sg[i:i + 1]
        if op in ("sum", "count"):
            comb = cur + prev
        elif op == "min":
            comb = np.minimum(cur, prev)
        elif op == "max":
            comb = np.maximum(cur, prev)
        else:  # first: keep the earlier row's value
            comb = prev
        a[i:i + 1] = select(same, comb, cur)
    return acc


def _lex_compiled(words: list[np.ndarray], pay: list[np.ndarray], seg: np.ndarray, n: int, op: str,
                  reverse: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
    from . import compiled

    W = np.stack(words) if n else np.zeros((len(words), 0), dtype=np.uint64)
    P, widths = word_block(pay, n)
    compiled.lex_scan_pass(W.reshape(-1), W.shape[0], P.reshape(-1), P.shape[0], seg, n, op == "max",
                           bool(reverse))
    return list(W), from_word_block(P, pay, widths, n)


def segmented_lex_scan(
    words: Sequence[np.ndarray],
    starts: np.ndarray,
    op: str,
    *,
    payload: Sequence[np.ndarray] = (),
    reverse: bool = False,
    trace: Trace | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-segment running ``min``/``max`` of lexicographic ``uint64`` word tuples.

    ``payload`` arrays travel with the winning row (e.g. the original value behind an
    order-preserving encoding).  Returns ``(words, payload)``.
    """
    if op not in ("min", "max"):
        raise ValueError("lexicographic scans support min and max")
    words = [np.asarray(w, dtype=np.uint64).copy() for w in words]
    pay = [np.array(p, copy=True) for p in payload]
    n = int(words[0].shape[0]) if words else 0
    trace = trace if trace is not None else Trace()
    buf = trace.alloc(n, len(words) + 1, f"lexscan:{op}")
    seg = segment_ids(starts)
    trace.record("lexscan:pass", buf, n, 1)
    if use_compiled() and words:
        return _lex_compiled(words, pay, seg, n, op, reverse)
    ws, ps, sg = ([w[::-1] for w in words], [p[::-1] for p in pay], seg[::-1]) if reverse else (words, pay, seg)
    for i in range(1, n):
        # lexicographic (running winner at i - 1) < (row i), evaluated over every word
        lt = ws[-1][i - 1:i] < ws[-1][i:i + 1]
        for w in reversed(ws[:-1]):
            lt = (w[i - 1:i] < w[i:i + 1]) | ((w[i - 1:i] == w[i:i + 1]) & lt)
        take_prev = (sg[i - 1:i] == sg[i:i + 1]) & (lt if op == "min" else ~lt)
        for w in ws:
            w[i:i + 1] = select(take_prev, w[i - 1:i], w[i:i + 1])
        for p in ps:
            p[i:i + 1] = _sel(take_prev, p[i - 1:i], p[i:i + 1])
    return words, pay


def forward_fill(
    has: np.ndarray,
    payload: Sequence[np.ndarray],
    *,
    trace: Trace | None = None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Copy each row with ``has`` forward onto the following rows without it.

    Returns ``(filled, payload)``: ``filled[i]`` is whether some row at or before ``i`` had
    ``has``.  One ascending pass, as above.
    """
    has = np.asarray(has, dtype=bool).copy()
    cols = [np.array(p, copy=True) for p in payload]
    n = int(has.shape[0])
    trace = trace if trace is not None else Trace()
    width = 1 + sum(int(np.prod(p.shape[1:], dtype=np.int64)) for p in payload)
    buf = trace.alloc(n, width, "fill")
    trace.record("fill:pass", buf, n, 1)
    if use_compiled():
        from . import compiled

        flags = has.view(np.uint8)
        block, widths = word_block(cols, n)
        compiled.fill_pass(flags, block.reshape(-1), block.shape[0], n, np.empty(n, dtype=np.uint64))
        return flags.view(bool), from_word_block(block, cols, widths, n)
    for i in range(1, n):
        take = ~has[i:i + 1] & has[i - 1:i]
        for c in cols:
            c[i:i + 1] = _sel(take, c[i - 1:i], c[i:i + 1])
        has[i:i + 1] = has[i:i + 1] | has[i - 1:i]
    return has, cols
