"""Equi-joins (inner, left outer, semi, anti) in three modes.

The DO algorithm follows Chu–Zhuo–Shi–Chan (ITC 2021): the output is padded to the
true join size plus one-sided noise, never to the quadratic worst case.

1. Sort each side obliviously by ``(is_dummy, key)``, carrying its payload.
2. Merge a *narrow* union of both sides — encoded key, side tag, position — and count,
   per key run, the eligible rows of each side (real, no NULL key).  Every row learns the
   other side's degree ``deg``; declared degree bounds are *enforced* here (rows beyond
   the bound in their key run are dropped), so the stability below always holds.
3. Unmerge the union back into its two sides (the merge's stages run backwards, steered
   by each row's position; oblivious/unmerge.py): the left part is in the sorted left
   table's order (same key, ties by position), likewise the right.
4. Release the join size ``J + noise`` (sensitivity = output stability), expand every
   left row ``deg_R`` times and every right row ``deg_L`` times into ``m`` slots
   (:func:`~dodb.oblivious.expand.expand`), re-sort the right copies to their partner's
   slot (one single-word sort), and zip the two arrays row by row.

Stability (docs/design.md §Operators and stability): ``s_L * deg_R + s_R * deg_L``; a side with stability 0 is public,
so its exact maximum degree is public too.  A private side whose degree is needed but
neither declared nor public makes the join's stability unbounded: the operator refuses
with :class:`UnboundedStabilityError` rather than under-noise.

``oblivious`` mode pads to the public worst case ``min(n_L * deg_R, n_R * deg_L)`` — for a
PK–FK join (one side unique) that is the FK side — and a left join onto a unique right
side to the left side (:mod:`dodb.operators.pkfk`), so the fully oblivious baseline runs
the best oblivious algorithm for the join it sees.  When one side is unique, every right
copy is already at its partner's slot after the expansion and the re-sort is skipped;
semi/anti joins become filters of the left side (:mod:`dodb.operators.filter`); a left
outer join is the inner join plus the anti join's rows with NULLs on the right.

A full outer join (docs/design.md §Expression and cross joins) adds, symmetrically, the
right rows without a partner (``deg_L == 0``, NULL keys included) with NULLs on the left:
three releases (join size, unmatched left, unmatched right), each a DO compaction.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from .context import ExecContext, OpResult, UnboundedStabilityError
from .filter import filter_table
from .keys import EncodedKey, KeyField, column_fields, encode_keys, normalise_key, pack_fields, run_starts, word_bit, word_field
from .pkfk import pk_fk_left_join
from .table import Column, PaddedTable, concat_tables, read_only, unify_columns
from ..oblivious.select import select

__all__ = ["join", "sorted_side", "JOIN_TYPES", "OBLIVIOUS_JOIN_LIMIT", "same_unit_stability"]

JOIN_TYPES = ("inner", "left", "semi", "anti", "full")
OBLIVIOUS_JOIN_LIMIT = 1 << 26  # worst-case rows the oblivious baseline may allocate


def _key_columns(lt: PaddedTable, rt: PaddedTable, lk: list[str], rk: list[str]) -> tuple[list[Column], list[Column]]:
    lcols, rcols = [], []
    for a, b in zip(lk, rk):
        ca, cb = normalise_key(lt.column(a)), normalise_key(rt.column(b))
        if ca.type != cb.type and not (pa.types.is_string(ca.type) and pa.types.is_string(cb.type)):
            raise TypeError(f"join keys {a!r} ({ca.type}) and {b!r} ({cb.type}) have different types")
        ca, cb = unify_columns([ca, cb])
        lcols.append(ca)
        rcols.append(cb)
    return lcols, rcols


def _eligible(t: PaddedTable, cols: list[Column]) -> np.ndarray:
    ok = t.is_real.copy()
    for c in cols:
        # not ``ok &= c.valid``: numpy's in-place AND of one-element bool arrays branches on the
        # value (measured by the address audit on TPC-H Q15's one-row side)
        ok = ok & c.valid
    return ok


def sorted_side(ctx: ExecContext, t: PaddedTable, keys: list[str], cache=None, source: tuple | None = None) -> PaddedTable:
    """``t`` sorted by ``keys``, ties in position order, dummy rows wherever their keys put
    them: the join reads only eligible rows (real, no NULL key), so the order does not
    depend on which rows are real and a scan sorted before its filters mark rows is in
    the order sorting after them gives (planner/presort.py).

    ``source``: ``t`` is, unchanged, the scan of a private table, named by the executor's
    slot-cache key (storage version and checksums, columns).  Its sorted lanes are then kept
    in ``cache`` (the slot cache) and a later join of the same side copies them, recording
    the sort's events (the view of the sort, from public sizes: ``Kernels.sort_events``);
    which joins find them depends on the queries run before and the owner's actions only
    (docs/design.md §Slot cache).
    """
    def encoded():
        return encode_keys([normalise_key(t.column(k)) for k in keys], n=t.padded_size)

    if cache is None or source is None:
        _, arrays = ctx.kernels.sort(encoded(), t.arrays())
        return t.with_arrays(arrays)
    sorted_now: list[bool] = []

    def sort() -> tuple[list[np.ndarray], tuple]:
        sorted_now.append(True)
        enc = encoded()
        return ctx.kernels.sort(enc, t.arrays())[1], ctx.kernels.sort_shape(enc)

    key = ("sorted side", source, tuple(t.names), tuple(keys), ctx.kernels.oblivious)
    arrays, shape = cache.get_or_compute(key, sort, weight=lambda got: sum(a.nbytes for a in got[0]))
    if not sorted_now:  # lint: public whether this side was sorted before (the queries run)
        ctx.kernels.sort_events(shape, t.arrays())  # the key's public shape: no key is encoded again
    return t.with_arrays([read_only(a) for a in arrays])  # the kept lanes are never written


def _degrees(ctx: ExecContext, lcols, rcols, l_ok, r_ok, bound_l: int | None, bound_r: int | None,
             right: str = "ranks"):
    """Partner counts per row of each side, in its sorted order: ``deg_l`` and
    ``(deg_r, rank_r, own_r)``, a right row's rank in its key run and the run's own count.

    Declared degree bounds are enforced: rows ranked beyond the bound become ineligible.
    Only what the caller asks for is moved back to the sides (a choice made from the join
    type and public bounds): ``right`` is ``"none"`` (semi/anti joins use ``deg_l`` only),
    ``"deg"`` (one side unique: no alignment sort) or ``"ranks"``; what is not asked for
    is ``None``.
    """
    kern = ctx.kernels
    nl, nr = l_ok.shape[0], r_ok.shape[0]
    n = nl + nr
    cols = [c.with_arrays([np.concatenate([a, b]) for a, b in zip(c.arrays(), d.arrays())]) for c, d in zip(lcols, rcols)]
    # each side's part of the union keeps that side's (key, position) order, the order its
    # payload was sorted in (sorted_side)
    fields: list[KeyField] = []
    for c in cols:
        fields.extend(column_fields(c))
    key_bits = sum(f.bits for f in fields)
    tag = np.concatenate([np.zeros(nl, np.uint64), np.ones(nr, np.uint64)])
    pos_bits = max(1, int(n).bit_length())
    ok = np.concatenate([l_ok, r_ok])
    # One key carries everything the merge must deliver: (key, side tag, position) orders the
    # rows and makes each key distinct, and the eligibility bit below the position changes no
    # order.  The merge then moves key words only, no payload, and the merged words give the
    # key runs (their first ``key_bits`` bits), the side and the eligibility back.
    words, bits = pack_fields(fields + [KeyField(tag, 1), KeyField(np.arange(n, dtype=np.uint64), pos_bits),
                                        KeyField(ok.astype(np.uint64), 1)], n)
    # each side arrives sorted by key with ties in position order, so each half
    # of the union is already sorted by this key: a merge gives the union sort's order
    merged, _ = kern.merge(EncodedKey(words, bits), [], nl)
    ok_s = word_bit(merged, bits - 1)
    tag_s = word_bit(merged, key_bits)
    starts = run_starts(merged, key_bits)
    is_l = ok_s & ~tag_s
    is_r = ok_s & tag_s
    rank_l = kern.seg_prefix(is_l, starts, "count") - 1
    rank_r = kern.seg_prefix(is_r, starts, "count") - 1
    if bound_l is not None:
        is_l = is_l & (rank_l < bound_l)  # not in place (see _eligible)
    if bound_r is not None:
        is_r = is_r & (rank_r < bound_r)
    cnt_l = kern.seg_last(kern.seg_reduce(is_l, starts, "count"), starts)
    cnt_r = kern.seg_last(kern.seg_reduce(is_r, starts, "count"), starts)
    left_row = ~tag_s
    deg = select(left_row, select(is_l, cnt_r, 0), select(is_r, cnt_l, 0))
    # back to the two sides, each in its sorted order (same key order, ties by position): the
    # merge run backwards, steered by each row's position, carried in the merged key
    origin = word_field(merged, key_bits + 1, pos_bits).astype(np.int64)
    if right == "none":
        (deg_l,), _ = kern.unmerge(origin, [deg], nl)
        return deg_l, (None, None, None)
    if right == "deg":
        (deg_l,), (deg_r,) = kern.unmerge(origin, [deg], nl)
        return deg_l, (deg_r, None, None)
    (deg_l, _, _), (deg_r, rank_r2, own_r) = kern.unmerge(origin, [deg, rank_r, cnt_r], nl)
    return deg_l, (deg_r, rank_r2, own_r)


def max_key_multiplicity(real: pa.Table, keys: list[str]) -> int:
    """Largest number of rows of ``real`` (public rows) sharing one value of ``keys``, with the
    join's equality: -0.0 equals 0.0 (Arrow's grouping keeps them apart; the key encoding and
    DuckDB do not), NaN equals NaN.

    >>> max_key_multiplicity(pa.table({"w": [0.0, -0.0, 1.0]}), ["w"])
    2
    """
    keys = list(dict.fromkeys(keys))  # ON p.k = t.a AND p.k = t.b names p.k twice: one grouping column
    real = real.select(keys)
    if real.num_rows == 0:
        return 0
    cols = [pa.compute.add(c, pa.scalar(0.0, c.type)) if pa.types.is_floating(c.type) else c
            for c in real.columns]  # -0.0 + 0.0 is +0.0
    g = pa.table(cols, names=list(keys)).group_by(list(keys)).aggregate([([], "count_all")])
    return int(pa.compute.max(g.column("count_all")).as_py())


def _max_degree(t: PaddedTable, keys: list[str]) -> int:
    """Exact largest key multiplicity of a *public* table (its stability is 0)."""
    return max_key_multiplicity(t.to_arrow(), keys)


def join(
    left: PaddedTable,
    right: PaddedTable,
    left_keys: list[str],
    right_keys: list[str],
    *,
    how: str = "inner",
    mode: str = "do",
    epsilon: float = 1.0,
    delta: float = 1e-6,
    ctx: ExecContext | None = None,
    left_degree: int | None = None,
    right_degree: int | None = None,
    same_unit: bool = False,
    sorted_cache=None,
    left_source: tuple | None = None,
    right_source: tuple | None = None,
    left_sorted: bool = False,
    right_sorted: bool = False,
    keep: Sequence[str] | None = None,
) -> OpResult:
    """Equi-join ``left`` and ``right`` on ``left_keys = right_keys``.

    ``left_degree``/``right_degree``: declared bounds on rows per key value on each side
    (enforced). Output columns: left's then right's (only left's for semi/anti).

    ``same_unit``: the planner has shown that on both sides the join key determines the
    row's privacy unit through the same mapping (a join along a privacy-unit path, e.g.
    ``lineitem.l_orderkey = orders.o_orderkey``).  Rows of different units then never
    match, so one unit's change touches only its own output rows: ``min(s_L*deg_R,
    s_R*deg_L)`` for an inner join instead of the sum, ``s_L`` for semi/anti joins.

    ``sorted_cache``, ``left_source``, ``right_source``: a side that is a private table's
    scan, unchanged, may keep its sorted lanes for later joins (:func:`sorted_side`).
    ``left_sorted``/``right_sorted``: that side arrives in :func:`sorted_side`'s order
    already (sorted at its scan, planner/presort.py).

    ``keep``: the output columns anyone reads (planner/prune.py); the others — often the
    keys — are not carried through the expansion or the filter.  Public: the query's.
    """
    if how not in JOIN_TYPES:
        raise ValueError(f"unknown join type {how!r}")
    if len(left_keys) != len(right_keys) or not left_keys:
        raise ValueError("join needs the same positive number of keys on both sides")
    ctx = ctx or ExecContext(mode=mode)
    leaks_before = len(ctx.leaks)
    s_l, s_r = left.stability, right.stability
    deg_l = left_degree if left_degree is not None else (_max_degree(left, left_keys) if s_l == 0 else None)
    deg_r = right_degree if right_degree is not None else (_max_degree(right, right_keys) if s_r == 0 else None)
    if how in ("semi", "anti"):
        need_l = s_r > 0
        if need_l and deg_l is None:
            raise UnboundedStabilityError(
                f"{how} join: the right side is private, so the left key {left_keys} needs a degree bound")
        s_out = s_l + s_r * (deg_l or 0)
    else:
        if (s_l > 0 and deg_r is None) or (s_r > 0 and deg_l is None):
            side = "right" if s_l > 0 and deg_r is None else "left"
            raise UnboundedStabilityError(
                f"join on {left_keys}={right_keys}: no degree bound for the {side} side; declare one "
                f"(max_degree) or join on a declared key")
        s_out = s_l * (deg_r or 0) + s_r * (deg_l or 0)
        if how == "left":
            s_out = s_l * max(deg_r or 0, 1) + 2 * s_r * (deg_l or 0)
        if how == "full":
            s_out = full_join_stability(s_l, s_r, deg_l, deg_r)

    if ctx.mode == "oblivious" and how == "left" and deg_r is not None and deg_r <= 1:
        # the fully oblivious baseline: a left join onto a unique right side has exactly the
        # left side's rows, not the inner join's worst case plus the anti join's (pkfk.py)
        if same_unit:
            s_out, _ = same_unit_stability(how, s_l, s_r, deg_l, deg_r)
        ctx.op_name(f"{how}_join")  # same operator numbering as the general path
        lcols, rcols = _key_columns(left, right, left_keys, right_keys)
        out = pk_fk_left_join(ctx, left, right, lcols, rcols, _eligible(left, lcols), _eligible(right, rcols),
                              fk_bound=left_degree, stability=s_out)
        return OpResult(out, ctx.leaks[leaks_before:], ctx.trace)

    lt = left if left_sorted else sorted_side(ctx, left, left_keys, sorted_cache, left_source)
    rt = right if right_sorted else sorted_side(ctx, right, right_keys, sorted_cache, right_source)
    lcols, rcols = _key_columns(lt, rt, left_keys, right_keys)
    l_ok, r_ok = _eligible(lt, lcols), _eligible(rt, rcols)
    # one side unique (a public bound, enforced in _degrees): no run pairs several rows with
    # several rows, so the output needs no alignment sort and no ranks (see _inner)
    one_unique = (deg_l is not None and deg_l <= 1) or (deg_r is not None and deg_r <= 1)
    right = "none" if how in ("semi", "anti") else ("deg" if one_unique else "ranks")
    dl, (dr, rank_r, own_r) = _degrees(ctx, lcols, rcols, l_ok, r_ok, left_degree, right_degree, right=right)
    name = ctx.op_name(f"{how}_join")
    if keep is not None:  # the keys were read above; only what is used goes on
        wanted = set(keep)
        lt = lt.select([c for c in lt.names if c in wanted])
        rt = rt.select([c for c in rt.names if c in wanted])

    # Which left rows have a partner changes with either side: s_L + s_R * deg_L.
    s_match = s_l + s_r * (deg_l or 0)
    if same_unit and how != "full":
        s_out, s_match = same_unit_stability(how, s_l, s_r, deg_l, deg_r)
    if how in ("semi", "anti"):
        mask = dl > 0 if how == "semi" else dl == 0
        res = filter_table(lt.with_stability(s_match), mask, epsilon=epsilon, delta=delta, ctx=ctx)
        return OpResult(res.table.with_stability(s_out), ctx.leaks[leaks_before:], ctx.trace)

    # Which right rows have a partner: s_R + s_L * deg_R (full joins only).
    s_match_r = s_r + s_l * (deg_r or 0)
    # an outer join adds a release per side kept whole (unmatched rows), unless it is public
    parts = 1 + (how in ("left", "full") and s_match > 0) + (how == "full" and s_match_r > 0)
    eps_part, delta_part = epsilon / parts, delta / parts
    inner = _inner(ctx, name, lt, rt, dl, dr, rank_r, own_r, deg_l, deg_r, s_out, eps_part, delta_part)
    if how in ("left", "full"):
        unmatched = filter_table(lt.with_stability(s_match), dl == 0, epsilon=eps_part, delta=delta_part,
                                 ctx=ctx).table
        null_right = [_null_column(c, unmatched.padded_size) for c in rt.columns]
        padded = PaddedTable(inner.names, unmatched.columns + null_right, unmatched.is_real)
        inner = concat_tables([inner, padded], stability=s_out)
    if how == "full":  # NULL keys never match, so their rows come out here with NULLs on the left
        unmatched = filter_table(rt.with_stability(s_match_r), dr == 0, epsilon=eps_part, delta=delta_part,
                                 ctx=ctx).table
        null_left = [_null_column(c, unmatched.padded_size) for c in lt.columns]
        padded = PaddedTable(inner.names, null_left + unmatched.columns, unmatched.is_real)
        inner = concat_tables([inner, padded], stability=s_out)
    return OpResult(inner.with_stability(s_out), ctx.leaks[leaks_before:], ctx.trace)


def full_join_stability(s_l: int, s_r: int, deg_l: int | None, deg_r: int | None) -> int:
    """Output stability of a full outer join (docs/design.md §Expression and cross joins).

    Each of a unit's left rows comes out matched (at most ``deg_R`` rows) or unmatched (one
    row); each of its right rows may change up to ``deg_L`` inner rows and flip as many left
    rows between matched and unmatched; symmetrically for the right side:
    ``s_L*max(deg_R,1) + s_R*max(deg_L,1) + s_R*deg_L + s_L*deg_R``.

    >>> full_join_stability(1, 0, None, 3)  # private left, public right of degree 3
    6
    """
    dl, dr = deg_l or 0, deg_r or 0
    return s_l * max(dr, 1) + s_r * max(dl, 1) + s_r * dl + s_l * dr


def same_unit_stability(how: str, s_l: int, s_r: int, deg_l: int | None, deg_r: int | None) -> tuple[int, int]:
    """(output stability, matched-rows stability) of a join along a privacy-unit path.

    A unit owns at most ``s_L`` left and ``s_R`` right rows, and they only match each
    other: inner output rows of the unit number at most ``s_L*deg_R`` and ``s_R*deg_L``.
    """
    if how in ("semi", "anti"):
        return s_l, s_l
    bounds = [b for b in (s_l * deg_r if deg_r is not None else None,
                          s_r * deg_l if deg_l is not None else None) if b is not None]
    inner = min(bounds) if bounds else s_l * (deg_r or 0) + s_r * (deg_l or 0)
    if how == "left":  # the unit's inner rows plus its unmatched left rows
        return (s_l * max(deg_r, 1) if deg_r is not None else inner + s_l), s_l
    return inner, s_l


def _null_column(like: Column, n: int) -> Column:
    vals = np.zeros((n,) + like.values.shape[1:], dtype=like.values.dtype)
    lengths = np.zeros(n, np.int32) if like.lengths is not None else None
    return Column(like.type, vals, np.zeros(n, dtype=bool), lengths, huge=like.huge)


def _inner(ctx, name, lt, rt, dl, dr, rank_r, own_r, deg_l, deg_r, s_out, epsilon, delta) -> PaddedTable:
    kern = ctx.kernels
    nl, nr = lt.padded_size, rt.padded_size
    total = dl.sum(keepdims=True)  # private, one element: read as a number only by the release (or in plain mode)
    worst = min(nl * (deg_r if deg_r is not None else nr), nr * (deg_l if deg_l is not None else nl))
    if ctx.mode == "plain":
        m = int(total[0])
    elif ctx.mode == "oblivious":
        if worst > OBLIVIOUS_JOIN_LIMIT:
            raise MemoryError(f"oblivious join would pad to its worst case of {worst} rows")
        m = worst
    else:
        noisy = int(ctx.release(name, "output_size", total, epsilon, delta, s_out)[0])
        m = min(noisy, worst)
    ctx.trace.record("join:expand", -1, nl, nr, m)
    # A count is at most the other side's degree bound (enforced in _degrees); a bound of
    # one makes that side's expansion a compaction alone (oblivious/expand.py).
    real, _, l_arrays = kern.expand(dl, lt.arrays()[:-1], m, unit=deg_r is not None and deg_r <= 1)
    if rank_r is None:
        # One side unique (a public bound): a run has one left row (every right copy is
        # copy 0, rank*copies = rank) or one right row (own = 1, rank = 0), so every target
        # below would equal its slot and the sort would be the identity: skip it.
        _, _, r_arrays = kern.expand(dr, rt.arrays()[:-1], m, unit=deg_l is not None and deg_l <= 1)
    else:
        r_real, r_copy, r_arrays = kern.expand(dr, rt.arrays()[:-1] + [rank_r, own_r, dr], m)
        rank, own, copies = r_arrays[-3], r_arrays[-2], r_arrays[-1]
        slot = np.arange(m, dtype=np.int64)
        # In a key run with deg_L left rows and deg_R right rows, right row b's copy i sits at
        # run_start + b*deg_L + i (deg_L = its number of copies) and must move to its partner,
        # left row i's copy b, at run_start + i*deg_R + b.  Unused slots go last.
        run_start = slot - rank * copies - r_copy
        target = select(r_real, run_start + r_copy * own + rank, m + slot)
        bits = max(1, int(2 * m + 1).bit_length())
        enc = EncodedKey([target.astype(np.uint64) << np.uint64(64 - bits)], bits)
        _, r_arrays = kern.sort(enc, r_arrays[:-3])
    arrays = l_arrays + r_arrays
    cols, i = [], 0
    for c in lt.columns + rt.columns:
        k = c.n_arrays()
        cols.append(c.with_arrays(arrays[i:i + k]))
        i += k
    return PaddedTable(lt.names + rt.names, cols, real, s_out)
