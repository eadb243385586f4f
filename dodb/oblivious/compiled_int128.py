"""Compiled, branch-free 128-bit integer arithmetic (DuckDB's DECIMAL/HUGEINT lanes).

The numpy module ``operators.expressions.int128`` is the *reference*: with the ``numpy``
backend (:mod:`.backend`) it does the work; with the default ``compiled`` backend its
functions call the kernels below, which return bit-identical values and overflow flags
(``tests/oblivious/test_compiled_int128.py``) in one pass over the rows instead of a
dozen or more whole-column numpy passes.

A number is two 64-bit words per row.  The kernels see both as ``uint64`` arrays (the
wrappers pass ``hi.view(np.uint64)``; signed order is the unsigned order of the words
with the sign bit flipped).  Products of 64-bit words are taken whole: :func:`_mulhi` is
the upper half of the 128-bit product of two words (one LLVM ``mul i128``, a single
constant-time multiply instruction on x86-64 and AArch64), the lower half is the
wrapping ``uint64`` product.

Rules, as in :mod:`.compiled` (same ``_OPTS``, checked by ``tests/oblivious``): data only
arrives in arrays; every scalar argument is a public size or a public constant (the
factor ``10^k`` of :func:`mul_const_rows`, the bound of :func:`in_bounds_rows`, the
divisor of :func:`divmod_small_rows`), so loop bounds and indices are functions of sizes
and loop counters; no branch on a loaded value: signs, carries, overflow flags and
selects are arithmetic masks (``m = 0 - uint64(cond)``, ``b ^ ((a ^ b) & m)``).
Every literal is a ``uint64`` constant (``uint64`` with ``int64`` would be ``float64``
in numba).

Division by the public ``d`` (:func:`divmod_small_rows`) multiplies by a precomputed
reciprocal (:func:`div_magic`) instead of dividing: no ``udiv``, whose latency can depend
on the dividend and which LLVM may split into a data-dependent fast path.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as _llir
from numba import njit, types
from numba import uint64 as _ix
from numba.extending import intrinsic

from .compiled import _OPTS, Data, opaque

__all__ = ["add_rows", "neg_rows", "abs_rows", "mul_rows", "mul64_rows", "mul_const_rows", "compare_rows", "less_rows",
           "equal_rows", "where_rows", "in_bounds_rows", "divmod_small_rows", "to_i64_rows"]

_Z = np.uint64(0)
_ONE = np.uint64(1)
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S63 = np.uint64(63)
_SIGN = np.uint64(1 << 63)


@intrinsic
def _mulhi(typingctx, x, y):
    """Upper 64 bits of the 128-bit product of two ``uint64`` words (``mul i128`` of the
    zero-extended words: no branch, no memory)."""
    if x != types.uint64 or y != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        wide = _llir.IntType(128)
        p = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        return builder.trunc(builder.lshr(p, _llir.Constant(wide, 64)), _llir.IntType(64))

    return types.uint64(types.uint64, types.uint64), codegen


@njit(inline="always", **_OPTS)
def _sel(m: Data, a: Data, b: Data):
    """``a`` where ``m`` is all ones, ``b`` where it is zero."""
    return b ^ ((a ^ b) & m)


@njit(inline="always", **_OPTS)
def _neg(hi: Data, lo: Data):
    """Two's-complement negation of ``(hi, lo)`` (``int128.neg``)."""
    nlo = ~lo + _ONE
    nhi = ~hi + np.uint64(nlo == _Z)
    return nhi, nlo


@njit(inline="always", **_OPTS)
def _abs(hi: Data, lo: Data):
    """Magnitude as an unsigned 128-bit number (``int128.absolute``; ``MIN`` gives ``2^127``)."""
    m = _Z - (hi >> _S63)
    nhi, nlo = _neg(hi, lo)
    return _sel(m, nhi, hi), _sel(m, nlo, lo)


@njit(inline="always", **_OPTS)
def _lt(xh: Data, xl: Data, yh: Data, yl: Data):
    """Signed 128-bit ``x < y`` as 0/1 (``int128.less``)."""
    return np.uint64((xh ^ _SIGN) < (yh ^ _SIGN)) | (np.uint64(xh == yh) & np.uint64(xl < yl))


@njit(inline="always", **_OPTS)
def _umul(xh: Data, xl: Data, yh: Data, yl: Data):
    """Low 128 bits of the product of two unsigned 128-bit numbers, and 1 when the whole
    product is ``>= 2^127`` (outside the signed range), else 0."""
    lo = xl * yl
    h0 = _mulhi(xl, yl)
    h1 = h0 + xl * yh
    c1 = np.uint64(h1 < h0)
    hi = h1 + xh * yl
    c2 = np.uint64(hi < h1)
    big = np.uint64(xh != _Z) & np.uint64(yh != _Z)
    big |= np.uint64(_mulhi(xl, yh) != _Z) | np.uint64(_mulhi(xh, yl) != _Z)
    return hi, lo, big | c1 | c2 | (hi >> _S63)


@njit(**_OPTS)
def add_rows(ahi, alo, bhi, blo, ohi, olo, over, n, negate):
    """``a + b`` (``negate`` = 0) or ``a + neg(b)`` (``int128.sub``; ``negate`` = 1, public)
    and the signed-overflow flag of ``int128.add``."""
    nm = _Z - np.uint64(negate)
    for i in range(n):
        xh = ahi[_ix(i)]
        xl = alo[_ix(i)]
        yh = bhi[_ix(i)]
        yl = blo[_ix(i)]
        nh, nl = _neg(yh, yl)
        yh = _sel(nm, nh, yh)
        yl = _sel(nm, nl, yl)
        lo = xl + yl
        hi = xh + yh + np.uint64(lo < xl)
        ohi[_ix(i)] = hi
        olo[_ix(i)] = lo
        over[_ix(i)] = (((~(xh ^ yh)) & (hi ^ xh)) >> _S63) != _Z


@njit(**_OPTS)
def neg_rows(ahi, alo, ohi, olo, n):
    """``int128.neg``."""
    for i in range(n):
        nh, nl = _neg(ahi[_ix(i)], alo[_ix(i)])
        ohi[_ix(i)] = nh
        olo[_ix(i)] = nl


@njit(**_OPTS)
def abs_rows(ahi, alo, ohi, olo, n):
    """``int128.absolute``."""
    for i in range(n):
        h, l = _abs(ahi[_ix(i)], alo[_ix(i)])
        ohi[_ix(i)] = h
        olo[_ix(i)] = l


@njit(**_OPTS)
def mul_rows(ahi, alo, bhi, blo, ohi, olo, over, n):
    """``int128.mul``: the product of the magnitudes (low 128 bits), negated when the signs
    differ, and the flag of magnitudes' products ``>= 2^127``."""
    for i in range(n):
        xh = ahi[_ix(i)]
        xl = alo[_ix(i)]
        yh = bhi[_ix(i)]
        yl = blo[_ix(i)]
        sm = _Z - ((xh ^ yh) >> _S63)
        xh, xl = _abs(xh, xl)
        yh, yl = _abs(yh, yl)
        hi, lo, big = _umul(xh, xl, yh, yl)
        nh, nl = _neg(hi, lo)
        ohi[_ix(i)] = _sel(sm, nh, hi)
        olo[_ix(i)] = _sel(sm, nl, lo)
        over[_ix(i)] = big != _Z


@njit(**_OPTS)
def mul64_rows(x, y, ohi, olo, n):
    """``int128.mul64``: the exact 128-bit product of two signed 64-bit lanes (``x``, ``y`` as
    ``uint64`` words): the product of the magnitudes, negated when the signs differ.  It
    cannot overflow (``|x·y| <= 2^126``)."""
    for i in range(n):
        a = x[_ix(i)]
        b = y[_ix(i)]
        sa = _Z - (a >> _S63)
        sb = _Z - (b >> _S63)
        ua = (a ^ sa) - sa
        ub = (b ^ sb) - sb
        hi = _mulhi(ua, ub)
        lo = ua * ub
        nh, nl = _neg(hi, lo)
        sm = sa ^ sb
        ohi[_ix(i)] = _sel(sm, nh, hi)
        olo[_ix(i)] = _sel(sm, nl, lo)


@njit(**_OPTS)
def mul_const_rows(ahi, alo, ch, cl, ohi, olo, over, n):
    """``int128.mul(a, const(c))`` for a public positive constant ``c = (ch, cl)`` (the
    ``10^k`` of ``int128.mul_pow10``): the same words and flag, without loading a second
    operand or taking its magnitude; ``ch`` is 0 for ``k <= 19``."""
    for i in range(n):
        xh = ahi[_ix(i)]
        sm = _Z - (xh >> _S63)
        xh, xl = _abs(xh, alo[_ix(i)])
        hi, lo, big = _umul(xh, xl, ch, cl)
        nh, nl = _neg(hi, lo)
        ohi[_ix(i)] = _sel(sm, nh, hi)
        olo[_ix(i)] = _sel(sm, nl, lo)
        over[_ix(i)] = big != _Z


@njit(**_OPTS)
def compare_rows(ahi, alo, bhi, blo, lt, eq, n):
    """``int128.less`` and ``int128.equal`` in one pass."""
    for i in range(n):
        xh = ahi[_ix(i)]
        xl = alo[_ix(i)]
        yh = bhi[_ix(i)]
        yl = blo[_ix(i)]
        lt[_ix(i)] = _lt(xh, xl, yh, yl) != _Z
        eq[_ix(i)] = ((xh ^ yh) | (xl ^ yl)) == _Z


@njit(**_OPTS)
def less_rows(ahi, alo, bhi, blo, lt, n):
    """``int128.less``."""
    for i in range(n):
        lt[_ix(i)] = _lt(ahi[_ix(i)], alo[_ix(i)], bhi[_ix(i)], blo[_ix(i)]) != _Z


@njit(**_OPTS)
def equal_rows(ahi, alo, bhi, blo, eq, n):
    """``int128.equal``."""
    for i in range(n):
        eq[_ix(i)] = ((ahi[_ix(i)] ^ bhi[_ix(i)]) | (alo[_ix(i)] ^ blo[_ix(i)])) == _Z


@njit(**_OPTS)
def where_rows(mask, ahi, alo, bhi, blo, ohi, olo, n):
    """``int128.where``: ``a`` where ``mask`` (bool) is set, else ``b``; both always read."""
    for i in range(n):
        m = opaque(_Z - np.uint64(mask[_ix(i)]))  # not a select of two loads (compiled.opaque)
        ohi[_ix(i)] = _sel(m, ahi[_ix(i)], bhi[_ix(i)])
        olo[_ix(i)] = _sel(m, alo[_ix(i)], blo[_ix(i)])


@njit(**_OPTS)
def in_bounds_rows(ahi, alo, bh, bl, nbh, nbl, ok, n):
    """``int128.in_bounds``: ``-bound < a < bound`` for the public ``bound = (bh, bl)`` and
    ``-bound = (nbh, nbl)``."""
    for i in range(n):
        xh = ahi[_ix(i)]
        xl = alo[_ix(i)]
        ok[_ix(i)] = (_lt(xh, xl, bh, bl) & _lt(nbh, nbl, xh, xl)) != _Z


def div_magic(d: int) -> tuple[np.uint64, np.uint64, np.uint64]:
    """Granlund and Montgomery's multiplier for division by a public ``1 <= d < 2^64``
    ("Division by invariant integers using multiplication", 1994, figure 4.1):
    ``q = (t + ((x - t) >> sh1)) >> sh2`` with ``t = mulhi(m, x)`` is ``x // d`` for every
    64-bit ``x``."""
    if not 1 <= d < 1 << 64:
        raise ValueError(f"divisor {d} outside [1, 2^64)")
    ell = (d - 1).bit_length()  # ceil(log2 d)
    m = ((1 << 64) * ((1 << ell) - d)) // d + 1
    return np.uint64(m), np.uint64(min(ell, 1)), np.uint64(max(ell - 1, 0))


@njit(inline="always", **_OPTS)
def _udiv(x: Data, m, sh1, sh2):
    """``x // d`` for the public ``d`` whose :func:`div_magic` is ``(m, sh1, sh2)``: a
    multiply and shifts, no division instruction (whose latency can depend on ``x``)."""
    t = _mulhi(m, x)
    return (t + ((x - t) >> sh1)) >> sh2


@njit(**_OPTS)
def divmod_small_rows(ahi, alo, d, m, sh1, sh2, qhi, qlo, rem, n):
    """``int128.divmod_small``: quotient and remainder of a non-negative number by a public
    ``0 < d < 2^32`` (multiplier ``(m, sh1, sh2)`` from :func:`div_magic`), 32-bit limb by
    limb from the top, as the reference."""
    for i in range(n):
        h = ahi[_ix(i)]
        l = alo[_ix(i)]
        cur = h >> _S32
        q3 = _udiv(cur, m, sh1, sh2)
        r = cur - q3 * d
        cur = (r << _S32) | (h & _M32)
        q2 = _udiv(cur, m, sh1, sh2)
        r = cur - q2 * d
        cur = (r << _S32) | (l >> _S32)
        q1 = _udiv(cur, m, sh1, sh2)
        r = cur - q1 * d
        cur = (r << _S32) | (l & _M32)
        q0 = _udiv(cur, m, sh1, sh2)
        rem[_ix(i)] = cur - q0 * d
        qhi[_ix(i)] = (q3 << _S32) | q2
        qlo[_ix(i)] = (q1 << _S32) | q0


@njit(**_OPTS)
def to_i64_rows(ahi, alo, out, over, n):
    """``int128.to_i64``: the low word, and whether ``hi`` is not its sign extension."""
    for i in range(n):
        l = alo[_ix(i)]
        out[_ix(i)] = l
        over[_ix(i)] = ahi[_ix(i)] != _Z - (l >> _S63)
