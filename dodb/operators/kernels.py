"""Kernel strategies: the same operator algorithm over oblivious or plain kernels.

``do`` and ``oblivious`` modes run on :class:`ObliviousKernels` (sorting networks,
shifting-network compaction, one-pass segmented scans: access patterns fixed by public sizes).
``plain`` mode runs the identical operator logic on :class:`PlainKernels` — numpy's
argsort, boolean masks and ``reduceat`` — the insecure fast baseline.  Sharing the logic
keeps the three modes' answers identical by construction.

Segment conventions: ``starts[i]`` marks the first row of a run.  ``seg_reduce`` returns
an array whose value on the *last* row of every run is that run's aggregate (other rows
unspecified); ``seg_first``/``seg_last`` give every row its run's first/last value.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..oblivious import compact as ocompact
from ..oblivious import expand as oexpand
from ..oblivious.compact import distribute as odistribute, row_pick
from ..oblivious import oblivious_merge, oblivious_sort, segmented_lex_scan, segmented_scan
from ..oblivious.sort import oblivious_sort_events
from ..oblivious.unmerge import oblivious_unmerge
from ..oblivious.scan import scan_events
from ..oblivious.trace import Trace
from .keys import EncodedKey
from ..oblivious.select import select

__all__ = ["Kernels", "ObliviousKernels", "PlainKernels", "kernels_for"]


class Kernels:
    oblivious: bool = True

    def __init__(self, trace: Trace):
        self.trace = trace

    @staticmethod
    def sort_shape(key: EncodedKey) -> tuple[int, int | None, int]:
        """What :meth:`sort`'s view depends on in ``key``: the rows, the packed fast path's
        bit width (or ``None``), and the key words with the position folded in — public
        (the key's field widths and the row count), so kept beside a sorted side."""
        n = int(key.words[0].shape[0])
        bits = key.single_word_bits
        if bits is not None:
            return n, bits, 1
        pos_bits = max(1, (max(1, n) - 1).bit_length())
        return n, None, -(-(key.bits + pos_bits) // 64)


class ObliviousKernels(Kernels):
    oblivious = True

    def sort(self, key: EncodedKey, payload: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Stable sort of payload rows by the encoded key; returns (key words, payload)."""
        # the payload's columns go to the network as they are: its word block packs narrow
        # columns into shared words (oblivious/rows.py block_layout)
        bits = key.single_word_bits
        if bits is not None:
            (w,), out = oblivious_sort([key.packed_single()], payload, key_bits=bits, trace=self.trace)
            return [w << np.uint64(64 - bits) if 0 < bits < 64 else w], out
        # fold the stable tie-break (position) into the key's last word when it has room,
        # so the network compares as few words as possible
        with_pos = key.with_position()
        return oblivious_sort(with_pos.words, payload, unique=True, trace=self.trace)

    def sort_events(self, key: EncodedKey | tuple[int, int | None, int], payload: Sequence[np.ndarray]) -> None:
        """Record the view of :meth:`sort` without sorting (its result served from memory:
        operators/join.py ``sorted_side``), the same events from the same sizes and widths.
        ``key`` is the encoded key or its :meth:`sort_shape` (which reads no key word)."""
        n, bits, words = key if isinstance(key, tuple) else self.sort_shape(key)
        if bits is not None:
            oblivious_sort_events(1, payload, n, key_bits=bits, trace=self.trace)
        else:
            oblivious_sort_events(words, payload, n, unique=True, trace=self.trace)

    def merge(self, key: EncodedKey, payload: Sequence[np.ndarray], split: int):
        """The rows ``[0, split)`` and ``[split, n)``, each sorted by ``key`` (distinct keys),
        merged into one sorted order: (key words, payload) as :meth:`sort` would give."""
        return oblivious_merge(key.words, payload, split=split, trace=self.trace)

    def unmerge(self, origin: np.ndarray, payload: Sequence[np.ndarray],
                split: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Rows in :meth:`merge`'s order back to its two runs, each in its input order;
        ``origin``: each merged row's input row (:func:`dodb.oblivious.unmerge.oblivious_unmerge`)."""
        return oblivious_unmerge(origin, payload, split=split, trace=self.trace)

    def compact(self, flags: np.ndarray, payload: Sequence[np.ndarray],
                block: int | None = None, rows: int | np.ndarray | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
        """Stable compaction (:func:`dodb.oblivious.compact.compact`); ``rows``: only these output
        rows (a public count or positions)."""
        # (shifting rounds are cheap per column: packing rows does not pay here, unlike sorting)
        return ocompact(flags, payload, block=block, rows=rows, trace=self.trace)

    def distribute(self, live: np.ndarray, target: np.ndarray,
                   payload: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """The live rows (a prefix, in order) moved to the strictly increasing slots
        ``target >= position`` (:func:`dodb.oblivious.compact.distribute`)."""
        return odistribute(live, target, payload, trace=self.trace)

    def expand(self, counts: np.ndarray, payload: Sequence[np.ndarray], m: int, unit: bool = False):
        """Row ``i`` copied ``counts[i]`` times into ``m`` slots; ``unit``: a public bound
        caps every count at one (:func:`dodb.oblivious.expand.expand`)."""
        return oexpand(counts, payload, m, unit=unit, trace=self.trace)

    def seg_reduce(self, values: np.ndarray, starts: np.ndarray, op: str) -> np.ndarray:
        return segmented_scan(values, starts, op, trace=self.trace)

    def scan_events(self, n: int, op: str) -> None:
        """Record the view of :meth:`seg_reduce` over ``n`` rows without running it (a total
        computed another way, in the same one pass: operators/global_aggregate.py)."""
        scan_events(self.trace, n, op)

    def seg_reduce_lex(self, words: Sequence[np.ndarray], starts: np.ndarray, op: str,
                       payload: Sequence[np.ndarray] = ()) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return segmented_lex_scan(words, starts, op, payload=payload, trace=self.trace)

    def seg_prefix(self, values: np.ndarray, starts: np.ndarray, op: str = "sum") -> np.ndarray:
        """Inclusive per-run prefix (``sum`` or ``count``) on every row."""
        return segmented_scan(values, starts, op, trace=self.trace)

    def seg_first(self, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return segmented_scan(values, starts, "first", trace=self.trace)

    def seg_last(self, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return segmented_scan(values, starts, "first", reverse=True, trace=self.trace)


class PlainKernels(Kernels):
    """Insecure fast paths (data-dependent access).  Not for private data in production."""

    oblivious = False

    def scan_events(self, n: int, op: str) -> None:
        """Plain scans record nothing."""

    def sort(self, key: EncodedKey, payload: Sequence[np.ndarray]):
        n = key.words[0].shape[0]
        order = np.lexsort(key.words[::-1]) if n else np.zeros(0, np.int64)
        return [w[order] for w in key.words], [p[order] for p in payload]

    def sort_events(self, key: EncodedKey, payload: Sequence[np.ndarray]) -> None:
        """The plain baseline records no view."""

    def merge(self, key: EncodedKey, payload: Sequence[np.ndarray], split: int):
        return self.sort(key, payload)

    def unmerge(self, origin: np.ndarray, payload: Sequence[np.ndarray], split: int):
        back = np.empty(len(origin), dtype=np.int64)
        back[origin] = np.arange(len(origin))  # where each input row sits in the merged order
        return [p[back[:split]] for p in payload], [p[back[split:]] for p in payload]

    def compact(self, flags: np.ndarray, payload: Sequence[np.ndarray], block: int | None = None,
                rows: int | np.ndarray | None = None):
        flags = np.asarray(flags, dtype=bool)
        if block is None:
            order = np.argsort(~flags, kind="stable")
        else:
            blk = np.arange(flags.shape[0]) // block
            order = np.lexsort((~flags, blk))
        order = order[row_pick(rows)]
        return flags[order], [p[order] for p in payload]

    def distribute(self, live: np.ndarray, target: np.ndarray, payload: Sequence[np.ndarray]):
        live = np.asarray(live, dtype=bool)
        to = np.asarray(target, dtype=np.int64)[live]
        occupied = np.zeros(live.shape[0], dtype=bool)
        occupied[to] = True
        out = []
        for p in payload:
            o = np.zeros_like(p)
            o[to] = p[live]
            out.append(o)
        return occupied, out

    def expand(self, counts: np.ndarray, payload: Sequence[np.ndarray], m: int, unit: bool = False):
        counts = np.asarray(counts, dtype=np.int64)
        total = int(counts.sum())
        if total > m:
            raise ValueError("expand: output size smaller than the total count")
        idx = np.repeat(np.arange(counts.shape[0]), counts)
        first = np.cumsum(counts) - counts
        copy = np.arange(total) - np.repeat(first, counts)
        pad = m - total
        out = []
        for p in payload:
            o = np.zeros((m,) + p.shape[1:], dtype=p.dtype)
            o[:total] = p[idx]
            out.append(o)
        real = np.zeros(m, bool)
        real[:total] = True
        return real, np.concatenate([copy, np.zeros(pad, np.int64)]), out

    @staticmethod
    def _bounds(starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        starts = np.asarray(starts, dtype=bool).copy()
        if starts.shape[0]:
            starts[0] = True
        first = np.flatnonzero(starts)
        last = np.append(first[1:] - 1, starts.shape[0] - 1) if first.size else first
        return first, last

    def seg_reduce(self, values: np.ndarray, starts: np.ndarray, op: str) -> np.ndarray:
        values = np.asarray(values)
        if op == "count":
            values = values.astype(np.int64)
        out = values.copy()
        if values.shape[0] == 0:
            return out
        first, last = self._bounds(starts)
        uf = {"sum": np.add, "count": np.add, "min": np.minimum, "max": np.maximum}[op]
        out[last] = uf.reduceat(values, first)
        return out

    def seg_reduce_lex(self, words: Sequence[np.ndarray], starts: np.ndarray, op: str,
                       payload: Sequence[np.ndarray] = ()):
        words = [np.asarray(w, dtype=np.uint64) for w in words]
        n = words[0].shape[0] if words else 0
        out = [w.copy() for w in words]
        pay = [np.array(p, copy=True) for p in payload]
        if n == 0:
            return out, pay
        seg = np.cumsum(np.asarray(starts, dtype=np.int64))
        order = np.lexsort(words[::-1] + [seg])  # by segment, then value
        first, last = self._bounds(starts)
        pick = order[first] if op == "min" else order[last]
        for o, w in zip(out + pay, words + list(payload)):
            o[last] = w[pick]
        return out, pay

    def seg_prefix(self, values: np.ndarray, starts: np.ndarray, op: str = "sum") -> np.ndarray:
        v = np.asarray(values).astype(np.int64) if op == "count" else np.asarray(values)
        c = np.cumsum(v)
        before = c - v
        return c - self.seg_first(before, starts)

    def seg_first(self, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
        n = values.shape[0]
        if n == 0:
            return values.copy()
        s = np.asarray(starts, dtype=bool).copy()
        s[0] = True
        idx = np.maximum.accumulate(select(s, np.arange(n), 0))
        return values[idx]

    def seg_last(self, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
        n = values.shape[0]
        if n == 0:
            return values.copy()
        first, last = self._bounds(starts)
        seg = np.cumsum(np.asarray(starts, dtype=np.int64))
        seg = seg - seg[0]
        return values[last[seg]]


def kernels_for(mode: str, trace: Trace) -> Kernels:
    if mode == "plain":
        return PlainKernels(trace)
    return ObliviousKernels(trace)
