"""Frames found by probe rows: RANGE offsets (numeric or INTERVAL) and GROUPS frames.

See docs/design.md §Window functions (frames by probes, frame lookups).  Every row's frame
is found as sorted positions ``[s, e]`` by probe rows sorted with the rows; sums are
prefix differences, MIN/MAX a sparse table read by two lookups, FIRST/LAST/NTH_VALUE one
lookup.  A lookup is a sort of the table with the queries, a propagation and a sort back
(:func:`gather`): the trace depends on the padded size ``n`` only.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import UnsupportedQueryError
from ..oblivious.scan import segmented_scan
from .expressions.dates import add_interval, to_us
from .keys import EncodedKey, KeyField, column_fields, pack_fields, run_starts
from .table import Column
from ..oblivious.select import as_float64, select

__all__ = ["probe_prefixes", "frame_rows", "gather", "range_extreme", "value_at"]

_I64_MAX, _I64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
_DATE_INF = (1 << 31) - 1  # DuckDB's DATE 'infinity' (TIMESTAMP's is INT64's maximum)


def _probe_key(c, frame):
    """The frame's order value per row (int64 or float64; µs for an INTERVAL frame, days for
    a DATE's numeric offset), its validity, whether it is float, DESC, NULLS FIRST, and
    where it is ±infinity (DATE/TIMESTAMP keys, else ``None``).  GROUPS: the dense peer rank."""
    if frame.kind == "groups":
        rank = segmented_scan(c.peer.astype(np.int64), c.pstart, "sum", trace=c.trace)
        return rank, np.ones(c.n, dtype=bool), False, False, False, None
    if c.okey is None:
        raise UnsupportedQueryError("RANGE frame with an offset needs exactly one ORDER BY key")
    col, desc, nf = c.okey
    t = col.type
    if frame.interval:
        if t == pa.date32() or (pa.types.is_timestamp(t) and t.unit == "us" and t.tz is None):
            raw = col.values.astype(np.int64)
            inf = np.abs(raw) == (_DATE_INF if t == pa.date32() else _I64_MAX)  # ±infinity: never moved
            us, bad = to_us(select(inf, 0, raw), "date" if t == pa.date32() else "ts")
            c.range_overflow = c.range_overflow | (col.valid & bad)  # a DATE outside TIMESTAMP's range: DuckDB raises
            us = select(inf, np.sign(raw) * _I64_MAX, us)
            return select(col.valid, us, 0), col.valid, False, desc, nf, col.valid & inf
        raise UnsupportedQueryError(f"RANGE frame with an INTERVAL offset over an ORDER BY key of type {t}")
    if t == pa.date32():  # a number of days (DuckDB's DATE ± INTEGER)
        raw = col.values.astype(np.int64)
        return select(col.valid, raw, 0), col.valid, False, desc, nf, col.valid & (np.abs(raw) == _DATE_INF)
    if pa.types.is_floating(t):
        vals = as_float64(col.values)
        return select(col.valid, vals, 0.0), col.valid, True, desc, nf, None
    if pa.types.is_integer(t) and t != pa.uint64():
        vals = col.values.astype(np.int64)
        return select(col.valid, vals, 0), col.valid, False, desc, nf, None
    raise UnsupportedQueryError(f"RANGE frame with an offset over an ORDER BY key of type {t}")


def _moved(v: np.ndarray, d, is_float: bool, sign: int) -> tuple[np.ndarray, np.ndarray]:
    """``v + sign·d`` and its side (0 below every int64, 1 inside, 2 above), element-wise.
    ``d`` is a number, or ``(months, µs)`` of an INTERVAL (DuckDB's ``Interval::Add``)."""
    if isinstance(d, tuple):
        moved, bad = add_interval(v, sign * d[0], 0, sign * d[1])
        return moved, select(bad, 0, 1).astype(np.uint64)
    d = sign * d
    if is_float:
        return v + float(d), np.ones(v.shape[0], dtype=np.uint64)
    if d >= 0:
        over = v > _I64_MAX - d
        return select(over, 0, np.minimum(v, _I64_MAX - d) + d), select(over, 2, 1).astype(np.uint64)
    under = v < _I64_MIN - d
    return select(under, 0, np.maximum(v, _I64_MIN - d) + d), select(under, 0, 1).astype(np.uint64)


def probe_prefixes(c, words: list[np.ndarray], frame):
    """Per row, the partition prefix of every ``words`` lane before its start probe and up
    to its end probe (``None`` for an UNBOUNDED side).

    Each row ``i`` (with order value ``v``) adds a start probe at ``v + start`` and an end
    probe at ``v + end`` (offsets flipped for DESC); the ``3n`` rows are sorted obliviously
    by (partition, NULL flag, side, value, start probe < row < end probe), a segmented
    prefix sum over the rows' lanes (probes add 0) reaches every probe, and a second sort
    on (probe kind, row) brings the two prefixes back to row ``i``'s slot.  Two sorts of
    ``3n`` rows and scans: the trace depends on ``n`` only."""
    n = c.n
    if not frame.interval and frame.start is not None and frame.end is not None and frame.start > frame.end:
        raise UnsupportedQueryError(f"{frame.kind.upper()} frame whose start offset follows its end offset")
    v, valid, is_float, desc, nf, inf = _probe_key(c, frame)
    narrow = None  # a key narrower than 64 bits: DuckDB adds the offset in the key's own type
    if frame.kind == "range" and not frame.interval and c.okey is not None:
        kt = c.okey[0].type
        if pa.types.is_integer(kt) and kt.bit_width < 64:
            info = np.iinfo(kt.to_pandas_dtype())
            narrow = (int(info.min), int(info.max))
    sign = -1 if desc else 1
    zero = (0, 0) if frame.interval else 0
    pid = np.cumsum(c.pstart.astype(np.int64)).astype(np.uint64)  # the partition's number, in sorted order
    vals, sides, ties = [v], [np.ones(n, dtype=np.uint64)], [np.ones(n, dtype=np.uint64)]
    for tie, off in ((0, frame.start), (2, frame.end)):
        mv, side = _moved(v, zero if off is None else off, is_float, sign)
        if inf is not None:  # public: a DATE/TIMESTAMP key; ±infinity plus an offset stays ±infinity
            if not frame.interval:  # public: days; a finite DATE leaving DATE's range raises in DuckDB
                side = select(~inf & (np.abs(mv) > _DATE_INF - 1), np.uint64(0), side)
            mv, side = select(inf, v, mv), select(inf, np.uint64(1), side)
        c.range_overflow = c.range_overflow | (valid & (side != 1))
        if narrow is not None and off:  # public: the key's type; an offset of 0 moves nothing
            c.range_overflow = c.range_overflow | (valid & ((mv < narrow[0]) | (mv > narrow[1])))
        if desc:
            side = np.uint64(2) - side
        vals.append(mv), sides.append(select(valid, side, np.uint64(1))), ties.append(np.full(n, tie, np.uint64))
    allv = np.concatenate(vals)
    allvalid = np.concatenate([valid] * 3)
    vcol = Column(pa.float64() if is_float else pa.int64(), select(allvalid, allv, 0), np.ones(3 * n, dtype=bool))
    fields = [KeyField(np.concatenate([pid] * 3), 64),
              KeyField(np.concatenate([valid if nf else ~valid] * 3).astype(np.uint64), 1),
              KeyField(np.concatenate(sides), 2)] + column_fields(vcol, desc, nullable=False) + \
        [KeyField(np.concatenate(ties), 2)]
    slot = np.concatenate([c.idx.astype(np.uint64)] * 3)
    back = np.concatenate([np.full(n, 2, np.uint64), np.zeros(n, np.uint64), np.ones(n, np.uint64)])
    lanes = [np.concatenate([w, np.zeros_like(w), np.zeros_like(w)]) for w in words]
    pid3 = np.concatenate([pid] * 3)
    key = EncodedKey(*pack_fields(fields, 3 * n))
    _, out = c.sort(key, lanes + [pid3, slot, back])  # lint: public the oblivious network on 3n rows
    *sums, pid_s, slot_s, back_s = out
    starts = run_starts([pid_s])
    pre = [segmented_scan(a, starts, "sum", trace=c.trace) for a in sums]
    key = EncodedKey(*pack_fields([KeyField(back_s, 2), KeyField(slot_s, 64)], 3 * n))
    _, res = c.sort(key, pre)  # lint: public the oblivious network, back to (probe kind, row)
    lo = None if frame.start is None else [r[:n] for r in res]
    hi = None if frame.end is None else [r[n:2 * n] for r in res]
    return lo, hi


def frame_rows(c, frame) -> tuple[np.ndarray, np.ndarray]:
    """Every row's frame as sorted positions ``[s, e]`` (empty where ``s > e``): the
    probes' row counts from the partition start ``p0``."""
    key = ("rows", frame)
    if key not in c.cache:  # public: the frame specification
        lo, hi = probe_prefixes(c, [np.ones(c.n, dtype=np.int64)], frame)
        s = c.p0 if lo is None else c.p0 + lo[0]
        e = c.p1 if hi is None else c.p0 + hi[0] - 1
        c.cache[key] = (s, e)  # lint: public a dict keyed by the frame specification
    return c.cache[key]  # lint: public a dict keyed by the frame specification


def gather(c, table: list[np.ndarray], at: np.ndarray) -> list[np.ndarray]:
    """``[a[at] for a in table]`` obliviously, for positions ``0 <= at < m``: the ``m``
    entries and the ``q`` queries sorted by (position, entry before query), each entry
    propagated to the queries after it, and a sort on (query flag, query number) back.
    Two sorts of ``m + q`` rows and a scan: the trace depends on ``m`` and ``q`` only."""
    m, q = table[0].shape[0], at.shape[0]
    pos = np.concatenate([np.arange(m, dtype=np.uint64), at.astype(np.uint64)])
    kind = np.concatenate([np.zeros(m, np.uint64), np.ones(q, np.uint64)])
    qid = np.concatenate([np.zeros(m, np.uint64), np.arange(q, dtype=np.uint64)])
    key = EncodedKey(*pack_fields([KeyField(pos, 64), KeyField(kind, 1)], m + q))
    lanes = [np.concatenate([a, np.zeros((q,) + a.shape[1:], a.dtype)]) for a in table]
    _, out = c.sort(key, lanes + [kind, qid])  # lint: public the oblivious network on m + q rows
    *vals, kind_s, qid_s = out
    got = [segmented_scan(a, kind_s == 0, "first", trace=c.trace) for a in vals]
    key = EncodedKey(*pack_fields([KeyField(kind_s, 1), KeyField(qid_s, 64)], m + q))
    _, res = c.sort(key, got)  # lint: public the oblivious network, back to query order
    return [r[m:] for r in res]


def range_extreme(c, st, frame):
    """MIN/MAX (a lexicographic ``_State``) of every row's probed frame: a sparse table
    ``M_k[j] = best(x[j .. j + 2^k - 1])`` built by fixed shifts (``floor(log2 n) + 1``
    levels), read at ``(k, s)`` and ``(k, e - 2^k + 1)`` with ``k = floor(log2(e - s + 1))``
    by one :func:`gather` on all levels; the identity on an empty frame."""
    n = c.n
    ident = st.shift(n + 1)
    if n == 0:  # public
        return ident
    levels = [st]
    while (1 << len(levels)) <= n:  # public: floor(log2 n) + 1 levels
        prev = levels[-1]
        c.trace.record("window:sparse_level", -1, n, len(levels))
        levels.append(prev.combine(prev.shift(1 << (len(levels) - 1))))
    s, e = frame_rows(c, frame)
    empty = e < s
    length = select(empty, 1, e - s + 1)
    k = np.zeros(n, dtype=np.int64)
    for j in range(1, len(levels)):  # public: one comparison per level
        k += (length >= (1 << j)).astype(np.int64)
    s0 = np.clip(s, 0, n - 1)
    e0 = np.minimum(s0 + length - 1, n - 1)
    a = k * n + s0
    b = k * n + np.maximum(e0 - (np.int64(1) << k) + 1, s0)
    table = [np.concatenate(arrays) for arrays in zip(*[lv.arrays() for lv in levels])]
    got = gather(c, table, np.concatenate([a, b]))
    best = st.with_arrays([g[:n] for g in got]).combine(st.with_arrays([g[n:] for g in got]))
    return ident.where(empty, best)


def value_at(c, col: Column, frame, which: str, k: int = 1) -> Column:
    """FIRST_VALUE (``which='first'``), LAST_VALUE (``'last'``) or NTH_VALUE ``k`` over a
    probed frame: ``col`` read at ``s``, ``e`` or ``s + k - 1`` by one :func:`gather`;
    NULL where that row is outside the frame."""
    n = c.n
    s, e = frame_rows(c, frame)
    at = e if which == "last" else s + (k - 1)
    ok = (s <= e) & (at <= e)
    if n == 0:  # public
        return Column(col.type, col.values, col.valid & ok, col.lengths, huge=col.huge)
    res = col.with_arrays(gather(c, col.arrays(), np.clip(at, 0, n - 1)))
    return Column(res.type, res.values, res.valid & ok, res.lengths, huge=res.huge)
