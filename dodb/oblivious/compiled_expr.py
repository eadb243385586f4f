"""Compiled, branch-free kernels of the expression evaluator's hottest nodes (issue 26 item 5).

The numpy code of ``operators.expressions.evaluator`` is the *reference*: with the
``numpy`` backend (:mod:`.backend`) it does the work; with the default ``compiled``
backend the nodes below call these kernels, which return bit-identical values, validity
and error codes (``tests/oblivious/test_compiled_expr.py``) in one pass over the rows
instead of a dozen whole-column numpy passes and temporaries.

* :func:`logic_rows` — SQL's three-valued AND / OR with DuckDB's error rule: a side's
  error counts only on rows the other side does not decide (docs/design.md §Expressions).
* :func:`compare_i64_rows` — ``x * kx <op> y * ky`` over 64-bit lanes (integers, dates,
  timestamps, DECIMALs of at most 18 digits scaled to their common scale), with the
  operands' validity and errors folded in: a comparison node in one pass.

Rules, as in :mod:`.compiled` (same ``_OPTS``, checked by ``tests/oblivious``): data only
arrives in arrays; every scalar argument is a public size or a public operator code (AND
or OR, the comparison, the scale factors fixed by the declared types), so loop bounds
and indices are functions of sizes and loop counters; no branch on a loaded value:
truth values are 0/1 integers combined with ``&``/``|``, errors are kept by multiplying
with a 0/1 mask, the larger of two codes is an arithmetic select.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as _ix

from .compiled import _OPTS

__all__ = ["logic_rows", "compare_i64_rows", "CMP_CODES"]

# comparison operator codes (public): which truth value a node keeps
CMP_CODES = {"=": 0, "<>": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}


@njit(**_OPTS)
def _max32(x, y):
    """The larger of two error codes, without a branch (an arithmetic select)."""
    m = np.int32(0) - np.int32(x < y)
    return x ^ ((x ^ y) & m)


@njit(**_OPTS)
def logic_rows(is_and, ad, av, ae, bd, bv, be, od, ov, oe, n):
    """AND (``is_and`` 1) or OR (0) of two boolean values with validity and error codes.

    A side is *definitely false* where valid and false, *definitely true* where valid and
    true.  AND: true where both are true, known where either is definitely false or both
    are valid; a side's error counts where the other is not definitely false.  OR: the dual.
    """
    for i in range(n):
        a = np.uint8(ad[_ix(i)])
        b = np.uint8(bd[_ix(i)])
        va = np.uint8(av[_ix(i)])
        vb = np.uint8(bv[_ix(i)])
        ta, tb = va & a, vb & b
        fa, fb = va & (a ^ np.uint8(1)), vb & (b ^ np.uint8(1))
        both = va & vb
        if is_and:
            value, known = ta & tb, fa | fb | both
            keep_a, keep_b = fb ^ np.uint8(1), fa ^ np.uint8(1)
        else:
            value, known = ta | tb, ta | tb | both
            keep_a, keep_b = tb ^ np.uint8(1), ta ^ np.uint8(1)
        od[_ix(i)] = value != np.uint8(0)
        ov[_ix(i)] = known != np.uint8(0)
        oe[_ix(i)] = _max32(ae[_ix(i)] * np.int32(keep_a), be[_ix(i)] * np.int32(keep_b))


@njit(**_OPTS)
def compare_i64_rows(op, x, kx, xv, xe, y, ky, yv, ye, od, ov, oe, n):
    """``x[i] * kx <op> y[i] * ky`` (``op`` from :data:`CMP_CODES`; the public factors bring
    both sides to one scale and the caller guarantees the products fit in 64 bits); valid
    where both sides are, the larger of the two sides' error codes."""
    for i in range(n):
        a = x[_ix(i)] * kx
        b = y[_ix(i)] * ky
        lt = np.uint8(a < b)
        eq = np.uint8(a == b)
        if op == 0:
            r = eq
        elif op == 1:
            r = eq ^ np.uint8(1)
        elif op == 2:
            r = lt
        elif op == 3:
            r = lt | eq
        elif op == 4:
            r = (lt | eq) ^ np.uint8(1)
        else:
            r = lt ^ np.uint8(1)
        od[_ix(i)] = r != np.uint8(0)
        ov[_ix(i)] = (np.uint8(xv[_ix(i)]) & np.uint8(yv[_ix(i)])) != np.uint8(0)
        oe[_ix(i)] = _max32(xe[_ix(i)], ye[_ix(i)])
