"""Compiled string predicate kernels over fixed-width UTF-8 lanes (``strings`` reference).

The numpy functions of :mod:`dodb.operators.expressions.strings` are the *reference*; with
the ``compiled`` backend (:mod:`.backend`) ``strings.compare``, ``compare_const``, ``like``,
``find`` and ``first_match`` call the kernels below, which return the same values.  Lanes
are ``(n, w)`` uint8 (C order) with int64 byte lengths; results are 0/1 uint8 (viewed as
bool by the wrappers).

The kernels follow the rules of :mod:`.compiled` (same ``_OPTS``): data only arrives in
arrays (string bytes, lengths, and the public pattern/needle/constant bytes, which are
treated as data too); every scalar argument is a public size; each row is visited once
and its byte slots in an order and extent fixed by public sizes (widths, the constant's or
needle's length), whatever the bytes and the length — a length is only ever compared
arithmetically (``j < length`` is a 0/1 value, never a loop bound);
selects are masks (``b ^ ((a ^ b) & m)``); indices are loop counters cast with ``_ix``.

``like_rows`` runs the reference's DP over (pattern step, byte position) bit-parallel: the
DP row of positions ``0..w`` is a bitset of ``(w + 64) // 64`` words, a literal step is
``(state & eq) << 1``, ``_`` is ``OR_k (state & start & clen==k) << k`` and ``%`` the
prefix OR ``~((x & -x) - 1)`` (with a carry across words) masked by the code-point
boundaries.  The step kinds arrive as masks in an array, so all three step results are
computed for every step and one is selected by the masks.  Bits above position ``w`` only ever
move up (shifts and prefix ORs go towards higher positions), so they never reach the
result, which is the bit at position ``length``.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as _ix

from .compiled import _OPTS, Data

__all__ = ["compare_rows", "compare_const_rows", "like_rows", "find_rows", "first_match_rows",
           "LIKE_LIT", "LIKE_ANY", "LIKE_PCT"]

# LIKE step kinds (of the public pattern): which of a step's three masks in ``sel`` is all ones
LIKE_LIT, LIKE_ANY, LIKE_PCT = 0, 1, 2



@njit(inline="always", **_OPTS)
def _sel8(m: Data, a: Data, b: Data):
    """``a`` where the uint8 mask ``m`` is all ones, ``b`` where it is zero."""
    return b ^ ((a ^ b) & m)


@njit(inline="always", **_OPTS)
def byte_step(x: Data, y: Data, ins: Data, lt: Data, eq: Data):
    """One byte slot of the descending compare: a difference inside the common length
    decides ``lt`` (the lowest such slot is applied last) and clears ``eq``."""
    ne = np.uint8(x != y) & ins
    m = np.uint8(0) - ne
    return _sel8(m, np.uint8(x < y), lt), eq & (np.uint8(1) ^ ne)


@njit(**_OPTS)
def compare_rows(a, la, b, lb, lt, eq, n, wa, wb):
    """(less, equal) of two lane matrices (``strings.compare``): bytes as unsigned, then length.

    Slots are visited from the last to the first, so the first difference inside the common
    length is the last one applied; slots past one side's width compare against zero, as
    the reference's padding does.
    """
    wc = min(wa, wb)
    for i in range(n):
        x_len = la[_ix(i)]
        y_len = lb[_ix(i)]
        r = np.uint8(x_len < y_len)
        e = np.uint8(x_len == y_len)
        oa = i * wa
        ob = i * wb
        for j in range(wa - 1, wc - 1, -1):  # a's tail (b padded with zeros)
            ins = np.uint8(j < x_len) & np.uint8(j < y_len)
            r, e = byte_step(a[_ix(oa + j)], np.uint8(0), ins, r, e)
        for j in range(wb - 1, wc - 1, -1):  # b's tail (a padded with zeros)
            ins = np.uint8(j < x_len) & np.uint8(j < y_len)
            r, e = byte_step(np.uint8(0), b[_ix(ob + j)], ins, r, e)
        for j in range(wc - 1, -1, -1):
            ins = np.uint8(j < x_len) & np.uint8(j < y_len)
            r, e = byte_step(a[_ix(oa + j)], b[_ix(ob + j)], ins, r, e)
        lt[_ix(i)] = r
        eq[_ix(i)] = e


@njit(**_OPTS)
def compare_const_rows(a, la, c, lt, eq, n, wa, lc):
    """(less, equal) of a lane matrix against one public constant ``c`` of ``lc`` bytes
    (``strings.compare`` with ``c`` in every row): the constant stays in registers/L1 and
    its length is a public size.  Slots of ``a`` past ``lc`` are outside the common length
    whatever the row holds, so they are not visited (a bound fixed by public sizes);
    the constant's slots past ``wa`` compare against zero, as the reference's padding does.
    """
    wc = min(wa, lc)
    for i in range(n):
        x_len = la[_ix(i)]
        r = np.uint8(x_len < lc)
        e = np.uint8(x_len == lc)
        oa = i * wa
        for j in range(lc - 1, wc - 1, -1):  # past a's width: a padded with zeros
            ins = np.uint8(j < x_len)
            r, e = byte_step(np.uint8(0), c[_ix(j)], ins, r, e)
        for j in range(wc - 1, -1, -1):
            ins = np.uint8(j < x_len)
            r, e = byte_step(a[_ix(oa + j)], c[_ix(j)], ins, r, e)
        lt[_ix(i)] = r
        eq[_ix(i)] = e


@njit(**_OPTS)
def find_rows(mat, lengths, needle, out, n, w, m):
    """``out[i, j]``: the ``m``-byte needle occurs at byte ``j`` of row ``i`` and ends within
    its length (``strings.find``).  Needle byte by needle byte, each a contiguous pass over
    the row.  A start ``j`` whose needle would run past the width is already 0 (``j + m <=
    length <= w``), so those slots are not compared (the reference compares them with
    its shifts' zero fill, with the same result)."""
    for i in range(n):
        ln = lengths[_ix(i)]
        o = i * w
        for j in range(w):
            out[_ix(o + j)] = np.uint8(j + m <= ln)
        for k in range(m):
            c = needle[_ix(k)]
            for j in range(max(w - k, 0)):
                out[_ix(o + j)] &= np.uint8(mat[_ix(o + j + k)] == c)


@njit(**_OPTS)
def first_match_rows(mask, out, n, w):
    """Only the first 1 of each row of a 0/1 matrix (``strings.first_match``): a prefix OR."""
    for i in range(n):
        seen = np.uint8(0)
        o = i * w
        for j in range(w):
            v = mask[_ix(o + j)] & np.uint8(1)
            out[_ix(o + j)] = v & (np.uint8(1) ^ seen)
            seen |= v


_LSB = np.uint64(0x0101010101010101)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_GATHER = np.uint64(0x0102040810204080)


@njit(inline="always", **_OPTS)
def _eq_bits(x: Data, pat: Data):
    """Bit ``k`` set where byte ``k`` of the word ``x`` equals that of ``pat`` (8 bits).

    The exact zero-byte test (no false positives: ``(t & 0x7F) + 0x7F`` never carries out of
    a byte), then the eight flag bits gathered by one multiplication (no two partial products
    meet in the top byte).
    """
    t = x ^ pat
    hi = ~((((t & _LOW7) + _LOW7) | t) | _LOW7)
    return ((hi >> np.uint64(7)) * _GATHER) >> np.uint64(56)


@njit(**_OPTS)
def like_rows(mat, words, lengths, sel, chars, out, scratch, n, w, mw, steps, nw):
    """SQL LIKE of every row against a public pattern of ``steps`` steps (``strings.like``).

    Step ``s`` is a literal byte, ``_`` or ``%`` (runs of ``%`` already merged, as the
    reference skips repeated ones): ``sel[3 s + k]`` is all ones for its kind ``k`` (
    :data:`LIKE_LIT`, :data:`LIKE_ANY`, :data:`LIKE_PCT`) and zero for the others, and
    ``chars[s]`` a literal's byte.  ``words`` is the rows again as ``mw`` little-endian
    8-byte words each (zero padded), for the literal matches eight bytes at a time.  The masks come in an array, not from comparisons in the
    kernel, so the compiler cannot turn ``x & mask`` into a select (and then a branch).  ``scratch`` holds ``10 * nw`` words: the bitsets (``nw`` words over positions
    ``0..w``) of code-point starts, boundaries, starts of 1-4-byte code points, the
    length's position, the literal's matches, the state and the next state.
    """
    BD = nw
    CL = 2 * nw  # four sets: starts of code points of 1, 2, 3, 4 bytes
    LN = 6 * nw
    EQ = 7 * nw
    S = 8 * nw
    NX = 9 * nw
    for i in range(n):
        ln = lengths[_ix(i)]
        o = i * w
        ow = i * mw
        for q in range(nw):
            st_w = np.uint64(0)
            bd_w = np.uint64(0)
            c1_w = np.uint64(0)
            c2_w = np.uint64(0)
            c3_w = np.uint64(0)
            c4_w = np.uint64(0)
            ln_w = np.uint64(0)
            for t in range(min(64, w + 1 - 64 * q)):  # positions 64q .. min(64q + 63, w)
                j = 64 * q + t
                b = np.uint8(0)
                if j < w:
                    b = mat[_ix(o + j)]
                sh = np.uint64(t)
                at_len = np.uint64(j == ln)
                st = np.uint64((b & 0xC0) != 0x80) & np.uint64(j < ln)
                st_w |= st << sh
                bd_w |= (st | at_len) << sh
                c1_w |= (st & np.uint64(b < 0x80)) << sh
                c2_w |= (st & np.uint64(b >= 0x80) & np.uint64(b < 0xE0)) << sh
                c3_w |= (st & np.uint64(b >= 0xE0) & np.uint64(b < 0xF0)) << sh
                c4_w |= (st & np.uint64(b >= 0xF0)) << sh
                ln_w |= at_len << sh
            scratch[_ix(q)] = st_w
            scratch[_ix(BD + q)] = bd_w
            scratch[_ix(CL + q)] = c1_w
            scratch[_ix(CL + nw + q)] = c2_w
            scratch[_ix(CL + 2 * nw + q)] = c3_w
            scratch[_ix(CL + 3 * nw + q)] = c4_w
            scratch[_ix(LN + q)] = ln_w
            scratch[_ix(S + q)] = np.uint64(0)
        scratch[_ix(S)] = np.uint64(1)  # the empty pattern prefix matches the empty prefix
        for s in range(steps):
            ch = chars[_ix(s)]
            pat = np.uint64(ch) * _LSB
            for q in range(nw):
                eq_w = np.uint64(0)
                for k in range(min(8, mw - 8 * q)):  # 8-byte words 8q .. 8q + 7 of the row
                    eq_w |= _eq_bits(words[_ix(ow + 8 * q + k)], pat) << np.uint64(8 * k)
                scratch[_ix(EQ + q)] = eq_w
            m_lit = sel[_ix(3 * s + LIKE_LIT)]
            m_any = sel[_ix(3 * s + LIKE_ANY)]
            m_pct = sel[_ix(3 * s + LIKE_PCT)]
            seen = np.uint64(0)  # all ones once a lower word of the state is nonzero (prefix-OR carry)
            for q in range(nw):
                x = scratch[_ix(S + q)]
                lit = (x & scratch[_ix(EQ + q)]) << np.uint64(1)
                anyc = np.uint64(0)
                for k in range(1, 5):
                    anyc |= (x & scratch[_ix(CL + (k - 1) * nw + q)]) << np.uint64(k)
                if q > 0:  # bits carried over from the word below (q is a loop counter)
                    lo = scratch[_ix(S + q - 1)]
                    lit |= (lo & scratch[_ix(EQ + q - 1)]) >> np.uint64(63)
                    for k in range(1, 5):
                        anyc |= (lo & scratch[_ix(CL + (k - 1) * nw + q - 1)]) >> np.uint64(64 - k)
                fill = ~((x & (np.uint64(0) - x)) - np.uint64(1))  # bits at and above the lowest set one
                pct = (fill | seen) & scratch[_ix(BD + q)]
                seen |= np.uint64(0) - np.uint64(x != 0)
                scratch[_ix(NX + q)] = (lit & m_lit) | (anyc & m_any) | (pct & m_pct)
            for q in range(nw):
                scratch[_ix(S + q)] = scratch[_ix(NX + q)]
        hit = np.uint64(0)
        for q in range(nw):
            hit |= scratch[_ix(S + q)] & scratch[_ix(LN + q)]
        out[_ix(i)] = np.uint8(hit != 0)
