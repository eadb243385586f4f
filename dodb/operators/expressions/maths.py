"""Mathematical functions: roots, logarithms, powers, trigonometry (docs/design.md §Expressions).

Every one is DOUBLE in and DOUBLE out in DuckDB (integers, DECIMALs and booleans are cast
first, :func:`~.numeric.as_f64`), and none raises: a domain error is NaN, a pole or an
overflow ±inf, as IEEE arithmetic gives them.  Each is one element-wise pass over every
slot (dummies and NULLs included), so the access pattern depends on the row count alone.

The implementations are the C library's, as DuckDB's are, called per value from compiled
loops (:mod:`dodb.oblivious.compiled_libm`): numpy's ufuncs use their own vectorised
approximations on AVX-512 CPUs, which differ in the last bits.  They match DuckDB's bit for
bit on the values tested (``tests/operators/test_maths.py``), with two exceptions handled
here: a logarithm to a base (DuckDB divides base-10 logarithms) and ``even``.  ``sqrt``
(correctly rounded by IEEE 754), ``degrees`` and ``radians`` stay numpy's.
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from . import int128 as i128
from .functions import ANON, handles
from .numeric import Unsupported, as_f64
from .value import Val
from ...oblivious.select import all_along, select

__all__: list[str] = []

_NUMERIC = ("int", "dec", "float", "bool")


def _libm(name: str):
    """The C library's ``name`` over a column of doubles (one compiled call per slot)."""
    def apply(x: np.ndarray) -> np.ndarray:
        from ...oblivious.compiled_libm import UNARY_CODES, libm_unary  # numba loads on first use

        x = np.ascontiguousarray(x, dtype=np.float64)
        out = np.empty_like(x)
        libm_unary(UNARY_CODES[name], x.reshape(-1), out.reshape(-1), x.size)  # lint: public the function code
        return out
    return apply


def _libm2(name: str):
    """The C library's two-argument ``name`` (``pow``, ``atan2``) over columns of doubles."""
    def apply(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        from ...oblivious.compiled_libm import BINARY_CODES, libm_binary

        x, y = (np.ascontiguousarray(a, dtype=np.float64).reshape(-1) for a in np.broadcast_arrays(x, y))
        out = np.empty_like(x)
        libm_binary(BINARY_CODES[name], x, y, out, x.size)  # lint: public the function code
        return out
    return apply


_TAN = _libm("tan")
_UNARY = {
    exp.Sqrt: np.sqrt, exp.Cbrt: _libm("cbrt"), exp.Ln: _libm("log"), exp.Exp: _libm("exp"),
    exp.Sin: _libm("sin"), exp.Cos: _libm("cos"), exp.Tan: _TAN, exp.Cot: lambda x: 1.0 / _TAN(x),
    exp.Asin: _libm("asin"), exp.Acos: _libm("acos"), exp.Atan: _libm("atan"),
    exp.Sinh: _libm("sinh"), exp.Cosh: _libm("cosh"), exp.Tanh: _libm("tanh"),
    exp.Asinh: _libm("asinh"), exp.Acosh: _libm("acosh"), exp.Atanh: _libm("atanh"),
    exp.Degrees: np.degrees, exp.Radians: np.radians,
}
_LOG10, _LOG2 = _libm("log10"), _libm("log2")


def _number(ev, node, what: str) -> Val:
    v = ev.ev(node)
    if v.type.kind not in _NUMERIC + ("null",):
        raise Unsupported(f"{what} of {v.type}")
    return v


def _double(ev, node, args: list, fn) -> Val:
    """``fn`` of the arguments as doubles, NULL where any is NULL (DuckDB's default)."""
    rt = ev.type_of(node)
    vals = [_number(ev, a, type(node).__name__.upper()) for a in args]
    err = np.maximum.reduce([v.err for v in vals])
    if rt.kind != "float":
        raise Unsupported(f"{type(node).__name__.upper()} giving {rt}")
    kinds = [v.type.kind for v in vals]
    if "null" in kinds:  # an untyped NULL argument: NULL on every row
        return ev.null_of(rt, err)
    valid = all_along(np.stack([v.valid for v in vals]), 0)
    with np.errstate(all="ignore"):  # NaN and ±inf are DuckDB's answers, not errors
        data = fn(*[as_f64(v) for v in vals])
    return Val(rt, np.asarray(data, dtype=np.float64), valid, err)


def _unary(ev, node):
    return _double(ev, node, [node.this], _UNARY.get(type(node)))


for _cls in _UNARY:
    handles(_cls)(_unary)


@handles(exp.Pow)
def _ev_pow(ev, node):
    return _double(ev, node, [node.this, node.expression], _libm2("pow"))


@handles(exp.Atan2)
def _ev_atan2(ev, node):
    return _double(ev, node, [node.this, node.expression], _libm2("atan2"))


@handles(exp.Log)
def _ev_log(ev, node):
    """LOG(x) is base 10; DuckDB's LOG(b, x) is log10(x) / log10(b).  sqlglot parses log2(x)
    and LOG(2, x) alike, and DuckDB answers them differently in the last bit (log2 against
    the quotient): the constant base 2 takes log2, the more common spelling, so LOG(2, x)
    may differ from DuckDB's by one unit in the last place."""
    if node.expression is None:  # LOG(x): base 10
        return _double(ev, node, [node.this], _LOG10)
    base = node.this
    if isinstance(base, exp.Literal) and base.is_number and float(base.this) == 2.0:
        return _double(ev, node, [node.expression], _LOG2)
    return _double(ev, node, [base, node.expression], lambda b, x: _LOG10(x) / _LOG10(b))


def _even(x: np.ndarray) -> np.ndarray:
    """Away from zero to the next even integer (DuckDB: round away, then one more if odd)."""
    r = select(x >= 0, np.ceil(x), np.floor(x))
    return select(np.fmod(r, 2) != 0, r + np.sign(x), r)  # r itself where even: even(-0.0) is -0.0


ANON["EVEN"] = lambda ev, node: _double(ev, node, list(node.expressions), _even)


def _flag(ev, node, arg, fn) -> Val:
    """ISNAN / ISINF / ISFINITE: a BOOLEAN of a number (integers and DECIMALs are finite)."""
    rt = ev.type_of(node)
    v = _number(ev, arg, type(node).__name__.upper() if not isinstance(node, exp.Anonymous) else str(node.this))
    if v.type.kind == "null":
        return ev.null_of(rt, v.err)
    with np.errstate(all="ignore"):
        data = fn(as_f64(v)) if v.type.kind == "float" else fn(np.zeros(v.n))
    return Val(rt, np.asarray(data, dtype=bool), v.valid, v.err)


handles(exp.IsNan)(lambda ev, node: _flag(ev, node, node.this, np.isnan))
handles(exp.IsInf)(lambda ev, node: _flag(ev, node, node.this, np.isinf))
ANON["ISFINITE"] = lambda ev, node: _flag(ev, node, node.expressions[0], np.isfinite)


# DuckDB's fmod is the floored remainder, with 0.0 (never -0.0) for an exact multiple
ANON["FMOD"] = lambda ev, node: _double(ev, node, list(node.expressions), lambda x, y: np.mod(x, y) + 0.0)


def _nextafter(ev, node) -> Val:
    if ev.type_of(node).bits != 64:
        raise Unsupported("NEXTAFTER of FLOAT")  # a float32 step is not a float64 one
    return _double(ev, node, list(node.expressions), np.nextafter)


ANON["NEXTAFTER"] = _nextafter


def _signbit(ev, node) -> Val:
    """SIGNBIT: the sign bit of a DOUBLE (−0.0 has it, NaN as stored), of an integer or DECIMAL x < 0."""
    rt = ev.type_of(node)
    v = _number(ev, node.expressions[0], "SIGNBIT")
    if v.type.kind == "null":
        return ev.null_of(rt, v.err)
    if v.type.kind == "float":
        data = np.signbit(v.data)
    elif v.type.kind == "dec":
        data = i128.is_negative(v.data)
    else:
        data = np.asarray(v.data) < 0
    return Val(rt, np.asarray(data, dtype=bool), v.valid, v.err)


ANON["SIGNBIT"] = _signbit


def _gcd_lcm(lcm: bool):
    """GCD / LCM of integers as BIGINT, on unsigned magnitudes (numpy's element-wise Euclid:
    one pass over every slot).  DuckDB's errors: a GCD of 2^63 (the least BIGINT's absolute
    value); an LCM with the least BIGINT and a non-zero other, or beyond BIGINT."""
    name = "LCM" if lcm else "GCD"

    def handler(ev, node) -> Val:
        rt = ev.type_of(node)
        a, b = (_number(ev, x, name) for x in node.expressions[:2])
        if len(node.expressions) != 2 or rt.kind != "int" or {a.type.kind, b.type.kind} != {"int"}:
            raise Unsupported(f"{name} of {a.type} and {b.type}")  # lint: public types only
        valid, err = a.valid & b.valid, np.maximum(a.err, b.err)
        x, y = np.asarray(a.data, np.int64), np.asarray(b.data, np.int64)
        ux = np.abs(x).view(np.uint64)  # |least BIGINT| = 2^63 wraps to itself: right as unsigned
        uy = np.abs(y).view(np.uint64)
        g = np.gcd(ux, uy)
        top = np.uint64(1 << 63)
        if not lcm:
            bad, message = g == top, "Out of Range Error: Overflow on abs"
            return Val(rt, select(bad, 0, g).astype(np.int64), valid, np.maximum(err, ev.fail(bad & valid, message)))
        zero = (ux == 0) | (uy == 0)
        q = ux // select(g == 0, np.uint64(1), g)
        limit = np.uint64((1 << 63) - 1) // select(q == 0, np.uint64(1), q)
        over = ~zero & (uy > limit)
        least = ~zero & ((ux == top) | (uy == top))
        res = select(zero | over | least, np.uint64(0), q * select(over, np.uint64(0), uy))
        err = np.maximum(err, ev.fail(least & valid, "Out of Range Error: Overflow on abs"))
        err = np.maximum(err, ev.fail(over & ~least & valid, "Out of Range Error: lcm value is out of range"))
        return Val(rt, res.astype(np.int64), valid, err)
    return handler


ANON["GCD"], ANON["LCM"] = _gcd_lcm(False), _gcd_lcm(True)
