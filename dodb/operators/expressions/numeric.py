"""Numeric kernels with DuckDB's semantics: arithmetic in the result type with overflow
flags, casts between BOOLEAN/integers/DECIMAL/DOUBLE, comparisons and rounding.
See docs/design.md §Expressions.

Every function returns the result lanes and a boolean *failure* mask (where DuckDB
would raise); the caller turns failures into error codes and masks them by validity.
All work is element-wise over whole columns.
"""
from __future__ import annotations

import numpy as np

from . import int128 as i128
from .types import INT_NAME, SqlType, parse_type
from .value import Val
from ...oblivious.select import as_float64, select

__all__ = ["Unsupported", "int_range", "dec_bound", "as_i128", "as_f64", "arith", "cast_number", "compare_numbers",
           "round_half_away", "float_compare"]


class Unsupported(Exception):
    """A construct the evaluator cannot do exactly (raised at bind time, on types only)."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def int_range(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def dec_bound(t: SqlType) -> int | None:
    """DuckDB's overflow bound for a decimal result: its physical type's decimal range
    (``None`` for HUGEINT, whose bound is the 128-bit range itself)."""
    if t.huge:
        return None
    return 10 ** 18 if t.precision <= 18 else 10 ** 38


def as_i128(v: Val, scale: int) -> tuple[i128.I128, np.ndarray]:
    """An integer or decimal value as unscaled 128-bit at ``scale`` (>= its own)."""
    if v.type.kind not in ("int", "dec"):
        raise Unsupported(f"{v.type} as a DECIMAL operand")
    own = v.type.scale if v.type.kind == "dec" else 0
    if scale < own:
        raise Unsupported(f"rescaling {v.type} down implicitly")
    if v.scalar is not None:  # a public constant: rescaled once, exactly, not row by row
        r = v.scalar * 10 ** (scale - own)
        return i128.const(r, v.n), np.full(v.n, not (i128.MIN <= r < -i128.MIN))
    base = i128.from_i64(v.data) if v.type.kind == "int" else v.data
    return i128.mul_pow10(base, scale - own)


def as_f64(v: Val) -> np.ndarray:
    """DuckDB's cast to DOUBLE: ints rounded to nearest; decimals ``double(unscaled) / 10^s``."""
    k = v.type.kind
    if k == "float":
        return v.data
    if k == "int":  # UBIGINT's uint64 without numpy's branch on the top bit
        return as_float64(v.data)
    if k == "bool":
        return v.data.astype(np.float64)
    if k == "dec":
        if v.type.wide:
            raw = i128.to_f64(v.data)
        else:
            raw = v.data.lo.view(np.int64).astype(np.float64)
        return raw / float(10 ** v.type.scale)
    raise Unsupported(f"{v.type} as a DOUBLE operand")


_OP_NAME = {"+": "addition", "-": "subtraction", "*": "multiplication", "//": "division", "%": "modulo"}


def _int_arith(op: str, a: np.ndarray, b: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = int_range(bits)
    with np.errstate(all="ignore"):
        if op in ("//", "%"):
            zero = b == 0
            bb = select(zero, 1, b)
            q = a // bb
            q = q + ((a % bb != 0) & ((a < 0) != (bb < 0)))  # C truncation, as DuckDB
            r = a - q * bb
            min_by_minus_one = (a == lo) & (bb == -1)
            res = q if op == "//" else select(bb == -1, 0, r)
            over = (min_by_minus_one & (op == "//")) | (res < lo) | (res > hi)
            return res, over
        if bits < 64:  # exact in int64: operands fit in 32 bits
            res = {"+": np.add, "-": np.subtract, "*": np.multiply}[op](a, b)
            return res, (res < lo) | (res > hi)
        if op == "+":
            res = a + b
            return res, ((a ^ res) & (b ^ res)) < 0
        if op == "-":
            res = a - b
            return res, ((a ^ b) & (a ^ res)) < 0
        prod, over = i128.mul(i128.from_i64(a), i128.from_i64(b))
        res, out = i128.to_i64(prod)
        return res, over | out


def arith(op: str, a: Val, b: Val, rt: SqlType) -> tuple[object, list[tuple[np.ndarray, str]]]:
    """``a op b`` in DuckDB's result type ``rt``: lanes and (failure mask, message) pairs."""
    n = a.n
    if rt.kind == "int":
        if a.type.kind != "int" or b.type.kind != "int":
            raise Unsupported(f"{op} of {a.type} and {b.type} giving {rt}")
        res, over = _int_arith(op, a.data, b.data, rt.bits)
        if op in ("//", "%"):
            return res, [(b.data == 0, f"Invalid Input Error: Division by zero in expression (… {op} 0)"),
                         (over, f"Out of Range Error: Overflow in division of {INT_NAME[rt.bits]}")]
        return res, [(over, f"Out of Range Error: Overflow in {_OP_NAME[op]} of {INT_NAME[rt.bits]}")]
    if rt.kind == "float":
        if op not in ("+", "-", "*", "/"):
            raise Unsupported(f"{op} giving {rt}")
        x, y = as_f64(a), as_f64(b)
        with np.errstate(all="ignore"):
            res = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op](x, y)
        return res, []
    if rt.kind == "dec":
        what = "INT128" if rt.huge else f"DECIMAL({rt.precision})"
        msg = f"Out of Range Error: Overflow in {_OP_NAME.get(op, op)} of {what}"
        if op in ("//", "%"):  # HUGEINT // and %, DECIMAL %: truncated division at the result scale
            if op == "//" and not rt.huge:
                raise Unsupported(f"// giving {rt}")
            x, ox = as_i128(a, rt.scale)
            y, oy = as_i128(b, rt.scale)
            q, r, over = i128.divmod_trunc(x, y)
            zero = i128.equal(y, i128.const(0, n))
            return (q if op == "//" else r), [(zero, f"Invalid Input Error: Division by zero in expression (… {op} 0)"),
                                              (over | ox | oy, msg)]
        exact = _exact_narrow(op, a, b, rt)
        if exact is not None:  # no value of these types can overflow: no failure to compute
            return exact, []
        product = _narrow_product(op, a, b, rt)
        if product is not None:  # exact in 128 bits: only the result type's bound to check
            bound = dec_bound(rt)
            return product, [] if bound is None else [(~i128.in_bounds(product, bound), msg)]
        if op in ("+", "-"):
            x, ox = as_i128(a, rt.scale)
            y, oy = as_i128(b, rt.scale)
            res, over = (i128.add if op == "+" else i128.sub)(x, y)
        elif op == "*":
            sa = a.type.scale if a.type.kind == "dec" else 0
            sb = b.type.scale if b.type.kind == "dec" else 0
            if sa + sb != rt.scale:
                raise Unsupported(f"decimal multiplication {a.type} * {b.type} giving {rt}")
            x, ox = as_i128(a, sa)
            y, oy = as_i128(b, sb)
            res, over = i128.mul(x, y)
        else:
            raise Unsupported(f"{op} on DECIMAL")
        bound = dec_bound(rt)
        over = over | ox | oy | (~i128.in_bounds(res, bound) if bound is not None else False)
        return res, [(over, msg)]
    raise Unsupported(f"arithmetic giving {rt}")


def _digits_scale(t: SqlType) -> tuple[int, int] | None:
    """(digits, scale) of an operand whose every value is below ``10^digits`` at ``scale`` and
    fits one signed 64-bit lane: integers up to INTEGER, DECIMALs of at most 18 digits."""
    if t.kind == "int" and not t.huge and _INT_DIGITS.get(t.bits, 99) <= 18:
        return _INT_DIGITS[t.bits], 0
    if t.kind == "dec" and not t.huge and t.precision <= 18:
        return t.precision, t.scale
    return None


def _lane64(v: Val):
    """A narrow operand's unscaled values as int64 (a public constant as one number)."""
    if v.scalar is not None:
        return np.int64(v.scalar)
    return v.data if v.type.kind == "int" else v.data.lo.view(np.int64)


def _exact_narrow(op: str, a: Val, b: Val, rt: SqlType) -> i128.I128 | None:
    """``a op b`` for ``+ - *`` when the declared types alone prove the result in range, so
    DuckDB cannot fail and no overflow flag is needed (decided by types, never values):

    * ``+``/``-`` of narrow operands whose sum is below ``10^precision`` of a result of at
      most 18 digits: one int64 pass at the result's scale;
    * ``*`` of narrow operands with ``digits(a) + digits(b) <= precision``: the product is below
      ``10^precision``, and :func:`_narrow_product` is exact.

    ``None`` otherwise (the general path, with its overflow checks).

    >>> from .types import parse_type
    >>> from .value import constant
    >>> c = constant(parse_type("DECIMAL(15,2)"), "0.05", 2)
    >>> d = Val(c.type, c.data, c.valid, c.err)  # the same lanes as rows, not a constant
    >>> one = constant(parse_type("INTEGER"), 1, 2)
    >>> r = _exact_narrow("-", one, d, parse_type("DECIMAL(16,2)"))
    >>> r.lo.view("int64").tolist(), r.hi.tolist()
    ([95, 95], [0, 0])
    """
    da, db = _digits_scale(a.type), _digits_scale(b.type)
    if da is None or db is None or rt.huge or (a.scalar is not None and b.scalar is not None):
        return None
    (pa_, sa), (pb, sb) = da, db
    n = a.n
    if op in ("+", "-"):
        if rt.precision > 18 or max(pa_ - sa, pb - sb) + rt.scale + 1 > rt.precision or rt.scale < max(sa, sb):
            return None
        x = _lane64(a) * np.int64(10 ** (rt.scale - sa))
        y = _lane64(b) * np.int64(10 ** (rt.scale - sb))
        return i128.from_i64(np.broadcast_to(x + y if op == "+" else x - y, (n,)))
    if op == "*" and pa_ + pb <= rt.precision:
        return _narrow_product(op, a, b, rt)
    return None


def _narrow_product(op: str, a: Val, b: Val, rt: SqlType) -> i128.I128 | None:
    """``a * b`` of two narrow operands (:func:`_digits_scale`) at the result's scale, exactly
    (``|a·b| < 10^36``: no 128-bit overflow), for a result type that may still be too narrow
    for it — DuckDB types DECIMAL(15,2) × DECIMAL(15,2) as DECIMAL(18,4) — so the caller
    checks the result's bound, as the general path would; ``None`` for anything else."""
    da, db = _digits_scale(a.type), _digits_scale(b.type)
    if op != "*" or rt.huge or da is None or db is None or (a.scalar is not None and b.scalar is not None):
        return None
    if da[1] + db[1] != rt.scale:  # lint: public the declared scales
        return None
    n = a.n
    return i128.mul64(np.broadcast_to(_lane64(a), (n,)), np.broadcast_to(_lane64(b), (n,)))


def round_half_away(x: np.ndarray) -> np.ndarray:
    """C's ``std::round`` (half away from zero), exactly: ``x - trunc(x)`` is exact."""
    t = np.trunc(x)
    frac = np.abs(x - t)
    with np.errstate(invalid="ignore"):
        return select(frac >= 0.5, t + np.copysign(1.0, x), t)


def _two_product(a: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray]:
    """``a * b`` as ``p + e`` exactly (Dekker's product: ``p`` the rounded product, ``e`` its
    error), element-wise and branch-free; ``|a·b|`` well inside the double range."""
    split = 134217729.0  # 2^27 + 1
    ca = split * a
    ahi = ca - (ca - a)
    alo = a - ahi
    cb = split * b
    bhi = cb - (cb - b)
    blo = b - bhi
    p = a * b
    e = ((ahi * bhi - p) + ahi * blo + alo * bhi) + alo * blo
    return p, e


def round_places_exact(x: np.ndarray, places: int) -> np.ndarray:
    """DuckDB's ``round(DOUBLE, places)``, places in 1..22: the exact binary value rounded half
    away from zero to ``places`` decimals (41.15 is 41.149999…, so 41.1), then the nearest double.

    ``p = x·10^k`` is rounded; the exact product is ``p + e``.  Its side of a half-way point
    ``m + 0.5`` (exactly representable below 2^52) is ``p``'s side unless ``p`` lands on it,
    where the sign of ``e`` decides.  ``r / 10^k`` with an integer ``r`` is the correctly rounded
    decimal.

    >>> round_places_exact(np.array([41.15, 0.15, 2.675, 1.005, 0.125, -0.125, 2.5]), 2).tolist()
    [41.15, 0.15, 2.67, 1.0, 0.13, -0.13, 2.5]
    >>> round_places_exact(np.array([41.15, 0.15, -41.15]), 1).tolist()
    [41.1, 0.1, -41.1]
    """
    k = float(10 ** places)
    with np.errstate(all="ignore"):
        p, e = _two_product(np.asarray(x, dtype=np.float64), k)
        t = np.trunc(p)
        frac = np.abs(p - t)
        away = np.copysign(1.0, p)
        # on a half-way point the error decides: toward zero if it points toward zero
        tie_down = (frac == 0.5) & (e * away < 0)
        r = select((frac >= 0.5) & ~tie_down, t + away, t)
        return r / k


def _f64_to_i128(r: np.ndarray) -> i128.I128:
    """An integer-valued double (|r| < 2^127) as 128 bits, exactly."""
    r = select(np.isfinite(r), r, 0.0)
    neg = r < 0
    m = np.abs(r)
    hi = np.floor(m / 2.0 ** 64)
    lo = m - hi * 2.0 ** 64
    mag = i128.I128(hi.astype(np.int64), lo.astype(np.uint64))
    return i128.where(neg, i128.neg(mag), mag)


def cast_number(v: Val, to: SqlType) -> tuple[object, np.ndarray, str]:
    """CAST between BOOLEAN, integers, DECIMAL and DOUBLE as DuckDB does it."""
    src, n = v.type, v.n
    none = np.zeros(n, dtype=bool)
    if to.kind == "float":
        if to.bits != 64:
            raise Unsupported("FLOAT (32-bit) values")
        return as_f64(v), none, ""
    if to.kind == "bool":
        if src.kind in ("int", "bool", "float"):
            return v.data != 0, none, ""
        if src.kind == "dec":
            return ~i128.equal(v.data, i128.const(0, n)), none, ""
        raise Unsupported(f"CAST from {src} to BOOLEAN")
    if to.kind == "int":
        lo, hi = int_range(to.bits)
        msg = f"Conversion Error: Type {_src_name(src)} can't be cast because the value is out of range " \
              f"for the destination type {INT_NAME[to.bits]}"
        if src.kind == "bool":
            return v.data.astype(np.int64), none, ""
        if src.kind == "int":
            return v.data, (v.data < lo) | (v.data > hi), msg
        if src.kind == "dec":
            r = i128.div_pow10(v.data, src.scale, "half_away")
            val, out = i128.to_i64(r)
            return val, out | (val < lo) | (val > hi), msg
        if src.kind == "float":
            with np.errstate(all="ignore"):
                r = np.rint(v.data)  # nearbyint: half to even
                ok = np.isfinite(r) & (r >= float(lo)) & (r < -float(lo))
                val = select(ok, r, 0.0).astype(np.int64)
            return val, ~ok | (val > hi), msg
    if to.kind == "dec" and to.huge:
        msg = f"Conversion Error: Type {_src_name(src)} can't be cast because the value is out of range for the " \
              f"destination type INT128"
        if src.kind in ("int", "bool"):
            return i128.from_i64(v.data.astype(np.int64)), none, ""
        if src.kind == "dec":
            return i128.div_pow10(v.data, src.scale, "half_away"), none, ""
        if src.kind == "float":
            with np.errstate(all="ignore"):
                r = np.rint(v.data)  # nearbyint: half to even
                ok = np.isfinite(r) & (np.abs(r) < 2.0 ** 127)
            return _f64_to_i128(select(ok, r, 0.0)), ~ok, msg
    if to.kind == "dec":
        msg = f"Conversion Error: Could not cast value to {to.name}"
        bound = 10 ** to.precision
        if src.kind == "bool":
            r = i128.mul_pow10(i128.from_i64(v.data.astype(np.int64)), to.scale)[0]
            return r, ~i128.in_bounds(r, bound), msg
        if src.kind == "int" or (src.kind == "dec" and src.scale <= to.scale):
            r, over = as_i128(v, to.scale)
            return r, over | ~i128.in_bounds(r, bound), msg
        if src.kind == "dec":
            r = i128.div_pow10(v.data, src.scale - to.scale, "half_away")
            return r, ~i128.in_bounds(r, bound), msg
        if src.kind == "float":
            with np.errstate(all="ignore"):
                r = round_half_away(v.data * float(10 ** to.scale))
                ok = np.isfinite(r) & (np.abs(r) < float(bound))
            return _f64_to_i128(select(ok, r, 0.0)), ~ok, msg
    raise Unsupported(f"CAST from {src} to {to}")


def _src_name(t: SqlType) -> str:
    if t.huge:
        return "INT128"
    if t.kind == "int":
        return INT_NAME[t.bits]
    return {"dec": "DECIMAL", "float": "DOUBLE"}.get(t.kind, t.name)


def float_compare(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(less, equal) with DuckDB's total order on doubles: NaN equals NaN and is largest."""
    nx, ny = np.isnan(x), np.isnan(y)
    with np.errstate(invalid="ignore"):
        lt = (x < y) | (~nx & ny)
        eq = (x == y) | (nx & ny)
    return lt, eq


_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}


def common_decimal(a: SqlType, b: SqlType) -> SqlType:
    """DuckDB's common type of an integer/decimal pair (``MaxLogicalType``): the larger
    scale and the larger number of integer digits, at most 38 digits in all."""
    def digits_scale(t: SqlType) -> tuple[int, int]:
        return (_INT_DIGITS[t.bits], 0) if t.kind == "int" else (t.precision - t.scale, t.scale)

    (da, sa), (db, sb) = digits_scale(a), digits_scale(b)
    scale = max(sa, sb)
    precision = min(38, max(da, db) + scale)
    return SqlType(f"DECIMAL({precision},{scale})", "dec", 0, precision, scale)


def in_list_type(types: list[SqlType]) -> SqlType | None:
    """The one type DuckDB compares an IN list in when its operands are numbers of different
    types: DOUBLE if any is a float, else :func:`common_decimal` folded over them in order when
    any is a DECIMAL; ``None`` when the pairwise comparisons already are DuckDB's (integers
    alone, or not numbers).  NULL operands do not count.

    >>> from .types import parse_type
    >>> in_list_type([parse_type("TINYINT"), parse_type("DECIMAL(38,0)"), parse_type("DECIMAL(2,1)")]).name
    'DECIMAL(38,1)'
    >>> in_list_type([parse_type("DECIMAL(15,2)"), parse_type("DOUBLE")]).name, in_list_type([parse_type("INTEGER")])
    ('DOUBLE', None)
    """
    kinds = {t.kind for t in types} - {"null"}
    if not kinds or not kinds <= {"int", "dec", "float"} or kinds == {"int"}:
        return None
    if "float" in kinds:
        return parse_type("DOUBLE")
    numbers = [t for t in types if t.kind != "null"]
    common = numbers[0]
    for t in numbers[1:]:
        common = common_decimal(common, t)
    return common


def narrow_lanes(a: Val, b: Val) -> tuple[np.ndarray, int, np.ndarray, int] | None:
    """Two integer/DECIMAL operands as 64-bit lanes and the public factors that bring them to
    DuckDB's common scale, ``(x, kx, y, ky)``, when :func:`common_decimal` has at most 18
    digits (or both are integers): then every scaled value is below ``10^18`` in magnitude
    (exact in ``int64``) and the implicit casts cannot fail.  ``None`` otherwise (the 128-bit
    path).  Decided by the declared types only.

    >>> from .types import parse_type
    >>> from .value import constant
    >>> x, kx, y, ky = narrow_lanes(constant(parse_type("DECIMAL(15,2)"), "1.5", 1), constant(parse_type("INTEGER"), 2, 1))
    >>> (x.tolist(), kx, y.tolist(), ky)
    ([150], 1, [2], 100)
    >>> narrow_lanes(constant(parse_type("DECIMAL(15,2)"), "1.5", 1), constant(parse_type("BIGINT"), 2, 1)) is None
    True
    """
    factors = narrow_factors(a.type, b.type)
    if factors is None:
        return None

    def lane(v: Val) -> np.ndarray:
        if v.type.kind == "int":
            return v.data
        # a DECIMAL(<= 18) holds |unscaled| < 10^18: its low word, read signed, is the value
        return np.ascontiguousarray(v.data.lo).view(np.int64)

    return lane(a), factors[0], lane(b), factors[1]


def narrow_factors(ta: SqlType, tb: SqlType) -> tuple[int, int] | None:
    """The public factors of :func:`narrow_lanes`, from the declared types alone: ``(1, 1)`` for
    two integers, the powers of ten that bring two numbers to :func:`common_decimal`'s scale
    when it has at most 18 digits, else ``None``.

    >>> from .types import parse_type
    >>> narrow_factors(parse_type("DECIMAL(15,2)"), parse_type("DECIMAL(4,4)"))
    (100, 1)
    """
    ka, kb = ta.kind, tb.kind
    if ka not in ("int", "dec") or kb not in ("int", "dec") or ta.huge or tb.huge:
        return None
    if ka == "int" and kb == "int":
        return 1, 1
    t = common_decimal(ta, tb)
    if t.precision > 18:
        return None
    return 10 ** (t.scale - (ta.scale if ka == "dec" else 0)), 10 ** (t.scale - (tb.scale if kb == "dec" else 0))


def compare_numbers(a: Val, b: Val) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, str]]]:
    """(less, equal, failures) of two numbers in DuckDB's common type.

    Decimals are compared after casting both sides to :func:`common_decimal`, which
    fails (as in DuckDB) for a value with too many digits for it; failures are already
    limited to the valid rows of the operand being cast.
    """
    ka, kb = a.type.kind, b.type.kind
    if "float" in (ka, kb):
        lt, eq = float_compare(as_f64(a), as_f64(b))
        return lt, eq, []
    lanes = narrow_lanes(a, b)
    if lanes is not None:  # exact in 64 bits, and no cast can fail
        x, kx, y, ky = lanes
        x, y = x * np.int64(kx), y * np.int64(ky)
        return x < y, x == y, []
    if "dec" in (ka, kb) and ka in ("int", "dec") and kb in ("int", "dec"):
        if (ka == "int" or a.type.huge) and (kb == "int" or b.type.huge):  # integers: compare as 128-bit
            x, _ = as_i128(a, 0)
            y, _ = as_i128(b, 0)
            lt, eq = i128.compare(x, y)
            return lt, eq, []
        t = common_decimal(a.type, b.type)
        x, fx, mx = cast_number(a, t)
        y, fy, my = cast_number(b, t)
        lt, eq = i128.compare(x, y)
        return lt, eq, [(fx & a.valid, mx), (fy & b.valid, my)]
    if ka in ("int", "bool") and kb in ("int", "bool"):
        x, y = a.data.astype(np.int64), b.data.astype(np.int64)
        return x < y, x == y, []
    raise Unsupported(f"comparison of {a.type} and {b.type}")
