"""Window functions over padded tables: an oblivious sort, then segmented scans.

Algorithm (docs/design.md §Window functions).  For each window specification — its
PARTITION BY columns and ORDER BY keys — sort obliviously by ``(is_dummy, partition,
order)``, so each partition is one run of real rows and the dummies form runs of their
own after every real row (they never share a partition with a real row, so they never
change a real row's result).  On the sorted array, with ``idx`` the position:

* ``pstart``: first row of a partition; ``peer``: first row of a run of ORDER BY peers;
* ``rn`` (row number) by a segmented prefix count, the partition's bounds ``p0 = idx -
  rn + 1`` and ``p1`` (its last row, propagated back by a suffix scan), the peer run's
  bounds likewise;
* a frame ``[lo, hi]`` is read with fixed-access primitives only: an inclusive
  per-partition prefix ``P`` read at ``hi`` (``UNBOUNDED PRECEDING … x``), a suffix
  ``S`` read at ``lo`` (``x … UNBOUNDED FOLLOWING``), where ``hi``/``lo`` is either a
  constant offset (a fixed-stride shift) or a partition/peer boundary (a segmented
  first/last propagation), and bounded ``ROWS`` frames by combining the ``k`` fixed
  shifts of the frame element-wise.

Every pass is a sorting-network stage, a linear pass of a segmented scan or an
element-wise select over all ``n`` rows, so the trace depends on ``n`` and the
specification only (docs/design.md §Invariants, 2).  The output has the input's padded size and
releases nothing.  With ``restore=True`` the rows are sorted back to their input
positions (a sort on the original position), so an aligned input stays aligned.

SQL semantics are DuckDB's: NULL partition keys form one partition; ORDER BY is NULLS
LAST unless asked; with ORDER BY the default frame is ``RANGE BETWEEN UNBOUNDED PRECEDING
AND CURRENT ROW`` (peers included), without it the whole partition; aggregates ignore
NULLs (an empty or all-NULL frame gives NULL, COUNT 0); FIRST_VALUE/LAST_VALUE respect
NULLs; LAG/LEAD default to NULL.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import UnsupportedQueryError
from ..oblivious.scan import segmented_lex_scan, segmented_scan
from .aggregate import RANGE_OVERFLOW, SUM_OVERFLOW
from .wide_sums import avg_column, carry_limbs, exceeds_38_digits, int128_parts, sum_column
from .context import ExecContext, OpResult
from .keys import KeyField, column_fields, encode_keys, pack_fields, run_starts
from .sort_limit import SortKey
from .table import Column, PaddedTable, unify_columns
from ..oblivious.select import as_float64, select

__all__ = ["Frame", "WindowFunc", "WindowSpec", "window", "WINDOW_FUNCS", "RANKING"]

RANKING = ("row_number", "rank", "dense_rank", "ntile", "percent_rank", "cume_dist")
VALUE = ("lag", "lead", "first_value", "last_value", "nth_value")
AGGREGATE = ("count_star", "count", "sum", "avg", "min", "max")
WINDOW_FUNCS = RANKING + VALUE + AGGREGATE
_M32 = np.uint64(0xFFFFFFFF)
_POS = "__window_pos"  # each row's input position, carried through every pass
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass(frozen=True)
class Frame:
    """``kind`` 'rows', 'range' or 'groups'; ``start``/``end`` relative offsets (negative =
    PRECEDING), ``None`` = UNBOUNDED.  A 'range' offset is on the single ORDER BY key's
    value (``0``: CURRENT ROW = the current row's peers), a 'groups' offset counts peer
    groups.  ``interval``: RANGE offsets are ``(months, µs)`` of an INTERVAL on a DATE or
    TIMESTAMP key.  Frames with a RANGE offset or GROUPS are found by probes (window_frames.py)."""

    kind: str = "range"
    start: int | tuple | None = None
    end: int | tuple | None = 0
    interval: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("rows", "range", "groups"):
            raise ValueError(f"unknown frame kind {self.kind!r}")

    @property
    def probed(self) -> bool:
        """A RANGE frame with an offset, or a GROUPS frame: bounds found by probe rows."""
        return self.kind == "groups" or (self.kind == "range" and (
            self.interval or self.start not in (None, 0) or self.end not in (None, 0)))


WHOLE = Frame("range", None, None)


@dataclass(frozen=True)
class WindowFunc:
    """One window function: ``func`` over ``column`` into output ``name``.

    ``offset``: LAG/LEAD offset, NTH_VALUE's position or NTILE's bucket count; ``default``: LAG/LEAD default
    column (``None`` = NULL); ``frame``: the frame of value and aggregate functions.
    """

    func: str
    column: str | None
    name: str
    offset: int = 1
    default: str | None = None
    frame: Frame = WHOLE
    ignore_nulls: bool = False  # FIRST_VALUE / LAST_VALUE: the first / last non-NULL value of the frame

    def __post_init__(self) -> None:
        if self.func not in WINDOW_FUNCS:
            raise ValueError(f"unsupported window function {self.func!r}")
        if self.func in VALUE + AGGREGATE and self.func != "count_star" and self.column is None:
            raise ValueError(f"{self.func} needs a column")
        if self.func in ("ntile", "nth_value") and self.offset < 1:
            raise ValueError(f"{self.func.upper()} needs a positive count")


@dataclass(frozen=True)
class WindowSpec:
    """Functions sharing one PARTITION BY / ORDER BY (one sorted pass)."""

    partition: tuple[str, ...]
    order: tuple[SortKey, ...]
    funcs: tuple[WindowFunc, ...]


# -- fixed-access primitives ----------------------------------------------------------------
def _shift(a: np.ndarray, k: int, fill) -> np.ndarray:
    """``out[i] = a[i + k]`` where ``0 <= i + k < n``, ``fill`` elsewhere (fixed stride)."""
    n = a.shape[0]
    out = np.empty_like(a)
    out[...] = fill
    if k >= 0 and k < n:
        out[: n - k] = a[k:]
    elif k < 0 and -k < n:
        out[-k:] = a[: n + k]
    return out


def _sel(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return select(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)


class _Ctx:
    """The sorted array's segment structure (module doc), shared by every function of a spec."""

    def __init__(self, pstart: np.ndarray, peer: np.ndarray, trace, okey=None, sort=None):
        n = pstart.shape[0]
        self.n, self.pstart, self.peer, self.trace = n, pstart, peer, trace
        self.okey, self.sort = okey, sort  # (Column, descending, nulls_first) of a single ORDER BY key
        self.idx = np.arange(n, dtype=np.int64)
        ones = np.ones(n, dtype=np.int64)
        self.rn = segmented_scan(ones, pstart, "sum", trace=trace)
        self.cnt = segmented_scan(self.rn, pstart, "first", reverse=True, trace=trace)
        self.p0 = self.idx - self.rn + 1
        self.p1 = self.p0 + self.cnt - 1
        self.peer_rn = segmented_scan(ones, peer, "sum", trace=trace)
        self.overflow = np.zeros(n, dtype=bool)  # rows whose SUM/AVG frame total leaves DECIMAL(38)
        self.q0 = self.idx - self.peer_rn + 1
        self.range_overflow = np.zeros(n, dtype=bool)  # rows whose RANGE bound leaves INT64 (DuckDB raises)
        self.cache: dict = {}  # probed frames' row ranges (window_frames.frame_rows), by frame

    def first(self, arrays: list[np.ndarray], starts: np.ndarray) -> list[np.ndarray]:
        return [segmented_scan(a, starts, "first", trace=self.trace) for a in arrays]

    def last(self, arrays: list[np.ndarray], starts: np.ndarray) -> list[np.ndarray]:
        return [segmented_scan(a, starts, "first", reverse=True, trace=self.trace) for a in arrays]

    def bounds(self, frame: Frame) -> tuple[np.ndarray, np.ndarray]:
        """Clipped frame bounds ``lo``, ``hi`` of every row (empty where ``lo > hi``)."""
        if frame.kind == "range":
            lo = self.p0 if frame.start is None else self.q0
            hi = self.p1 if frame.end is None else self.q0 + self.last([self.peer_rn], self.peer)[0] - 1
            return lo, hi
        lo = self.p0 if frame.start is None else np.maximum(self.idx + frame.start, self.p0)
        hi = self.p1 if frame.end is None else np.minimum(self.idx + frame.end, self.p1)
        return lo, hi


# -- per-row aggregate states -----------------------------------------------------------------
class _State:
    """Partial aggregates per row: ``add`` lanes (int64/float64 sums) or a lexicographic
    ``min``/``max`` (key words + the value's lanes as payload)."""

    def __init__(self, op: str, words: list[np.ndarray], payload: list[np.ndarray] = ()):
        self.op, self.words, self.payload = op, list(words), list(payload)

    def identity(self):
        return 0 if self.op == "add" else (_ONES if self.op == "min" else np.uint64(0))

    def scan(self, starts: np.ndarray, reverse: bool, trace) -> "_State":
        if self.op == "add":
            return _State("add", [segmented_scan(w, starts, "sum", reverse=reverse, trace=trace) for w in self.words])
        words, pay = segmented_lex_scan(self.words, starts, self.op, payload=self.payload, reverse=reverse,
                                        trace=trace)
        return _State(self.op, words, pay)

    def shift(self, k: int) -> "_State":
        ident = self.identity()
        return _State(self.op, [_shift(w, k, ident) for w in self.words], [_shift(p, k, 0) for p in self.payload])

    def arrays(self) -> list[np.ndarray]:
        return self.words + self.payload

    def with_arrays(self, arrays: list[np.ndarray]) -> "_State":
        k = len(self.words)
        return _State(self.op, arrays[:k], arrays[k:])

    def where(self, mask: np.ndarray, other: "_State") -> "_State":
        return self.with_arrays([_sel(mask, a, b) for a, b in zip(self.arrays(), other.arrays())])

    def combine(self, other: "_State") -> "_State":
        if self.op == "add":
            return _State("add", [a + b for a, b in zip(self.words, other.words)])
        # lexicographic other < self (min) / other > self (max), evaluated over every word
        lt = other.words[-1] < self.words[-1]
        for a, b in zip(reversed(other.words[:-1]), reversed(self.words[:-1])):
            lt = (a < b) | ((a == b) & lt)
        gt = other.words[-1] > self.words[-1]
        for a, b in zip(reversed(other.words[:-1]), reversed(self.words[:-1])):
            gt = (a > b) | ((a == b) & gt)
        return other.where(lt if self.op == "min" else gt, self)


def _probe_sums(c: _Ctx, words: list[np.ndarray], frame: Frame) -> list[np.ndarray]:
    """Each row's frame total of every ``words`` lane, for a probed frame: the end prefix
    minus the start prefix (window_frames.probe_prefixes, docs/design.md §Window functions)."""
    from .window_frames import probe_prefixes

    lo, hi = probe_prefixes(c, words, frame)
    if hi is None:
        hi = c.last([segmented_scan(w, c.pstart, "sum", trace=c.trace) for w in words], c.pstart)
    return list(hi) if lo is None else [h - low for h, low in zip(hi, lo)]


def _empty(st: _State, n: int) -> _State:
    """The identity state on every row (an empty frame)."""
    return st.shift(n + 1)


def _frame_state(c: _Ctx, st: _State, frame: Frame) -> _State:
    """The state of every row's frame, read with fixed-access primitives only (module doc)."""
    if frame.probed:
        if st.op != "add":  # MIN/MAX: a sparse table read by lookups
            from .window_frames import range_extreme
            return range_extreme(c, st, frame)
        return _State("add", _probe_sums(c, st.words, frame))
    if frame.start is None and frame.end is None:
        return st.with_arrays(c.last(st.scan(c.pstart, False, c.trace).arrays(), c.pstart))
    if frame.kind == "range":
        if frame.start is None:  # UNBOUNDED PRECEDING .. CURRENT ROW: the prefix at the last peer
            return st.with_arrays(c.last(st.scan(c.pstart, False, c.trace).arrays(), c.peer))
        if frame.end is None:    # CURRENT ROW .. UNBOUNDED FOLLOWING: the suffix at the first peer
            return st.with_arrays(c.first(st.scan(c.pstart, True, c.trace).arrays(), c.peer))
        return st.with_arrays(c.last(st.scan(c.peer, False, c.trace).arrays(), c.peer))  # the peers
    if frame.start is None:  # ROWS UNBOUNDED PRECEDING .. k: the prefix at min(i + k, p1)
        pre = st.scan(c.pstart, False, c.trace)
        at_end = pre.with_arrays(c.last(pre.arrays(), c.pstart))
        out = pre.shift(frame.end).where(c.idx + frame.end <= c.p1, at_end)
        return out.where(c.idx + frame.end >= c.p0, _empty(st, c.n))  # ends before the partition

    if frame.end is None:    # ROWS k .. UNBOUNDED FOLLOWING: the suffix at max(i + k, p0)
        suf = st.scan(c.pstart, True, c.trace)
        at_start = suf.with_arrays(c.first(suf.arrays(), c.pstart))
        out = suf.shift(frame.start).where(c.idx + frame.start >= c.p0, at_start)
        return out.where(c.idx + frame.start <= c.p1, _empty(st, c.n))  # starts after the partition
    acc = None  # bounded ROWS frame: combine its fixed shifts
    ident = _empty(st, c.n)
    for k in range(frame.start, frame.end + 1):
        c.trace.record("window:frame_shift", -1, c.n, k)
        inside = (c.idx + k >= c.p0) & (c.idx + k <= c.p1)
        part = st.shift(k).where(inside, ident)
        acc = part if acc is None else acc.combine(part)
    return acc if acc is not None else ident


# -- the functions ------------------------------------------------------------------------------
def _value_at(c: _Ctx, col: Column, frame: Frame, at_start: bool) -> Column:
    """``col`` read at the frame's first (``at_start``) or last row; NULL on an empty frame."""
    if frame.probed:
        from .window_frames import value_at
        return value_at(c, col, frame, "first" if at_start else "last")
    arrays = col.arrays()
    lo, hi = c.bounds(frame)
    bound = frame.start if at_start else frame.end
    if bound is None:
        out = (c.first if at_start else c.last)(arrays, c.pstart)
    elif frame.kind == "range":
        out = c.first(arrays, c.peer) if at_start else c.last(arrays, c.peer)
    else:
        edge = (c.first if at_start else c.last)(arrays, c.pstart)
        ok = c.idx + bound >= c.p0 if at_start else c.idx + bound <= c.p1
        out = [_sel(ok, _shift(a, bound, 0), e) for a, e in zip(arrays, edge)]
    res = col.with_arrays(out)
    return Column(res.type, res.values, res.valid & (lo <= hi), res.lengths, huge=res.huge)


def _non_null_at(c: _Ctx, col: Column, frame: Frame, first: bool) -> Column:
    """FIRST/LAST_VALUE … IGNORE NULLS: the frame's least (greatest) position holding a
    value, found as a lexicographic min (max) of ``(NULL flag, position)`` over the frame."""
    flag = (~col.valid if first else col.valid).astype(np.uint64)
    words, _ = pack_fields([KeyField(flag, 1), KeyField(c.idx.astype(np.uint64), 64)], c.n)
    best = _frame_state(c, _State("min" if first else "max", words, col.arrays()), frame)
    some = _frame_state(c, _State("add", [col.valid.astype(np.int64)]), frame).words[0] > 0
    out = col.with_arrays(best.payload)
    return Column(out.type, out.values, some, out.lengths, huge=out.huge)


def _nth_value(c: _Ctx, col: Column, frame: Frame, k: int) -> Column:
    """``col`` at the frame's ``k``-th row (1-based), NULL when the frame is shorter.

    The frame's first row is a fixed offset from the current row, or a partition / peer
    start: read the column shifted by ``k - 1`` there (a shift, then a propagation)."""
    if frame.probed:
        from .window_frames import value_at
        return value_at(c, col, frame, "nth", k)
    lo, hi = c.bounds(frame)
    arrays = [_shift(a, k - 1, 0) for a in col.arrays()]
    if frame.start is None:
        out = c.first(arrays, c.pstart)
    elif frame.kind == "range":
        out = c.first(arrays, c.peer)
    else:  # ROWS: the frame starts at max(i + start, p0)
        edge = c.first(arrays, c.pstart)
        out = [_sel(c.idx + frame.start >= c.p0, _shift(a, frame.start, 0), e) for a, e in zip(arrays, edge)]
    res = col.with_arrays(out)
    return Column(res.type, res.values, res.valid & (lo + (k - 1) <= hi), res.lengths, huge=res.huge)


def _lag(c: _Ctx, col: Column, default: Column | None, k: int) -> Column:
    """LAG with offset ``k`` (LEAD is ``-k``): the row ``k`` before in the partition, else the default."""
    src = c.idx - k
    ok = (src >= c.p0) & (src <= c.p1)
    if default is None:
        default = Column(col.type, np.zeros_like(col.values), np.zeros(c.n, dtype=bool),
                         None if col.lengths is None else np.zeros_like(col.lengths))
    col, default = unify_columns([col, default])
    out = [_sel(ok, _shift(a, -k, 0), d) for a, d in zip(col.arrays(), default.arrays())]
    return col.with_arrays(out)


def _ntile(c: _Ctx, buckets: int) -> np.ndarray:
    """DuckDB's NTILE: the first ``n % b`` buckets hold one row more."""
    total = c.cnt
    b = np.minimum(np.int64(buckets), total)
    size = total // b
    large = total - b * size
    small_from = large * (size + 1)
    row = c.rn - 1
    return select(row < small_from, 1 + row // (size + 1), 1 + large + (row - small_from) // np.maximum(size, 1))


def _sum_state(col: Column, inc: np.ndarray) -> tuple[_State, bool]:
    """An exact sum's state (32-bit limbs of 128-bit values) or a float64 sum's; ``True`` if float."""
    if pa.types.is_floating(col.type):
        return _State("add", [select(inc, as_float64(col.values), 0.0)]), True
    if not (pa.types.is_integer(col.type) or pa.types.is_decimal(col.type) or pa.types.is_boolean(col.type)):
        raise TypeError(f"SUM/AVG is not defined for {col.type}")
    lo, hi = int128_parts(col)
    lo = select(inc, lo, np.uint64(0))
    hi = select(inc, hi, 0).astype(np.int64)
    # four 32-bit limbs, each summed exactly in int64 (below 2^31 rows): the total is exact
    # even where it leaves 128 bits, so an overflow is detected, never wrapped
    return _State("add", [(lo & _M32).astype(np.int64), (lo >> np.uint64(32)).astype(np.int64),
                          (hi.view(np.uint64) & _M32).astype(np.int64), hi >> 32]), False


def _sum_words(st: _State, avg: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frame total as (low word, high word) and whether DuckDB raises on it: a SUM at
    least 10^38 in magnitude (outside DECIMAL(38)), an AVG's total outside HUGEINT (2^127).
    Carry propagation, element-wise."""
    limbs = carry_limbs(list(st.words))
    if avg:
        overflow = (limbs[3] < -(1 << 31)) | (limbs[3] >= 1 << 31)
    else:
        overflow = exceeds_38_digits(limbs)
    lo = limbs[0].astype(np.uint64) | (limbs[1].astype(np.uint64) << np.uint64(32))
    hi = limbs[2].astype(np.uint64) | (limbs[3].astype(np.uint64) << np.uint64(32))
    return lo, hi.view(np.int64), overflow


def _aggregate(c: _Ctx, f: WindowFunc, col: Column | None, real: np.ndarray) -> Column:
    frame = f.frame
    inc = real if col is None else real & col.valid
    count = _frame_state(c, _State("add", [inc.astype(np.int64)]), frame).words[0]
    some = count > 0
    if f.func in ("count", "count_star"):
        return Column(pa.int64(), count, np.ones(c.n, dtype=bool))
    if pa.types.is_null(col.type):
        return Column(col.type, np.zeros(c.n, dtype=np.int8), np.zeros(c.n, dtype=bool))
    if f.func in ("sum", "avg"):
        st, is_float = _sum_state(col, inc)
        total = _frame_state(c, st, frame)
        if is_float:
            val = total.words[0] if f.func == "sum" else total.words[0] / np.maximum(count, 1)
            return Column(pa.float64(), val, some)
        lo, hi, overflow = _sum_words(total, f.func == "avg")
        c.overflow = c.overflow | (overflow & real & some)
        return avg_column(col, lo, hi, count, some) if f.func == "avg" else sum_column(col, lo, hi, some)
    # MIN / MAX: an order-preserving encoding whose lead bit puts NULLs behind every value
    fields = column_fields(col, nullable=False)
    lead = KeyField((~inc).astype(np.uint64) if f.func == "min" else inc.astype(np.uint64), 1)
    words, _ = pack_fields([lead] + fields, c.n)
    best = _frame_state(c, _State(f.func, words, col.arrays()), frame)
    out = col.with_arrays(best.payload)
    return Column(out.type, out.values, some, out.lengths, huge=out.huge)


def _compute(c: _Ctx, t: PaddedTable, f: WindowFunc) -> Column:
    if f.func == "row_number":
        return Column(pa.int64(), c.rn.copy(), np.ones(c.n, dtype=bool))
    if f.func == "rank":
        return Column(pa.int64(), c.first([c.rn], c.peer)[0], np.ones(c.n, dtype=bool))
    if f.func == "dense_rank":
        return Column(pa.int64(), segmented_scan(c.peer.astype(np.int64), c.pstart, "sum", trace=c.trace),
                      np.ones(c.n, dtype=bool))
    if f.func == "ntile":
        return Column(pa.int64(), _ntile(c, f.offset), np.ones(c.n, dtype=bool))
    if f.func == "percent_rank":  # (rank - 1) / (rows - 1), 0 in a one-row partition
        rank = c.first([c.rn], c.peer)[0]
        return Column(pa.float64(), (rank - 1) / np.maximum(c.cnt - 1, 1), np.ones(c.n, dtype=bool))
    if f.func == "cume_dist":  # rows up to the last peer / rows
        _, q1 = c.bounds(Frame("range", None, 0))
        return Column(pa.float64(), (q1 - c.p0 + 1) / c.cnt, np.ones(c.n, dtype=bool))
    col = t.column(f.column) if f.column is not None else None
    if f.func in ("lag", "lead"):
        default = t.column(f.default) if f.default is not None else None
        if default is not None and str(default.type) != str(col.type):
            raise UnsupportedQueryError(f"{f.func.upper()} default of type {default.type} for a value of type "
                                        f"{col.type}")
        return _lag(c, col, default, f.offset if f.func == "lag" else -f.offset)
    if f.func in ("first_value", "last_value") and f.ignore_nulls:
        return _non_null_at(c, col, f.frame, f.func == "first_value")
    if f.func in ("first_value", "last_value"):
        return _value_at(c, col, f.frame, f.func == "first_value")
    if f.func == "nth_value":
        return _nth_value(c, col, f.frame, f.offset)
    return _aggregate(c, f, col, t.is_real)


def _spec_pass(t: PaddedTable, spec: WindowSpec, ctx: ExecContext) -> PaddedTable:
    n = t.padded_size
    part = [t.column(p) for p in spec.partition]
    # ties in the ORDER BY go by input slot (the last key): the same order for every row a
    # neighbour leaves untouched (planner/windows.py, stability)
    keys = list(spec.order) + [SortKey(_POS)]
    order = [t.column(k.column) for k in keys]
    desc = [False] * len(part) + [k.descending for k in keys]
    nf = [False] * len(part) + [k.nulls_first for k in keys]
    dummy = KeyField((~t.is_real).astype(np.uint64), 1)
    enc = encode_keys(part + order, desc, leading=[dummy], n=n, nulls_first=nf)
    _, arrays = ctx.kernels.sort(enc, t.arrays())  # lint: public the oblivious network; dummies last
    t = t.with_arrays(arrays)
    lead = [KeyField((~t.is_real).astype(np.uint64), 1)]
    pkey = encode_keys([t.column(p) for p in spec.partition], leading=lead, n=n)
    pstart = run_starts(pkey.words)
    peer = pstart
    if spec.order:
        okey = encode_keys([t.column(k.column) for k in spec.order], [k.descending for k in spec.order], n=n,
                           nulls_first=[k.nulls_first for k in spec.order])
        peer = pstart | run_starts(okey.words)
    ctx.trace.record("window:scan", -1, n, len(spec.funcs))
    okey = None
    if len(spec.order) == 1:
        k = spec.order[0]
        okey = (t.column(k.column), k.descending, k.nulls_first)
    c = _Ctx(pstart, peer, ctx.trace, okey, ctx.kernels.sort)
    cols = [_compute(c, t, f) for f in spec.funcs]
    # folded into the status word like the group-by's SUM: raised after the run, pattern-free
    ctx.fold_errors((c.overflow & t.is_real).astype(np.int64) * SUM_OVERFLOW)
    ctx.fold_errors((c.range_overflow & t.is_real).astype(np.int64) * RANGE_OVERFLOW)
    return PaddedTable(t.names + [f.name for f in spec.funcs], t.columns + cols, t.is_real, t.stability,
                       dict(t.meta))


def _sql_type(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    names = {pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INTEGER", pa.int64(): "BIGINT",
             pa.uint8(): "UTINYINT", pa.uint16(): "USMALLINT", pa.uint32(): "UINTEGER", pa.uint64(): "UBIGINT",
             pa.float64(): "DOUBLE", pa.string(): "VARCHAR", pa.date32(): "DATE", pa.bool_(): "BOOLEAN"}
    if t not in names:
        raise UnsupportedQueryError(f"LAG/LEAD default for a value of type {t}")
    return names[t]


def _cast_defaults(t: PaddedTable, specs: list[WindowSpec], ctx: ExecContext):
    """LAG/LEAD defaults cast to the value's type, as DuckDB binds them (the expression
    evaluator, row-wise over every slot); a NULL default is no default."""
    from dataclasses import replace

    from sqlglot import exp

    from .project import project

    exprs, out = {}, []
    for spec in specs:
        funcs = []
        for f in spec.funcs:
            if f.default is not None:
                dt, vt = t.column(f.default).type, t.column(f.column).type
                if pa.types.is_null(dt):
                    f = replace(f, default=None)
                elif str(dt) != str(vt) and not (pa.types.is_string(dt) and pa.types.is_string(vt)):
                    name = f"__wdefault{len(exprs)}"
                    cast = exp.cast(exp.column(f.default, quoted=True), exp.DataType.build(_sql_type(vt)))
                    exprs[name] = cast  # lint: public names of expressions
                    f = replace(f, default=name)
            funcs.append(f)
        out.append(WindowSpec(spec.partition, spec.order, tuple(funcs)))
    if exprs:
        sources = sorted({c.name for e in exprs.values() for c in e.find_all(exp.Column)})  # lint: public names
        cast = project(t.select(sources), exprs, ctx=ctx).table
        t = PaddedTable(t.names + list(exprs), t.columns + [cast.column(n) for n in exprs], t.is_real,
                        t.stability, dict(t.meta), t.aligned)
    return t, out


def window(table: PaddedTable, specs: list[WindowSpec], *, restore: bool = False, stability: int | None = None,
           mode: str = "do", ctx: ExecContext | None = None) -> OpResult:
    """Add every window function of ``specs`` as a column; the padded size is unchanged.

    ``restore``: sort the rows back to their input slots (keeps an aligned input aligned).
    ``stability``: the output's, as the planner derived it (windows.py); default: the
    input's padded size, the bound that always holds.
    """
    ctx = ctx or ExecContext(mode=mode)
    leaks_before = len(ctx.leaks)
    n = table.padded_size
    pos_name = _POS
    wide = n >= 1 << 32  # public: the key grows by the position's bits
    pos = Column(pa.uint64() if wide else pa.uint32(), np.arange(n, dtype=np.uint64 if wide else np.uint32),
                 np.ones(n, dtype=bool))
    t = PaddedTable(table.names + [pos_name], table.columns + [pos], table.is_real, table.stability, dict(table.meta))
    t, specs = _cast_defaults(t, specs, ctx)
    for spec in specs:
        t = _spec_pass(t, spec, ctx)
    if restore:
        enc = encode_keys([t.column(pos_name)], n=n)
        _, arrays = ctx.kernels.sort(enc, t.arrays())  # lint: public the oblivious network, on slots
        t = t.with_arrays(arrays)
    keep = [nm for nm in t.names if nm != pos_name]
    out = t.select(keep)
    s = n if stability is None else stability
    out = PaddedTable(out.names, out.columns, out.is_real, s, dict(table.meta), aligned=restore and table.aligned)
    return OpResult(out, ctx.leaks[leaks_before:], ctx.trace)
