"""Leftmost-first regular-expression search over fixed-width strings: the match and capture
groups RE2 reports, for ``regexp_extract`` and ``regexp_replace`` (docs/design.md
§Expressions, regular expressions).

RE2 (DuckDB's engine) reports, among the matches that start leftmost, the one a
backtracking matcher would find first: alternatives in their order, greedy repeats taking
more first, lazy ones less.  The constant pattern is made into an *ordered* position
automaton (Glushkov's construction keeping priorities): every leaf is a position reading
one byte class; the start and each position have an *ordered* list of successors — a
position or the match — each with the capture slots set when the step is taken.  Search
is RE2's Pike machine over that automaton, run on whole columns: per row, each position
holds a thread's priority rank (or none) and its capture slots; at every byte column
each successor takes its best-priority predecessor, a reached match cuts the threads of
lower priority, and the ranks are renumbered by comparing all pairs.  A new thread
starts at every column, at the lowest priority, until a match is found.  Every column
of the public width and every position are visited on every row whatever the bytes; the
loops are over the pattern and the width (docs/threat-model.md).

A repeat whose body matches the empty string (``(a*)*``, ``(a|)+``) is refused: RE2
handles empty iterations its own way.  ``regexp_replace`` with ``'g'`` repeats the search
from each match's end as RE2's ``GlobalReplace`` does (an empty match just after the
previous one copies one character instead), a public number of times: the most matches
the width allows.

>>> a = compile_ordered("(a|ab)(c|bcd)")
>>> (len(a.classes), a.groups, a.min_length)
(6, 2, 2)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .regex import MULTIBYTE_CHAINS, RegexRefused, build_tree, byte_ranges, parse_pattern
from .strings import compact
from ...oblivious.select import select

__all__ = ["OrderedAutomaton", "compile_ordered", "leftmost_first", "extract_group", "replace_matches", "parse_rewrite"]

MAX_POSITIONS = 512
EXIT = -1                 # while building: leave the piece (resolved by the piece around it)
_NO_SLOTS: frozenset[int] = frozenset()
_NONE = 1 << 40           # the rank of a position no thread holds (ranks · fan-out stay below 2^53)
_ROWS_PER_CHUNK = 4096    # the pairwise renumbering holds rows × positions² booleans at once

Ranges = tuple[tuple[int, int], ...]
Item = tuple[int, frozenset]  # (successor: a position, EXIT or the match; capture slots set on the way)


@dataclass(frozen=True)
class OrderedAutomaton:
    """``classes[p]``: the bytes position ``p`` reads; ``start`` / ``follow[p]``: the ordered
    successors (position ``len(classes)`` is the match) with the capture slots each sets
    (slot ``2g`` opens group ``g``, ``2g + 1`` closes it; slot 0 is set on the start edges);
    ``min_length``: the fewest bytes of a match."""
    classes: tuple[Ranges, ...]
    start: tuple[Item, ...]
    follow: tuple[tuple[Item, ...], ...]
    groups: int
    anchored_start: bool
    anchored_end: bool
    min_length: int

    @property
    def nullable(self) -> bool:
        return any(t == len(self.classes) for t, _ in self.start)


def _dedup(items: list[Item]) -> list[Item]:
    """The first item of each successor (a later one is a path of lower priority to the same place)."""
    seen: set[int] = set()
    out = []
    for t, slots in items:
        if t not in seen:  # lint: public the query's pattern
            seen.add(t)
            out.append((t, slots))
    return out


class _Ordered:
    """Builds pieces ``(first items, positions)``; a position's ``EXIT`` item is resolved by
    the construct around its piece."""

    def __init__(self) -> None:
        self.classes: list[Ranges] = []
        self.follow: list[list[Item]] = []

    def leaf(self, ranges: Ranges) -> tuple[list[Item], list[int]]:
        if len(self.classes) >= MAX_POSITIONS:
            raise RegexRefused(f"a search pattern of more than {MAX_POSITIONS} positions (unrolled repeats)")
        self.classes.append(ranges)
        self.follow.append([(EXIT, _NO_SLOTS)])
        return [(len(self.classes) - 1, _NO_SLOTS)], [len(self.classes) - 1]

    @staticmethod
    def _resolve(items: list[Item], cont: list[Item]) -> list[Item]:
        out: list[Item] = []
        for t, slots in items:
            if t == EXIT:  # lint: public the query's pattern
                out += [(t2, slots | s2) for t2, s2 in cont]
            else:
                out.append((t, slots))
        return _dedup(out)

    def _exits(self, positions: list[int], cont: list[Item]) -> None:
        for p in positions:
            self.follow[p] = self._resolve(self.follow[p], cont)  # lint: public the query's pattern

    def concat(self, pieces: list) -> tuple[list[Item], list[int]]:
        first: list[Item] = [(EXIT, _NO_SLOTS)]
        positions: list[int] = []
        for f, ps in pieces:
            self._exits(positions, f)
            first = self._resolve(first, f)
            positions = positions + ps
        return first, positions

    def union(self, alts: list) -> tuple[list[Item], list[int]]:
        return _dedup([i for f, _ in alts for i in f]), [p for _, ps in alts for p in ps]

    def bytes_of(self, data: bytes) -> tuple[list[Item], list[int]]:
        return self.concat([self.leaf(((x, x),)) for x in data])

    def counted(self, sub, lo: int, hi: int | None, greedy: bool) -> tuple[list[Item], list[int]]:
        """RE2's expansion of ``x{lo,hi}``: lo copies then nested optionals ``(x(x)?)?``, or with
        no bound lo − 1 copies then ``x+`` (``x*`` when lo is 0)."""
        if hi is None:
            if lo == 0:
                return self.repeat(build_tree(self, sub), greedy, at_least_once=False)
            return self.concat([build_tree(self, sub) for _ in range(lo - 1)]
                               + [self.repeat(build_tree(self, sub), greedy, True)])
        reps = [build_tree(self, sub) for _ in range(lo)]
        tail = self.concat([])
        for _ in range(hi - lo):
            tail = self.optional(self.concat([build_tree(self, sub), tail]), greedy)
        return self.concat(reps + [tail])

    def group(self, piece, g: int | None) -> tuple[list[Item], list[int]]:
        if g is None:  # lint: public the query's pattern
            return piece
        f, ps = piece
        opened, closed = frozenset({2 * g}), frozenset({2 * g + 1})
        for p in ps:
            items = self.follow[p]  # lint: public the query's pattern
            self.follow[p] = [(t, s | closed if t == EXIT else s) for t, s in items]  # lint: public the query's pattern
        return [(t, s | opened | (closed if t == EXIT else _NO_SLOTS)) for t, s in f], ps

    def repeat(self, piece, greedy: bool, at_least_once: bool) -> tuple[list[Item], list[int]]:
        """``x+`` / ``x*`` (lazy: leaving comes before another round)."""
        f, ps = piece
        if any(t == EXIT for t, _ in f):  # lint: public the query's pattern
            raise RegexRefused("a repeat of something that matches the empty string")
        cont = f + [(EXIT, _NO_SLOTS)] if greedy else [(EXIT, _NO_SLOTS)] + f
        self._exits(ps, cont)
        return (f if at_least_once else cont), ps

    def optional(self, piece, greedy: bool) -> tuple[list[Item], list[int]]:
        f, ps = piece
        return _dedup(f + [(EXIT, _NO_SLOTS)] if greedy else [(EXIT, _NO_SLOTS)] + f), ps

    def code_points(self, ascii_set: set[int], negated: bool, others: tuple[bytes, ...] = ()):
        """A class: its ASCII bytes and other code points, or every code point outside them."""
        if not negated:
            alts = ([self.leaf(byte_ranges(ascii_set))] if ascii_set else []) + \
                [self.concat([self.leaf(((b, b),)) for b in o]) for o in others]
            if not alts:  # lint: public the query's pattern
                raise RegexRefused("an empty character class")
            return self.union(alts)
        rest = set(range(0x80)) - ascii_set
        return self.union(([self.leaf(byte_ranges(rest))] if rest else [])
                          + [self.concat([self.leaf(c) for c in chain]) for chain in MULTIBYTE_CHAINS])


def _min_length(start: list[Item], follow: list[list[Item]], m: int) -> int:
    """The fewest positions on a path from the start to the match (breadth first)."""
    frontier, seen, depth = {t for t, _ in start}, set(), 0
    while m not in frontier:  # lint: public the query's pattern
        seen |= frontier  # lint: public the query's pattern (Python sets of positions)
        frontier = {t for p in frontier for t, _ in follow[p]} - seen  # lint: public the query's pattern
        depth += 1
    return depth


def compile_ordered(pattern: str) -> OrderedAutomaton:
    """The ordered position automaton of a constant pattern; :class:`RegexRefused` outside
    the supported syntax."""
    items, start, end, groups = parse_pattern(pattern)
    b = _Ordered()
    first, _ = build_tree(b, items)
    m = len(b.classes)
    first = [(m if t == EXIT else t, s | {0}) for t, s in first]
    follow = [[(m if t == EXIT else t, s) for t, s in f] for f in b.follow]
    return OrderedAutomaton(tuple(b.classes), tuple(first), tuple(tuple(f) for f in follow), groups, start, end,
                            _min_length(first, follow, m))


def leftmost_first(mat: np.ndarray, lengths: np.ndarray, auto: OrderedAutomaton,
                   begin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: whether the pattern matches in the string at or after byte ``begin``, and the
    capture slots of RE2's match ``(n, 2·(groups+1))``: slot 0/1 the match's start and end,
    ``2g``/``2g+1`` group ``g``'s (−1 where the group took no part)."""
    n = mat.shape[0]
    slots = 2 * (auto.groups + 1)
    found = np.zeros(n, dtype=bool)
    regs = np.full((n, slots), -1, dtype=np.int64)
    for lo in range(0, n, _ROWS_PER_CHUNK):  # public chunks of the slot count
        hi = min(n, lo + _ROWS_PER_CHUNK)
        found[lo:hi], regs[lo:hi] = _search(mat[lo:hi], np.asarray(lengths[lo:hi], dtype=np.int64),
                                            auto, np.asarray(begin[lo:hi], dtype=np.int64), slots)
    return found, regs


def _predecessors(auto: OrderedAutomaton) -> list[list[tuple[int, int, frozenset]]]:
    """For each position and the match: ``(source, order in the source's list, slots)``; the
    start is source ``m``."""
    m = len(auto.classes)
    preds: list[list[tuple[int, int, frozenset]]] = [[] for _ in range(m + 1)]
    for src, items in [*enumerate(auto.follow), (m, auto.start)]:
        for order, (t, s) in enumerate(items):
            preds[t].append((src, order, s))
    return preds


def _search(mat, lengths, auto: OrderedAutomaton, begin, slots: int) -> tuple[np.ndarray, np.ndarray]:
    n, w = mat.shape
    m = len(auto.classes)
    preds = _predecessors(auto)
    fan = 1 + max([len(auto.start)] + [len(f) for f in auto.follow])
    rank = [np.full(n, _NONE, dtype=np.int64) for _ in range(m)]
    regs = [np.full((n, slots), -1, dtype=np.int64) for _ in range(m)]
    found = np.zeros(n, dtype=bool)
    best = np.full((n, slots), -1, dtype=np.int64)
    for j in range(w + 1):  # every boundary of the public width
        may_start = ~found & (begin <= j) & (j == 0 or not auto.anchored_start)
        sources = rank + [select(may_start, np.int64(m), np.int64(_NONE))]
        source_regs = regs + [np.full((n, slots), -1, dtype=np.int64)]
        prio, got = [], []
        for t in range(m + 1):  # each successor takes its best-priority predecessor
            p_t = np.full(n, _NONE, dtype=np.int64)
            r_t = np.full((n, slots), -1, dtype=np.int64)
            for src, order, s in preds[t]:
                c = np.minimum(sources[src] * fan + order, _NONE)  # lint: public the query's pattern
                better = c < p_t
                p_t = np.minimum(p_t, c)
                r = source_regs[src]  # lint: public the query's pattern
                if s:  # lint: public the query's pattern
                    r = r.copy()
                    for k in sorted(s):  # lint: public the query's pattern
                        r[:, k] = j  # lint: public the query's pattern
                r_t = select(better[:, None], r, r_t)
            prio.append(p_t)
            got.append(r_t)
        at_end = (lengths == j) if auto.anchored_end else (lengths >= j)
        hit = (prio[m] < _NONE) & at_end  # lint: public the query's pattern
        done = got[m].copy()  # lint: public the query's pattern
        done[:, 1] = j
        best = select(hit[:, None], done, best)
        found = found | hit
        cutoff = select(hit, prio[m], np.int64(_NONE))  # lint: public the query's pattern
        if j == w:
            break
        byte = mat[:, j]
        live = j < lengths
        tests: dict[Ranges, np.ndarray] = {}
        alive = []
        for t in range(m):
            cls = auto.classes[t]
            if cls not in tests:  # lint: public the query's pattern
                hit_cls = np.zeros(n, dtype=bool)
                for a, b in cls:
                    hit_cls = hit_cls | ((byte >= a) & (byte <= b))
                tests[cls] = hit_cls & live
            alive.append((prio[t] < cutoff) & tests[cls])
        held = np.stack([select(alive[t], prio[t], np.int64(_NONE)) for t in range(m)], axis=1) if m else \
            np.zeros((n, 0), dtype=np.int64)
        order = (held[:, None, :] < held[:, :, None]).sum(axis=2)  # renumbered: threads of higher priority
        rank = [select(alive[t], order[:, t], np.int64(_NONE)) for t in range(m)]
        regs = got[:m]
    return found, best


def _span(w: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per row, the byte columns in ``[lo, hi)``."""
    cols = np.arange(w)[None, :]
    return (cols >= lo[:, None]) & (cols < hi[:, None])


def extract_group(mat: np.ndarray, lengths: np.ndarray, auto: OrderedAutomaton, group: int) -> tuple[np.ndarray, np.ndarray]:
    """``regexp_extract``: group ``group`` of the match ('' without a match, or when the
    group took no part or the pattern has fewer groups)."""
    n, w = mat.shape
    if group > auto.groups:
        return np.zeros((n, max(1, w)), dtype=np.uint8), np.zeros(n, dtype=np.int64)
    found, regs = leftmost_first(mat, lengths, auto, np.zeros(n, dtype=np.int64))
    lo, hi = regs[:, 2 * group], regs[:, 2 * group + 1]  # lint: public the query's pattern
    return compact(mat, _span(w, lo, hi) & (found & (lo >= 0))[:, None])


def parse_rewrite(rewrite: bytes, groups: int) -> list:
    """RE2's rewrite string: literal bytes and ``\\0``–``\\9`` group references (``\\\\`` a
    backslash); :class:`RegexRefused` for anything else, as DuckDB raises for it."""
    out: list = []
    i = 0
    while i < len(rewrite):  # lint: public the query's constant
        c = rewrite[i:i + 1]
        if c != b"\\":  # lint: public the query's constant
            out.append(c)
            i += 1
            continue
        nxt = rewrite[i + 1:i + 2]
        if nxt == b"\\":  # lint: public the query's constant
            out.append(b"\\")
        elif nxt.isdigit() and int(nxt) <= groups:
            out.append(int(nxt))
        else:
            raise RegexRefused("a replacement with a '\\' not followed by a digit of a group or '\\'")
        i += 2
    merged: list = []
    for piece in out:  # adjacent literal bytes as one constant
        if isinstance(piece, bytes) and merged and isinstance(merged[-1], bytes):  # lint: public the query's constant
            merged[-1] += piece
        else:
            merged.append(piece)
    return merged


def _byte_at(mat: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Each row's byte at column ``pos`` (0 past the width), read across every column."""
    cols = np.arange(mat.shape[1])[None, :]
    return select(cols == pos[:, None], mat, np.uint8(0)).astype(np.int64).sum(axis=1)


def replace_matches(mat: np.ndarray, lengths: np.ndarray, auto: OrderedAutomaton, rewrite: list,
            everywhere: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """``regexp_replace`` (``everywhere``: with ``'g'``): the rows with their first (every)
    match replaced by the rewrite, and the public width bound of the result."""
    n, w = mat.shape
    lengths = np.asarray(lengths, dtype=np.int64)
    literal = sum(len(x) for x in rewrite if isinstance(x, bytes))  # lint: public the query's constant
    refs = sum(1 for x in rewrite if isinstance(x, int))  # lint: public the query's constant
    if not everywhere:
        rounds = matches = 1
    elif auto.anchored_start or auto.anchored_end:  # one match; then at most an empty one at its end
        rounds, matches = 2, 1
    elif auto.min_length > 0:
        rounds = matches = w // auto.min_length
    else:  # between two moves forward at most one empty match
        rounds, matches = 2 * w + 3, w + 1
    pos = np.zeros(n, dtype=np.int64)
    last_end = np.full(n, -1, dtype=np.int64)
    over = np.zeros(n, dtype=bool)
    blocks: list[tuple[np.ndarray, np.ndarray]] = []
    for _ in range(rounds):  # a public count of searches
        found, regs = leftmost_first(mat, lengths, auto, pos)
        found = found & ~over
        lo, hi = regs[:, 0], regs[:, 1]
        skip = found & (lo == last_end) & (lo == hi)  # an empty match at the previous end: copy a character
        real = found & ~skip
        lead = _byte_at(mat, pos)
        step = 1 + (lead >= 0xC0).astype(np.int64) + (lead >= 0xE0) + (lead >= 0xF0)
        at_end = pos >= lengths
        gap_end = select(real, lo, select(skip & ~at_end, pos + step, pos))
        blocks.append((mat, _span(w, pos, gap_end)))
        for piece in rewrite:
            if isinstance(piece, bytes):
                row = np.frombuffer(piece, dtype=np.uint8)[None, :]
                blocks.append((np.broadcast_to(row, (n, len(piece))), np.broadcast_to(real[:, None], (n, len(piece)))))
            else:
                g_lo, g_hi = regs[:, 2 * piece], regs[:, 2 * piece + 1]  # lint: public the query's pattern
                blocks.append((mat, _span(w, g_lo, g_hi) & real[:, None]))
        pos = select(real, hi, select(skip, pos + select(at_end, np.int64(1), step), pos))
        last_end = select(real, hi, last_end)
        over = over | ~found | (skip & at_end)
    blocks.append((mat, _span(w, pos, lengths)))
    out, out_len = compact(np.concatenate([b for b, _ in blocks], axis=1),
                           np.concatenate([k for _, k in blocks], axis=1))
    if refs:
        bound = w + matches * literal + (refs - 1) * w
    else:
        bound = w + matches * max(0, literal - auto.min_length)
    width = max(1, min(out.shape[1], bound))
    return out[:, :width], out_len, width
