"""The C library's mathematical functions over whole columns, called per value from compiled
loops (docs/design.md §Expressions, mathematical functions).

DuckDB computes ``ln``, ``exp``, ``cbrt``, ``pow``, the trigonometric functions and their
inverses with the C library's scalar functions (``std::log`` and the like).  numpy's ufuncs
call the same functions only on CPUs without AVX-512: with it, numpy 2 dispatches to its own
vectorised approximations, which differ from the C library's in the last bits — on an
AVX-512 machine 25 of ``tests/operators/test_maths.py``'s bit-exact cases differed from
DuckDB's.  The kernels here declare the C library's symbols to numba
(``types.ExternalFunction``), so every value is the C library's on every CPU, and the
compiled code is cached like the other kernels (:mod:`.kernel_cache`).

Function codes are public (the query's function, fixed by the plan); data arrives only in
arrays, and each loop calls the function once per slot, dummies included, in slot order.
What the functions themselves do inside is the C library's: they branch on their argument
(docs/threat-model.md §Measured and modelled says so, and the address audit reports it).
"""
from __future__ import annotations

from numba import njit, types
from numba import uint64 as _ix

from .compiled import _OPTS

__all__ = ["UNARY_CODES", "BINARY_CODES", "libm_unary", "libm_binary"]

_F1 = types.float64(types.float64)
_F2 = types.float64(types.float64, types.float64)

# public function codes (the order of the branches below)
UNARY_CODES = {name: code for code, name in enumerate(
    ("cbrt", "log", "log10", "log2", "exp", "sin", "cos", "tan", "asin", "acos", "atan",
     "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"))}
BINARY_CODES = {"pow": 0, "atan2": 1}

_cbrt = types.ExternalFunction("cbrt", _F1)
_log = types.ExternalFunction("log", _F1)
_log10 = types.ExternalFunction("log10", _F1)
_log2 = types.ExternalFunction("log2", _F1)
_exp = types.ExternalFunction("exp", _F1)
_sin = types.ExternalFunction("sin", _F1)
_cos = types.ExternalFunction("cos", _F1)
_tan = types.ExternalFunction("tan", _F1)
_asin = types.ExternalFunction("asin", _F1)
_acos = types.ExternalFunction("acos", _F1)
_atan = types.ExternalFunction("atan", _F1)
_sinh = types.ExternalFunction("sinh", _F1)
_cosh = types.ExternalFunction("cosh", _F1)
_tanh = types.ExternalFunction("tanh", _F1)
_asinh = types.ExternalFunction("asinh", _F1)
_acosh = types.ExternalFunction("acosh", _F1)
_atanh = types.ExternalFunction("atanh", _F1)
_pow = types.ExternalFunction("pow", _F2)
_atan2 = types.ExternalFunction("atan2", _F2)


@njit(**_OPTS)
def libm_unary(code, X, OUT, n):
    """``OUT[i] = f(X[i])`` for every ``i < n``, ``f`` the C library's function ``code``
    (:data:`UNARY_CODES`).  One branch on the public code, then one call per slot."""
    if code == 0:
        for i in range(n):
            OUT[_ix(i)] = _cbrt(X[_ix(i)])
    elif code == 1:
        for i in range(n):
            OUT[_ix(i)] = _log(X[_ix(i)])
    elif code == 2:
        for i in range(n):
            OUT[_ix(i)] = _log10(X[_ix(i)])
    elif code == 3:
        for i in range(n):
            OUT[_ix(i)] = _log2(X[_ix(i)])
    elif code == 4:
        for i in range(n):
            OUT[_ix(i)] = _exp(X[_ix(i)])
    elif code == 5:
        for i in range(n):
            OUT[_ix(i)] = _sin(X[_ix(i)])
    elif code == 6:
        for i in range(n):
            OUT[_ix(i)] = _cos(X[_ix(i)])
    elif code == 7:
        for i in range(n):
            OUT[_ix(i)] = _tan(X[_ix(i)])
    elif code == 8:
        for i in range(n):
            OUT[_ix(i)] = _asin(X[_ix(i)])
    elif code == 9:
        for i in range(n):
            OUT[_ix(i)] = _acos(X[_ix(i)])
    elif code == 10:
        for i in range(n):
            OUT[_ix(i)] = _atan(X[_ix(i)])
    elif code == 11:
        for i in range(n):
            OUT[_ix(i)] = _sinh(X[_ix(i)])
    elif code == 12:
        for i in range(n):
            OUT[_ix(i)] = _cosh(X[_ix(i)])
    elif code == 13:
        for i in range(n):
            OUT[_ix(i)] = _tanh(X[_ix(i)])
    elif code == 14:
        for i in range(n):
            OUT[_ix(i)] = _asinh(X[_ix(i)])
    elif code == 15:
        for i in range(n):
            OUT[_ix(i)] = _acosh(X[_ix(i)])
    else:
        for i in range(n):
            OUT[_ix(i)] = _atanh(X[_ix(i)])


@njit(**_OPTS)
def libm_binary(code, X, Y, OUT, n):
    """``OUT[i] = f(X[i], Y[i])`` for every ``i < n``: ``pow`` (code 0) or ``atan2`` (1)."""
    if code == 0:
        for i in range(n):
            OUT[_ix(i)] = _pow(X[_ix(i)], Y[_ix(i)])
    else:
        for i in range(n):
            OUT[_ix(i)] = _atan2(X[_ix(i)], Y[_ix(i)])
