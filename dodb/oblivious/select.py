"""``np.where(cond, a, b)`` without a branch per element (docs/design.md §Address audit).

numpy's ``where`` copies each element with a conditional jump on ``cond`` (``PyArray_Where``
reads ``a[i]`` or ``b[i]``, not both), so on a private condition both the branch and the
address it reads depend on the data: the address audit (``dodb audit --addresses``)
measured it.  :func:`select` gives the same values — the same dtype (numpy's promotion of
``a`` and ``b``), shape (broadcast) and bits, NaNs and signed zeros included — from
whole-array bitwise passes: ``b ^ ((a ^ b) & mask)`` with ``mask`` all ones where ``cond``
holds, over the elements' bits viewed as unsigned words.  Every element of ``a``, ``b`` and
``cond`` is read and every output element written whatever ``cond`` holds.

>>> import numpy as np
>>> select(np.array([True, False, True]), np.array([1.5, 2.5, -0.0]), 7)
array([ 1.5,  7. , -0. ])
>>> select(np.array([[True], [False]]), np.array([b"ab", b"cd"]), b"zz").tolist()
[[b'ab', b'cd'], [b'zz', b'zz']]
"""
from __future__ import annotations

import numpy as np

__all__ = ["select", "floor_div", "floor_mod", "as_float64", "any_along", "all_along"]

_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def select(cond, a, b) -> np.ndarray:
    """``np.where(cond, a, b)`` (three arguments) as branch-free bitwise passes."""
    fast = _same_shape_words(cond, a, b)
    if fast is not None:
        return fast
    cond = np.asarray(cond)
    # Python numbers stay weak in the promotion (numpy's rules for where); anything else
    # (bytes, str, lists) is made an array first
    a = a if isinstance(a, (np.ndarray, np.generic, int, float, complex)) else np.asarray(a)
    b = b if isinstance(b, (np.ndarray, np.generic, int, float, complex)) else np.asarray(b)
    dtype = np.result_type(a, b)
    if dtype.kind == "O":  # Python objects: only public values are held this way
        return np.where(cond, a, b)
    a = np.asarray(a, dtype=dtype)
    b = np.asarray(b, dtype=dtype)
    shape = np.broadcast_shapes(cond.shape, a.shape, b.shape)
    if cond.dtype != np.bool_:
        cond = cond != 0
    if dtype == np.bool_:
        return np.asarray((cond & a) | (~cond & b))
    size = dtype.itemsize
    word = _WORDS.get(size)
    if word is not None and dtype.kind != "V":
        ua = np.broadcast_to(a, shape).view(word)
        ub = np.broadcast_to(b, shape).view(word)
        mask = np.negative(np.broadcast_to(cond, shape).astype(word))
    else:  # fixed-width bytes, wide floats, structured: byte by byte along a last axis
        ua = np.broadcast_to(a, shape)[..., None].view(np.uint8)
        ub = np.broadcast_to(b, shape)[..., None].view(np.uint8)
        mask = np.negative(np.broadcast_to(cond, shape).astype(np.uint8))[..., None]
    out = np.bitwise_xor(ua, ub)
    out = out & mask
    out ^= ub
    if word is None or dtype.kind == "V":
        out = np.ascontiguousarray(out).view(dtype)[..., 0]
    else:
        out = out.view(dtype)
    return out if shape else np.asarray(out)


def _same_shape_words(cond, a, b) -> np.ndarray | None:
    """The common case with less overhead (most calls are on short columns): a boolean
    ``cond`` and an array ``a`` of its shape, ``b`` an array like ``a`` or a number that
    keeps ``a``'s dtype; ``None`` otherwise."""
    if type(cond) is not np.ndarray or type(a) is not np.ndarray or cond.dtype != np.bool_ \
            or a.shape != cond.shape or a.dtype.kind not in "iufmM":
        return None
    word = _WORDS.get(a.dtype.itemsize)
    if word is None:
        return None
    if type(b) is np.ndarray:
        if b.dtype != a.dtype or b.shape != a.shape:
            return None
    elif isinstance(b, (int, float, np.generic)) and not isinstance(b, bool) and np.result_type(a, b) == a.dtype:
        b = np.array(b, dtype=a.dtype)
    else:
        return None
    ub = b.view(word)
    out = np.bitwise_xor(a.view(word), ub)
    out = out & np.negative(cond, dtype=word)
    out ^= ub
    return out.view(a.dtype)


def floor_div(x, k):
    """``x // k`` (numpy's floor division) for signed integers and a constant positive ``k``,
    with no branch on the values: numpy's signed division fixes each quotient's sign in a
    scalar loop on short arrays and array tails (measured by ``dodb audit --addresses``:
    TPC-H Q7's EXTRACT(YEAR …) on a few thousand rows), so the magnitude is divided as an
    unsigned number (branch-free there) and the floor applied by selects.  Other ``x`` or
    ``k`` use numpy's ``//``.

    >>> import numpy as np
    >>> floor_div(np.array([-9, -8, -1, 0, 7, 8]), 4).tolist()
    [-3, -2, -1, 0, 1, 2]
    """
    x = np.asarray(x)
    if x.dtype.kind != "i" or not isinstance(k, (int, np.integer)) or k <= 0:
        return x // k
    w = x.astype(np.int64)
    sign = w >> np.int64(63)  # 0 or -1
    mag = ((w ^ sign) - sign).view(np.uint64)  # |x|, INT64_MIN as 2^63
    q = mag // np.uint64(k)
    rest = mag - q * np.uint64(k)
    q = q.view(np.int64)
    return select(sign < 0, -(q + (rest != 0)), q).astype(x.dtype, copy=False)


def floor_mod(x, k):
    """``x % k`` (numpy's floor modulo) for signed integers and a constant non-zero ``k``,
    without numpy's per-element sign fix-up branch (measured by the address audit):
    ``x - floor_div(x, k) * k`` is the same floor modulo.  Unsigned and floating ``x`` use
    numpy's ``%`` (branch-free there).

    >>> import numpy as np
    >>> floor_mod(np.array([-7, -1, 0, 5, 12]), 4).tolist()
    [1, 3, 0, 1, 0]
    """
    x = np.asarray(x)
    if x.dtype.kind != "i":
        return x % k
    return x - floor_div(x, k) * k


def as_float64(x: np.ndarray) -> np.ndarray:
    """``x.astype(np.float64)`` with no branch on the values.

    x86-64 before AVX-512 has no unsigned 64-bit conversion, and numpy's ``astype`` of
    ``uint64`` branches per element on the top bit (measured by ``dodb audit --addresses``).
    Here both 32-bit halves convert exactly through int64 and ``hi·2^32`` is exact, so the
    one addition rounds once, to the same nearest double.  Other dtypes convert as usual.

    >>> as_float64(np.array([2**64 - 1, 2**63 + 1, 3], np.uint64)).tolist()
    [1.8446744073709552e+19, 9.223372036854776e+18, 3.0]
    """
    x = np.asarray(x)
    if x.dtype != np.uint64:  # lint: public the declared type
        return x.astype(np.float64)
    high = (x >> np.uint64(32)).view(np.int64).astype(np.float64) * 4294967296.0
    return high + (x & np.uint64(0xFFFFFFFF)).view(np.int64).astype(np.float64)


def any_along(m, axis: int) -> np.ndarray:
    """``m.any(axis=axis)`` of a bool array without numpy's short cut.

    numpy's bool reduction stops at the first true element, a branch per element on the
    value (measured by ``dodb audit --addresses``: one per row of ``m.any(axis=1)``); an OR
    of the bytes reads every element.

    >>> any_along(np.array([[True, False], [False, False]]), 1).tolist()
    [True, False]
    """
    return np.bitwise_or.reduce(np.asarray(m, dtype=bool).view(np.uint8), axis=axis) != 0


def all_along(m, axis: int) -> np.ndarray:
    """``m.all(axis=axis)`` (or ``np.logical_and.reduce(m)`` along axis 0) without a short cut.

    >>> all_along(np.array([[True, True], [True, False]]), 1).tolist()
    [True, False]
    """
    return np.bitwise_or.reduce((~np.asarray(m, dtype=bool)).view(np.uint8), axis=axis) == 0
