"""Segmented scans over sorted runs (per-group prefix aggregates).

A segment is a maximal run of rows that starts where ``starts`` is true.  The scans are
Hillis–Steele doubling: round ``r`` combines every row with the row ``2^r`` before it when
both lie in the same segment.  ``log2 n`` rounds, each a fixed-stride shift plus
element-wise selects over all rows, so the access pattern depends on ``n`` alone.

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

__all__ = ["segment_ids", "segment_ends", "segmented_scan", "segmented_lex_scan", "forward_fill"]


def segment_ids(starts: np.ndarray) -> np.ndarray:
    """Running segment number (one linear scan)."""
    return np.cumsum(np.asarray(starts, dtype=np.int64))


def segment_ends(starts: np.ndarray) -> np.ndarray:
    """``True`` on the last row of every segment: the next row starts a new one, or it is last."""
    starts = np.asarray(starts, dtype=bool)
    ends = np.ones_like(starts)
    ends[:-1] = starts[1:]
    return ends


def _back(a: np.ndarray, s: int, reverse: bool) -> np.ndarray:
    """``out[i] = a[i - s]`` (or ``a[i + s]`` when ``reverse``), zero outside (fixed stride)."""
    out = np.zeros_like(a)
    n = a.shape[0]
    if s < n:
        if reverse:
            out[: n - s] = a[s:]
        else:
            out[s:] = a[: n - s]
    return out


def _sel(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)


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
    compiled.scan_rounds(acc, seg, int(values.shape[0]), code, bool(reverse))
    if values.dtype.kind == "f":
        return acc.view(np.float64).astype(values.dtype)
    return acc.view(work).astype(values.dtype)


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
    buf = trace.alloc(n, 2, f"scan:{op}")
    seg = segment_ids(starts)
    if use_compiled():
        out = _scan_compiled(values, seg, op, reverse)
        if out is not None:
            s = 1
            while s < n:
                trace.record("scan:round", buf, n, s)
                s *= 2
            return out
    acc = values.copy()
    s = 1
    while s < n:
        trace.record("scan:round", buf, n, s)
        # rows [s, n) combine with rows [0, n-s) (the other way round for suffix scans);
        # both sides are fixed-stride views, the right-hand side is evaluated before the write
        if reverse:
            cur, prev, same = acc[: n - s], acc[s:], seg[s:] == seg[: n - s]
        else:
            cur, prev, same = acc[s:], acc[: n - s], seg[: n - s] == seg[s:]
        if op in ("sum", "count"):
            comb = cur + prev
        elif op == "min":
            comb = np.minimum(cur, prev)
        elif op == "max":
            comb = np.maximum(cur, prev)
        else:  # first: keep the earlier row's value
            comb = prev
        cur[...] = _sel(same, comb, cur)
        s *= 2
    return acc


def _lex_compiled(words: list[np.ndarray], pay: list[np.ndarray], seg: np.ndarray, n: int, op: str,
                  reverse: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
    from . import compiled

    W = np.stack(words) if n else np.zeros((len(words), 0), dtype=np.uint64)
    P, widths = word_block(pay, n)
    compiled.lex_scan_rounds(W.reshape(-1), W.shape[0], P.reshape(-1), P.shape[0], seg, n, op == "max",
                             bool(reverse), np.empty(n, dtype=np.uint64))
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
    if use_compiled() and words:
        s = 1
        while s < n:
            trace.record("lexscan:round", buf, n, s)
            s *= 2
        return _lex_compiled(words, pay, seg, n, op, reverse)
    s = 1
    while s < n:
        trace.record("lexscan:round", buf, n, s)
        prev = [_back(w, s, reverse) for w in words]
        same = _back(seg, s, reverse) == seg
        if reverse:
            same[n - s:] = False
        else:
            same[:s] = False
        # lexicographic prev < cur, evaluated over every word
        lt = prev[-1] < words[-1]
        for a, b in zip(reversed(prev[:-1]), reversed(words[:-1])):
            lt = (a < b) | ((a == b) & lt)
        take_prev = same & (lt if op == "min" else ~lt)
        words = [np.where(take_prev, p, w) for p, w in zip(prev, words)]
        pay = [_sel(take_prev, _back(p, s, reverse), p) for p in pay]
        s *= 2
    return words, pay


def forward_fill(
    has: np.ndarray,
    payload: Sequence[np.ndarray],
    *,
    trace: Trace | None = None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Copy each row with ``has`` forward onto the following rows without it.

    Returns ``(filled, payload)``: ``filled[i]`` is whether some row at or before ``i`` had
    ``has``.  Doubling rounds, as above.
    """
    has = np.asarray(has, dtype=bool).copy()
    cols = [np.array(p, copy=True) for p in payload]
    n = int(has.shape[0])
    trace = trace if trace is not None else Trace()
    width = 1 + sum(int(np.prod(p.shape[1:], dtype=np.int64)) for p in payload)
    buf = trace.alloc(n, width, "fill")
    if use_compiled():
        from . import compiled

        s = 1
        while s < n:
            trace.record("fill:round", buf, n, s)
            s *= 2
        flags = has.view(np.uint8)
        block, widths = word_block(cols, n)
        compiled.fill_rounds(flags, block.reshape(-1), block.shape[0], n, np.empty(n, dtype=np.uint64))
        return flags.view(bool), from_word_block(block, cols, widths, n)
    s = 1
    while s < n:
        trace.record("fill:round", buf, n, s)
        take = ~has[s:] & has[: n - s]
        for c in cols:
            c[s:] = _sel(take, c[: n - s], c[s:])
        has[s:] = has[s:] | has[: n - s]
        s *= 2
    return has, cols
