"""The compiled bitonic sorting network: fused stage pairs, one call per cache block (issue 13).

Executes exactly the comparators of the reference network (``sort._run_network``, the
flip form of Batcher's bitonic network, pruned past the real length ``n``) with three
changes of *schedule* only, all fixed by public sizes (``docs/design.md §Oblivious sort``):

* **stage pairs** (radix 4): two consecutive stages ``(k, j)`` and ``(k, j/2)`` of one merge
  split the rows into closed groups of four — rows ``a, a+h, a+2h, a+3h`` (``h = j/2``)
  for an ordinary stage, ``a, a+h, a+3h'-1, a+4h'-1`` mirrored for a flip stage — so each
  group is loaded once, put through its four comparators (two of each stage, in stage
  order) with branch-free masks, and stored once: half the passes over memory;
* **one call per cache block**: every stage of a block (``BLOCK`` rows, in L2) runs in one
  kernel call, its short stages on the block's ``SUB_BLOCK``-row pieces (in L1) and the
  shortest on a transposed tile, as in the reference;
* **chunked runs**: a run of comparators is done ``CHUNK`` at a time, so its masks and
  rows stay in L1 between the mask pass and the exchange pass.

Pruning: the reference skips each comparator whose higher row is ``>= n`` (it can never
swap: padding rows sort last and never move).  Here a group of four is skipped when all
of its comparators are such; a group with some live comparator applies all four, which
gives the same rows because the others do not swap.  Which groups run depends on ``n``.

The kernels follow the rules of :mod:`.compiled` (data only in arrays, masks not
branches, unsigned indices); ``tests/oblivious/ir_lint.py`` checks their LLVM IR.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as _ix

from .compiled import _OPTS, _ONE

__all__ = ["sort_blocks", "sort_long", "unmerge_pass", "CHUNK"]

CHUNK = 256  # comparators per pass: a stage pair's four runs of CHUNK rows stay in L1

# numba compiles a callee once per distinct argument types, and a constant argument is typed
# as its literal value (and a loop variable as its first value, before inference widens it),
# so ``f(..., 0, 1)`` and ``f(..., part, parts)`` were two compiles of the same network code.
# Arguments that should not specialise are passed as these typed words (``np.int64(...)``
# and ``np.bool_(...)`` are never literal); ``sa``/``sb``/``sr``/``rev``/``step``/``back`` stay
# literal on purpose, so that each variant is a straight vectorised loop.
_I0 = np.int64(0)
_I1 = np.int64(1)


@njit(**_OPTS)
def _swp(m, a, b):
    """``(b, a)`` where the mask ``m`` is all ones, ``(a, b)`` where it is zero."""
    d = (a ^ b) & m
    return a ^ d, b ^ d


@njit(**_OPTS)
def _gt(a, b):
    return np.uint64(0) - np.uint64(a > b)


@njit(**_OPTS)
def _done(nk):
    """Key words a pass of :func:`_cx4_body` / :func:`_run` has already exchanged (keys of 1-3 words)."""
    if nk <= 3:
        return nk
    return 0


@njit(**_OPTS)
def _gt2(a0, a1, b0, b1):
    """Mask of ``(a0, a1) > (b0, b1)`` lexicographically."""
    return _gt(a0, b0) | ((np.uint64(0) - np.uint64(a0 == b0)) & _gt(a1, b1))


@njit(**_OPTS)
def _run(X, nk, nw, stride, a0, sa, b0, sb, L, msk):
    """One stage on the ``L <= CHUNK`` pairs ``(a0 + sa*u, b0 + sb*u)``: the lower row gets the smaller.

    Rows have ``nk`` key words of ``nw`` (word ``w`` of row ``i`` at ``w * stride + i``),
    compared lexicographically.  Keys of one to three words are compared and exchanged in
    registers in one pass that stores the masks; longer keys build the masks word by word
    first.  Then every other word is exchanged under the masks, so each pair is read and
    written whatever the keys.  ``sa``/``sb`` (1 or -1) are literals at every call site:
    each variant is a straight loop over two runs, which LLVM vectorises.
    """
    if nk == 1:
        for u in range(L):
            m1 = _gt(X[_ix(a0 + sa * u)], X[_ix(b0 + sb * u)])
            x, y = _swp(m1, X[_ix(a0 + sa * u)], X[_ix(b0 + sb * u)])
            X[_ix(a0 + sa * u)] = x
            X[_ix(b0 + sb * u)] = y
            msk[_ix(u)] = m1
    elif nk == 2:
        d = stride
        for u in range(L):
            x, xx = X[_ix(a0 + sa * u)], X[_ix(d + a0 + sa * u)]
            y, yy = X[_ix(b0 + sb * u)], X[_ix(d + b0 + sb * u)]
            m1 = _gt2(x, xx, y, yy)
            x, y = _swp(m1, x, y)
            xx, yy = _swp(m1, xx, yy)
            X[_ix(a0 + sa * u)], X[_ix(d + a0 + sa * u)] = x, xx
            X[_ix(b0 + sb * u)], X[_ix(d + b0 + sb * u)] = y, yy
            msk[_ix(u)] = m1
    elif nk == 3:
        d = stride
        e = 2 * stride
        for u in range(L):
            i = a0 + sa * u
            j = b0 + sb * u
            x, xx, xxx = X[_ix(i)], X[_ix(d + i)], X[_ix(e + i)]
            y, yy, yyy = X[_ix(j)], X[_ix(d + j)], X[_ix(e + j)]
            m1 = _gt3(x, xx, xxx, y, yy, yyy)
            x, y = _swp(m1, x, y)
            xx, yy = _swp(m1, xx, yy)
            xxx, yyy = _swp(m1, xxx, yyy)
            X[_ix(i)], X[_ix(d + i)], X[_ix(e + i)] = x, xx, xxx
            X[_ix(j)], X[_ix(d + j)], X[_ix(e + j)] = y, yy, yyy
            msk[_ix(u)] = m1
    else:
        last = (nk - 1) * stride
        for u in range(L):
            msk[_ix(u)] = _gt(X[_ix(last + a0 + sa * u)], X[_ix(last + b0 + sb * u)])
        for w in range(nk - 2, -1, -1):
            o = w * stride
            for u in range(L):
                x = X[_ix(o + a0 + sa * u)]
                y = X[_ix(o + b0 + sb * u)]
                msk[_ix(u)] = _gt(x, y) | ((np.uint64(0) - np.uint64(x == y)) & msk[_ix(u)])
    for w in range(_done(nk), nw):  # the words not exchanged above
        o = w * stride
        for u in range(L):
            x, y = _swp(msk[_ix(u)], X[_ix(o + a0 + sa * u)], X[_ix(o + b0 + sb * u)])
            X[_ix(o + a0 + sa * u)] = x
            X[_ix(o + b0 + sb * u)] = y


@njit(**_OPTS)
def _gt3(a0, a1, a2, b0, b1, b2):
    """Mask of ``(a0, a1, a2) > (b0, b1, b2)`` lexicographically."""
    return _gt(a0, b0) | ((np.uint64(0) - np.uint64(a0 == b0)) & _gt2(a1, a2, b1, b2))


@njit(**_OPTS)
def _cx4_body(X, nk, nw, stride, p0, q0, r0, s0, sr, rev, t0, t1, msk):
    """Two stages on the groups ``P = p0+t, Q = q0+t, R = r0+sr*t, S = s0+sr*t``, ``t0 <= t < t1``.

    First stage: ``(P, R)`` and ``(Q, S)``; second: ``(P, Q)`` and ``(R, S)`` — or
    ``(S, R)`` when ``rev`` (the groups of a flip stage, where ``S`` is the lower row).
    Done ``CHUNK`` groups at a time, so a chunk's four runs stay in L1 for both stages.
    Keys of one to three words go through all four comparators in registers (one load and
    one store per word), the masks are kept, and each payload word follows in one pass;
    longer keys take the four comparators one run pair at a time (:func:`_run`).
    ``sr`` and ``rev`` are literals at every call site, one compiled variant each: ``(1, False)``
    for ordinary pairs, ``(-1, True)`` for a flip pair on the rows (``R``, ``S`` descend) and
    ``(1, True)`` for a flip pair on the transposed tile (runs ascend; ``S`` is lower).
    """
    for c0 in range(t0, t1, CHUNK):
        L = min(CHUNK, t1 - c0)
        if nk == 3:
            d = stride
            e = 2 * stride
            for u in range(L):
                t = c0 + u
                ip = p0 + t
                iq = q0 + t
                ir = r0 + sr * t
                is_ = s0 + sr * t
                p, pp, ppp = X[_ix(ip)], X[_ix(d + ip)], X[_ix(e + ip)]
                q, qq, qqq = X[_ix(iq)], X[_ix(d + iq)], X[_ix(e + iq)]
                r, rr, rrr = X[_ix(ir)], X[_ix(d + ir)], X[_ix(e + ir)]
                s, ss, sss = X[_ix(is_)], X[_ix(d + is_)], X[_ix(e + is_)]
                m1 = _gt3(p, pp, ppp, r, rr, rrr)
                p, r = _swp(m1, p, r)
                pp, rr = _swp(m1, pp, rr)
                ppp, rrr = _swp(m1, ppp, rrr)
                m2 = _gt3(q, qq, qqq, s, ss, sss)
                q, s = _swp(m2, q, s)
                qq, ss = _swp(m2, qq, ss)
                qqq, sss = _swp(m2, qqq, sss)
                m3 = _gt3(p, pp, ppp, q, qq, qqq)
                p, q = _swp(m3, p, q)
                pp, qq = _swp(m3, pp, qq)
                ppp, qqq = _swp(m3, ppp, qqq)
                m4 = _gt3(r, rr, rrr, s, ss, sss)
                if rev:
                    m4 = _gt3(s, ss, sss, r, rr, rrr)
                r, s = _swp(m4, r, s)
                rr, ss = _swp(m4, rr, ss)
                rrr, sss = _swp(m4, rrr, sss)
                X[_ix(ip)], X[_ix(d + ip)], X[_ix(e + ip)] = p, pp, ppp
                X[_ix(iq)], X[_ix(d + iq)], X[_ix(e + iq)] = q, qq, qqq
                X[_ix(ir)], X[_ix(d + ir)], X[_ix(e + ir)] = r, rr, rrr
                X[_ix(is_)], X[_ix(d + is_)], X[_ix(e + is_)] = s, ss, sss
                msk[_ix(u)] = m1
                msk[_ix(L + u)] = m2
                msk[_ix(2 * L + u)] = m3
                msk[_ix(3 * L + u)] = m4
        if nk > 3:
            pa = p0 + c0
            qa = q0 + c0
            ra = r0 + sr * c0
            sa = s0 + sr * c0
            _run(X, nk, nw, stride, pa, 1, ra, sr, L, msk)
            _run(X, nk, nw, stride, qa, 1, sa, sr, L, msk)
            _run(X, nk, nw, stride, pa, 1, qa, 1, L, msk)
            if rev:
                _run(X, nk, nw, stride, sa, sr, ra, sr, L, msk)
            else:
                _run(X, nk, nw, stride, ra, sr, sa, sr, L, msk)
            continue
        if nk == 1:
            for u in range(L):
                t = c0 + u
                p = X[_ix(p0 + t)]
                q = X[_ix(q0 + t)]
                r = X[_ix(r0 + sr * t)]
                s = X[_ix(s0 + sr * t)]
                m1 = _gt(p, r)
                p, r = _swp(m1, p, r)
                m2 = _gt(q, s)
                q, s = _swp(m2, q, s)
                m3 = _gt(p, q)
                p, q = _swp(m3, p, q)
                m4 = _gt(r, s)
                if rev:
                    m4 = _gt(s, r)
                r, s = _swp(m4, r, s)
                X[_ix(p0 + t)] = p
                X[_ix(q0 + t)] = q
                X[_ix(r0 + sr * t)] = r
                X[_ix(s0 + sr * t)] = s
                msk[_ix(u)] = m1
                msk[_ix(L + u)] = m2
                msk[_ix(2 * L + u)] = m3
                msk[_ix(3 * L + u)] = m4
        d = stride  # nk == 2: the second key word
        for u in range(L * (nk == 2)):  # no iterations unless nk == 2
            t = c0 + u
            p, pp = X[_ix(p0 + t)], X[_ix(d + p0 + t)]
            q, qq = X[_ix(q0 + t)], X[_ix(d + q0 + t)]
            r, rr = X[_ix(r0 + sr * t)], X[_ix(d + r0 + sr * t)]
            s, ss = X[_ix(s0 + sr * t)], X[_ix(d + s0 + sr * t)]
            m1 = _gt2(p, pp, r, rr)
            p, r = _swp(m1, p, r)
            pp, rr = _swp(m1, pp, rr)
            m2 = _gt2(q, qq, s, ss)
            q, s = _swp(m2, q, s)
            qq, ss = _swp(m2, qq, ss)
            m3 = _gt2(p, pp, q, qq)
            p, q = _swp(m3, p, q)
            pp, qq = _swp(m3, pp, qq)
            m4 = _gt2(r, rr, s, ss)
            if rev:
                m4 = _gt2(s, ss, r, rr)
            r, s = _swp(m4, r, s)
            rr, ss = _swp(m4, rr, ss)
            X[_ix(d + p0 + t)], X[_ix(p0 + t)] = pp, p
            X[_ix(d + q0 + t)], X[_ix(q0 + t)] = qq, q
            X[_ix(d + r0 + sr * t)], X[_ix(r0 + sr * t)] = rr, r
            X[_ix(d + s0 + sr * t)], X[_ix(s0 + sr * t)] = ss, s
            msk[_ix(u)] = m1
            msk[_ix(L + u)] = m2
            msk[_ix(2 * L + u)] = m3
            msk[_ix(3 * L + u)] = m4
        for w in range(nk, nw):
            o = w * stride
            for u in range(L):
                t = c0 + u
                p, r = _swp(msk[_ix(u)], X[_ix(o + p0 + t)], X[_ix(o + r0 + sr * t)])
                q, s = _swp(msk[_ix(L + u)], X[_ix(o + q0 + t)], X[_ix(o + s0 + sr * t)])
                p, q = _swp(msk[_ix(2 * L + u)], p, q)
                r, s = _swp(msk[_ix(3 * L + u)], r, s)
                X[_ix(o + p0 + t)] = p
                X[_ix(o + q0 + t)] = q
                X[_ix(o + r0 + sr * t)] = r
                X[_ix(o + s0 + sr * t)] = s


@njit(**_OPTS)
def _clamp(v, hi):
    """``min(max(v, 0), hi)`` of public sizes."""
    return min(max(v, 0), hi)


@njit(inline="always", **_OPTS)
def _pair_rows(X, nk, nw, stride, lo, span, n, k, j, part, parts, msk):
    """Stages ``(k, j)`` and ``(k, j/2)`` on rows ``[lo, lo + span)``; share ``part`` of ``parts``.

    Groups of ``2j`` rows; in each, ``t < h = j/2`` indexes the groups of four.  A thread
    takes the ``part``-th slice of every group's ``t`` range (public sizes only).  Groups
    whose comparators all have their higher row ``>= n`` are skipped: for an ordinary pair
    the lowest higher row is ``a + h``; for a flip pair it is ``min(a + h, base + 3h - 1 - t)``,
    so the live ``t`` are a prefix and a suffix.
    """
    h = j // 2
    size = 2 * j
    share = (h + parts - 1) // parts
    u0 = min(part * share, h)
    u1 = min(u0 + share, h)
    flip = 2 * j == k
    for g in range(span // size):
        base = lo + g * size
        e1 = _clamp(n - base - h, h)
        if flip:
            s2 = max(e1, _clamp(base + 3 * h - n, h))
            # a flip pair on the rows: R and S descend (sr = -1), S is the lower row (rev)
            _cx4_body(X, nk, nw, stride, base, base + h, base + 4 * h - 1, base + 3 * h - 1,
                      -1, True, u0, max(u0, min(e1, u1)), msk)
            _cx4_body(X, nk, nw, stride, base, base + h, base + 4 * h - 1, base + 3 * h - 1,
                      -1, True, min(max(s2, u0), u1), u1, msk)
        else:
            _cx4_body(X, nk, nw, stride, base, base + h, base + 2 * h, base + 3 * h, 1, False, u0, max(u0, min(e1, u1)), msk)


@njit(inline="always", **_OPTS)
def _pair_tile(T, nk, nw, blk, lo, rows, cols, n, k, j, msk):
    """Stages ``(k, j)``, ``(k, j/2)`` with ``j < cols`` on the transposed tile of the block at ``lo``.

    Row ``i = r * cols + c`` sits at ``c * rows + r``; a group of four columns is four
    contiguous runs of ``rows`` slots (for an ordinary pair on a piece without padding,
    the ``h`` groups of four columns are four runs of ``h * rows``).  The run keeps the
    ``r`` for which the group's lowest higher row ``lo + r * cols + c`` is below ``n``.
    """
    h = j // 2
    size = 2 * j
    flip = 2 * j == k
    if not flip and lo + rows * cols <= n:  # no padding in the piece: columns ca .. ca+h-1 are one run
        for g in range(cols // size):
            a = g * size * rows
            _cx4_body(T, nk, nw, blk, a, a + h * rows, a + 2 * h * rows, a + 3 * h * rows, 1, False, _I0, h * rows, msk)
        return
    for g in range(cols // size):
        for t in range(h):
            ca = g * size + t
            cb = ca + h
            if flip:
                cs = g * size + 3 * h - 1 - t
                cr = g * size + 4 * h - 1 - t
                live = _clamp((n - lo - min(cb, cs) + cols - 1) // cols, rows)
                _cx4_body(T, nk, nw, blk, ca * rows, cb * rows, cr * rows, cs * rows, 1, True, _I0, live, msk)
            else:
                live = _clamp((n - lo - cb + cols - 1) // cols, rows)
                _cx4_body(T, nk, nw, blk, ca * rows, cb * rows, (ca + 2 * h) * rows, (ca + 3 * h) * rows, 1, False, _I0, live, msk)


@njit(**_OPTS)
def _cx2(X, nk, nw, stride, a0, b0, step, length, msk):
    """One stage on the pairs ``(a0 + t, b0 + step * t)``, ``t < length`` (``step`` = 1 or -1)."""
    for c0 in range(0, length, CHUNK):
        L = min(CHUNK, length - c0)
        if step == 1:
            _run(X, nk, nw, stride, a0 + c0, 1, b0 + c0, 1, L, msk)
        else:
            _run(X, nk, nw, stride, a0 + c0, 1, b0 - c0, -1, L, msk)


@njit(inline="always", **_OPTS)
def _single_rows(X, nk, nw, stride, lo, span, n, k, j, part, parts, msk):
    """One stage ``(k, j)`` on rows ``[lo, lo + span)`` (``part`` of ``parts``), pruned past ``n``."""
    flip = 2 * j == k
    size = 2 * j
    share = (j + parts - 1) // parts
    u0 = min(part * share, j)
    u1 = min(u0 + share, j)
    for g in range(span // size):
        base = lo + g * size
        if flip:
            t0 = max(_clamp(base + k - n, j), u0)  # pairs t < t0 have their mirror row >= n
            _cx2(X, nk, nw, stride, base + t0, base + k - 1 - t0, -1, max(u1 - t0, 0), msk)
        else:
            live = min(_clamp(n - base - j, j), u1)
            _cx2(X, nk, nw, stride, base + u0, base + j + u0, 1, max(live - u0, 0), msk)


@njit(inline="always", **_OPTS)
def _single_tile(T, nk, nw, blk, lo, rows, cols, n, k, j, msk):
    """One stage ``(k, j)`` with ``j < cols`` on the transposed tile (as :func:`_pair_tile`)."""
    flip = 2 * j == k
    size = 2 * j
    if not flip and lo + rows * cols <= n:  # no padding in the piece: columns ca .. ca+j-1 are one run
        for g in range(cols // size):
            _cx2(T, nk, nw, blk, g * size * rows, (g * size + j) * rows, 1, j * rows, msk)
        return
    for g in range(cols // size):
        for t in range(j):
            ca = g * size + t
            cb = ca + j
            if flip:
                cb = g * size + k - 1 - t
            live = _clamp((n - lo - cb + cols - 1) // cols, rows)
            _cx2(T, nk, nw, blk, ca * rows, cb * rows, 1, live, msk)


@njit(**_OPTS)
def _tile(X, T, nw, stride, lo, rows, cols, back):
    """Copy the block at ``lo`` (``rows x cols``, row-major) to its transpose ``T`` (or back)."""
    for w in range(nw):
        o = w * stride + lo
        p = w * rows * cols
        if back:
            for r in range(rows):
                for c in range(cols):
                    X[_ix(o + r * cols + c)] = T[_ix(p + c * rows + r)]
        else:  # both directions write contiguously (strided reads are the cheaper side)
            for c in range(cols):
                for r in range(rows):
                    T[_ix(p + c * rows + r)] = X[_ix(o + r * cols + c)]


@njit(inline="always", **_OPTS)
def _merge_tail(X, T, nk, nw, m, n, lo, sub, cols, k, j_hi, tiled, msk):
    """Stages ``(k, j)``, ``j = j_hi … 1``, of one merge on the piece of ``sub`` rows at ``lo``.

    Consecutive stages go in pairs (the last alone when their number is odd); a pair or
    stage with ``j >= cols`` runs on the rows, a shorter one on the transposed tile ``T``,
    entered and left only when that changes.  Returns whether the piece is left tiled.
    """
    rows = sub // cols
    j = j_hi
    while j >= 1:
        kk = 4 * j  # any k > 2j selects the ordinary pattern
        if 2 * j == k:
            kk = k
        if j >= cols:
            if tiled:
                _tile(X, T, nw, m, lo, rows, cols, True)
                tiled = False
            if j >= 2:
                _pair_rows(X, nk, nw, m, lo, sub, n, kk, j, _I0, _I1, msk)
            else:
                _single_rows(X, nk, nw, m, lo, sub, n, kk, j, _I0, _I1, msk)
        else:
            if not tiled:
                _tile(X, T, nw, m, lo, rows, cols, False)
                tiled = True
            if j >= 2:
                _pair_tile(T, nk, nw, sub, lo, rows, cols, n, kk, j, msk)
            else:
                _single_tile(T, nk, nw, sub, lo, rows, cols, n, kk, j, msk)
        j //= 4 if j >= 2 else 2
    return tiled


@njit(**_OPTS)
def sort_blocks(X, nk, nw, m, n, blk, sub, cols, tail_j, b0, b1, msk, T):
    """The in-block part of the network on blocks ``b0 .. b1-1`` of ``blk`` rows.

    ``tail_j == 0``: the whole network on each block; otherwise the stages
    ``j = tail_j … 1`` of a larger merge.  Inside a block the stages with ``2j > sub`` run
    as pairs on the block (in L2), the rest piece by piece on its ``sub``-row pieces (in L1),
    all in this one call.  Blocks starting at or past ``n`` hold padding only and are skipped.
    ``msk`` (``CHUNK`` words) and ``T`` (``nw * sub`` words) are this call's scratch.
    """
    for b in range(b0, min(b1, (n + blk - 1) // blk)):
        lo = b * blk
        if tail_j == 0:
            for p in range(min(blk, n - lo + sub - 1) // sub):  # pieces past n: padding only
                q = lo + p * sub
                k = np.int64(2)
                tiled = np.bool_(False)
                while k <= sub:
                    tiled = _merge_tail(X, T, nk, nw, m, n, q, sub, cols, k, k // 2, tiled, msk)
                    k *= 2
                if tiled:
                    _tile(X, T, nw, m, q, sub // cols, cols, True)
        # the merges of the block past its pieces (k = 2 sub .. blk), or the tail of one larger
        # merge: one call site, since _block_merge is inlined here
        k = 2 * sub
        k_end = blk
        if tail_j != 0:
            k = 4 * tail_j
            k_end = k
        while k <= k_end:
            j_hi = k // 2
            if tail_j != 0:
                j_hi = tail_j
            _block_merge(X, T, nk, nw, m, n, lo, blk, sub, cols, k, j_hi, msk)
            k *= 2


@njit(inline="always", **_OPTS)
def _block_merge(X, T, nk, nw, m, n, lo, blk, sub, cols, k, j_hi, msk):
    """Stages ``j = j_hi … 1`` of merge ``k`` on the block at ``lo``: long ones on the block, then per piece."""
    j = j_hi
    while 2 * j > sub:
        kk = 4 * j
        if 2 * j == k:
            kk = k
        if j // 2 >= sub:
            _pair_rows(X, nk, nw, m, lo, blk, n, kk, j, _I0, _I1, msk)
            j //= 4
        else:
            _single_rows(X, nk, nw, m, lo, blk, n, kk, j, _I0, _I1, msk)
            j //= 2
    for p in range(min(blk, n - lo + sub - 1) // sub):  # pieces past n: padding only
        q = lo + p * sub
        if j >= 1:
            if _merge_tail(X, T, nk, nw, m, n, q, sub, cols, 4 * j, j, np.bool_(False), msk):
                _tile(X, T, nw, m, q, sub // cols, cols, True)


@njit(**_OPTS)
def sort_long(X, nk, nw, m, n, k, j, pair, part, parts, msk):
    """Whole-array stage ``(k, j)`` (and ``(k, j/2)`` when ``pair``): thread ``part`` of ``parts``."""
    if pair:
        _pair_rows(X, nk, nw, m, _I0, m, n, k, j, part, parts, msk)
    else:
        _single_rows(X, nk, nw, m, _I0, m, n, k, j, part, parts, msk)


# ----------------------------------------------------------------------------- the unmerge

@njit(**_OPTS)
def _unroute(X, nw, stride, a0, b0, L, jbit, msk):
    """One reversed half-cleaner stage on the ``L <= CHUNK`` pairs ``(a0 + u, b0 + u)``.

    Word 0 of a row is its origin (its row in the merge's input); bit ``jbit`` of the lower
    row's origin says the forward stage found it in the upper slot: the pair is swapped
    under that mask, every word (:mod:`.unmerge`).
    """
    for u in range(L):
        x = X[_ix(a0 + u)]
        y = X[_ix(b0 + u)]
        s = (x >> jbit) & _ONE
        m1 = np.uint64(0) - s
        x, y = _swp(m1, x, y)
        X[_ix(a0 + u)] = x
        X[_ix(b0 + u)] = y
        msk[_ix(u)] = m1
    for w in range(1, nw):
        o = w * stride
        for u in range(L):
            x, y = _swp(msk[_ix(u)], X[_ix(o + a0 + u)], X[_ix(o + b0 + u)])
            X[_ix(o + a0 + u)] = x
            X[_ix(o + b0 + u)] = y


@njit(inline="always", **_OPTS)
def _unmerge_stage(X, nw, m, lo, span, j, jbit, part, parts, msk):
    """Reversed stage ``j`` on rows ``[lo, lo + span)``: thread ``part`` of ``parts`` takes a
    slice of every group's pairs (public sizes only)."""
    share = (j + parts - 1) // parts
    u0 = min(part * share, j)
    u1 = min(u0 + share, j)
    for g in range(span // (2 * j)):
        base = lo + g * 2 * j
        for c0 in range(u0, u1, CHUNK):
            _unroute(X, nw, m, base + c0, base + j + c0, min(CHUNK, u1 - c0), jbit, msk)


@njit(**_OPTS)
def unmerge_pass(X, nw, m, blk, cols, b0, b1, j, jbit, part, parts, msk, T):
    """``j == 0``: the reversed stages ``1 … blk/2`` on blocks ``b0 .. b1-1`` of ``blk`` rows,
    each block through all of them while it is in cache.  Otherwise the whole-array
    reversed stage ``j >= blk`` (bit ``jbit``), thread ``part`` of ``parts``.  One kernel for
    both, so one signature covers every size (the warmup's data reach no long stage).

    In a block, the stages with ``j < cols`` run on its transpose ``T`` (``nw * blk`` words;
    row ``r * cols + c`` at ``c * rows + r``), where a pair of columns is a pair of contiguous
    runs of ``rows`` rows, as the sort's short stages do (:func:`_tile`)."""
    if j != 0:
        _unmerge_stage(X, nw, m, _I0, m, j, jbit, part, parts, msk)
        return
    rows = blk // cols
    for b in range(b0, b1):
        lo = b * blk
        _tile(X, T, nw, m, lo, rows, cols, False)
        jj = np.int64(1)
        bit = np.uint64(0)
        while jj < cols:
            for g in range(cols // (2 * jj)):
                for t in range(jj):
                    ca = g * 2 * jj + t
                    for c0 in range(0, rows, CHUNK):
                        _unroute(T, nw, blk, ca * rows + c0, (ca + jj) * rows + c0, min(CHUNK, rows - c0), bit, msk)
            jj *= 2
            bit += _ONE
        _tile(X, T, nw, m, lo, rows, cols, True)
        while jj < blk:
            _unmerge_stage(X, nw, m, lo, blk, jj, bit, _I0, _I1, msk)
            jj *= 2
            bit += _ONE
