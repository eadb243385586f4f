"""GROUP BY with aggregates (and global aggregates) in three modes.

Algorithm (docs/design.md §Operators and stability): sort obliviously by ``(is_dummy, group key[, distinct column])``
so each group is one run with dummies last; mark run starts by comparing adjacent
encoded keys; compute every aggregate with a segmented scan whose value on the run's
last row is the group's result; the last real row of each run is the group's output
row.  ``do`` compacts those rows and cuts the output to the noisy group count (one
release, sensitivity = the group stability); ``oblivious`` keeps all ``n`` slots;
``plain`` runs the same logic on the fast insecure kernels.

SQL semantics: NULL keys form one group; ``COUNT(col)``/``SUM``/``AVG``/``MIN``/``MAX``
ignore NULLs and return NULL on an all-NULL group (COUNT returns 0); ``SUM`` of
integers and decimals is exact in 128 bits (DuckDB's HUGEINT / DECIMAL(38, s));
without GROUP BY exactly one row comes out, even from an empty input, and nothing leaks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .aggregates_stats import PAIR_FUNCS, SORTED_FUNCS, STATS_FUNCS, stats_aggregate
from .context import ExecContext, OpResult
from .global_aggregate import global_row
from .grouped_sums import grouped_int128
from .keys import KeyField, column_fields, encode_keys, pack_fields, run_starts
from .scalar_row import SCALAR_ROWS, SCALAR_ROWS_MESSAGE
from .list_agg import list_agg
from .string_agg import string_agg
from .table import Column, PaddedTable
from .wide_sums import avg_column, exceeds_38_digits, int128_parts, sum_column
from ..oblivious.scan import segment_ids
from ..oblivious.select import as_float64, select

__all__ = ["Agg", "group_by", "groups_presorted", "takes_presorted", "needs_own_pass", "AGG_FUNCS", "SUM_OVERFLOW", "RANGE_OVERFLOW", "STATUS_MESSAGES"]

AGG_FUNCS = ("count_star", "count", "sum", "avg", "min", "max", "count_distinct", "string_agg", "list") + STATS_FUNCS
_M32 = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True)
class Agg:
    """One aggregate: ``func`` over ``column`` (None for COUNT(*)), output name ``name``;
    ``column2`` is the second argument of corr/covar/arg_min/arg_max, ``param`` a quantile's
    fraction as written (public, exact).  ``string_agg``: ``param`` is the separator,
    ``order`` the ORDER BY inside the call as ``(column, descending, nulls_first)``, ``rows``
    the planner's public bound on rows per group and ``total`` on the padded input size.
    ``list`` (docs/design.md §list): ``order``, ``rows`` and ``total`` as string_agg's,
    ``column2`` the FILTER's boolean column (None without FILTER)."""

    func: str
    column: str | None
    name: str
    column2: str | None = None
    param: str | None = None
    order: tuple = ()
    rows: int | None = None
    total: int | None = None

    def __post_init__(self) -> None:
        if self.func not in AGG_FUNCS:
            raise ValueError(f"unsupported aggregate {self.func!r}")
        if self.func != "count_star" and self.column is None:
            raise ValueError(f"{self.func} needs a column")
        if self.func != "list" and (self.func in PAIR_FUNCS) != (self.column2 is not None):
            raise ValueError(f"{self.func}: second column {'missing' if self.column2 is None else 'not taken'}")


def _sum128(kern, lo: np.ndarray, hi: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact per-run 128-bit sums via 32-bit limbs (no overflow below 2^31 rows)."""
    s0 = kern.seg_reduce((lo & _M32).astype(np.int64), starts, "sum").astype(np.uint64)
    s1 = kern.seg_reduce((lo >> np.uint64(32)).astype(np.int64), starts, "sum").astype(np.uint64)
    sh = kern.seg_reduce(hi, starts, "sum")
    b = (s1 & _M32) << np.uint64(32)
    lo_t = s0 + b
    carry = (lo_t < s0).astype(np.int64)
    hi_t = sh + (s1 >> np.uint64(32)).astype(np.int64) + carry
    return lo_t, hi_t


# status code (dodb.wire) of a SUM outside DECIMAL(38, s), the widest result dodb returns
SUM_OVERFLOW = 1 << 20
RANGE_OVERFLOW = 1 << 21  # a window's RANGE bound (ORDER BY key ± offset) outside its type, as DuckDB raises
STATUS_MESSAGES = {SUM_OVERFLOW: "Out of Range Error: Overflow in SUM: the total does not fit in 38 digits "
                                 "(DECIMAL(38)/HUGEINT)",
                   RANGE_OVERFLOW: "Out of Range Error: Overflow in a RANGE frame bound: the ORDER BY key plus "
                                   "the offset is outside its type's range (its integer type, DATE or TIMESTAMP)",
                   SCALAR_ROWS: SCALAR_ROWS_MESSAGE}
assert len(STATUS_MESSAGES) == 3, "status codes must differ"


def _sum_overflows(kern, lo: np.ndarray, hi: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per run: whether the exact sum of the 128-bit values is at least 10^38 in magnitude.

    Four exact 32-bit-limb sums (no int64 overflow below 2^31 rows), then ``T + 10^38 <= 0``
    or ``T - 10^38 >= 0`` by carry propagation: element-wise, no branch on the values.
    """
    parts = [(lo & _M32).astype(np.int64), (lo >> np.uint64(32)).astype(np.int64),
             (hi.view(np.uint64) & _M32).astype(np.int64), hi >> 32]
    return exceeds_38_digits([kern.seg_reduce(p, starts, "sum") for p in parts])


def _aggregate(kern, agg: Agg, col: Column | None, real: np.ndarray, starts: np.ndarray,
               dstarts: np.ndarray | None, overflow: np.ndarray | None = None, col2: Column | None = None,
               grouped: bool = True, run_ids: np.ndarray | None = None) -> Column:
    """One aggregate's column; a 128-bit SUM also ORs its per-run overflow flags into ``overflow``.
    ``run_ids``: ``segment_ids(starts)``, when the caller computed it once for every aggregate."""
    if agg.func == "string_agg":
        n = real.shape[0]
        rows = n if agg.rows is None else agg.rows
        total = n if agg.total is None else agg.total
        return string_agg(kern, col, agg.param, rows, total, grouped, real, starts)
    if agg.func == "list":
        n = real.shape[0]
        include = None if col2 is None else col2.valid & np.asarray(col2.values, dtype=bool)
        return list_agg(kern, col, include, n if agg.rows is None else agg.rows,
                        n if agg.total is None else agg.total, grouped, real, starts)
    if agg.func in STATS_FUNCS:
        return stats_aggregate(kern, agg.func, col, col2, agg.param, real, starts)
    if agg.func == "count_star":
        return Column(pa.int64(), kern.seg_reduce(real, starts, "count"), np.ones_like(real))
    inc = real & col.valid
    if agg.func == "count":
        return Column(pa.int64(), kern.seg_reduce(inc, starts, "count"), np.ones_like(real))
    if agg.func == "count_distinct":
        return Column(pa.int64(), kern.seg_reduce(inc & dstarts, starts, "count"), np.ones_like(real))
    t = col.type
    if agg.func in ("sum", "avg") and (pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t)):
        fused = grouped_int128(kern, agg.func, col, inc, starts, overflow, run_ids)  # one pass, the same view
        if fused is not None:
            return fused
    nonnull = kern.seg_reduce(inc, starts, "count") > 0
    if pa.types.is_null(t):  # SUM(NULL), MIN(CASE … END) with every branch NULL: all NULL
        return Column(t, np.zeros(real.shape[0], dtype=np.int8), np.zeros(real.shape[0], dtype=bool))
    if agg.func in ("sum", "avg"):
        if pa.types.is_floating(t):
            total = kern.seg_reduce(select(inc, as_float64(col.values), 0.0), starts, "sum")
            if agg.func == "sum":
                return Column(pa.float64(), total, nonnull)
            cnt = kern.seg_reduce(inc, starts, "count")
            return Column(pa.float64(), total / np.maximum(cnt, 1), nonnull)
        if not (pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t)):
            raise TypeError(f"{agg.func.upper()} is not defined for {t}")
        lo, hi = int128_parts(col)
        lo = select(inc, lo, np.uint64(0))
        hi = select(inc, hi, 0)
        lo_t, hi_t = _sum128(kern, lo, hi, starts)
        if agg.func == "sum":
            # below 19 digits a sum of < 2^31 rows stays far inside DECIMAL(38): nothing to check
            if overflow is not None and pa.types.is_decimal(t) and t.precision > 18:
                overflow[:] = overflow | (_sum_overflows(kern, lo, hi, starts) & nonnull)  # the caller's flags
            return sum_column(col, lo_t, hi_t, nonnull)
        return avg_column(col, lo_t, hi_t, kern.seg_reduce(inc, starts, "count"), nonnull)
    # MIN / MAX: lexicographic scan over an order-preserving encoding, carrying the value
    fields = column_fields(col, nullable=False)
    lead = KeyField((~inc).astype(np.uint64) if agg.func == "min" else inc.astype(np.uint64), 1)
    words, _ = pack_fields([lead] + fields, real.shape[0])
    _, lanes = kern.seg_reduce_lex(words, starts, agg.func, payload=col.arrays())
    out = col.with_arrays(lanes)
    return Column(out.type, out.values, nonnull, out.lengths, huge=out.huge)


def group_by(
    table: PaddedTable,
    keys: list[str],
    aggs: list[Agg],
    *,
    mode: str = "do",
    epsilon: float = 1.0,
    delta: float = 1e-6,
    ctx: ExecContext | None = None,
    sort_keys: list[str] | None = None,
    presorted: bool = False,
    ordered: bool = False,
) -> OpResult:
    """Group real rows by ``keys`` and compute ``aggs``; no keys = one global row.

    ``sort_keys``: a subset of ``keys`` that determines the others in every input (a public
    fact of the plan: declared keys, planner/degrees.py ``fd_unique``).  Rows are sorted and
    runs cut on it alone; the other keys ride as payload and are read from each run's row.

    ``presorted``: ``table`` arrives sorted by ``keys`` as a join sorts its side (key order,
    non-real rows wherever their keys put them: a scan sorted before its filters marked
    rows, planner/presort.py); used when :func:`takes_presorted` allows, else ignored.

    ``ordered``: ``table`` is already in ``(dummy last, sort keys)`` order up to the order of
    the groups (an inner join's output on those keys): the pass without COUNT(DISTINCT)
    skips its sort, whose stable result would keep every group's rows in the same order.
    """
    ctx = ctx or ExecContext(mode=mode)
    kern = ctx.kernels
    name = ctx.op_name("group_by" if keys else "aggregate")
    leaks_before = len(ctx.leaks)
    # COUNT(DISTINCT c) and quantiles of c need the runs sorted by c too: one pass per such c
    # (string_agg(… ORDER BY …) needs them sorted by its order keys: one pass per distinct ORDER BY)
    distinct_cols = sorted({_pass_of(a) for a in aggs if _pass_of(a) is not None}, key=repr)
    if table.padded_size == 0 and not keys:
        table = _one_dummy(table)
    n = table.padded_size
    s = table.stability
    names = list(keys) + [a.name for a in aggs]

    if not keys:
        fast = global_row(kern, table, aggs)  # one compiled pass per column, the same view
        if fast is not None:
            row, overflow = fast
            ctx.fold_errors(np.asarray(overflow, dtype=np.int64) * SUM_OVERFLOW)  # no branch on data
            out = PaddedTable(names, row, np.ones(1, dtype=bool), 1 if s > 0 else 0)
            return OpResult(out, ctx.leaks[leaks_before:], ctx.trace)
    # one sorted pass per COUNT(DISTINCT) column (the other aggregates ride on the first)
    passes = []
    presorted = presorted and takes_presorted(table, keys, aggs, sort_keys)
    for i, d in enumerate(distinct_cols or [None]):
        sub = [a for a in aggs if (_pass_of(a) is not None and _pass_of(a) == d)
               or (i == 0 and _pass_of(a) is None)]
        passes.append((sub, *_group_pass(kern, ctx, table, keys, sub, d, sort_keys, presorted,
                                         ordered and d is None)))
    if len(passes) == 1:
        out_cols, group_rows = passes[0][1], passes[0][2]
    elif not keys:
        by_name = {a.name: c for sub, cols, _ in passes for a, c in zip(sub, cols)}
        out_cols, group_rows = [by_name[a.name] for a in aggs], passes[0][2]
    else:
        # each pass holds one row per group at its run's end, groups in key order: stable
        # compaction lines the passes up row by row (G groups first in every pass)
        by_name, group_rows = {}, None
        for sub, cols, rows in passes:
            flat = [x for c in cols for x in c.arrays()]
            live, moved = kern.compact(rows, flat)
            i = 0
            for nm, c in zip(list(keys) + [a.name for a in sub], cols):
                k = c.n_arrays()
                by_name.setdefault(nm, c.with_arrays(moved[i:i + k]))
                i += k
            group_rows = live if group_rows is None else group_rows
        out_cols = [by_name[nm] for nm in names]
    if not keys:
        # exactly one output row, whatever the data: its position is public (the last slot)
        row = [c.take_slice(n - 1, n) for c in out_cols]
        out = PaddedTable(names, row, np.ones(1, dtype=bool), 1 if s > 0 else 0)
        return OpResult(out, ctx.leaks[leaks_before:], ctx.trace)
    out_s = ctx.group_stability(s)
    grouped = PaddedTable(names, out_cols, group_rows, out_s)
    if ctx.mode == "plain":
        out = grouped.with_arrays([a[group_rows] for a in grouped.arrays()])
    elif ctx.mode == "oblivious":
        out = grouped
    else:
        noisy = int(ctx.release(name, "groups", group_rows.sum(keepdims=True), epsilon, delta, out_s)[0])
        m = min(noisy, n)
        live, moved = kern.compact(group_rows, grouped.arrays()[:-1], rows=m)  # decode only the m kept
        out = grouped.with_arrays(moved + [live])
    return OpResult(out.with_stability(out_s), ctx.leaks[leaks_before:], ctx.trace)


# aggregates that read only real rows of a run, wherever they sit in it
PRESORTED_FUNCS = frozenset({"count_star", "count", "sum", "avg", "min", "max"})


def groups_presorted(keys: list[str], aggs: list[Agg], sort_keys: list[str] | None) -> bool:
    """What :func:`takes_presorted` asks of the plan alone (the planner asks it too): grouped
    by every key (no key read from a run's row as payload) and only aggregates that mask each
    row by its real flag."""
    return bool(keys) and (sort_keys is None or set(sort_keys) == set(keys)) and \
        all(a.func in PRESORTED_FUNCS for a in aggs)


def takes_presorted(table: PaddedTable, keys: list[str], aggs: list[Agg], sort_keys: list[str] | None) -> bool:
    """Whether rows sorted by ``keys`` with non-real rows inside the runs can be grouped as
    they are (``presorted``): :func:`groups_presorted`, and no floating-point key (-0.0 and
    0.0 share a run, and a non-real row's sign could show).  Types and names are public."""
    return groups_presorted(keys, aggs, sort_keys) and \
        not any(pa.types.is_floating(table.column(k).type) for k in keys)


def needs_own_pass(a: Agg) -> bool:
    """Whether ``a``'s runs must be sorted by more than the keys (COUNT(DISTINCT), quantiles,
    an ORDER BY inside string_agg/list): it gets a sorted pass of its own."""
    return _pass_of(a) is not None


def _pass_of(a: Agg):
    """What an aggregate needs its runs sorted by besides the keys: a column, an ORDER BY, or nothing."""
    if a.func == "count_distinct" or a.func in SORTED_FUNCS:
        return a.column
    if a.func in ("string_agg", "list") and a.order:
        return a.order
    return None


def _group_pass(kern, ctx, table: PaddedTable, keys: list[str], aggs: list[Agg], distinct,
                sort_keys: list[str] | None = None, presorted: bool = False, ordered: bool = False):
    """Sort by ``(is_dummy, sort_keys[, distinct])`` and scan: key + aggregate columns, and the
    flags of each group's output row (the last real row of its run).  ``distinct`` is a
    column name or a string_agg's ORDER BY (``(column, descending, nulls_first)`` triples).
    ``sort_keys`` (default ``keys``) determine the other keys (:func:`group_by`).
    ``presorted``: no sort; runs are cut on the keys alone (non-real rows sit inside them) and
    a group's output row is the last row of a run that holds a real row (:func:`_group_rows`).
    ``ordered``: rows already in ``(dummy, sort_keys)`` order up to the groups' order: no sort."""
    out_keys = keys
    keys = list(keys) if sort_keys is None else list(sort_keys)
    n = table.padded_size
    order = distinct if isinstance(distinct, tuple) else ()
    if order:
        distinct = None
    sort_cols = [table.column(k) for k in keys] + ([table.column(distinct)] if distinct else []) \
        + [table.column(c) for c, _, _ in order]
    desc = [False] * (len(sort_cols) - len(order)) + [d for _, d, _ in order]
    nf = [False] * (len(sort_cols) - len(order)) + [f for _, _, f in order]
    dummy = KeyField((~table.is_real).astype(np.uint64), 1)
    payload = table.arrays()
    if sort_cols and not (ordered or presorted):
        enc = encode_keys(sort_cols, descending=desc, leading=[dummy], n=n, nulls_first=nf)
        _, payload = kern.sort(enc, payload)
    sorted_t = table.with_arrays(payload)
    real = sorted_t.is_real
    lead = [] if presorted else [KeyField((~real).astype(np.uint64), 1)]
    gkey = encode_keys([sorted_t.column(k) for k in keys], leading=lead, n=n)
    starts = run_starts(gkey.words) if keys else _first_only(n)
    dstarts = None
    if distinct:
        dkey = encode_keys([sorted_t.column(distinct)], n=n)
        dstarts = starts | run_starts(dkey.words)
    ctx.trace.record("group_by:scan", -1, n, len(aggs))
    out_cols = [sorted_t.column(k) for k in out_keys]
    overflow = np.zeros(n, dtype=bool)
    run_ids = segment_ids(starts) if sum(a.func in ("sum", "avg") for a in aggs) > 1 else None  # shared by the sums
    for a in aggs:
        col = sorted_t.column(a.column) if a.column is not None else None
        col2 = sorted_t.column(a.column2) if a.column2 is not None else None
        out_cols.append(_aggregate(kern, a, col, real, starts, dstarts, overflow, col2, grouped=bool(keys),
                                   run_ids=run_ids))
    ends = np.zeros(n, dtype=bool)
    if n:
        ends[:-1] = starts[1:]
        ends[-1] = True
    # a group's SUM out of range is a runtime error: folded into the query's status word with
    # one max over all rows, raised on the analyst's side (dodb.wire).  Each run's last row
    # holds its total (a global aggregate's may be a dummy slot); dummies add nothing.
    ctx.fold_errors((overflow & ends).astype(np.int64) * SUM_OVERFLOW)
    return out_cols, _group_rows(kern, real, starts, ends, presorted)


def _group_rows(kern, real: np.ndarray, starts: np.ndarray, ends: np.ndarray, presorted: bool) -> np.ndarray:
    """Each group's output row, the last row of its run: in ``(dummy, keys)`` order the
    dummies have runs of their own, so it is a group when it is real; presorted, non-real
    rows sit inside runs, so a run is a group when its count of real rows is positive."""
    if presorted:
        return ends & (kern.seg_reduce(real, starts, "count") > 0)
    return ends & real


def _first_only(n: int) -> np.ndarray:
    st = np.zeros(n, dtype=bool)
    if n:
        st[0] = True
    return st


def _one_dummy(table: PaddedTable) -> PaddedTable:
    arrays = [np.zeros((1,) + a.shape[1:], dtype=a.dtype) for a in table.arrays()]
    return table.with_arrays(arrays)
