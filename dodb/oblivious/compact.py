"""Stable oblivious compaction and its inverse, distribution.

Compaction moves the marked rows to the front in their original order.  Each marked row
must travel left by ``d_i`` = the number of unmarked rows before it.  Writing ``d_i`` in
binary, round ``r`` (least significant bit first) moves every row whose bit ``r`` is set
left by ``2^r``.  Because ``d`` is non-decreasing along the marked rows and two marked
rows ``i < j`` satisfy ``j - i >= d_j - d_i + 1``, no two rows ever land on the same slot
(the order-preserving shifting network of Goodrich, SPAA 2011, also the routing core of
ORCompact, Sasy–Johnson–Goldberg 2022).  Every round is a fixed-stride shift by ``2^r``
followed by element-wise selects over all ``n`` positions: ``O(n log n)`` work, one
pass per round, and an access pattern that depends on ``n`` alone.

Distribution is the same network run backwards (most significant bit first, shifting
right): rows already in order at the front move to target slots ``t_i >= i`` with
``t`` strictly increasing.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .backend import use_compiled
from .rows import from_word_block, word_block
from .threads import run_parts, threads
from .trace import Trace
from .select import select

__all__ = ["compact", "distribute", "exclusive_count", "row_pick", "few_block"]


def exclusive_count(flags: np.ndarray) -> np.ndarray:
    """``out[..., i]`` = number of true flags strictly before ``i`` along the last axis."""
    c = np.cumsum(flags, axis=-1, dtype=np.int64)
    return c - flags.astype(np.int64)


def _shift_left(a: np.ndarray, s: int) -> np.ndarray:
    """``out[i] = a[i + s]`` with the last ``s`` slots zero-filled (fixed stride)."""
    out = np.zeros_like(a)
    if s < a.shape[0]:
        out[: a.shape[0] - s] = a[s:]
    return out


def _shift_right(a: np.ndarray, s: int) -> np.ndarray:
    out = np.zeros_like(a)
    if s < a.shape[0]:
        out[s:] = a[: a.shape[0] - s]
    return out


def _select(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
    return select(m, a, b)


PARALLEL_MIN_ROWS = 1 << 16  # binned compactions this large run their halves on two threads
SPLIT_MIN_WORDS = 4  # a compaction with this many payload words splits them between threads
GROUP_MIN_WORDS = 2  # ... into groups of at least this many (each thread evolves live/dist again)


def word_groups(words: int, n: int, count: int) -> list[tuple[int, int]]:
    """Contiguous groups of the ``words`` payload word columns, one per thread, for a
    compaction of ``n`` rows on ``count`` threads (public sizes and the count only).

    >>> word_groups(15, 1 << 20, 2)
    [(0, 7), (7, 15)]
    >>> word_groups(3, 1 << 20, 2), word_groups(15, 1000, 2)
    ([(0, 3)], [(0, 15)])
    """
    parts = min(count, words // GROUP_MIN_WORDS) if n >= PARALLEL_MIN_ROWS and words >= SPLIT_MIN_WORDS else 1
    cuts = [g * words // parts for g in range(parts)] + [words]
    return list(zip(cuts[:-1], cuts[1:]))


def _rounds_on_words(kernel: str, live: np.ndarray, dist: np.ndarray, cols: np.ndarray, n: int,
                     rounds: int) -> None:
    """One kernel call over the ``(words, n)`` block ``cols``, in place, with its own scratch."""
    from . import compiled

    words = cols.shape[0]
    chunk, wave = compiled.compact_blocking(n, words)  # cache blocking: public sizes only
    mk, tmp = (np.empty(k, dtype=np.uint64) for k in compiled.scratch_rows(n, rounds, chunk, wave))
    getattr(compiled, kernel)(live, dist, cols.reshape(-1), words, n, rounds, mk, tmp, chunk, wave)


def row_pick(rows: "int | np.ndarray | None") -> "slice | np.ndarray":
    """:func:`compact`'s ``rows`` as an index along the rows: every row, the first ``rows``, or
    the listed positions (public: from released sizes).

    >>> row_pick(None), row_pick(3), row_pick(np.array([0, 2])).tolist()
    (slice(None, None, None), slice(None, 3, None), [0, 2])
    """
    if rows is None:
        return slice(None)
    return slice(int(rows)) if isinstance(rows, (int, np.integer)) else np.asarray(rows)


def _run_compiled(kernel: str, flags: np.ndarray, dist: np.ndarray, payload: Sequence[np.ndarray], n: int,
                  rounds: int, split: bool = True,
                  rows: "int | np.ndarray | None" = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """The shifting rounds as a compiled kernel (:mod:`.compiled`) on payload word columns.

    Every word column moves under the same masks, which only ``live`` and ``dist`` decide,
    so the columns can be split between threads (``split``, docs/design.md §Threads): each
    thread runs the rounds on its own copy of ``live``/``dist`` and its group of columns
    (:func:`word_groups`); every copy of ``live`` ends the same, and every column gets the
    selects it would get in one call."""
    payload = [np.asarray(p) for p in payload]
    live = flags.astype(np.uint8)
    dist = np.array(dist, dtype=np.int64, copy=True)
    block, widths = word_block(payload, n)
    groups = word_groups(block.shape[0], n, threads()) if split else [(0, block.shape[0])]
    if len(groups) == 1:
        _rounds_on_words(kernel, live, dist, block, n, rounds)
    else:
        # every copy is made before any thread starts changing the originals
        states = [(live, dist)] + [(live.copy(), dist.copy()) for _ in groups[1:]]
        run_parts([(_rounds_on_words, (kernel, lv, ds, block[a:b], n, rounds))
                   for (lv, ds), (a, b) in zip(states, groups)])
    pick = row_pick(rows)  # only the rows the caller keeps are decoded
    live, block = live.view(bool)[pick], block[:, pick]  # lint: public positions from released sizes
    return live, from_word_block(block, payload, widths, int(live.shape[0]))


def _run_compiled_parts(flags: np.ndarray, dist: np.ndarray, payload: Sequence[np.ndarray], n: int, rounds: int,
                        span: int, rows: "int | np.ndarray | None" = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """A binned compaction as independent compactions of contiguous groups of bins, one per
    thread (:mod:`.threads`).

    No row ever leaves its bin (``dist`` counts within the bin), so each group is the same
    computation on its own rows; the cut points depend on ``n``, ``span`` and the thread
    count only."""
    bins = n // span
    parts = min(threads(), bins)
    if parts < 2:
        return _run_compiled("compact_rounds", flags, dist, payload, n, rounds, rows=rows)
    cuts = [g * bins // parts * span for g in range(parts)] + [n]
    groups = list(zip(cuts[:-1], cuts[1:]))
    done = run_parts([(_run_compiled, ("compact_rounds", flags[a:b], dist[a:b], [p[a:b] for p in payload],
                                       b - a, rounds, False, _part_rows(rows, a, b))) for a, b in groups])
    return np.concatenate([live for live, _ in done]), [np.concatenate(cols) for cols in zip(*(pay for _, pay in done))]


def _part_rows(rows: "int | np.ndarray | None", a: int, b: int) -> "np.ndarray | None":
    """The chosen rows inside the part ``[a, b)``, counted from ``a`` (public positions)."""
    if rows is None:
        return None
    at = np.arange(int(rows)) if isinstance(rows, (int, np.integer)) else np.asarray(rows)
    lo, hi = np.searchsorted(at, [a, b])  # lint: public positions from released sizes
    return at[lo:hi] - a


FEW_RATIO = 16  # a block of a few-rows compaction holds 16x the kept rows: a level keeps 1/16
FEW_MIN_BLOCK = 1 << 12  # ... and at least 4096 rows (fewer levels, each a pass over its rows)


def few_block(n: int, m: int) -> int | None:
    """The block size for a compaction of ``n`` rows that keeps its first ``m`` (public), or
    ``None`` when one whole-array compaction is the better schedule.

    >>> few_block(6_001_268, 7_000), few_block(1 << 20, 1 << 16), few_block(1000, 1)
    (131072, None, None)
    """
    if m <= 0:
        return None
    b = max(FEW_MIN_BLOCK, 1 << (FEW_RATIO * m - 1).bit_length())
    return b if n >= 4 * b else None


def _compact_few(marked: np.ndarray, payload: Sequence[np.ndarray], m: int, b: int,
                 trace: Trace) -> tuple[np.ndarray, list[np.ndarray]]:
    """The first ``m`` rows of the stable compaction, through blocks of ``b`` rows (docs/design.md
    §Compaction, "Few rows kept").

    Each level compacts every whole block of ``b`` rows on its own (``log2 b`` rounds, not
    ``log2 n``) and keeps each block's first ``m`` slots, then the rows of the last partial
    block as they are.  A block's marked rows are at its front in order, and a marked row
    among the first ``m`` of all is among the first ``m`` of its block, so the kept rows hold
    the first ``m`` marked rows in order; levels repeat until fewer than ``4 b`` rows remain,
    and one compaction of those gives the answer.  Every size and position is a function of
    ``n``, ``m`` and ``b`` (public); about ``n log2 b (1 + 1/16 + …)`` selects against
    ``n log2 n``, and the blocks' rounds run in cache.
    """
    while marked.shape[0] >= 4 * b:
        n = int(marked.shape[0])
        whole = n - n % b
        keep = (np.arange(whole // b, dtype=np.int64)[:, None] * b + np.arange(m, dtype=np.int64)).reshape(-1)
        live, cols = compact(marked[:whole], [p[:whole] for p in payload], block=b, rows=keep, trace=trace)
        marked = np.concatenate([live, marked[whole:]])
        payload = [np.concatenate([c, p[whole:]]) for c, p in zip(cols, payload)]
    return compact(marked, payload, rows=m, trace=trace)


def compact(
    marked: np.ndarray,
    payload: Sequence[np.ndarray] = (),
    *,
    block: int | None = None,
    rows: int | np.ndarray | None = None,
    trace: Trace | None = None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Stable oblivious compaction: marked rows to the front, in order.

    Returns ``(marked_out, payload_out)`` of the same length ``n``; ``marked_out`` is
    ``True`` exactly on the first ``count(marked)`` slots.  Contents of unmarked output
    slots are unspecified.

    With ``block = B`` (``n`` a multiple of ``B``) every block of ``B`` consecutive rows is
    compacted on its own, in ``log2 B`` rounds instead of ``log2 n``: a row moves left by
    at most its offset inside its block, so no row ever leaves its block.

    ``rows`` (public: a count or increasing positions, e.g. from released sizes) returns
    only those output rows, the first ``rows`` or the listed ones: every row still moves
    through every round, but only the kept ones are decoded from the word block (a
    group-by at sf 1 decoded 6M rows to keep 7,000).  A count far below ``n``
    (:func:`few_block`) compacts through blocks instead (:func:`_compact_few`): the same
    first ``rows`` rows, marked ones included, in fewer rounds.
    """
    marked = np.asarray(marked, dtype=bool)
    n = int(marked.shape[0])
    if block is None and isinstance(rows, (int, np.integer)) and (b := few_block(n, int(rows))):
        return _compact_few(marked, [np.asarray(p) for p in payload], int(rows),
                            b, trace if trace is not None else Trace())
    span = n if block is None else int(block)
    if block is not None and (span <= 0 or n % span):
        raise ValueError("compact: n must be a multiple of the block size")
    trace = trace if trace is not None else Trace()
    width = 1 + sum(int(np.prod(p.shape[1:], dtype=np.int64)) for p in payload)
    buf = trace.alloc(n, width + 1, "compact")
    trace.record("compact:prefix", buf, n, span)
    if span < n:
        dist = select(marked, exclusive_count(~marked.reshape(-1, span)).reshape(-1), 0)
    else:
        dist = select(marked, exclusive_count(~marked), 0)
    if use_compiled():
        rounds = (span - 1).bit_length() if span > 0 else 0
        for r in range(rounds):
            trace.record("compact:round", buf, n, 1 << r)
        if span < n and n >= PARALLEL_MIN_ROWS:
            return _run_compiled_parts(marked, dist, payload, n, rounds, span, rows)
        return _run_compiled("compact_rounds", marked, dist, payload, n, rounds, rows=rows)
    cols = [np.array(p, copy=True) for p in payload]
    live = marked.copy()
    r = 0
    while (1 << r) < span:
        s = 1 << r
        trace.record("compact:round", buf, n, s)
        move = live & (((dist >> r) & 1) == 1)
        incoming = _shift_left(move, s)
        stays = live & ~move
        # slot i takes row i + s where a row arrives: one fixed-stride select per column
        head = incoming[: n - s]
        for c in cols:
            c[: n - s] = _select(head, c[s:], c[: n - s])
        dist[: n - s] = select(head, dist[s:], dist[: n - s])
        live = incoming | stays
        r += 1
    pick = row_pick(rows)
    return live[pick], [c[pick] for c in cols]  # lint: public positions from released sizes


def distribute(
    live: np.ndarray,
    target: np.ndarray,
    payload: Sequence[np.ndarray] = (),
    *,
    trace: Trace | None = None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Oblivious distribution: the live rows (a prefix, in order) move to slots ``target``.

    Requires ``target`` strictly increasing along live rows with ``target[i] >= i`` and
    ``target < n``.  Returns ``(occupied, payload_out)``.
    """
    live = np.asarray(live, dtype=bool)
    n = int(live.shape[0])
    trace = trace if trace is not None else Trace()
    width = 1 + sum(int(np.prod(p.shape[1:], dtype=np.int64)) for p in payload)
    buf = trace.alloc(n, width + 1, "distribute")
    dist = select(live, np.asarray(target, dtype=np.int64) - np.arange(n, dtype=np.int64), 0)
    rounds = max(0, (n - 1).bit_length())
    if use_compiled():
        for r in reversed(range(rounds)):
            trace.record("distribute:round", buf, n, 1 << r)
        return _run_compiled("distribute_rounds", live, dist, payload, n, rounds)
    cols = [np.array(p, copy=True) for p in payload]
    occ = live.copy()
    for r in reversed(range(rounds)):
        s = 1 << r
        trace.record("distribute:round", buf, n, s)
        move = occ & (((dist >> r) & 1) == 1)
        incoming = _shift_right(move, s)
        stays = occ & ~move
        tail = incoming[s:]
        for c in cols:
            c[s:] = _select(tail, c[: n - s], c[s:])
        dist[s:] = select(tail, dist[: n - s], dist[s:])
        occ = incoming | stays
    return occ, cols
