"""Filter (compaction) in three modes.

``do`` — differentially oblivious compaction with bins (after Chan–Chung–Maggs–Shi,
SODA'19, and Qin et al., "Adore", PVLDB 16(4)).  Rows are cut into bins of ``B`` rows,
each bin is compacted obliviously in ``log2 B`` rounds, and the vector of per-bin match
counts is released with one-sided noise.  Each bin is then cut to its noisy count and
the prefixes are concatenated.  Cost ``O(n log B)`` instead of ``O(n log n)``; the
output carries ``sum_b noise_b`` dummies.

Privacy of the bin vector: one privacy unit changes at most ``s`` rows (the stability),
so the per-bin counts change by a vector of L1 norm at most ``s``.  Independent
truncated discrete Laplace noise of scale ``s/epsilon`` on every bin then gives a
likelihood ratio of at most ``exp(sum_b |d_b| / scale) <= exp(epsilon)`` where both
neighbours have support; the outcomes one neighbour cannot produce have mass at most
``sum_b truncation_delta(|d_b|) <= truncation_delta(s)`` (the pmf increases on
``[0, shift]``), which :meth:`~dodb.oblivious.noise.ShiftedTruncatedDiscreteLaplace.for_privacy`
bounds by ``delta``.  So the vector release is ``(epsilon, delta)``-DP — the same event
as releasing a single count — and the output of size ``sum_b noisy_b`` never drops a
real row.  Noisy counts above ``B`` are clipped to ``B`` (post-processing; still ≥ the
true count).

Bins are positional, so they are used only on a neighbour-aligned input (a canonical
base table and row-wise operators after it, ``PaddedTable.aligned``): there the coupled
neighbour has the same rows in the same slots and the bin vectors differ by at most
``s`` in L1 (``2s`` under replace-neighbours: one unit's rows leave their slots and
another's arrive).  On any other input (after a sort, a join, a compaction) the rows'
positions depend on every other row, so the filter compacts the whole array as one
bin and releases one noisy total (docs/neighbours.md §Positional releases).  A bin's
output is cut to its noisy count, never to more slots than the bin has.

``oblivious`` — worst-case padding: the output keeps all ``n`` slots and only the real
flags change (an ``O(n)`` linear pass, the cheapest fully oblivious filter).

``plain`` — boolean-mask selection of the real matches.
"""
from __future__ import annotations

import numpy as np

from ..oblivious.sort import next_pow2
from .context import ExecContext, OpResult
from .table import PaddedTable

__all__ = ["filter_table", "default_bin_size", "release_sensitivity"]


def default_bin_size(n: int, shift: int) -> int:
    """Bins large enough that the dummies they add (about ``shift`` per bin) stay near n/64.

    Smaller bins mean fewer compaction rounds (``log2 B``) but more padded rows for every
    operator downstream; measured on the operator benchmark, ``B ≈ 64·shift`` balances both.
    """
    return int(max(256, next_pow2(64 * max(1, shift))))


def _pad_to_multiple(table: PaddedTable, arrays: list[np.ndarray], b: int) -> list[np.ndarray]:
    n = table.padded_size
    m = -(-n // b) * b
    if m == n:
        return arrays
    out = []
    for a in arrays:
        z = np.zeros((m,) + a.shape[1:], dtype=a.dtype)
        z[:n] = a
        out.append(z)
    return out


def prefix_rows(b: int, keep: np.ndarray) -> np.ndarray | int:
    """Positions of the first ``keep[j]`` rows of every bin ``j`` of ``b`` rows, in order (``keep``
    is public); one bin's is a count.

    >>> prefix_rows(4, np.array([2, 0, 3])).tolist(), prefix_rows(9, np.array([5]))
    ([0, 1, 8, 9, 10], 5)
    """
    if keep.shape[0] == 1:
        return int(keep[0])
    starts = np.arange(keep.shape[0], dtype=np.int64) * b
    return np.repeat(starts, keep) + (np.arange(int(keep.sum())) - np.repeat(np.cumsum(keep) - keep, keep))


def release_sensitivity(stability: int, binned: bool, neighbour: str) -> int:
    """L1 distance of the released vector between coupled neighbours (module doc)."""
    return stability * (2 if binned and neighbour == "replace" and stability > 0 else 1)


def filter_table(
    table: PaddedTable,
    mask: np.ndarray,
    *,
    mode: str = "do",
    epsilon: float = 1.0,
    delta: float = 1e-6,
    ctx: ExecContext | None = None,
    bin_size: int | None = None,
    keep_marked_above: float | None = None,
) -> OpResult:
    """Keep the real rows where ``mask`` is true (NULL predicates must be passed as false).

    ``keep_marked_above`` (DO mode, set by the planner when the consumer sorts its whole
    input): when the released size is at least this fraction of ``n``, skip the compaction
    and return all ``n`` slots with the real flags cleared (docs/design.md §Filters kept
    marked).
    """
    ctx = ctx or ExecContext(mode=mode)
    mode = ctx.mode
    n = table.padded_size
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (n,):
        raise ValueError("filter mask must have the padded length")
    flags = table.is_real & mask
    s = table.stability
    name = ctx.op_name("filter")
    leaks_before = len(ctx.leaks)
    arrays = table.arrays()
    if mode == "plain":
        out = table.with_arrays([a[flags] for a in arrays[:-1]] + [np.ones(int(flags.sum()), bool)])
    elif mode == "oblivious":
        out = table.with_arrays(arrays[:-1] + [flags])
        ctx.trace.record("filter:mark", -1, n)
    else:
        binned = table.aligned
        sens = release_sensitivity(s, binned, ctx.neighbour)
        shift = ctx.mechanism(epsilon, delta, sens).shift if sens > 0 else 0
        b = (bin_size or default_bin_size(n, shift)) if binned else max(1, n)
        if n <= 2 * b:
            b = max(1, n)
        padded_flags = _pad_to_multiple(table, [flags], b)[0]
        nb = padded_flags.shape[0] // b if n else 0
        ctx.trace.record("filter:bins", -1, n, b, nb)
        counts = padded_flags.reshape(nb, b).sum(axis=1) if nb else np.zeros(0, np.int64)
        noisy = ctx.release(name, "bin_counts", counts, epsilon, delta, sens)
        # a bin holds b slots, the last one only what is left of n (public sizes)
        room = np.full(nb, b, dtype=np.int64)
        if nb:
            room[-1] = n - (nb - 1) * b
        keep = np.minimum(noisy, room)
        if keep_marked_above is not None and int(keep.sum()) >= keep_marked_above * n:
            # the consumer sorts its whole input anyway and the released size says little
            # would be saved: keep every slot, marked (a function of the release and n only)
            ctx.trace.record("filter:keep_marked", -1, n, int(keep.sum()))
            out = table.with_arrays(arrays[:-1] + [flags])
        else:
            payload = _pad_to_multiple(table, arrays[:-1], b)  # only when it is compacted
            # each bin's first keep[j] rows, the only ones decoded (positions from the release)
            live, moved = ctx.kernels.compact(padded_flags, payload, block=b if nb > 1 else None,
                                              rows=prefix_rows(b, keep))
            ctx.trace.record("filter:gather", -1, int(keep.sum()))
            out = table.with_arrays(moved + [live])
    return OpResult(out.with_stability(s), ctx.leaks[leaks_before:], ctx.trace)
