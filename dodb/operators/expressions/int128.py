"""128-bit two's-complement integers as numpy lanes (DuckDB's HUGEINT-backed DECIMAL).
See docs/design.md §Expressions.

A number is a pair of arrays ``(hi: int64, lo: uint64)``; every operation is a fixed
sequence of element-wise numpy operations over whole columns (no branch, no indexing by
data), so its access pattern depends only on the number of rows.  Multiplication and
division work on 32-bit limbs, so that every partial product fits in 64 bits.

The numpy code here is the reference.  With the ``compiled`` kernel backend
(:mod:`dodb.oblivious.backend`) the hot operations call the numba kernels of
:mod:`dodb.oblivious.compiled_int128` instead: one branch-free pass over the rows each,
with bit-identical values and overflow flags (``tests/oblivious/test_compiled_int128.py``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...oblivious.backend import use_compiled
from ...oblivious.select import as_float64, select

__all__ = ["I128", "const", "from_i64", "add", "sub", "neg", "mul", "absolute", "is_negative", "less", "equal",
           "compare", "where", "div_pow10", "divmod_small", "divmod_trunc", "to_f64", "to_i64", "in_bounds",
           "mul_pow10", "MIN"]

MIN = -(1 << 127)

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


class I128(NamedTuple):
    hi: np.ndarray  # int64, sign and upper 64 bits
    lo: np.ndarray  # uint64, lower 64 bits


def _kernels(*args: I128):
    """The compiled kernels when the compiled backend is active and every operand is a pair
    of equal-length vectors (else ``None``: the numpy code below runs)."""
    if not use_compiled():
        return None
    shape = args[0].lo.shape
    if len(shape) != 1:
        return None
    for x in args:
        if x.hi.shape != shape or x.lo.shape != shape:
            return None
    from ...oblivious import compiled_int128

    return compiled_int128


def _w(a: I128) -> tuple[np.ndarray, np.ndarray]:
    """Both words of ``a`` as contiguous ``uint64`` vectors (views when they already are)."""
    return np.ascontiguousarray(a.hi, dtype=np.int64).view(np.uint64), np.ascontiguousarray(a.lo, dtype=np.uint64)


def _out(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.uint64)


def _words(v: int) -> tuple[np.uint64, np.uint64]:
    """A public constant's two's-complement (hi, lo) words."""
    v = int(v) & ((1 << 128) - 1)
    return np.uint64(v >> 64), np.uint64(v & ((1 << 64) - 1))


def const(value: int, n: int) -> I128:
    """A public constant broadcast to ``n`` rows."""
    v = int(value) & ((1 << 128) - 1)
    hi = v >> 64
    hi = hi - (1 << 64) if hi >= 1 << 63 else hi
    return I128(np.full(n, hi, dtype=np.int64), np.full(n, v & ((1 << 64) - 1), dtype=np.uint64))


def from_i64(x: np.ndarray) -> I128:
    x = np.asarray(x, dtype=np.int64)
    return I128(x >> np.int64(63), x.view(np.uint64).copy())


def from_words(words: np.ndarray) -> I128:
    """Arrow decimal128 storage ``(n, 2)`` uint64 (low, high) to a number (each word copied out of
    the interleaved storage once; the evaluator never writes into a value's arrays)."""
    return I128(np.ascontiguousarray(words[:, 1]).view(np.int64), np.ascontiguousarray(words[:, 0]))


def to_words(a: I128) -> np.ndarray:
    """Arrow decimal128 storage ``(n, 2)`` of a number, column-major: each word stays one
    contiguous lane (docs/design.md §Expressions, narrow DECIMAL lanes)."""
    return np.stack([a.lo, a.hi.view(np.uint64)], axis=0).T


def where(mask: np.ndarray, a: I128, b: I128) -> I128:
    k = _kernels(a, b)
    if k is not None and np.shape(mask) == a.lo.shape:
        n = a.lo.shape[0]
        hi, lo = _out(n)
        k.where_rows(np.ascontiguousarray(mask, dtype=np.bool_), *_w(a), *_w(b), hi, lo, n)
        return I128(hi.view(np.int64), lo)
    return I128(select(mask, a.hi, b.hi), select(mask, a.lo, b.lo))


def is_negative(a: I128) -> np.ndarray:
    return a.hi < 0


def add(a: I128, b: I128) -> tuple[I128, np.ndarray]:
    """Sum and a signed-overflow flag."""
    k = _kernels(a, b)
    if k is not None:
        return _add_compiled(k, a, b, 0)
    lo = a.lo + b.lo
    carry = (lo < a.lo).astype(np.int64)
    hi = a.hi + b.hi + carry
    over = ((a.hi < 0) == (b.hi < 0)) & ((hi < 0) != (a.hi < 0))
    return I128(hi, lo), over


def _add_compiled(k, a: I128, b: I128, negate: int) -> tuple[I128, np.ndarray]:
    n = a.lo.shape[0]
    hi, lo = _out(n)
    over = np.empty(n, dtype=np.bool_)
    k.add_rows(*_w(a), *_w(b), hi, lo, over, n, negate)
    return I128(hi.view(np.int64), lo), over


def _unary(kernel, a: I128) -> I128:
    """``kernel(a_hi, a_lo, out_hi, out_lo, n)``'s result as a number."""
    n = a.lo.shape[0]
    hi, lo = _out(n)
    kernel(*_w(a), hi, lo, n)
    return I128(hi.view(np.int64), lo)


def neg(a: I128) -> I128:
    k = _kernels(a)
    if k is not None:
        return _unary(k.neg_rows, a)
    lo = ~a.lo + np.uint64(1)
    hi = ~a.hi + (lo == 0).astype(np.int64)
    return I128(hi, lo)


def sub(a: I128, b: I128) -> tuple[I128, np.ndarray]:
    k = _kernels(a, b)
    if k is not None:
        return _add_compiled(k, a, b, 1)
    return add(a, neg(b))


def absolute(a: I128) -> I128:
    k = _kernels(a)
    if k is not None:
        return _unary(k.abs_rows, a)
    return where(is_negative(a), neg(a), a)


def less(a: I128, b: I128) -> np.ndarray:
    k = _kernels(a, b)
    if k is not None:
        out = np.empty(a.lo.shape[0], dtype=np.bool_)
        k.less_rows(*_w(a), *_w(b), out, out.shape[0])
        return out
    return (a.hi < b.hi) | ((a.hi == b.hi) & (a.lo < b.lo))


def equal(a: I128, b: I128) -> np.ndarray:
    k = _kernels(a, b)
    if k is not None:
        out = np.empty(a.lo.shape[0], dtype=np.bool_)
        k.equal_rows(*_w(a), *_w(b), out, out.shape[0])
        return out
    return (a.hi == b.hi) & (a.lo == b.lo)


def compare(a: I128, b: I128) -> tuple[np.ndarray, np.ndarray]:
    """``(less(a, b), equal(a, b))``, in one pass when compiled."""
    k = _kernels(a, b)
    if k is not None:
        n = a.lo.shape[0]
        lt, eq = np.empty(n, dtype=np.bool_), np.empty(n, dtype=np.bool_)
        k.compare_rows(*_w(a), *_w(b), lt, eq, n)
        return lt, eq
    return less(a, b), equal(a, b)


def _limbs(m: I128) -> list[np.ndarray]:
    h = m.hi.view(np.uint64)
    return [m.lo & _M32, m.lo >> _S32, h & _M32, h >> _S32]


def _from_limbs(l: list[np.ndarray]) -> I128:
    lo = l[0] | (l[1] << _S32)
    hi = (l[2] | (l[3] << _S32)).view(np.int64)
    return I128(hi, lo)


def _normalise(acc: list[np.ndarray]) -> list[np.ndarray]:
    out, carry = [], np.zeros_like(acc[0])
    for x in acc:
        s = x + carry
        out.append(s & _M32)
        carry = s >> _S32
    return out


def mul64(x: np.ndarray, y: np.ndarray) -> I128:
    """The exact product of two int64 vectors (it cannot leave 128 bits): on the compiled
    backend one pass (``mul64_rows``), else :func:`mul` of the sign-extended lanes."""
    x, y = np.ascontiguousarray(x, dtype=np.int64), np.ascontiguousarray(y, dtype=np.int64)
    if use_compiled() and x.ndim == 1 and x.shape == y.shape:
        from ...oblivious import compiled_int128
        n = x.shape[0]
        hi, lo = _out(n)
        xw, yw = x.view(np.uint64), y.view(np.uint64)
        xw.flags.writeable = yw.flags.writeable = False  # read-only views: one compiled signature
        compiled_int128.mul64_rows(xw, yw, hi, lo, n)
        return I128(hi.view(np.int64), lo)
    return mul(from_i64(x), from_i64(y))[0]


def mul(a: I128, b: I128) -> tuple[I128, np.ndarray]:
    """Product and a flag for results outside the signed 128-bit range."""
    k = _kernels(a, b)
    if k is not None:
        n = a.lo.shape[0]
        hi, lo = _out(n)
        over = np.empty(n, dtype=np.bool_)
        k.mul_rows(*_w(a), *_w(b), hi, lo, over, n)
        return I128(hi.view(np.int64), lo), over
    sign = is_negative(a) ^ is_negative(b)
    la, lb = _limbs(absolute(a)), _limbs(absolute(b))
    acc = [np.zeros_like(a.lo) for _ in range(9)]
    for i in range(4):
        for j in range(4):
            p = la[i] * lb[j]  # < 2^64: both limbs are < 2^32
            acc[i + j] = acc[i + j] + (p & _M32)
            acc[i + j + 1] = acc[i + j + 1] + (p >> _S32)
    limbs = _normalise(acc)
    over = (limbs[4] | limbs[5] | limbs[6] | limbs[7] | limbs[8]) != 0
    over = over | ((limbs[3] >> np.uint64(31)) != 0)  # magnitude >= 2^127
    mag = _from_limbs(limbs[:4])
    return where(sign, neg(mag), mag), over


def mul_pow10(a: I128, k: int) -> tuple[I128, np.ndarray]:
    """``mul(a, const(10^k))`` for a public ``0 <= k <= 38``: the same words and flag."""
    if k == 0:
        return a, np.zeros(a.lo.shape, dtype=bool)
    kern = _kernels(a)
    if kern is not None and 0 < k <= 38:
        n = a.lo.shape[0]
        hi, lo = _out(n)
        over = np.empty(n, dtype=np.bool_)
        kern.mul_const_rows(*_w(a), *_words(10 ** k), hi, lo, over, n)
        return I128(hi.view(np.int64), lo), over
    return mul(a, const(10 ** k, a.lo.shape[0]))


def divmod_small(mag: I128, d: int) -> tuple[I128, np.ndarray]:
    """Quotient and remainder of a non-negative number by a public ``0 < d < 2^32``."""
    k = _kernels(mag)
    if k is not None and 0 < d < 1 << 32:
        n = mag.lo.shape[0]
        hi, lo = _out(n)
        rem = np.empty(n, dtype=np.uint64)
        k.divmod_small_rows(*_w(mag), np.uint64(d), *k.div_magic(d), hi, lo, rem, n)
        return I128(hi.view(np.int64), lo), rem
    dd = np.uint64(d)
    rem = np.zeros_like(mag.lo)
    q = []
    for limb in reversed(_limbs(mag)):
        cur = (rem << _S32) | limb  # rem < d < 2^32, so this fits in 64 bits
        q.append(cur // dd)
        rem = cur % dd
    return _from_limbs(list(reversed(q))), rem


def divmod_trunc(a: I128, b: I128) -> tuple[I128, I128, np.ndarray]:
    """Quotient (truncated towards zero) and remainder (the sign of ``a``) of ``a / b``, and
    an overflow flag (``MIN / -1``); rows with ``b == 0`` give 0 (the caller flags them).

    Restoring long division over all 128 bits of the magnitudes: every row takes the same
    128 steps of element-wise shifts, compares and selects.
    """
    n = a.lo.shape[0]
    zero = equal(b, const(0, n))
    ua, ub = absolute(a), absolute(where(zero, const(1, n), b))  # magnitudes (2^127 fits unsigned)
    a_hi, b_hi, b_lo = ua.hi.view(np.uint64), ub.hi.view(np.uint64), ub.lo
    one = np.uint64(1)
    r_hi, r_lo = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    q_hi, q_lo = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    for bit in range(127, -1, -1):
        src, k = (a_hi, bit - 64) if bit >= 64 else (ua.lo, bit)
        r_hi = (r_hi << one) | (r_lo >> np.uint64(63))
        r_lo = (r_lo << one) | ((src >> np.uint64(k)) & one)
        ge = (r_hi > b_hi) | ((r_hi == b_hi) & (r_lo >= b_lo))
        borrow = (r_lo < b_lo).astype(np.uint64)
        r_hi = select(ge, r_hi - b_hi - borrow, r_hi)
        r_lo = select(ge, r_lo - b_lo, r_lo)
        if bit >= 64:
            q_hi = q_hi | (ge.astype(np.uint64) << np.uint64(bit - 64))
        else:
            q_lo = q_lo | (ge.astype(np.uint64) << np.uint64(bit))
    q, r = I128(q_hi.view(np.int64), q_lo), I128(r_hi.view(np.int64), r_lo)
    neg_a, neg_b = is_negative(a), is_negative(b)
    q = where(neg_a != neg_b, neg(q), q)
    r = where(neg_a, neg(r), r)
    over = equal(a, const(MIN, n)) & equal(b, const(-1, n))
    z = const(0, n)
    return where(zero, z, q), where(zero, z, r), over


def _div_pow10_trunc(mag: I128, k: int) -> I128:
    while k > 0:
        step = min(k, 9)
        mag, _ = divmod_small(mag, 10 ** step)
        k -= step
    return mag


def div_pow10(a: I128, k: int, rounding: str = "half_away") -> I128:
    """``a / 10^k`` rounded half away from zero (DuckDB's decimal rounding) or truncated,
    floored or ceiled."""
    if k == 0:
        return a
    n = a.lo.shape[0]
    negative = is_negative(a)
    mag = absolute(a)
    if rounding == "half_away":
        mag, _ = add(mag, const(5 * 10 ** (k - 1), n))
        q = _div_pow10_trunc(mag, k)
        return where(negative, neg(q), q)
    q = _div_pow10_trunc(mag, k)
    exact = equal(mag, mul_pow10(q, k)[0])
    if rounding == "trunc":
        return where(negative, neg(q), q)
    if rounding == "half_even":  # to the nearest; a tie to the even neighbour (ROUND_EVEN)
        rest, _ = sub(mag, mul_pow10(q, k)[0])
        half = const(5 * 10 ** (k - 1), n)
        odd = (q.lo & np.uint64(1)).astype(bool)
        up_ = ~less(rest, half) & (~equal(rest, half) | odd)
        q2 = where(up_, add(q, const(1, n))[0], q)
        return where(negative, neg(q2), q2)
    one = const(1, n)
    up = add(q, one)[0]
    if rounding == "floor":  # towards -inf: magnitude up for inexact negatives
        q2 = where(negative & ~exact, up, q)
        return where(negative, neg(q2), q2)
    if rounding == "ceil":
        q2 = where(~negative & ~exact, up, q)
        return where(negative, neg(q2), q2)
    raise ValueError(rounding)


def to_f64(a: I128) -> np.ndarray:
    """DuckDB's HUGEINT -> DOUBLE (``Hugeint::TryCast``): ``lower + upper * 2^64``, with
    the ``upper == -1`` case computed as ``-(UINT64_MAX - lower) - 1``."""
    with np.errstate(all="ignore"):
        general = as_float64(a.lo) + a.hi.astype(np.float64) * float(2 ** 64 - 1)
        minus_one = -as_float64(np.uint64(0xFFFFFFFFFFFFFFFF) - a.lo) - 1.0
    return select(a.hi == -1, minus_one, general)


def to_i64(a: I128) -> tuple[np.ndarray, np.ndarray]:
    """The value as int64 and a flag for values outside the int64 range."""
    k = _kernels(a)
    if k is not None:
        n = a.lo.shape[0]
        out, over = np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.bool_)
        k.to_i64_rows(*_w(a), out, over, n)
        return out.view(np.int64), over
    v = a.lo.view(np.int64)
    return v.copy(), a.hi != (v >> np.int64(63))


def in_bounds(a: I128, bound: int) -> np.ndarray:
    """``-bound < a < bound`` for a public positive ``bound``."""
    n = a.lo.shape[0]
    k = _kernels(a)
    if k is not None:
        ok = np.empty(n, dtype=np.bool_)
        k.in_bounds_rows(*_w(a), *_words(bound), *_words(-bound), ok, n)
        return ok
    return less(a, const(bound, n)) & less(const(-bound, n), a)
