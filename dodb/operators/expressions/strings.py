"""String kernels over fixed-width UTF-8 lanes ``(n, w)`` uint8 with byte lengths ``(n,)``.
See docs/design.md §Expressions.

Every kernel touches every byte slot of every row in an order fixed by the public width:
element-wise numpy operations, fixed-stride shifts, prefix scans along rows, and loops
whose bounds are public (width, pattern length).  Results that move bytes (substrings,
concatenation, padding, replacement, case mapping, number formatting) are built as a
fixed-width candidate row plus a keep mask, then :func:`compact` moves the kept bytes to
the front in ``log2(w)`` fixed shift rounds (order-preserving compaction: the shifts are
taken by the binary digits of each byte's displacement, least significant first, which
never collides).  Characters are code points, as in DuckDB (``length('é') = 1``).
"""
from __future__ import annotations

import numpy as np

from ...oblivious.backend import use_compiled
from ...oblivious.select import any_along, select

__all__ = ["inside", "shift_left", "shift_right", "compact", "starts", "char_count", "char_index", "compare",
           "like", "find", "decode", "encode", "concat", "keep_chars", "trim", "pad", "repeat", "replace",
           "first_match", "compare_const", "digits_u64", "constant_rows", "select_constants", "find_each",
           "like_steps", "like_each", "code_point_rows", "replace_each", "non_overlapping"]


def inside(lengths: np.ndarray, w: int) -> np.ndarray:
    return np.arange(w)[None, :] < lengths[:, None]


def shift_left(a: np.ndarray, k: int) -> np.ndarray:
    """Columns moved ``k`` slots to the left (zero fill): ``out[:, j] = a[:, j + k]``."""
    out = np.zeros_like(a)
    w = a.shape[1]
    if k < w:
        out[:, : w - k] = a[:, k:]
    return out


def shift_right(a: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros_like(a)
    w = a.shape[1]
    if k < w:
        out[:, k:] = a[:, : w - k]
    return out


def compact(mat: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kept slots (bytes, or code points) moved to the front of each row, in order; returns
    (slots, lengths)."""
    w = mat.shape[1]
    dropped = ~keep
    disp = np.cumsum(dropped, axis=1) - dropped  # dropped bytes before each slot
    x = select(keep, mat, np.uint8(0))
    d = select(keep, disp, 0)
    k = 1
    while k < w:
        move = keep & ((d & k) != 0)
        stay = keep & ~move
        x = select(stay, x, np.uint8(0)) | shift_left(select(move, x, np.uint8(0)), k)
        d = select(stay, d, 0) + shift_left(select(move, d, 0), k)
        keep = stay | shift_left(move, k)
        k <<= 1
    return x, keep.sum(axis=1).astype(np.int64)


def starts(mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Bytes that start a code point (not UTF-8 continuation bytes), within the length."""
    return ((mat & 0xC0) != 0x80) & inside(lengths, mat.shape[1])


def char_count(mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    return starts(mat, lengths).sum(axis=1).astype(np.int64)


def char_index(mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """0-based index of the character each byte belongs to."""
    return np.cumsum(starts(mat, lengths), axis=1) - 1


def _pad_to(mat: np.ndarray, w: int) -> np.ndarray:
    out = np.zeros((mat.shape[0], w), dtype=np.uint8)
    out[:, : mat.shape[1]] = mat
    return out


def _u8(a: np.ndarray) -> np.ndarray:
    """A C-contiguous uint8 view (or copy) of a lane or 0/1 matrix, for the compiled kernels."""
    return np.ascontiguousarray(a).view(np.uint8) if a.dtype in (np.uint8, np.bool_) else \
        np.ascontiguousarray(a, dtype=np.uint8)


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def first_match(mask: np.ndarray) -> np.ndarray:
    """Only the first True of each row (a prefix OR, no indexing)."""
    if use_compiled():
        from ...oblivious.compiled_strings import first_match_rows
        n, w = mask.shape
        out = np.empty((n, w), dtype=np.uint8)
        first_match_rows(_u8(mask).reshape(-1), out.reshape(-1), n, w)
        return out.view(np.bool_)
    seen = np.logical_or.accumulate(mask, axis=1)
    return mask & ~shift_right(seen, 1)


def compare(a: np.ndarray, la: np.ndarray, b: np.ndarray, lb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(less, equal) in byte order (DuckDB compares VARCHAR bytes as unsigned, then length)."""
    if use_compiled():
        from ...oblivious.compiled_strings import compare_rows
        n = a.shape[0]
        lt, eq = np.empty(n, np.uint8), np.empty(n, np.uint8)
        compare_rows(_u8(a).reshape(-1), _i64(la), _u8(b).reshape(-1), _i64(lb), lt, eq, n, a.shape[1], b.shape[1])
        return lt.view(np.bool_), eq.view(np.bool_)
    w = max(a.shape[1], b.shape[1])
    a, b = _pad_to(a, w), _pad_to(b, w)
    common = inside(np.minimum(la, lb), w)
    first = first_match((a != b) & common)
    differs = any_along(first, 1)
    av = select(first, a, 0).sum(axis=1)
    bv = select(first, b, 0).sum(axis=1)
    lt = select(differs, av < bv, la < lb)
    eq = ~differs & (la == lb)
    return lt, eq


def compare_const(a: np.ndarray, la: np.ndarray, const: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(less, equal) of every row against one public constant: :func:`compare` with the
    constant in every row (its lanes are built only for the reference)."""
    n = a.shape[0]
    if use_compiled():
        from ...oblivious.compiled_strings import compare_const_rows
        lt, eq = np.empty(n, np.uint8), np.empty(n, np.uint8)
        c = np.frombuffer(const, dtype=np.uint8) if const else np.zeros(1, np.uint8)
        compare_const_rows(_u8(a).reshape(-1), _i64(la), c, lt, eq, n, a.shape[1], len(const))
        return lt.view(np.bool_), eq.view(np.bool_)
    row = np.zeros(max(1, len(const)), dtype=np.uint8)
    row[: len(const)] = np.frombuffer(const, dtype=np.uint8)
    return compare(a, la, np.broadcast_to(row, (n, row.shape[0])), np.full(n, len(const), dtype=np.int64))


def _char_bytes(lead: np.ndarray) -> np.ndarray:
    return select(lead < 0x80, 1, select(lead < 0xE0, 2, select(lead < 0xF0, 3, 4)))


_LIT, _ANY, _PCT = 0, 1, 2  # LIKE steps: a literal byte, one code point, any run of code points


def like_steps(pattern: bytes, escape: bytes | None = None) -> list[tuple[int, int]]:
    """The public pattern as steps ``(kind, byte)``; a run of ``%`` is one step; with ``escape``
    (one byte) the byte after it is a literal.  A pattern ending in the escape is refused.

    >>> like_steps(b"a!%%", b"!")
    [(0, 97), (0, 37), (2, 37)]
    """
    steps: list[tuple[int, int]] = []
    i = 0
    while i < len(pattern):  # the query's constant pattern
        ch = pattern[i]  # lint: public the query's pattern
        if escape is not None and ch == escape[0]:  # lint: public the query's pattern
            if i + 1 >= len(pattern):
                raise ValueError("LIKE pattern ends with its escape character")
            steps.append((_LIT, pattern[i + 1]))  # lint: public the query's pattern
            i += 2
            continue
        kind = _PCT if ch == ord("%") else _ANY if ch == ord("_") else _LIT
        if not (kind == _PCT and steps and steps[-1][0] == _PCT):  # lint: public the query's pattern
            steps.append((kind, ch))
        i += 1
    return steps


def like(mat: np.ndarray, lengths: np.ndarray, pattern: bytes, escape: bytes | None = None) -> np.ndarray:
    """SQL LIKE with ``%`` and ``_`` (and an optional one-byte ``escape``) as a DP over
    (pattern step, byte position).

    ``D[:, j]``: the pattern prefix matches the first ``j`` bytes.  ``_`` consumes one
    code point (1–4 bytes), ``%`` any run of whole code points.
    """
    steps = like_steps(pattern, escape)
    n, w = mat.shape
    if use_compiled():
        return _like_compiled(mat, lengths, steps)
    full = np.zeros((n, w + 1), dtype=np.uint8)
    full[:, :w] = mat
    st = np.zeros((n, w + 1), dtype=bool)
    st[:, :w] = starts(mat, lengths)
    boundary = st | (np.arange(w + 1)[None, :] == lengths[:, None])
    clen = _char_bytes(full)
    state = np.zeros((n, w + 1), dtype=bool)
    state[:, 0] = True
    for kind, ch in steps:
        if kind == _PCT:
            state = np.logical_or.accumulate(state, axis=1) & boundary
        elif kind == _ANY:
            nxt = np.zeros_like(state)
            for k in range(1, 5):
                nxt = nxt | shift_right(state & st & (clen == k), k)
            state = nxt
        else:
            state = shift_right(state & (full == ch), 1)
    return any_along(state & (np.arange(w + 1)[None, :] == lengths[:, None]), 1)


def _like_compiled(mat: np.ndarray, lengths: np.ndarray, steps: list[tuple[int, int]]) -> np.ndarray:
    from ...oblivious.compiled_strings import LIKE_ANY, LIKE_LIT, LIKE_PCT, like_rows
    code = {_LIT: LIKE_LIT, _ANY: LIKE_ANY, _PCT: LIKE_PCT}
    kinds = [code.get(k) for k, _ in steps]
    chars = [c for _, c in steps]
    n, w = mat.shape
    nw = (w + 64) // 64  # bitset words over positions 0..w
    out = np.empty(n, dtype=np.uint8)
    sel = np.zeros(3 * len(kinds) + 1, dtype=np.uint64)  # per step, all ones for its kind
    for s, kind in enumerate(kinds):
        sel[3 * s + kind] = np.uint64(0xFFFFFFFFFFFFFFFF)  # lint: public the pattern's step kinds
    mw = (w + 7) // 8
    padded = np.zeros((n, 8 * mw), dtype=np.uint8)
    padded[:, :w] = mat
    like_rows(_u8(mat).reshape(-1), padded.view("<u8").reshape(-1), _i64(lengths), sel,
              np.array(chars + [0], dtype=np.uint8), out, np.zeros(10 * nw, dtype=np.uint64), n, w, mw, len(kinds), nw)
    return out.view(np.bool_)


def find(mat: np.ndarray, lengths: np.ndarray, needle: bytes) -> np.ndarray:
    """``(n, w)``: the needle occurs starting at this byte (fully inside the string)."""
    n, w = mat.shape
    if use_compiled():
        from ...oblivious.compiled_strings import find_rows
        out = np.empty((n, w), dtype=np.uint8)
        nd = np.frombuffer(needle, dtype=np.uint8) if needle else np.zeros(1, np.uint8)
        find_rows(_u8(mat).reshape(-1), _i64(lengths), nd, out.reshape(-1), n, w, len(needle))
        return out.view(np.bool_)
    ok = np.arange(w)[None, :] + len(needle) <= lengths[:, None]
    for k, ch in enumerate(needle):
        ok = ok & (shift_left(mat, k) == ch)
    return ok


def non_overlapping(hits: np.ndarray, m: int) -> np.ndarray:
    """The matches of a needle of ``m`` bytes taken greedily left to right without overlap
    (DuckDB's splits), from :func:`find`'s hits: one pass over every position of every row."""
    taken = np.zeros_like(hits)
    free = np.zeros(hits.shape[0], dtype=np.int64)
    for j in range(hits.shape[1]):
        take = hits[:, j] & (j >= free)
        taken[:, j] = take
        free = select(take, j + m, free)
    return taken


def find_each(mat: np.ndarray, lengths: np.ndarray, needles: np.ndarray, needle_lengths: np.ndarray) -> np.ndarray:
    """``(n, w)``: row ``i``'s own needle occurs starting at this byte (fully inside the
    string).  Every byte of every row is compared with every byte of the needle's public
    width; a needle's bytes past its length match anything (an empty needle matches at
    every offset up to the string's length)."""
    n, w = mat.shape
    ok = np.arange(w)[None, :] + needle_lengths[:, None] <= lengths[:, None]
    for k in range(needles.shape[1]):  # the needle column's public width
        beyond = (needle_lengths <= k)[:, None]
        ok = ok & (beyond | (shift_left(mat, k) == needles[:, k:k + 1]))
    return ok


def replace_each(mat: np.ndarray, lengths: np.ndarray, olds: np.ndarray, old_lengths: np.ndarray,
                 new: bytes) -> tuple[np.ndarray, np.ndarray]:
    """REPLACE with each row's own ``old`` and a constant ``new``: occurrences taken left to right
    without overlap (one pass over every byte position), each start byte's slot holding ``new``
    and the other bytes of an occurrence dropped; every slot ``max(1, len(new))`` wide, then
    compacted.  An empty ``old`` leaves its row as it is."""
    n, w = mat.shape
    hits = find_each(mat, lengths, olds, old_lengths) & (old_lengths > 0)[:, None]
    taken = np.zeros_like(hits)
    free = np.zeros(n, dtype=np.int64)
    for j in range(w):  # greedy, non-overlapping: every position of every row
        take = hits[:, j] & (j >= free)
        taken[:, j] = take
        free = select(take, j + old_lengths, free)
    covered = np.zeros_like(hits)
    for t in range(olds.shape[1]):  # the old column's public width
        covered = covered | (shift_right(taken, t) & (t < old_lengths)[:, None])
    width = max(1, len(new))
    slots = np.zeros((n, w, width), dtype=np.uint8)
    keep = np.zeros((n, w, width), dtype=bool)
    plain = ~covered & (np.arange(w)[None, :] < lengths[:, None])
    slots[:, :, 0] = select(plain, mat, 0)
    keep[:, :, 0] = plain
    for k, ch in enumerate(new):  # the constant replacement, in every start slot
        slots[:, :, k] = select(taken, np.uint8(ch), slots[:, :, k])
        keep[:, :, k] = keep[:, :, k] | taken
    return compact(slots.reshape(n, w * width), keep.reshape(n, w * width))


def code_point_rows(mat: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's code points moved to the front (``(n, w)`` int64, :func:`compact` over the
    start bytes) and its character count."""
    cp, st = decode(mat, lengths)
    return compact(select(st, cp, 0).astype(np.int64), st)


def like_each(mat: np.ndarray, lengths: np.ndarray, pmat: np.ndarray, plengths: np.ndarray) -> np.ndarray:
    """Each row LIKE its own pattern (``%``, ``_``; no escape), in characters: a DP over every
    pattern position of the pattern's public width and every character position."""
    s, ls = code_point_rows(mat, lengths)
    p, lp = code_point_rows(pmat, plengths)
    n, ws = s.shape
    state = np.zeros((n, ws + 1), dtype=bool)
    state[:, 0] = True
    for j in range(p.shape[1]):  # every pattern position, for every row
        pc = p[:, j:j + 1]
        pct = np.logical_or.accumulate(state, axis=1)
        step = np.zeros_like(state)
        step[:, 1:] = state[:, :-1] & ((pc == ord("_")) | (s == pc))
        nxt = select(pc == ord("%"), pct, step)
        state = select((j < lp)[:, None], nxt, state)
    return any_along(state & (np.arange(ws + 1)[None, :] == ls[:, None]), 1)


def decode(mat: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code point at each start byte (0 elsewhere), start mask)."""
    b = [mat.astype(np.int64)] + [shift_left(mat, k).astype(np.int64) for k in (1, 2, 3)]
    c1 = b[0]
    c2 = ((b[0] & 0x1F) << 6) | (b[1] & 0x3F)
    c3 = ((b[0] & 0x0F) << 12) | ((b[1] & 0x3F) << 6) | (b[2] & 0x3F)
    c4 = ((b[0] & 0x07) << 18) | ((b[1] & 0x3F) << 12) | ((b[2] & 0x3F) << 6) | (b[3] & 0x3F)
    L = _char_bytes(b[0])
    cp = select(L == 1, c1, select(L == 2, c2, select(L == 3, c3, c4)))
    st = starts(mat, lengths)
    return select(st, cp, 0), st


def encode(cp: np.ndarray, keep: np.ndarray, out_width: int) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 of the kept code points (one per slot), compacted to ``out_width`` bytes."""
    n, w = cp.shape
    L = select(cp < 0x80, 1, select(cp < 0x800, 2, select(cp < 0x10000, 3, 4)))
    cont = lambda s: 0x80 | ((cp >> s) & 0x3F)  # noqa: E731
    b0 = select(L == 1, cp, select(L == 2, 0xC0 | (cp >> 6), select(L == 3, 0xE0 | (cp >> 12), 0xF0 | (cp >> 18))))
    b1 = select(L == 2, cont(0), select(L == 3, cont(6), cont(12)))
    b2 = select(L == 3, cont(0), cont(6))
    b3 = cont(0)
    slots = np.stack([b0, b1, b2, b3], axis=2).astype(np.uint8).reshape(n, 4 * w)
    kslots = (keep[:, :, None] & (np.arange(4)[None, None, :] < L[:, :, None])).reshape(n, 4 * w)
    out, lengths = compact(slots, kslots)
    return _pad_to(out[:, :out_width], out_width) if out_width > out.shape[1] else out[:, :out_width], lengths


def concat(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The parts one after the other (fixed layout, then compaction)."""
    mat = np.concatenate([p for p, _ in parts], axis=1)
    keep = np.concatenate([inside(l, p.shape[1]) for p, l in parts], axis=1)
    return compact(mat, keep)


def keep_chars(mat: np.ndarray, lengths: np.ndarray, first: np.ndarray, stop: np.ndarray):
    """Characters with index in ``[first, stop)`` per row (SUBSTRING, LEFT, RIGHT …)."""
    idx = char_index(mat, lengths)
    keep = inside(lengths, mat.shape[1]) & (idx >= first[:, None]) & (idx < stop[:, None])
    return compact(mat, keep)


def _char_of_byte(cp: np.ndarray, st: np.ndarray) -> np.ndarray:
    """Each byte's code point (continuation bytes copy their start's), forward fill ≤ 3."""
    out = cp
    for _ in range(3):
        out = select(st, out, shift_right(out, 1))
    return out


def trim(mat: np.ndarray, lengths: np.ndarray, chars: list[int], left: bool, right: bool):
    """TRIM/LTRIM/RTRIM of a public set of code points."""
    cp, st = decode(mat, lengths)
    cpb = _char_of_byte(cp, st)
    ins = inside(lengths, mat.shape[1])
    member = np.zeros_like(ins)
    for c in chars:
        member = member | (cpb == c)
    member = member & ins
    drop = np.zeros_like(ins)
    if left:
        drop = drop | np.logical_and.accumulate(member, axis=1)
    if right:
        tail = member | ~ins
        drop = drop | (np.logical_and.accumulate(tail[:, ::-1], axis=1)[:, ::-1] & ins)
    return compact(mat, ins & ~drop)


def pad(mat: np.ndarray, lengths: np.ndarray, count: int, fill: bytes, left: bool):
    """LPAD/RPAD to ``count`` characters with a public fill (DuckDB truncates longer strings)."""
    n, w = mat.shape
    chars = char_count(mat, lengths)
    fill_chars = len(fill.decode())
    reps = max(0, count) if fill_chars else 0
    fill_row = np.frombuffer(fill * reps, dtype=np.uint8) if reps else np.zeros(0, np.uint8)
    fmat = np.broadcast_to(fill_row, (n, fill_row.shape[0])).copy() if fill_row.size else np.zeros((n, 1), np.uint8)
    need = np.maximum(0, count - chars)
    if fill_row.size:
        fcp, fst = decode(fmat, np.full(n, fill_row.shape[0]))
        fidx = np.cumsum(fst, axis=1) - 1
        fkeep = fidx < need[:, None]
    else:
        fkeep = np.zeros((n, 1), dtype=bool)
    idx = char_index(mat, lengths)
    skeep = inside(lengths, w) & (idx < count)
    if left:
        return compact(np.concatenate([fmat, mat], axis=1), np.concatenate([fkeep, skeep], axis=1))
    return compact(np.concatenate([mat, fmat], axis=1), np.concatenate([skeep, fkeep], axis=1))


def repeat(mat: np.ndarray, lengths: np.ndarray, k: int):
    return concat([(mat, lengths)] * max(0, k)) if k > 0 else (np.zeros((mat.shape[0], 1), np.uint8),
                                                                np.zeros(mat.shape[0], dtype=np.int64))


def replace(mat: np.ndarray, lengths: np.ndarray, old: bytes, new: bytes):
    """Non-overlapping occurrences of ``old`` (left to right) replaced by ``new``."""
    n, w = mat.shape
    m = len(old)
    hits = find(mat, lengths, old)
    chosen = np.zeros_like(hits)
    covered = np.zeros_like(hits)  # inside an earlier chosen occurrence
    for j in range(w):  # public loop: a match is taken unless an earlier one covers it
        take = hits[:, j:j + 1] & ~covered[:, j:j + 1]
        chosen[:, j:j + 1] = take
        covered[:, j:j + m] = covered[:, j:j + m] | take
    slot = max(1, len(new))
    cand = np.zeros((n, w, slot), dtype=np.uint8)
    keep = np.zeros((n, w, slot), dtype=bool)
    ins = inside(lengths, w)
    plain = ins & ~covered
    cand[:, :, 0] = select(chosen, new[0] if new else 0, mat)
    keep[:, :, 0] = plain | (chosen & (len(new) > 0))
    for k in range(1, len(new)):
        cand[:, :, k] = new[k]
        keep[:, :, k] = chosen
    return compact(cand.reshape(n, w * slot), keep.reshape(n, w * slot))


def digits_u64(mag: np.ndarray, count: int) -> list[np.ndarray]:
    """Decimal digits of non-negative uint64 values, most significant first (``count`` of them)."""
    out = []
    for _ in range(count):
        out.append((mag % np.uint64(10)).astype(np.uint8))
        mag = mag // np.uint64(10)
    return out[::-1]


def constant_rows(options: list[bytes], choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row i gets ``options[choice[i]]``: every option is selected over every row."""
    return select_constants(options, [choice == k for k in range(len(options))])


def select_constants(options: list[bytes], masks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    n = masks[0].shape[0] if masks else 0
    w = max([1] + [len(o) for o in options])
    mat = np.zeros((n, w), dtype=np.uint8)
    lengths = np.zeros(n, dtype=np.int64)
    for o, m in zip(options, masks):
        row = np.zeros(w, dtype=np.uint8)
        row[: len(o)] = np.frombuffer(o, dtype=np.uint8)
        mat = select(m[:, None], row[None, :], mat)
        lengths = select(m, len(o), lengths)
    return mat, lengths
