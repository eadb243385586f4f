"""Joins with a small public relation whose join key is unique: one pass per public row.

When the right side is public (part of the schema-level knowledge, e.g. ``nation``, or a
public table filtered by constants) and has at most one row per key, every private row
matches at most one public row.  Instead of sorting the private side, compare it with
each of the ``k`` public rows in turn: ``k`` linear passes whose pattern depends only on
``k`` and the padded size — fully oblivious, and much cheaper than a sort when ``k`` is
small.  Matched values are copied with element-wise selects over all rows, never with
an index gather (which would reveal which public row matched).

Sizes: an inner/semi/anti join then only *removes* rows, which is a filter on the private
side (sensitivity ``s_L``: the public side cannot change) — in ``do`` mode a DO filter,
in ``oblivious`` mode a mark.  A left join keeps every row: nothing is released.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..oblivious.backend import use_compiled
from ..oblivious.rows import from_word_columns, row_bytes, word_columns
from .context import ExecContext, OpResult
from .filter import filter_table
from .keys import column_fields, normalise_key, pack_fields
from .table import Column, PaddedTable, unify_columns
from ..oblivious.select import select

__all__ = ["lookup_join", "lookup_pays", "pass_cost"]

MIN_ROWS_PER_THREAD = 4096  # below this a thread's start costs more than its share of the passes
COST_PER_STAGE = 25.0  # measured: a sort-join network stage costs about 25 pass-cost units per row


def lookup_pays(public_rows: int, private_rows: int, cost_per_pass: float) -> bool:
    """Whether ``k`` lookup passes are cheaper than a sort-based join of ``n + k`` rows.

    A pass costs ``cost_per_pass`` (:func:`pass_cost`) per private row; the sort join's
    network has ``log m (log m + 1) / 2`` stages on ``m = next_pow2(n + k)`` rows, each
    worth about 25 units (operator micro-benchmark on this machine, n = 2^16 and 600,000,
    public sides of 2 integer columns plus 0, 25 or 100-byte strings: the measured
    break-even lies at 23-46 units per stage; 25 errs towards sorting).  All sizes are public.
    """
    k, n = int(public_rows), int(private_rows)
    log_m = max(1, (n + k - 1).bit_length())
    return k * float(cost_per_pass) <= COST_PER_STAGE * log_m * (log_m + 1) / 2


def _key_words(cols: list[Column], n: int) -> list[np.ndarray]:
    fields = []
    for c in cols:
        fields.extend(column_fields(c))
    words, _ = pack_fields(fields, n)
    return words


def pass_cost(table: PaddedTable) -> float:
    """Cost of one lookup pass per private row, in word operations, for ``table``'s columns.

    Two for the key compare and the match flag, one per selected ``uint64`` word; words of
    multi-word arrays (strings, decimals) count 2.5 — measured: selecting a ``(words, n)``
    block costs more per word than a single row of ``n``.
    """
    cost = 2.0
    for c in table.columns:
        for a in c.arrays():
            words = -(-row_bytes(a) // 8)
            cost += words if words == 1 else 2.5 * words
    return cost


def _passes_numpy(lw: list[np.ndarray], rw: list[np.ndarray], ok: np.ndarray, r_ok: np.ndarray,
                  pub_words: list[np.ndarray], n: int, k: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The ``k`` passes in numpy (the reference): the matched flags and the selected ``(words, n)`` blocks."""
    matched = np.zeros(n, dtype=bool)
    out_words = [np.zeros((w.shape[0], n), dtype=np.uint64) for w in pub_words]
    for j in range(k):  # one pass per public row: j is public, the comparison covers every row
        if not r_ok[j]:  # lint: public the public side's key validity
            continue  # a NULL public key matches nothing (public)
        eq = ok.copy()
        for lwd, rwd in zip(lw, rw):
            eq = eq & (lwd == rwd[j])
        matched = matched | eq
        for pw, ow in zip(pub_words, out_words):
            np.copyto(ow, select(eq, pw[:, j:j + 1], ow))
    return matched, out_words


def _passes_compiled(lw: list[np.ndarray], rw: list[np.ndarray], ok: np.ndarray, r_ok: np.ndarray,
                     pub_words: list[np.ndarray], n: int, k: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The ``k × n`` comparisons as the compiled kernel ``compiled.lookup_rows``; same results
    as :func:`_passes_numpy` (a NULL public key, ``r_ok[j]`` false, clears its mask instead
    of being skipped, so every pair of rows is read)."""
    from ..oblivious import compiled
    from ..oblivious.threads import run_parts, threads

    pub = np.concatenate(pub_words, axis=0) if pub_words else np.zeros((0, k), dtype=np.uint64)
    out = np.zeros((pub.shape[0], n), dtype=np.uint64)
    matched = np.zeros(n, dtype=np.uint8)
    args = (np.concatenate(lw), np.concatenate(rw), len(lw), ok.astype(np.uint8), r_ok.astype(np.uint8),
            np.ascontiguousarray(pub).reshape(-1), out.reshape(-1), pub.shape[0], n, k, matched)
    # row by row: the public side stays in cache; the OR over public rows equals the
    # reference's selects because the real public keys are unique (checked above).  Each
    # thread takes a range of rows cut from n alone (public), with its own mask scratch.
    parts = max(1, min(threads(), n // MIN_ROWS_PER_THREAD))
    cuts = [n * p // parts for p in range(parts + 1)]
    run_parts([(compiled.lookup_rows, (*args, np.empty(k, dtype=np.uint64), a, b)) for a, b in zip(cuts, cuts[1:])])
    bounds = np.cumsum([w.shape[0] for w in pub_words])[:-1]
    return matched.view(bool), np.split(out, bounds, axis=0) if pub_words else []


def lookup_join(left: PaddedTable, right: PaddedTable, left_keys: list[str], right_keys: list[str], *,
                how: str = "inner", mode: str = "do", epsilon: float = 1.0, delta: float = 1e-6,
                ctx: ExecContext | None = None, keep: Sequence[str] | None = None) -> OpResult:
    """Join ``left`` with a public ``right`` whose ``right_keys`` are unique among its rows.

    ``keep``: the output columns anyone reads (planner/prune.py); the passes select only the
    public columns kept (none: a pure membership test) and the filter moves only the
    private columns kept.  Public: the query's."""
    ctx = ctx or ExecContext(mode=mode)
    if right.stability != 0:
        raise ValueError("lookup_join needs a public right side")
    leaks_before = len(ctx.leaks)
    pub = right.select(right.names)  # public: its real rows may be read directly
    pub = pub.with_arrays([a[pub.is_real] for a in pub.arrays()])  # lint: public the public side
    k = pub.padded_size
    n = left.padded_size
    lcols, rcols = [], []
    for a, b in zip(left_keys, right_keys):
        ca, cb = unify_columns([normalise_key(left.column(a)), normalise_key(pub.column(b))])
        lcols.append(ca)
        rcols.append(cb)
    lw, rw = _key_words(lcols, n), _key_words(rcols, k)
    if k and len({tuple(int(w[j]) for w in rw) for j in range(k)}) != k:  # lint: public the public side
        raise ValueError("lookup_join: the public side's join key is not unique")
    ok = left.is_real.copy()
    for c in lcols:
        ok = ok & c.valid  # not in place: numpy's in-place AND of one-element bool arrays branches
    r_ok = np.ones(k, dtype=bool)
    for c in rcols:
        r_ok = r_ok & c.valid
    if keep is not None:  # the keys were read above; only what is used goes on
        wanted = set(keep)
        pub = pub.select([c for c in pub.names if c in wanted])
        left = left.select([c for c in left.names if c in wanted])
    ctx.trace.record("lookup:passes", -1, n, k)
    # every public array as uint64 word rows (words, k); the output as (words, n): a pass
    # selects whole contiguous rows of n, whatever the column's byte width
    pub_words = [word_columns(a, k) for c in pub.columns for a in c.arrays()]
    passes = _passes_compiled if use_compiled() else _passes_numpy
    matched, out_words = passes(lw, rw, ok, r_ok, pub_words, n, k)
    out_cols = []
    words = iter(out_words)
    for c in pub.columns:
        # with_arrays, not the constructor: a narrow DECIMAL's lanes are its low words, and
        # the column rebuilds its high words from them (operators/table.py Column.arrays)
        out_cols.append(c.with_arrays([from_word_columns(next(words), a, n) for a in c.arrays()]))
    s = left.stability
    if how in ("semi", "anti"):
        keep = matched if how == "semi" else ~matched
        res = filter_table(left, keep, epsilon=epsilon, delta=delta, ctx=ctx)
        return OpResult(res.table.with_stability(s), ctx.leaks[leaks_before:], ctx.trace)
    joined = PaddedTable(left.names + pub.names, left.columns + out_cols, left.is_real, s, dict(left.meta), left.aligned)
    if how == "left":
        return OpResult(joined, ctx.leaks[leaks_before:], ctx.trace)
    res = filter_table(joined, matched, epsilon=epsilon, delta=delta, ctx=ctx)
    return OpResult(res.table.with_stability(s), ctx.leaks[leaks_before:], ctx.trace)
