"""Bitonic sorting network over fixed-width keys, carrying a row payload.

Batcher's bitonic network in its "flip" form: every comparator sorts ascending, the
first stage of each merge compares ``i`` with the mirror position in its block, the
remaining stages compare ``i`` with ``i + j``.  Each stage is one vectorised pass over
fixed-stride views (``reshape`` and a reversed slice), so which positions are read and
written depends only on ``(n, k, j)`` — never on the keys (docs/design.md §Invariants, 2).  Rows are
exchanged with ``np.where``/xor-masks that read and write every position.

Keys are lists of ``uint64`` words compared lexicographically.  Stability comes for free:
the original position is appended as a last key word (or packed into the low bits of a
single key word when it fits), so all keys are distinct and ties keep input order.  Any
``n`` is supported by padding to a power of two with sentinel rows that sort last.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .backend import use_compiled
from .rows import block_words, fill_word_block, from_word_block
from .threads import run_parts, threads
from .trace import Trace

__all__ = ["oblivious_sort", "oblivious_sort_events", "oblivious_merge", "bitonic_network_stages", "next_pow2"]

_U64_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def bitonic_network_stages(n: int) -> list[tuple[int, int]]:
    """The ``(k, j)`` stage list of the flip-form bitonic network on ``n = 2^m`` rows.

    ``j == k // 2`` marks the mirror ("flip") stage of merge ``k``.
    """
    stages = []
    k = 2
    while k <= n:
        j = k // 2
        while j >= 1:
            stages.append((k, j))
            j //= 2
        k *= 2
    return stages


def _pair_views(a: np.ndarray, n: int, k: int, j: int) -> tuple[np.ndarray, np.ndarray]:
    tail = a.shape[1:]
    if j == k // 2:
        v = a.reshape((n // k, k) + tail)
        return v[:, :j], v[:, j:][:, ::-1]
    v = a.reshape((n // (2 * j), 2, j) + tail)
    return v[:, 0], v[:, 1]


def _greater(ka: list[np.ndarray], kb: list[np.ndarray]) -> np.ndarray:
    """Lexicographic ``a > b`` over key words, computed with full-width passes."""
    gt = ka[-1] > kb[-1]
    for a, b in zip(reversed(ka[:-1]), reversed(kb[:-1])):
        gt = (a > b) | ((a == b) & gt)
    return gt


def _swap(a: np.ndarray, b: np.ndarray, full: np.ndarray) -> None:
    """Exchange ``a[i]`` and ``b[i]`` where ``full[i]`` is all ones (it is 0 elsewhere).

    An xor swap in place (``d = (a ^ b) & full; a ^= d; b ^= d``): every position is read
    and written whatever the mask.  ``a``, ``b`` and ``full`` share one unsigned dtype.
    """
    d = np.bitwise_xor(a, b) & full
    a ^= d
    b ^= d


def _full_mask(gt: np.ndarray, dtype: np.dtype, cache: dict) -> np.ndarray:
    """``gt`` as 0 / all-ones words of ``dtype`` (computed once per stage and dtype)."""
    full = cache.get(dtype)
    if full is None:
        full = gt.astype(dtype)
        np.negative(full, out=full)  # 0 -> 0, 1 -> all ones
        cache.setdefault(dtype, full)
    return full


PRUNE = True  # skip comparators at padding rows (see _run_network); False only to measure the gain
SUB_BLOCK = 1 << 12  # compiled network: rows per inner cache block (its working set fits in L2)
BLOCK = 1 << 16  # rows per cache block (measured best of 2^12..2^18 on this machine): small stages run in cache


def _stage(keys: list[np.ndarray], pay: list[np.ndarray], n: int, k: int, j: int, packed: bool) -> None:
    """One compare-exchange stage ``(k, j)`` over arrays of ``n`` rows (views allowed)."""
    ka, kb_ = zip(*(_pair_views(w, n, k, j) for w in keys))
    masks: dict = {}
    if packed:
        a, b = ka[0], kb_[0]
        gt = a > b
        lo = np.minimum(a, b)
        np.maximum(a, b, out=b)
        a[...] = lo
    else:
        gt = _greater(list(ka), list(kb_))
        for a, b in zip(ka, kb_):
            _swap(a, b, _full_mask(gt, a.dtype, masks))
    for w in pay:
        a, b = _pair_views(w, n, k, j)
        _swap(a, b, _full_mask(gt, a.dtype, masks))


def _split(blk: int) -> tuple[int, int]:
    """``blk = R * C`` with ``C = 2^floor(log2(blk) / 2)`` columns (a square-ish tile)."""
    c = 1 << ((blk.bit_length() - 1) // 2)
    return c, blk // c


def _block_network(bk: list[np.ndarray], bp: list[np.ndarray], blk: int, stages: list[tuple[int, int]],
                   packed: bool) -> None:
    """Run ``stages`` on one block, short-distance stages on a transposed copy.

    A stage with distance ``j`` as a strided view has contiguous runs of only ``j`` rows,
    and numpy's per-run overhead makes ``j = 2 … 16`` two to three times slower per row
    than long runs.  Viewing the block as an ``R x C`` tile (row ``i = r*C + c``), every
    comparator of a stage with ``j < C`` joins two rows of the same tile row, so on the
    transposed tile (``C x R``, a fixed copy) it pairs whole contiguous runs of ``R`` rows.
    The comparators and their order are unchanged; the extra copies depend on ``blk`` only.
    """
    C, R = _split(blk)

    def on_tile(short: list[tuple[int, int]]) -> None:
        if not short:
            return
        tiles = [np.ascontiguousarray(w.reshape((R, C) + w.shape[1:]).swapaxes(0, 1)) for w in bk + bp]
        for k, j in short:  # a flip stage here has k = 2j <= C
            _stage(tiles[:len(bk)], tiles[len(bk):], C, k, j, packed)
        for w, t in zip(bk + bp, tiles):
            w.reshape((R, C) + w.shape[1:])[...] = t.swapaxes(0, 1)

    short: list[tuple[int, int]] = []
    for k, j in stages:
        if j < C:
            short.append((k, j))
            continue
        on_tile(short)
        short = []
        _stage(bk, bp, blk, k, j, packed)
    on_tile(short)


def _live_prefix(n: int, k: int, j: int) -> int:
    """Rows a whole-array stage ``(k, j)`` must cover when rows ``>= n`` are padding.

    Its comparators come in groups of ``k`` (flip) or ``2j`` rows; the lowest higher row
    of group ``g`` is ``g * size + j``, so groups with ``g * size + j >= n`` hold only
    comparators that never swap (see :func:`_run_network`) and are left out.
    """
    size = k if 2 * j == k else 2 * j
    return -(-max(0, n - j) // size) * size


class _NumpyNetwork:
    """The reference executor: vectorised strided passes (``_stage``/``_block_network``)
    on the rows of the ``(words, m)`` block ``X`` in place (key words first, ``nk`` of them)."""

    def __init__(self, X: np.ndarray, nk: int, n: int, m: int, blk: int, packed: bool):
        self.keys, self.pay, self.n, self.m, self.blk, self.packed = list(X[:nk]), list(X[nk:]), n, m, blk, packed

    def blocks(self, tail_j: int) -> None:
        blk = self.blk
        if tail_j == 0:
            stages = bitonic_network_stages(blk)
        else:  # any k > 2j selects the non-flip pattern
            stages = [(4 * (tail_j >> i), tail_j >> i) for i in range(tail_j.bit_length())]
        for b in range(-(-self.n // blk)):  # blocks past n hold padding only
            lo, hi = b * blk, (b + 1) * blk
            _block_network([w[lo:hi] for w in self.keys], [w[lo:hi] for w in self.pay], blk, stages, self.packed)

    def stage(self, k: int, j: int) -> None:
        live = _live_prefix(self.n, k, j)
        _stage([w[:live] for w in self.keys], [w[:live] for w in self.pay], live, k, j, self.packed)

    def finish(self) -> None:
        pass


class _CompiledNetwork:
    """The numba executor (:mod:`.compiled_sort`): the same comparators on the block ``X`` of
    ``(words, m)`` words in place (key words first, ``nk`` of them; C-contiguous).

    Whole-array stages are held back one call so that two consecutive stages of a merge run
    as one fused pass (``sort_long(..., pair=True)``); the schedule depends on the stage
    list only.  With more than one thread (:mod:`.threads`) the blocks, and the groups of a whole-array stage, are
    split between threads by public counts: the threads touch disjoint rows, so what is
    computed does not depend on them.
    """

    def __init__(self, X: np.ndarray, nk: int, n: int, m: int, blk: int, packed: bool):
        from . import compiled_sort

        if not X.flags.c_contiguous:
            raise ValueError("the compiled network works on a C-contiguous block")
        self.nb, self.X = compiled_sort, X.reshape(-1)  # a view: the passes write X itself
        self.nk, self.nw, self.n, self.m, self.blk = nk, X.shape[0], n, m, blk
        self.sub = min(SUB_BLOCK, blk)
        self.cols = _split(self.sub)[0]
        self.threads = max(1, min(threads(), m // blk))
        # per thread: the masks of one chunk of comparators and a transposed piece
        chunk_masks, piece_words = 4 * compiled_sort.CHUNK, self.nw * self.sub
        self.scratch = [(np.empty(chunk_masks, dtype=np.uint64), np.empty(piece_words, dtype=np.uint64))
                        for _ in range(self.threads)]
        self.pending: tuple[int, int] | None = None

    def _parallel(self, call) -> None:
        """``call(part, parts, msk, T)`` for every part, each on its own thread with its own scratch."""
        run_parts([(call, (part, self.threads, msk, T)) for part, (msk, T) in enumerate(self.scratch)])

    def _flush(self) -> None:
        if self.pending is not None:
            k, j = self.pending
            self.pending = None
            self._long(k, j, False)

    def _long(self, k: int, j: int, pair: bool) -> None:
        self._parallel(lambda part, parts, msk, T: self.nb.sort_long(self.X, self.nk, self.nw, self.m, self.n, k, j,
                                                                     pair, part, parts, msk))

    def blocks(self, tail_j: int) -> None:
        self._flush()
        live = -(-self.n // self.blk)  # blocks past n hold padding only

        def run(part: int, parts: int, msk: np.ndarray, T: np.ndarray) -> None:
            share = -(-live // parts)
            self.nb.sort_blocks(self.X, self.nk, self.nw, self.m, self.n, self.blk, self.sub, self.cols, tail_j,
                                part * share, (part + 1) * share, msk, T)

        self._parallel(run)

    def stage(self, k: int, j: int) -> None:
        if self.pending == (k, 2 * j):  # the second stage of a pair: both in one pass
            self.pending = None
            self._long(k, 2 * j, True)
            return
        self._flush()
        self.pending = (k, j)

    def finish(self) -> None:
        self._flush()


class _NoNetwork:
    """The network's stages with no work: :func:`oblivious_sort_events`."""

    def __init__(self, *args) -> None:
        pass

    def blocks(self, tail_j: int) -> None:
        pass

    def stage(self, k: int, j: int) -> None:
        pass

    def finish(self) -> None:
        pass


def _run_network(X: np.ndarray | None, nk: int, n: int, m: int, packed: bool, trace: Trace, buf: int) -> None:
    """The flip-form bitonic network on the ``(words, m)`` block ``X`` (its first ``nk``
    rows the key words, the rest payload words), in place, cache-blocked.

    Every comparator of a stage with ``2j <= BLOCK`` stays inside one aligned block of
    ``BLOCK`` rows, so those stages run block after block while the block is in cache
    (see ``_block_network``); the others are whole-array passes.  The comparators applied
    — and their order within each block — are those of the plain network, fixed by ``m``.

    Less work (issue 13): rows ``n .. m-1`` are sentinels that sort after every real row
    and among themselves in position order.  Every comparator puts the smaller row at the
    lower position, so by induction over the stages the padding rows never move: a
    comparator whose higher row is ``>= n`` compares a real row with a larger sentinel, or
    two sentinels already in order, and never swaps.  Those comparators are skipped —
    whole blocks and stage groups in the reference, groups of four rows in the compiled
    network (``compiled_sort``) — so the work, and the access pattern, depend on ``n`` as
    well as ``m`` (both public; the ``sort:prune`` event records ``n``).
    """
    blk = min(BLOCK, m)
    nblocks = m // blk
    n = n if PRUNE else m
    net = (_NoNetwork if X is None else _CompiledNetwork if use_compiled() else _NumpyNetwork)(X, nk, n, m, blk, packed)
    trace.record("sort:prune", buf, n, m)
    # all merges of size <= BLOCK: each block is sorted on its own
    trace.record("sort:blocks", buf, m, blk, nblocks)
    net.blocks(0)
    k = 2 * blk
    while k <= m:
        j = k // 2
        while 2 * j > blk:
            trace.record("sort:stage", buf, m, k, j)
            net.stage(k, j)
            j //= 2
        trace.record("sort:block_tail", buf, m, k, j, blk)
        net.blocks(j)
        k *= 2
    net.finish()


def _checked(keys: Sequence[np.ndarray], payload: Sequence[np.ndarray], what: str) -> tuple[list[np.ndarray], int]:
    """``keys`` as ``uint64`` words and the row count, after checking every array has it."""
    keys = [np.asarray(k, dtype=np.uint64) for k in keys]
    if not keys:
        raise ValueError(f"{what} needs at least one key word")
    n = int(keys[0].shape[0])
    for a in list(keys) + list(payload):
        if a.shape[0] != n:
            raise ValueError("all key and payload arrays must have the same length")
    return keys, n


def _trace_buffer(trace: Trace, nkeys: int, payload: Sequence[np.ndarray], m: int, what: str) -> int:
    width = nkeys + sum(int(np.prod(p.shape[1:], dtype=np.int64)) for p in payload)
    return trace.alloc(m, width + 1, what)


def _block(nk: int, payload: Sequence[np.ndarray], m: int) -> tuple[np.ndarray, list[int]]:
    """The network's ``(nk + payload words, m)`` block: ``nk`` key rows of all-ones sentinels
    (the caller writes the keys), then every payload as word columns (one contiguous row per
    word, so a stage swaps long runs); and each payload's word count."""
    X = np.empty((nk + block_words(payload), m), dtype=np.uint64)
    X[:nk] = _U64_MAX
    return X, fill_word_block(list(payload), X[nk:])


def _shape(nkeys: int, n: int, key_bits: int | None, unique: bool) -> tuple[int, int, bool, int]:
    """The network's ``(m, index bits, packed, key rows)`` for ``nkeys`` key words over ``n``
    rows: shared by :func:`oblivious_sort` and :func:`oblivious_sort_events`."""
    m = next_pow2(n)
    idx_bits = max(1, (m - 1).bit_length())
    packed = key_bits is not None and nkeys == 1 and key_bits + idx_bits <= 64
    return m, idx_bits, packed, 1 if packed else nkeys + (0 if unique else 1)


def oblivious_sort_events(nkeys: int, payload: Sequence[np.ndarray], n: int, *, key_bits: int | None = None,
                          unique: bool = False, trace: Trace) -> None:
    """Record the trace :func:`oblivious_sort` records for ``nkeys`` key words over ``n`` rows
    and this payload, without sorting: the view of a sort whose result is served from memory
    (a private table's sorted side, docs/design.md §Slot cache).  The events depend on the
    sizes, widths and flags only, as the sort's do."""
    m, _, packed, nk = _shape(nkeys, n, key_bits, unique)
    _run_network(None, nk, n, m, packed, trace, _trace_buffer(trace, nkeys, payload, m, "sort"))


def oblivious_sort(
    keys: Sequence[np.ndarray],
    payload: Sequence[np.ndarray] = (),
    *,
    descending: bool = False,
    key_bits: int | None = None,
    unique: bool = False,
    trace: Trace | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Stable oblivious sort of rows by ``keys`` (lexicographic ``uint64`` words).

    ``payload`` arrays (any dtype, first axis = rows, e.g. ``(n, w)`` byte blocks) move
    with their keys.  ``descending`` reverses the key order; ties still keep input order.
    ``key_bits``: if there is a single key word whose values fit in that many bits, the
    original position is packed into the spare low bits so the network compares one word.
    ``unique``: the caller guarantees distinct keys below all-ones (e.g. it packed the
    position in already), so no position word is appended.
    Returns the sorted key words and payload, each of length ``n``.
    """
    keys, n = _checked(keys, payload, "oblivious_sort")
    trace = trace if trace is not None else Trace()
    m, idx_bits, packed, nk = _shape(len(keys), n, key_bits, unique)
    buf = _trace_buffer(trace, len(keys), payload, m, "sort")

    # one block, sorted in place: key words (padding rows are all-ones sentinels that sort
    # last), then the payload words
    X, widths = _block(nk, payload, m)
    work_keys, work_pay = X[:nk], X[nk:]
    for row, k in zip(work_keys, keys):
        row[:n] = ~k if descending else k
    pos = np.arange(m, dtype=np.uint64)
    if packed:
        kb = int(key_bits)
        limit = np.uint64((1 << kb) - 1)
        # ~k flipped the high bits too (descending); keys fit in key_bits (caller contract)
        work_keys[0, :n] = work_keys[0, :n] & limit
        work_keys[0, n:] = limit
        work_keys[0] = (work_keys[0] << np.uint64(idx_bits)) | pos
    elif not unique:
        work_keys[-1] = pos

    _run_network(X, nk, n, m, packed, trace, buf)

    if packed:
        out_keys = [work_keys[0][:n] >> np.uint64(idx_bits)]
        if descending:
            out_keys = [~out_keys[0] & np.uint64((1 << int(key_bits)) - 1)]
    else:
        out_keys = [w[:n] for w in (work_keys if unique else work_keys[:-1])]  # views: the payload keeps X anyway
        if descending:
            out_keys = [~w for w in out_keys]
    return out_keys, from_word_block(work_pay, list(payload), widths, n)


def oblivious_merge(
    keys: Sequence[np.ndarray],
    payload: Sequence[np.ndarray] = (),
    *,
    split: int,
    trace: Trace | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Merge two sorted runs — rows ``[0, split)`` and ``[split, n)``, each ascending by
    ``keys`` — into one ascending order (Batcher's bitonic merge; docs/design.md §Oblivious
    merge).

    The caller guarantees distinct keys below all-ones (e.g. a position is packed in) and
    that each run is sorted; the output is then the one sorted order, the same as
    :func:`oblivious_sort` gives.  The first run, all-ones sentinels, then the second run
    reversed (a public permutation) form a bitonic sequence of ``m = next_pow2(n)`` rows;
    the half-cleaner stages ``j = m/2 … 1`` sort it: ``log2 m`` stages instead of the
    sort's ``log2 m · (log2 m + 1) / 2``.  No comparator is pruned (the sentinels sit in
    the middle), so the access pattern depends on ``m`` alone; ``n`` and ``split`` only
    place the runs.
    """
    keys, n = _checked(keys, payload, "oblivious_merge")
    if not 0 <= split <= n:
        raise ValueError("split must lie inside the rows")
    trace = trace if trace is not None else Trace()
    m = next_pow2(n)
    buf = _trace_buffer(trace, len(keys), payload, m, "merge")
    right = n - split
    nk = len(keys)
    # the first run's payload words, zeros, then the second run's reversed at the end: each
    # run is written into its place in the block directly (no copy of the block)
    X = np.empty((nk + block_words(payload), m), dtype=np.uint64)
    X[:nk] = _U64_MAX
    work_keys, work_pay = X[:nk], X[nk:]
    widths = fill_word_block([p[:split] for p in payload], work_pay[:, :split])
    work_pay[:, split:m - right] = 0
    fill_word_block([p[split:][::-1] for p in payload], work_pay[:, m - right:])
    for row, k in zip(work_keys, keys):
        row[:split] = k[:split]
        row[m - right:] = k[split:][::-1]
    blk = min(BLOCK, m)
    net = (_CompiledNetwork if use_compiled() else _NumpyNetwork)(X, nk, m, m, blk, False)
    trace.record("merge:bitonic", buf, n, m, blk)
    j = m // 2
    while j >= 1 and 2 * j > blk:  # any k > 2j selects the half-cleaner (non-flip) pattern
        net.stage(4 * j, j)
        j //= 2
    if j >= 1:
        net.blocks(j)
    net.finish()
    return [w[:n] for w in work_keys], from_word_block(work_pay, list(payload), widths, n)
