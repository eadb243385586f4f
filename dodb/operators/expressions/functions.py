"""Scalar functions: dates, rounding, strings.  Handlers take ``(evaluator, node)``.

Arguments that shape the computation (units, patterns, lengths, fill strings) must be
constants — they are public, folded by DuckDB at bind time — and a handler refuses a
non-constant one (:class:`~.numeric.Unsupported`), never guesses.
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from . import casemap, dates, int128 as i128, numeric, strings
from .numeric import Unsupported
from .types import parse_type
from .value import Val

__all__ = ["HANDLERS", "date_arith"]

HANDLERS: dict = {}
BIGINT = parse_type("BIGINT")


def handles(*classes):
    def deco(fn):
        for c in classes:
            HANDLERS[c] = fn
        return fn
    return deco


def _interval(node: exp.Expression) -> tuple[int, int, int]:
    """(months, days, micros) of a constant ``INTERVAL 'k' UNIT``."""
    if not isinstance(node, exp.Interval) or node.unit is None:
        raise Unsupported("INTERVAL that is not a constant 'k UNIT'")
    try:
        k = int(str(node.this.this if isinstance(node.this, exp.Literal) else node.this.sql()).strip())
    except ValueError:
        raise Unsupported(f"INTERVAL {node.this.sql()}") from None
    unit = node.unit.name.upper().rstrip("S")
    table = {"YEAR": (12 * k, 0, 0), "QUARTER": (3 * k, 0, 0), "MONTH": (k, 0, 0), "WEEK": (0, 7 * k, 0),
             "DAY": (0, k, 0), "HOUR": (0, 0, 3600 * 10 ** 6 * k), "MINUTE": (0, 0, 60 * 10 ** 6 * k),
             "SECOND": (0, 0, 10 ** 6 * k)}
    if unit not in table:
        raise Unsupported(f"INTERVAL unit {unit}")
    return table.get(unit)


def date_arith(ev, node, op: str, a: Val, b: Val, rt) -> Val:
    """DATE/TIMESTAMP ± integer days, ± constant INTERVAL, and DATE − DATE."""
    valid = a.valid & b.valid
    err = np.maximum(a.err, b.err)
    ka, kb = a.type.kind, b.type.kind
    left, right = node.left, node.right
    while isinstance(right, exp.Paren):
        right = right.this
    while isinstance(left, exp.Paren):
        left = left.this
    if kb == "interval" or ka == "interval":
        base, ivl = (a, right) if kb == "interval" else (b, left)
        if op not in ("+", "-") or (op == "-" and ka == "interval") or base.type.kind not in ("date", "ts"):
            raise Unsupported(f"{op} of {a.type} and {b.type}")
        months, days, micros = _interval(ivl)
        sign = 1 if op == "+" else -1
        us = base.data * dates.US_PER_DAY if base.type.kind == "date" else base.data
        res = dates.add_interval(us, sign * months, sign * days, sign * micros)
        if rt.kind == "date":
            res = dates.split_ts(res)[0]
        elif rt.kind != "ts":
            raise Unsupported(f"interval arithmetic giving {rt}")
        return _checked_date(ev, Val(rt, res, valid, err), rt)
    if ka == "date" and kb == "date" and op == "-" and rt.kind == "int":
        return Val(rt, a.data - b.data, valid, err)
    if rt.kind == "date" and op in ("+", "-") and {ka, kb} == {"date", "int"}:
        days, k = (a.data, b.data) if ka == "date" else (b.data, a.data)
        if op == "-" and ka != "date":
            raise Unsupported("integer - DATE")
        res = days + k if op == "+" else days - k
        return _checked_date(ev, Val(rt, res, valid, err), rt)
    raise Unsupported(f"{op} of {a.type} and {b.type}")


def _checked_date(ev, v: Val, rt) -> Val:
    days = v.data if rt.kind == "date" else dates.split_ts(v.data)[0]
    v.err = np.maximum(v.err, ev.fail(~dates.in_date_range(days) & v.valid,
                                      f"Out of Range Error: {rt} out of the range dodb evaluates (years 1 to 9999)"))
    return v


def _days(v: Val) -> tuple[np.ndarray, np.ndarray | None]:
    if v.type.kind == "date":
        return v.data, None
    if v.type.kind == "ts":
        return dates.split_ts(v.data)
    raise Unsupported(f"date part of {v.type}")


_PART_ALIASES = {"dayofweek": "dow", "weekday": "dow", "dayofmonth": "day", "dayofyear": "doy",
                 "weekofyear": "week", "years": "year", "months": "month", "days": "day"}


def _part(name: str) -> str:
    p = name.lower()
    p = _PART_ALIASES.get(p, p)
    if p not in dates.PARTS:
        raise Unsupported(f"date part {name}")
    return p


def _extract(ev, node: exp.Expression, part: str, arg: exp.Expression) -> Val:
    v = ev.ev(arg)
    rt = ev.type_of(node)
    if rt.kind != "int":
        raise Unsupported(f"{part} giving {rt}")
    if part in ("hour", "minute", "second") and v.type.kind != "ts":
        raise Unsupported(f"{part} of {v.type}")
    days, tod = _days(v)
    return Val(rt, dates.extract(part, days, tod), v.valid, v.err)


@handles(exp.Extract)
def _ev_extract(ev, node):
    return _extract(ev, node, _part(node.this.name), node.expression)


_PART_FUNCS = {exp.Year: "year", exp.Month: "month", exp.Day: "day", exp.DayOfWeek: "dow", exp.DayOfMonth: "day",
               exp.DayOfYear: "doy", exp.Quarter: "quarter", exp.Week: "week", exp.WeekOfYear: "week",
               exp.DayOfWeekIso: "isodow"}


@handles(*_PART_FUNCS)
def _ev_part_function(ev, node):
    return _extract(ev, node, _PART_FUNCS.get(type(node)), node.this)


@handles(exp.DateDiff)
def _ev_date_diff(ev, node):
    unit = (node.unit.name if node.unit is not None else "day").lower()
    end, start = ev.ev(node.this), ev.ev(node.expression)
    if end.type.kind != "date" or start.type.kind != "date":
        raise Unsupported(f"DATE_DIFF of {start.type} and {end.type}")
    valid, err = end.valid & start.valid, np.maximum(end.err, start.err)
    if unit == "day":
        res = end.data - start.data
    elif unit in ("month", "year", "quarter"):
        y1, m1, _ = dates.civil(start.data)
        y2, m2, _ = dates.civil(end.data)
        res = {"month": (y2 * 12 + m2) - (y1 * 12 + m1), "year": y2 - y1,
               "quarter": (y2 * 4 + (m2 - 1) // 3) - (y1 * 4 + (m1 - 1) // 3)}.get(unit)
    else:
        raise Unsupported(f"DATE_DIFF unit {unit}")
    return Val(ev.type_of(node), res, valid, err)


@handles(exp.LastDay)
def _ev_last_day(ev, node):
    v = ev.ev(node.this)
    days, _ = _days(v)
    y, m, _ = dates.civil(days)
    res = dates.days_from_civil(y, m, dates.month_days(y, m))
    rt = ev.type_of(node)
    if rt.kind != "date":
        raise Unsupported(f"LAST_DAY giving {rt}")
    return Val(rt, res, v.valid, v.err)


@handles(exp.TimestampTrunc, exp.DateTrunc)
def _ev_trunc(ev, node):
    unit = node.args.get("unit")
    unit = (unit.name if isinstance(unit, (exp.Var, exp.Literal)) else str(unit or "")).lower()
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    days, tod = _days(v)
    y, m, d = dates.civil(days)
    one = np.ones_like(y)
    if unit == "day":
        res = days
    elif unit == "month":
        res = dates.days_from_civil(y, m, one)
    elif unit == "year":
        res = dates.days_from_civil(y, one, one)
    elif unit == "quarter":
        res = dates.days_from_civil(y, (m - 1) // 3 * 3 + 1, one)
    else:
        raise Unsupported(f"DATE_TRUNC unit {unit}")
    if rt.kind == "ts":
        res = res * dates.US_PER_DAY
    elif rt.kind != "date":
        raise Unsupported(f"DATE_TRUNC giving {rt}")
    return Val(rt, res, v.valid, v.err)


_MONTHS = [b"January", b"February", b"March", b"April", b"May", b"June", b"July", b"August", b"September",
           b"October", b"November", b"December"]
_DAYS = [b"Sunday", b"Monday", b"Tuesday", b"Wednesday", b"Thursday", b"Friday", b"Saturday"]


@handles(exp.Monthname, exp.Dayname)
def _ev_names(ev, node):
    v = ev.ev(node.this)
    days, _ = _days(v)
    if isinstance(node, exp.Monthname):
        mat, lengths = strings.constant_rows(_MONTHS, dates.civil(days)[1] - 1)
    else:
        mat, lengths = strings.constant_rows(_DAYS, dates.extract("dow", days))
    return Val(ev.type_of(node), mat, v.valid, v.err, lengths)


def _digits(x: np.ndarray, count: int) -> list[np.ndarray]:
    return [((x // 10 ** (count - 1 - k)) % 10 + ord("0")).astype(np.uint8) for k in range(count)]


@handles(exp.TimeToStr)
def _ev_strftime(ev, node):
    fmt = ev.literal(node.args.get("format"), "STRFTIME")
    v = ev.ev(node.this)
    days, tod = _days(v)
    tod = np.zeros_like(days) if tod is None else tod
    y, m, d = dates.civil(days)
    cols: list[np.ndarray] = []
    spec = {"Y": (y, 4), "m": (m, 2), "d": (d, 2), "H": (tod // 3_600_000_000, 2),
            "M": (tod // 60_000_000 % 60, 2), "S": (tod // 1_000_000 % 60, 2), "y": (y % 100, 2), "j": (None, 3)}
    text = str(fmt)
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and i + 1 < len(text):
            code = text[i + 1]
            i += 2
            if code == "%":
                cols.append(np.full(v.n, ord("%"), np.uint8))
                continue
            if code not in spec:
                raise Unsupported(f"STRFTIME format %{code}")
            val, width = spec.get(code)
            if code == "j":
                val = dates.extract("doy", days)
            cols += _digits(val, width)
            continue
        cols += [np.full(v.n, b, np.uint8) for b in ch.encode()]
        i += 1
    mat = np.stack(cols, axis=1) if cols else np.zeros((v.n, 1), np.uint8)
    out = Val(ev.type_of(node), mat, v.valid, v.err, np.full(v.n, len(cols), dtype=np.int64))
    bad = ~dates.in_date_range(days) & v.valid
    out.err = np.maximum(out.err, ev.fail(bad, "Not implemented Error: dodb formats dates only for years 1 to 9999"))
    return out


# -- numbers -----------------------------------------------------------------------------------------

@handles(exp.Abs)
def _ev_abs(ev, node):
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if rt.kind == "float":
        return Val(rt, np.abs(numeric.as_f64(v)), v.valid, v.err)
    if rt.kind == "dec" and v.type.kind == "dec" and rt.scale == v.type.scale:
        return Val(rt, i128.absolute(v.data), v.valid, v.err)
    if rt.kind == "int" and v.type.kind == "int":
        lo, _ = numeric.int_range(rt.bits)
        err = np.maximum(v.err, ev.fail((v.data == lo) & v.valid, "Out of Range Error: Overflow on abs"))
        return Val(rt, np.abs(v.data), v.valid, err)
    raise Unsupported(f"ABS of {v.type}")


@handles(exp.Sign)
def _ev_sign(ev, node):
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if v.type.kind == "dec":
        res = np.where(i128.is_negative(v.data), -1, np.where(i128.equal(v.data, i128.const(0, v.n)), 0, 1))
    elif v.type.kind in ("int", "float"):
        x = v.data
        with np.errstate(invalid="ignore"):
            res = np.where(x < 0, -1, np.where(x > 0, 1, 0))  # sign(NaN) = 0 in DuckDB
    else:
        raise Unsupported(f"SIGN of {v.type}")
    return Val(rt, res.astype(np.int64), v.valid, v.err)


def _round_like(ev, node, mode: str, places: int = 0):
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if v.type.kind == "int" and rt.kind == "int" and places >= 0:
        return Val(rt, v.data, v.valid, v.err)
    if v.type.kind == "float" and rt.kind == "float":
        x = v.data
        with np.errstate(all="ignore"):
            if mode == "floor":
                return Val(rt, np.floor(x), v.valid, v.err)
            if mode == "ceil":
                return Val(rt, np.ceil(x), v.valid, v.err)
            if places < 0:
                raise Unsupported("ROUND of a DOUBLE to negative places")
            if places == 0:
                return Val(rt, numeric.round_half_away(x), v.valid, v.err)
            k = float(10 ** places)
            r = numeric.round_half_away(x * k) / k
            return Val(rt, np.where(np.isfinite(r), r, x), v.valid, v.err)
    if v.type.kind == "dec" and rt.kind == "dec":
        drop = v.type.scale - rt.scale
        if drop < 0 or (mode == "round" and rt.scale != max(0, min(places, v.type.scale))):
            raise Unsupported(f"{mode.upper()} of {v.type} giving {rt}")
        res = i128.div_pow10(v.data, drop, {"round": "half_away", "floor": "floor", "ceil": "ceil"}.get(mode))
        return Val(rt, res, v.valid, v.err)
    raise Unsupported(f"{mode.upper()} of {v.type} giving {rt}")


@handles(exp.Floor)
def _ev_floor(ev, node):
    if node.args.get("decimals") is not None:
        raise Unsupported("FLOOR with decimals")
    return _round_like(ev, node, "floor")


@handles(exp.Ceil)
def _ev_ceil(ev, node):
    if node.args.get("decimals") is not None:
        raise Unsupported("CEIL with decimals")
    return _round_like(ev, node, "ceil")


@handles(exp.Round)
def _ev_round(ev, node):
    places = node.args.get("decimals")
    k = 0 if places is None else int(ev.literal(places, "ROUND"))
    return _round_like(ev, node, "round", k)
