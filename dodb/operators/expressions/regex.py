"""Regular expressions over fixed-width strings: ``regexp_matches``, ``regexp_full_match``,
``~`` and ``SIMILAR TO`` (docs/design.md §Expressions, regular expressions).

The query's constant pattern is read by Python's own regular-expression parser into a
syntax tree, checked against the part of RE2's syntax (DuckDB's engine) whose meaning is
the same in both, and made into a *position automaton* over bytes (Glushkov's
construction): every leaf of the pattern is one position with a public set of bytes, and
the pattern's structure gives which positions may follow which.  No ε-moves, so one
step per byte.

Matching keeps, per row, one flag per position ("some way of reading the pattern ends
here") and walks every byte column of the string's public width: each step is a fixed
sequence of whole-column boolean operations — class tests on the column's bytes and ORs
over the public follow sets — so the access pattern depends on the width and the pattern
alone, never on the bytes (docs/threat-model.md).  Bytes past a row's length are read and
ignored.

RE2 semantics kept: ``.`` is any code point but ``\\n``; ``\\d``, ``\\w``, ``\\s`` are ASCII
(``\\s`` is ``[\\t\\n\\f\\r ]``); a negated class matches every code point outside it,
``\\n`` included; ``^``/``$`` are the text's ends.  Refused (a clear error, not a wrong
answer): options, back-references, look-around, word boundaries, non-ASCII classes or
ranges, ``^``/``$`` inside the pattern, and escapes RE2 reads differently from Python.

>>> a = compile_regex("a[0-9]+$")
>>> (len(a.classes), a.anchored_start, a.anchored_end, a.nullable)
(2, False, True, False)
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = ["Automaton", "compile_regex", "regex_match", "RegexRefused", "parse_pattern", "class_set", "byte_ranges",
           "MULTIBYTE_CHAINS", "build_tree"]

try:  # Python 3.11+
    import re._constants as _C
    import re._parser as _P
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _C  # type: ignore[no-redef]
    import sre_parse as _P  # type: ignore[no-redef]

MAX_POSITIONS = 2048  # a bounded repeat is unrolled: more positions than this is refused

Ranges = tuple[tuple[int, int], ...]
_LEAD2, _LEAD3, _LEAD4, _CONT = ((0xC0, 0xDF),), ((0xE0, 0xEF),), ((0xF0, 0xF7),), ((0x80, 0xBF),)
# the byte classes of one code point of two, three or four UTF-8 bytes
MULTIBYTE_CHAINS = ((_LEAD2, _CONT), (_LEAD3, _CONT, _CONT), (_LEAD4, _CONT, _CONT, _CONT))
# RE2's Perl classes are ASCII
_CATEGORIES = {
    _C.CATEGORY_DIGIT: {*range(0x30, 0x3A)},
    _C.CATEGORY_WORD: {*range(0x30, 0x3A), *range(0x41, 0x5B), *range(0x61, 0x7B), 0x5F},
    _C.CATEGORY_SPACE: {0x09, 0x0A, 0x0C, 0x0D, 0x20},
}
_NOT_CATEGORY = {_C.CATEGORY_NOT_DIGIT: _C.CATEGORY_DIGIT, _C.CATEGORY_NOT_WORD: _C.CATEGORY_WORD,
                 _C.CATEGORY_NOT_SPACE: _C.CATEGORY_SPACE}
# what Python reads and RE2 reads otherwise or refuses: \u \U \N \Z \v \a, numbered references,
# ``{,n}``, POSIX classes ``[:alpha:]``, ``(?`` groups but ``(?:`` and ``(?P<name>`` (comments, flags)
_DIFFERENT_ESCAPE = re.compile(r"\\[uUNZva0-9]|\{,|\[:|\(\?(?!:|P<)")


class RegexRefused(ValueError):
    """A pattern outside the supported part of RE2's syntax."""


@dataclass(frozen=True)
class Automaton:
    """A position automaton: ``classes[p]`` the bytes position ``p`` reads; ``follow[p]`` the
    positions that may read the next byte; ``first``/``last`` where a match may start/end."""
    classes: tuple[Ranges, ...]
    follow: tuple[frozenset[int], ...]
    first: frozenset[int]
    last: frozenset[int]
    nullable: bool
    anchored_start: bool
    anchored_end: bool


def byte_ranges(byte_set: set[int]) -> Ranges:
    """Sorted, merged inclusive ranges of a set of bytes.

    >>> byte_ranges({1, 2, 3, 7})
    ((1, 3), (7, 7))
    """
    out: list[list[int]] = []
    for b in sorted(byte_set):  # lint: public the query's pattern
        if out and b == out[-1][1] + 1:  # lint: public the query's pattern
            out[-1][1] = b
        else:
            out.append([b, b])
    return tuple((lo, hi) for lo, hi in out)


class _Builder:
    """Glushkov's construction: each method returns ``(first, last, nullable)`` of a piece and
    adds the piece's inner follow edges."""

    def __init__(self) -> None:
        self.classes: list[Ranges] = []
        self.follow: list[set[int]] = []

    def leaf(self, ranges: Ranges) -> tuple[set, set, bool]:
        if len(self.classes) >= MAX_POSITIONS:
            raise RegexRefused(f"a pattern of more than {MAX_POSITIONS} positions (unrolled repeats)")
        self.classes.append(ranges)
        self.follow.append(set())
        p = len(self.classes) - 1
        return {p}, {p}, False

    def concat(self, pieces: list) -> tuple[set, set, bool]:
        first, last, nullable = set(), set(), True
        for f, l, n in pieces:
            for x in last:
                self.follow[x] |= f  # lint: public the query's pattern
            first = first | f if nullable else first
            last = last | l if n else set(l)
            nullable = nullable and n
        return first, last, nullable

    def union(self, alts: list) -> tuple[set, set, bool]:
        return (set().union(*(a[0] for a in alts)), set().union(*(a[1] for a in alts)),
                any(a[2] for a in alts))

    def plus(self, piece) -> tuple[set, set, bool]:
        f, l, n = piece
        for x in l:
            self.follow[x] |= f  # lint: public the query's pattern
        return f, l, n

    def group(self, piece, _group) -> tuple[set, set, bool]:
        return piece  # a verdict needs no capture positions

    def counted(self, sub, lo: int, hi: int | None, greedy: bool) -> tuple[set, set, bool]:
        """``x{lo,hi}`` (``hi`` None: no bound); greedy or lazy: the same set of matches."""
        reps = [build_tree(self, sub) for _ in range(lo)]
        if hi is None:
            if reps:
                reps[-1] = self.plus(reps[-1])
            else:
                f, l, _ = self.plus(build_tree(self, sub))
                reps.append((f, l, True))
        else:
            for _ in range(hi - lo):
                f, l, _ = build_tree(self, sub)
                reps.append((f, l, True))
        return self.concat(reps)

    def bytes_of(self, data: bytes) -> tuple[set, set, bool]:
        return self.concat([self.leaf(((b, b),)) for b in data])

    def any_multibyte(self) -> tuple[set, set, bool]:
        """Any code point of two, three or four UTF-8 bytes (the strings are valid UTF-8)."""
        return self.union([self.concat([self.leaf(c) for c in chain]) for chain in MULTIBYTE_CHAINS])

    def code_points(self, ascii_set: set[int], negated: bool, others: tuple[bytes, ...] = ()) -> tuple[set, set, bool]:
        """A class: its ASCII bytes and other code points (UTF-8), or every code point outside
        its ASCII bytes when ``negated``."""
        if not negated:
            alts = ([self.leaf(byte_ranges(ascii_set))] if ascii_set else []) + [self.bytes_of(o) for o in others]
            if not alts:  # lint: public the query's pattern
                raise RegexRefused("an empty character class")
            return self.union(alts)
        rest = set(range(0x80)) - ascii_set
        return self.union(([self.leaf(byte_ranges(rest))] if rest else []) + [self.any_multibyte()])


def class_set(items) -> tuple[set[int], bool, tuple[bytes, ...]]:
    """A ``[...]`` class's ASCII bytes, whether it is negated, and its non-ASCII characters
    (``\\D``, ``\\W``, ``\\S`` alone are the negated Perl classes)."""
    if len(items) == 1 and items[0][0] is _C.CATEGORY and items[0][1] in _NOT_CATEGORY:  # lint: public the query's pattern
        return set(_CATEGORIES[_NOT_CATEGORY[items[0][1]]]), True, ()  # lint: public the query's pattern
    out: set[int] = set()
    others: list[bytes] = []
    negated = False
    for op, av in items:
        if op is _C.NEGATE:
            negated = True
        elif op is _C.LITERAL and av >= 0x80:
            others.append(chr(av).encode())
        elif op is _C.LITERAL:
            out.add(av)
        elif op is _C.RANGE:
            lo, hi = av
            if hi >= 0x80:
                raise RegexRefused("a non-ASCII range in a character class")
            out |= set(range(lo, hi + 1))
        elif op is _C.CATEGORY and av in _CATEGORIES:
            out |= _CATEGORIES[av]  # lint: public a Python set of the pattern's code points
        else:
            raise RegexRefused(f"the character class item {op}")
    if negated and others:
        raise RegexRefused("a negated class with a non-ASCII character")
    return out, negated, tuple(others)


def build_tree(b, items):
    """A piece of builder ``b`` for a parsed pattern: the pattern's nodes in order, each made
    by the builder's ``bytes_of``, ``code_points``, ``union``, ``group`` and ``counted`` and
    joined by its ``concat`` (shared by the unordered and the ordered construction)."""
    pieces = []
    for op, av in items:
        if op is _C.LITERAL:
            pieces.append(b.bytes_of(chr(av).encode()))
        elif op is _C.NOT_LITERAL:
            if av >= 0x80:
                raise RegexRefused("a negated non-ASCII character")
            pieces.append(b.code_points({av}, negated=True))
        elif op is _C.ANY:
            pieces.append(b.code_points({0x0A}, negated=True))
        elif op is _C.IN:
            pieces.append(b.code_points(*class_set(av)))
        elif op is _C.SUBPATTERN:
            group, add_flags, del_flags, sub = av
            if add_flags or del_flags:
                raise RegexRefused("inline options in a group")
            pieces.append(b.group(build_tree(b, sub), group))
        elif op is _C.BRANCH:
            pieces.append(b.union([build_tree(b, alt) for alt in av[1]]))
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT):
            lo, hi, sub = av
            if hi is not _C.MAXREPEAT and hi > 1000 or lo > 1000:
                raise RegexRefused("a repeat count above 1000")
            pieces.append(b.counted(sub, lo, None if hi is _C.MAXREPEAT else hi, greedy=op is _C.MAX_REPEAT))
        else:
            raise RegexRefused(f"the construct {str(op).lower()}")
    return b.concat(pieces)


def parse_pattern(pattern: str) -> tuple[list, bool, bool, int]:
    """Python's syntax tree of a constant pattern (RE2's reading of it: refused where the two
    differ), without its anchors: (items, ``^`` at the start, ``$`` at the end, the number of
    capture groups)."""
    if _DIFFERENT_ESCAPE.search(pattern):
        raise RegexRefused("an escape or repeat form that RE2 and Python read differently")
    try:
        with warnings.catch_warnings():  # Python's notes on possible future syntax: not the analyst's concern
            warnings.simplefilter("ignore")
            parsed = _P.parse(pattern)
    except re.error as e:
        raise RegexRefused(f"the pattern does not parse: {e}") from None
    if parsed.state.flags & ~_C.SRE_FLAG_UNICODE:
        raise RegexRefused("inline options")
    items = list(parsed)
    start = bool(items) and items[0] == (_C.AT, _C.AT_BEGINNING)
    items = items[1:] if start else items
    end = bool(items) and items[-1] == (_C.AT, _C.AT_END)
    items = items[:-1] if end else items
    return items, start, end, parsed.state.groups - 1


def compile_regex(pattern: str) -> Automaton:
    """The position automaton of a constant pattern; :class:`RegexRefused` outside the
    supported syntax (including patterns Python's parser rejects).

    >>> compile_regex("(ab|c)*").nullable
    True
    """
    items, start, end, _ = parse_pattern(pattern)
    b = _Builder()
    first, last, nullable = build_tree(b, items)
    return Automaton(tuple(b.classes), tuple(frozenset(f) for f in b.follow), frozenset(first), frozenset(last),
                     nullable, start, end)


def regex_match(mat: np.ndarray, lengths: np.ndarray, auto: Automaton, full: bool = False) -> np.ndarray:
    """Per row: whether the string (``mat`` ``(n, w)`` bytes, ``lengths``) has a match of the
    automaton — anywhere (RE2's partial match), or the whole string when ``full``.

    ``D[p]``: some reading of the pattern ends at position ``p`` having consumed the bytes
    before the current column.  At every column a match may start (only at column 0 when
    anchored), and a match is complete at column ``j`` when a last position is set (or the
    pattern is empty-matching) — counted only at ``j == length`` when anchored at the end.
    Every column of the public width is visited, every position updated.
    """
    n, w = mat.shape
    m = len(auto.classes)
    start_only = auto.anchored_start or full
    end_only = auto.anchored_end or full
    preds: list[list[int]] = [[] for _ in range(m)]
    for p, fol in enumerate(auto.follow):
        for q in sorted(fol):  # lint: public the query's pattern
            preds[q].append(p)
    first = [q in auto.first for q in range(m)]
    lengths = np.asarray(lengths, dtype=np.int64)
    state = [np.zeros(n, dtype=bool) for _ in range(m)]
    found = np.zeros(n, dtype=bool)
    for j in range(w + 1):  # every column of the public width, and the end after it
        starting = np.full(n, j == 0 or not start_only)
        done = np.zeros(n, dtype=bool)
        for p in auto.last:
            done = done | state[p]  # out of place: numpy's in-place OR of one-element bool arrays branches
        if auto.nullable:
            done = done | starting
        inside = j <= lengths
        found = found | (done & ((lengths == j) if end_only else inside))
        if j == w:
            break
        byte = mat[:, j]
        live = j < lengths
        tests: dict[Ranges, np.ndarray] = {}
        nxt = []
        for q in range(m):
            cls = auto.classes[q]
            if cls not in tests:
                t = np.zeros(n, dtype=bool)
                for lo, hi in cls:
                    t = t | ((byte >= lo) & (byte <= hi))
                tests[cls] = t & live
            reach = starting.copy() if first[q] else np.zeros(n, dtype=bool)  # lint: public the query's pattern
            for p in preds[q]:
                reach = reach | state[p]
            nxt.append(reach & tests[cls])
        state = nxt
    return found
