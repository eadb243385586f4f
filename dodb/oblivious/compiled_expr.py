"""Compiled, branch-free kernels of the expression evaluator's hottest nodes (issue 26 item 5).

The numpy code of ``operators.expressions.evaluator`` is the *reference*: with the
``numpy`` backend (:mod:`.backend`) it does the work; with the default ``compiled``
backend the nodes below call these kernels, which return bit-identical values, validity
and error codes (``tests/oblivious/test_compiled_expr.py``) in one pass over the rows
instead of a dozen whole-column numpy passes and temporaries.

* :func:`logic_rows` — SQL's three-valued AND / OR with DuckDB's error rule: a side's
  error counts only on rows the other side does not decide (docs/design.md §Expressions).
* :func:`max32`, shared with :mod:`.compiled_program`, where comparisons over 64-bit
  lanes run (a comparison is a predicate program of its own).

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

__all__ = ["logic_rows", "max32"]



@njit(**_OPTS)
def max32(x, y):
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
        oe[_ix(i)] = max32(ae[_ix(i)] * np.int32(keep_a), be[_ix(i)] * np.int32(keep_b))
