"""One compiled pass for a whole predicate tree: a block interpreter (issue 26 item 5).

The evaluator (``operators.expressions``) runs node by node over whole columns, so a
WHERE of five comparisons and four ANDs streams a dozen full-length arrays through memory
and broadcasts every constant to a column.  :func:`run_program` evaluates a *program* —
the tree's comparisons, AND/OR/NOT, IS NULL, IN and BETWEEN, lowered by
``operators.expressions.program`` — over blocks of :data:`.program_ops.BLOCK` rows: each instruction
loops over the block in registers that stay in cache, reading the leaf columns once and
writing only the root's ``(value, valid, error)``.  Constants are immediates.

Public and private.  The program (an ``int64`` matrix of opcodes, register numbers, leaf
slots, scale factors and constants) is built from the query's expression and the
declared types only, so it is public like a scalar argument: the IR lint
(``tests/oblivious/ir_lint.py``) treats loads from the parameter named ``program`` as
public, and only those.  Every branch and every address is a function of the program, the
block bounds and the loop counters; values are combined with ``&``/``|``, 0/1 masks and
arithmetic selects, as in :mod:`.compiled_expr`; each instruction gives the bits of the
evaluator's numpy node (``tests/oblivious/test_compiled_program.py`` checks the whole
evaluator against the numpy reference on every slot).

Instructions (one row of ``program``, :data:`.program_ops.WIDTH` fields, ``op, dst, ...``; the
opcodes are :data:`.program_ops.OPS`):

* ``LEAF64 dst slot has_err`` / ``LEAF32 dst slot``: a 64- or 32-bit leaf lane, its validity
  and (64-bit leaves that are not columns) its error codes;
* ``CONST dst value valid``: a public 64-bit constant, or NULL;
* ``CMP dst code a ka b kb``: ``a*ka <code> b*kb`` (:data:`.program_ops.CMP_CODES`), valid
  where both are, the larger error;
* ``LOGIC dst is_and a b``: SQL AND/OR with DuckDB's error rule — ``logic_rows``;
* ``NOT dst a``; ``ISNULL dst a``;
* ``BOTH dst a b``: BETWEEN's conjunction of its two comparisons (no short-circuit: every
  operand's error counts);
* ``IN_START dst a`` / ``IN_ITEM dst e`` / ``IN_END dst``: an IN list from the ``=``
  comparisons ``e`` of its items;
* ``STR_EQ dst slot row length``: a string leaf equals the public constant ``sconst[row]``
  (``compare_const_rows``' equality); ``STR_VALID dst slot``: a string leaf's validity.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as _ix

from .compiled import _OPTS
from .compiled_expr import max32
from .compiled_strings import byte_step
from .program_ops import BLOCK

__all__ = ["run_program"]

_ONE8 = np.uint8(1)


@njit(**_OPTS)
def run_program(program, l64, v64, e64, l32, v32, s8, slen, sval, sconst, od, ov, oe, data, valid, err,
                root, start, stop):
    """Run ``program`` on rows ``[start, stop)``; the root register's value, validity and error
    codes go to ``od``, ``ov``, ``oe``.  ``l64``/``v64``/``e64``, ``l32``/``v32`` and
    ``s8``/``slen``/``sval`` are the leaf slots (unused slots hold one-element arrays the
    program never names); ``sconst`` holds the string constants, one per row; ``data``,
    ``valid``, ``err`` are the registers, ``(registers, BLOCK)`` each, passed in (an array
    allocated in the kernel has its address loaded from the heap)."""
    wc = sconst.shape[1]
    for lo in range(start, stop, BLOCK):
        m = min(BLOCK, stop - lo)
        for j in range(program.shape[0]):
            op = program[j, 0]  # lint: public the program's fields
            d = program[j, 1]  # lint: public the program's fields
            if op == 0:  # LEAF64
                x, xv, xe = l64[program[j, 2]], v64[program[j, 2]], e64[program[j, 2]]  # lint: public the program's fields
                keep = np.int32(program[j, 3])  # lint: public the program's fields
                for i in range(m):
                    r = _ix(lo + i)
                    data[d, i] = x[r]
                    valid[d, i] = np.uint8(xv[r])
                    err[d, i] = xe[_ix((lo + i) * keep)] * keep
            elif op == 1:  # LEAF32
                y, yv = l32[program[j, 2]], v32[program[j, 2]]  # lint: public the program's fields
                for i in range(m):
                    r = _ix(lo + i)
                    data[d, i] = np.int64(y[r])
                    valid[d, i] = np.uint8(yv[r])
                    err[d, i] = np.int32(0)
            elif op == 2:  # CONST
                value, known = program[j, 2], np.uint8(program[j, 3])  # lint: public the program's fields
                for i in range(m):
                    data[d, i] = value
                    valid[d, i] = known
                    err[d, i] = np.int32(0)
            elif op == 3:  # CMP: which of (less, equal, greater) the operator keeps, as 0/1 masks
                code, a, ka = program[j, 2], program[j, 3], program[j, 4]  # lint: public the program's fields
                b, kb = program[j, 5], program[j, 6]  # lint: public the program's fields
                want_lt = np.uint8(code == 1) | np.uint8(code == 2) | np.uint8(code == 3)
                want_eq = np.uint8(code == 0) | np.uint8(code == 3) | np.uint8(code == 5)
                want_gt = np.uint8(code == 1) | np.uint8(code == 4) | np.uint8(code == 5)
                for i in range(m):
                    p = data[a, i] * ka
                    q = data[b, i] * kb
                    lt = np.uint8(p < q)
                    eq = np.uint8(p == q)
                    gt = (lt | eq) ^ _ONE8
                    data[d, i] = np.int64((lt & want_lt) | (eq & want_eq) | (gt & want_gt))
                    valid[d, i] = valid[a, i] & valid[b, i]
                    err[d, i] = max32(err[a, i], err[b, i])
            elif op == 4:  # LOGIC (logic_rows)
                is_and, a, b = program[j, 2], program[j, 3], program[j, 4]  # lint: public the program's fields
                conj = np.uint8(is_and != 0)
                disj = conj ^ _ONE8
                for i in range(m):
                    x1 = np.uint8(data[a, i] != 0)
                    x2 = np.uint8(data[b, i] != 0)
                    va, vb = valid[a, i], valid[b, i]
                    ta, tb = va & x1, vb & x2
                    fa, fb = va & (x1 ^ _ONE8), vb & (x2 ^ _ONE8)
                    both = va & vb
                    value = (conj & ta & tb) | (disj & (ta | tb))
                    known = (conj & (fa | fb | both)) | (disj & (ta | tb | both))
                    keep_a = (conj & (fb ^ _ONE8)) | (disj & (tb ^ _ONE8))
                    keep_b = (conj & (fa ^ _ONE8)) | (disj & (ta ^ _ONE8))
                    data[d, i] = np.int64(value)
                    valid[d, i] = known
                    err[d, i] = max32(err[a, i] * np.int32(keep_a), err[b, i] * np.int32(keep_b))
            elif op == 5:  # NOT
                a = program[j, 2]  # lint: public the program's fields
                for i in range(m):
                    data[d, i] = np.int64(np.uint8(data[a, i] == 0))
                    valid[d, i] = valid[a, i]
                    err[d, i] = err[a, i]
            elif op == 6:  # ISNULL
                a = program[j, 2]  # lint: public the program's fields
                for i in range(m):
                    data[d, i] = np.int64(valid[a, i] ^ _ONE8)
                    valid[d, i] = _ONE8
                    err[d, i] = err[a, i]
            elif op == 7:  # BOTH (BETWEEN)
                a, b = program[j, 2], program[j, 3]  # lint: public the program's fields
                for i in range(m):
                    x1 = np.uint8(data[a, i] != 0)
                    x2 = np.uint8(data[b, i] != 0)
                    va, vb = valid[a, i], valid[b, i]
                    data[d, i] = np.int64(x1 & x2)
                    valid[d, i] = (va & (x1 ^ _ONE8)) | (vb & (x2 ^ _ONE8)) | (va & vb)
                    err[d, i] = max32(err[a, i], err[b, i])
            elif op == 8:  # IN_START: no hit yet; "valid" holds the unknown flag until IN_END
                a = program[j, 2]  # lint: public the program's fields
                for i in range(m):
                    data[d, i] = np.int64(0)
                    valid[d, i] = valid[a, i] ^ _ONE8
                    err[d, i] = err[a, i]
            elif op == 9:  # IN_ITEM
                e = program[j, 2]  # lint: public the program's fields
                for i in range(m):
                    hit = np.uint8(data[e, i] != 0) & valid[e, i]
                    data[d, i] = data[d, i] | np.int64(hit)
                    valid[d, i] = valid[d, i] | (valid[e, i] ^ _ONE8)
                    err[d, i] = max32(err[d, i], err[e, i])
            elif op == 10:  # IN_END: valid where a hit or nothing unknown
                for i in range(m):
                    valid[d, i] = np.uint8(data[d, i] != 0) | (valid[d, i] ^ _ONE8)
            elif op == 11:  # STR_EQ
                s, crow, lc = program[j, 2], program[j, 3], program[j, 4]  # lint: public the program's fields
                mat, lens, sv = s8[s], slen[s], sval[s]  # lint: public the program's fields
                wa = mat.shape[1]
                wcut = min(wa, lc)
                for i in range(m):
                    r = _ix(lo + i)
                    x_len = lens[r]
                    lt = np.uint8(x_len < lc)
                    eq = np.uint8(x_len == lc)
                    for k in range(lc - 1, wcut - 1, -1):  # past the lane's width: zeros
                        lt, eq = byte_step(np.uint8(0), sconst[crow, min(k, wc - 1)], np.uint8(k < x_len), lt, eq)
                    for k in range(wcut - 1, -1, -1):
                        lt, eq = byte_step(mat[r, k], sconst[crow, k], np.uint8(k < x_len), lt, eq)
                    data[d, i] = np.int64(eq)
                    valid[d, i] = np.uint8(sv[r])
                    err[d, i] = np.int32(0)
            else:  # STR_VALID
                sv = sval[program[j, 2]]  # lint: public the program's fields
                for i in range(m):
                    data[d, i] = np.int64(0)
                    valid[d, i] = np.uint8(sv[_ix(lo + i)])
                    err[d, i] = np.int32(0)
        for i in range(m):
            r = _ix(lo + i)
            od[r] = data[root, i] != 0
            ov[r] = valid[root, i] != 0
            oe[r] = err[root, i]
