"""Scalar functions: dates, rounding, strings.  Handlers take ``(evaluator, node)``.
See docs/design.md §Expressions.

Arguments that shape the computation (units, patterns, lengths, fill strings) must be
constants — they are public, folded by DuckDB at bind time — and a handler refuses a
non-constant one (:class:`~.numeric.Unsupported`), never guesses.
"""
from __future__ import annotations

import re

import numpy as np
from sqlglot import exp

from . import dates, interval_lanes, intervals, int128 as i128, numeric, strings
from .numeric import Unsupported
from .types import parse_type
from .value import Val
from ...oblivious.select import floor_div, floor_mod, select

__all__ = ["HANDLERS", "date_arith", "ANON", "handles", "unit_name", "epoch_seconds", "part_of", "interval_arith",
           "shift_by_interval", "is_interval", "interval_parts"]

HANDLERS: dict = {}
BIGINT = parse_type("BIGINT")


def handles(*classes):
    def deco(fn):
        for c in classes:
            HANDLERS[c] = fn
        return fn
    return deco


_UNITS = {"YEAR": (12, 0, 0), "QUARTER": (3, 0, 0), "MONTH": (1, 0, 0), "WEEK": (0, 7, 0), "DAY": (0, 1, 0),
          "HOUR": (0, 0, 3600 * 10 ** 6), "MINUTE": (0, 0, 60 * 10 ** 6), "SECOND": (0, 0, 10 ** 6),
          "MILLISECOND": (0, 0, 1000), "MICROSECOND": (0, 0, 1)}


def is_interval(node: exp.Expression) -> bool:
    """A constant ``INTERVAL …`` or an interval constructed per row (``to_hours(x)``)."""
    if intervals.is_constructed(node):
        return True
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Interval)


def interval_parts(node: exp.Expression) -> tuple[int, int, int]:
    """(months, days, micros) of a constant ``INTERVAL 'k' UNIT`` or ``INTERVAL 'k unit [k unit …]'``."""
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Interval) or not isinstance(node.this, exp.Literal):
        raise Unsupported("INTERVAL that is not a constant")
    text = str(node.this.this).strip()
    words = text.split() + ([node.unit.name] if node.unit is not None else [])
    if len(words) % 2:
        raise Unsupported(f"INTERVAL {node.sql(dialect='duckdb')}")
    total = [0, 0, 0]
    for count, unit in zip(words[::2], words[1::2]):
        u = unit.upper()
        u = u[:-1] if u.endswith("S") else u
        if u not in _UNITS:
            raise Unsupported(f"INTERVAL unit {unit}")
        try:
            k = int(count)
        except ValueError:
            raise Unsupported(f"INTERVAL {node.sql(dialect='duckdb')}") from None
        total = [t + k * f for t, f in zip(total, _UNITS.get(u))]
    return total[0], total[1], total[2]


def interval_arith(ev, node, op: str, rt) -> Val:
    """DATE/TIMESTAMP ± a constant INTERVAL (DuckDB's ``Interval::Add``: months, days, µs)."""
    left, right = node.left, node.right
    if is_interval(left) and op == "+":
        left, right = right, left
    if is_interval(left) or op not in ("+", "-"):
        raise Unsupported(f"{op} with an INTERVAL on this side")
    return shift_by_interval(ev, left, right, 1 if op == "+" else -1, rt)


def shift_by_interval(ev, base_node: exp.Expression, interval: exp.Expression, sign: int, rt) -> Val:
    """``base ± interval`` (``sign``), ±infinity kept; an error where the result leaves the range."""
    base = ev.ev(base_node)
    valid, err = base.valid, base.err
    if intervals.is_constructed(interval):  # per row: (days, µs), with the constructor's errors
        days, micros, arg_valid, arg_err = intervals.constructed(ev, interval, sign, base.valid)
        months, valid, err = 0, valid & arg_valid, np.maximum(err, arg_err)
    else:
        months, days, micros = (sign * k for k in interval_parts(interval))
    if base.type.kind == "time":
        return intervals.shift_time_value(base, micros, valid, err, rt)
    if base.type.kind not in ("date", "ts") or rt.kind not in ("date", "ts"):
        raise Unsupported(f"{base.type} ± INTERVAL giving {rt}")
    return _shift(ev, base, months, days, micros, valid, err, rt)


def _shift(ev, base: Val, months: int, days, micros, valid: np.ndarray, err: np.ndarray, rt) -> Val:
    """DATE/TIMESTAMP + (a public count of months, days, µs: constants or per row); ±infinity
    kept; DuckDB's errors where the result leaves the range."""
    us, bad = dates.to_us(base.data, base.type.kind)
    res, over, date_over = dates.add_interval_checked(select(bad, 0, us), months, days, micros)
    if rt.kind == "date":
        res = dates.split_ts(res)[0]
    finite = dates.finite(base.data, base.type.kind)  # ±infinity ± an interval stays ±infinity
    res = dates.keep_infinities(base.data, base.type.kind, res, rt.kind)
    reached = finite & valid & (err == 0)  # a row whose arguments failed never reaches the sum
    err = np.maximum(err, ev.fail((bad | over) & reached, "Conversion Error: Date and time not in timestamp range"))
    err = np.maximum(err, ev.fail(date_over & ~bad & reached, "Out of Range Error: Date out of range"))
    return Val(rt, select(valid, res, 0), valid, err)


def date_arith(ev, node, op: str, a: Val, b: Val, rt) -> Val:
    """DATE ± integer days and DATE − DATE (intervals: :func:`interval_arith`)."""
    valid = a.valid & b.valid
    err = np.maximum(a.err, b.err)
    ka, kb = a.type.kind, b.type.kind
    if ka == "date" and kb == "date" and op == "-" and rt.kind == "int":
        return Val(rt, a.data - b.data, valid, err)
    if rt.kind == "date" and op in ("+", "-") and {ka, kb} == {"date", "int"}:
        days, k = (a.data, b.data) if ka == "date" else (b.data, a.data)
        if op == "-" and ka != "date":
            raise Unsupported("integer - DATE")
        infinite = ~dates.finite_date(days)  # ±infinity ± k stays ±infinity in DuckDB
        res = select(infinite, days, days + k if op == "+" else days - k)
        bad = ~dates.finite_date(res) & valid & ~infinite
        return Val(rt, res, valid, np.maximum(err, ev.fail(bad, "Out of Range Error: Date out of range")))
    raise Unsupported(f"{op} of {a.type} and {b.type}")


def _finite_values(v: Val) -> np.ndarray:
    """Rows not holding ±infinity (every row of a type without infinities)."""
    if v.type.kind == "date":
        return dates.finite_date(v.data)
    if v.type.kind == "ts":
        return dates.finite_ts(v.data)
    return np.ones(v.n, dtype=bool)


def _finite(v: Val) -> np.ndarray:
    """Valid rows holding a finite DATE/TIMESTAMP: DuckDB's date parts, names, LAST_DAY and
    DATE_DIFF are NULL on ±infinity."""
    return v.valid & _finite_values(v)


def _days(v: Val) -> tuple[np.ndarray, np.ndarray | None]:
    if v.type.kind == "date":
        return v.data, None
    if v.type.kind == "ts":
        return dates.split_ts(v.data)
    raise Unsupported(f"date part of {v.type}")


# DuckDB's specifier spellings (GetDatePartSpecifier) of the parts and units dodb computes
_SPELLINGS = {
    "year": "year y yr yrs years", "month": "month mon mons months", "day": "day d days dayofmonth",
    "decade": "decade dec decades decs", "century": "century cent centuries c",
    "millennium": "millennium mil millenniums millenia mils millenium",
    "microsecond": "microsecond us usec usecs usecond useconds microseconds",
    "millisecond": "millisecond ms msec msecs msecond mseconds milliseconds",
    "second": "second sec seconds secs s", "minute": "minute min minutes mins m", "hour": "hour h hr hrs hours",
    "week": "week w weeks weekofyear", "quarter": "quarter quarters", "dow": "dow dayofweek weekday",
    "doy": "doy dayofyear", "isodow": "isodow", "isoyear": "isoyear", "yearweek": "yearweek", "era": "era",
    "epoch": "epoch",
}
_PART_ALIASES = {alias: part for part, words in _SPELLINGS.items() for alias in words.split()}


def unit_name(name: str) -> str:
    """A date part or unit by DuckDB's spellings (``'hrs'`` is ``'hour'``); unknown ones as given."""
    p = name.lower()
    return _PART_ALIASES.get(p, p)


def _part(name: str) -> str:
    p = unit_name(name)
    if p not in dates.PARTS and p != "epoch":
        raise Unsupported(f"date part {name}")
    return p


def part_of(ev, node: exp.Expression, part: str, arg: exp.Expression) -> Val:
    v = ev.ev(arg)
    rt = ev.type_of(node)
    if part == "epoch":
        return epoch_seconds(v, rt)
    if rt.kind != "int":
        raise Unsupported(f"{part} giving {rt}")
    if v.type.kind == "time":  # a TIME has no date: only its clock parts
        if part not in _CLOCK_PARTS:
            raise Unsupported(f"{part} of a TIME")
        return Val(rt, dates.date_part(part, np.zeros(v.n, np.int64), v.data), v.valid, v.err)
    days, tod = _days(v)  # a DATE's time of day is 0 (DuckDB: hour(DATE) is 0)
    return Val(rt, dates.date_part(part, days, tod), _finite(v), v.err)


_CLOCK_PARTS = ("hour", "minute", "second", "millisecond", "microsecond")


def epoch_seconds(v: Val, rt) -> Val:
    """``epoch(x)`` / ``EXTRACT(epoch FROM x)``: seconds since 1970 as DOUBLE (µs / 10^6,
    one division, as DuckDB computes it); NULL on ±infinity."""
    if rt.kind == "float" and v.type.kind == "interval":
        return Val(rt, interval_lanes.epoch(v.data), v.valid, v.err)
    if rt.kind == "float" and v.type.kind == "time":  # seconds since midnight
        return Val(rt, v.data / 1e6, v.valid, v.err)
    if rt.kind != "float" or v.type.kind not in ("date", "ts"):
        raise Unsupported(f"epoch of {v.type} giving {rt}")
    us = v.data * dates.US_PER_DAY if v.type.kind == "date" else v.data
    finite = _finite(v)
    with np.errstate(all="ignore"):  # an infinite DATE's product wraps: that row is NULL
        return Val(rt, select(finite, us, 0) / 1e6, finite, v.err)


@handles(exp.Extract)
def _ev_extract(ev, node):
    return part_of(ev, node, _part(node.this.name), node.expression)


_PART_FUNCS = {exp.Year: "year", exp.Month: "month", exp.Day: "day", exp.DayOfWeek: "dow", exp.DayOfMonth: "day",
               exp.DayOfYear: "doy", exp.Quarter: "quarter", exp.Week: "week", exp.WeekOfYear: "week",
               exp.DayOfWeekIso: "isodow"}


@handles(*_PART_FUNCS)
def _ev_part_function(ev, node):
    return part_of(ev, node, _PART_FUNCS.get(type(node)), node.this)


ANON: dict = {}  # functions sqlglot leaves anonymous, by upper-case name


@handles(exp.Anonymous)
def _ev_anonymous(ev, node):
    handler = ANON.get(str(node.this).upper())
    if handler is None:
        raise Unsupported(f"function {str(node.this).upper()}")
    return handler(ev, node)


def _date_part_fn(ev, node):
    args = node.expressions
    if len(args) != 2:
        raise Unsupported("DATE_PART with these arguments")
    part = ev.literal(args[0], "DATE_PART")
    if not isinstance(part, str):
        raise Unsupported("DATE_PART of a list of parts")
    return part_of(ev, node, _part(part), args[1])


ANON["DATE_PART"] = ANON["DATEPART"] = _date_part_fn


_SUB_DAY = {"hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000, "millisecond": 1000, "microsecond": 1}


@handles(exp.DateDiff)
def _ev_date_diff(ev, node):
    unit = unit_name(node.unit.name if node.unit is not None else "day")
    end, start = ev.ev(node.this), ev.ev(node.expression)
    if end.type.kind not in ("date", "ts") or start.type.kind not in ("date", "ts"):
        raise Unsupported(f"DATE_DIFF of {start.type} and {end.type}")
    if unit not in ("day", "week", "month", "year", "quarter", "decade", "century", "millennium") \
            and unit not in _SUB_DAY:
        raise Unsupported(f"DATE_DIFF unit {unit}")
    valid, err = _finite(end) & _finite(start), np.maximum(end.err, start.err)
    rt = ev.type_of(node)
    if unit in ("hour", "minute", "second") and end.type.kind == start.type.kind == "date":
        # DuckDB's DATE overload counts whole days times the unit's count a day (no microseconds:
        # no overflow, even beyond the TIMESTAMP range; |days| < 2^33)
        return Val(rt, (end.data - start.data) * (86_400_000_000 // _SUB_DAY.get(unit)), valid, err)
    if unit in _SUB_DAY:  # on microseconds (a DATE cast to TIMESTAMP), each floored to the unit
        (e_us, e_bad), (s_us, s_bad) = dates.to_us(end.data, end.type.kind), dates.to_us(start.data, start.type.kind)
        step = _SUB_DAY.get(unit)
        e_q, s_q = floor_div(e_us, step), floor_div(s_us, step)
        res = e_q - s_q
        over = (e_q ^ s_q) & (e_q ^ res)  # a wrapped subtraction (µs only)
        bad = ((e_bad | s_bad) | (over < 0)) & valid
        return Val(rt, res, valid, np.maximum(err, ev.fail(bad, "Out of Range Error: Overflow in subtraction "
                                                                 "of INT64")))
    if "ts" in (end.type.kind, start.type.kind):  # DuckDB casts both to TIMESTAMP and diffs the dates
        end = Val(end.type, _days(end)[0], end.valid, end.err)
        start = Val(start.type, _days(start)[0], start.valid, start.err)
    if unit == "day":
        res = end.data - start.data
    elif unit == "week":  # whole weeks between the days, towards zero
        res = dates.c_div(end.data - start.data, 7)
    else:
        y1, m1, _ = dates.civil(start.data)
        y2, m2, _ = dates.civil(end.data)
        per = {"decade": 10, "century": 100, "millennium": 1000}.get(unit)
        if per is not None:
            res = dates.c_div(y2, per) - dates.c_div(y1, per)
        else:
            res = {"month": (y2 * 12 + m2) - (y1 * 12 + m1), "year": y2 - y1,
                   "quarter": (y2 * 4 + floor_div(m2 - 1, 3)) - (y1 * 4 + floor_div(m1 - 1, 3))}.get(unit)
    return Val(rt, res, valid, err)


@handles(exp.LastDay)
def _ev_last_day(ev, node):
    v = ev.ev(node.this)
    days, _ = _days(v)
    y, m, _ = dates.civil(days)
    res = dates.days_from_civil(y, m, dates.month_days(y, m))
    rt = ev.type_of(node)
    if rt.kind != "date":
        raise Unsupported(f"LAST_DAY giving {rt}")
    return Val(rt, res, _finite(v), v.err)


@handles(exp.TimestampTrunc, exp.DateTrunc)
def _ev_trunc(ev, node):
    unit = node.args.get("unit")
    unit = unit_name(unit.name if isinstance(unit, (exp.Var, exp.Literal)) else str(unit or ""))
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
        res = dates.days_from_civil(y, floor_div(m - 1, 3) * 3 + 1, one)
    elif unit == "week":  # the Monday on or before
        res = days - (dates.date_part("isodow", days) - 1)
    elif unit in ("decade", "century", "millennium"):  # the year rounded towards zero (DuckDB)
        per = {"decade": 10, "century": 100, "millennium": 1000}.get(unit)
        res = dates.days_from_civil(dates.c_div(y, per) * per, one, one)
    elif unit in _SUB_DAY and rt.kind == "ts" and v.type.kind == "date":  # a DATE is its midnight
        us, bad = dates.to_us(v.data, "date")
        err = np.maximum(v.err, ev.fail(bad & dates.finite(v.data, "date") & v.valid,
                                        "Conversion Error: Date and time not in timestamp range"))
        return Val(rt, _infinite_kept(v, us, rt), v.valid, err)
    elif unit in _SUB_DAY and rt.kind == "ts":
        step = _SUB_DAY.get(unit)
        return Val(rt, _infinite_kept(v, days * dates.US_PER_DAY + floor_div(tod, step) * step, rt), v.valid, v.err)
    else:
        raise Unsupported(f"DATE_TRUNC unit {unit}")
    if rt.kind == "ts":
        res = res * dates.US_PER_DAY
    elif rt.kind != "date":
        raise Unsupported(f"DATE_TRUNC giving {rt}")
    return Val(rt, _infinite_kept(v, res, rt), v.valid, v.err)


def _infinite_kept(v: Val, res: np.ndarray, rt) -> np.ndarray:
    """``res``, but ±infinity where ``v`` holds it (DATE_TRUNC of an infinity is that infinity)."""
    return dates.keep_infinities(v.data, v.type.kind, res, rt.kind)


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
        mat, lengths = strings.constant_rows(_DAYS, dates.date_part("dow", days))
    return Val(ev.type_of(node), mat, _finite(v), v.err, lengths)


def _digits(x: np.ndarray, count: int) -> list[np.ndarray]:
    return [(floor_mod(floor_div(x, 10 ** (count - 1 - k)), 10) + ord("0")).astype(np.uint8) for k in range(count)]


@handles(exp.TimeToStr)
def _ev_strftime(ev, node):
    fmt = ev.literal(node.args.get("format"), "STRFTIME")
    v = ev.ev(node.this)
    if fmt is None:  # a NULL format: NULL on every row, as in DuckDB
        return ev.null_of(ev.type_of(node), v.err)
    if str(fmt) == "":
        raise Unsupported("STRFTIME with an empty format (DuckDB: 'Empty format string')")
    days, tod = _days(v)
    tod = np.zeros_like(days) if tod is None else tod
    y, m, d = dates.civil(days)
    cols: list[np.ndarray] = []
    spec = {"Y": (y, 4), "m": (m, 2), "d": (d, 2), "H": (floor_div(tod, 3_600_000_000), 2),
            "M": (floor_mod(floor_div(tod, 60_000_000), 60), 2), "S": (floor_mod(floor_div(tod, 1_000_000), 60), 2),
            "y": (floor_mod(y, 100), 2), "j": (None, 3)}
    for code, ch in re.findall(r"%(.)|(.)", str(fmt), re.S):  # the public format, token by token
        if code == "%" or not code:
            cols += [np.full(v.n, b, np.uint8) for b in (code or ch).encode()]
            continue
        if code not in spec:
            raise Unsupported(f"STRFTIME format %{code}")
        val, width = spec.get(code)
        if code == "j":
            val = dates.date_part("doy", days)
        cols += _digits(val, width)
    mat = np.stack(cols, axis=1) if cols else np.zeros((v.n, 1), np.uint8)
    lengths = np.full(v.n, len(cols), dtype=np.int64)
    # ±infinity prints as 'infinity' / '-infinity' whatever the format (DuckDB); every row
    # is selected over, so the width is the wider of the two (public)
    infinite = v.valid & ~_finite_values(v)
    word, wl = strings.constant_rows([b"infinity", b"-infinity"], (v.data < 0).astype(np.int64))
    width = max(mat.shape[1], word.shape[1])
    mat = select(infinite[:, None], np.pad(word, ((0, 0), (0, width - word.shape[1]))),
                   np.pad(mat, ((0, 0), (0, width - mat.shape[1]))))
    lengths = select(infinite, wl, lengths)
    out = Val(ev.type_of(node), mat, v.valid, v.err, lengths)
    bad = ~dates.in_date_range(days) & v.valid & ~infinite
    out.err = np.maximum(out.err, ev.fail(bad, "Not implemented Error: dodb formats dates only for years 1 to 9999"))
    return out


# -- numbers -----------------------------------------------------------------------------------------

@handles(exp.Abs)
def _ev_abs(ev, node):
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if v.type.kind == "null":
        return ev.null_of(rt, v.err)
    if rt.kind == "float":
        return Val(rt, np.abs(numeric.as_f64(v)), v.valid, v.err)
    if rt.kind == "dec" and v.type.kind == "dec" and rt.scale == v.type.scale:
        err = v.err
        if rt.huge:
            lo = i128.equal(v.data, i128.const(i128.MIN, v.n))
            err = np.maximum(err, ev.fail(lo & v.valid, "Out of Range Error: Overflow on abs"))
        return Val(rt, i128.absolute(v.data), v.valid, err)
    if rt.kind == "int" and v.type.kind == "int":
        lo, _ = numeric.int_range(rt.bits)
        err = np.maximum(v.err, ev.fail((v.data == lo) & v.valid, "Out of Range Error: Overflow on abs"))
        return Val(rt, np.abs(v.data), v.valid, err)
    raise Unsupported(f"ABS of {v.type}")


@handles(exp.Sign)
def _ev_sign(ev, node):
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if v.type.kind == "null":
        return ev.null_of(rt, v.err)
    if v.type.kind == "dec":
        res = select(i128.is_negative(v.data), -1, select(i128.equal(v.data, i128.const(0, v.n)), 0, 1))
    elif v.type.kind in ("int", "float"):
        x = v.data
        with np.errstate(invalid="ignore"):
            res = select(x < 0, -1, select(x > 0, 1, 0))  # sign(NaN) = 0 in DuckDB
    else:
        raise Unsupported(f"SIGN of {v.type}")
    return Val(rt, res.astype(np.int64), v.valid, v.err)


def _round_like(ev, node, mode: str, places: int = 0):
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if v.type.kind == "null":
        return ev.null_of(rt, v.err)
    if v.type.kind == "int" and rt.kind == "int" and places >= 0:
        return Val(rt, v.data, v.valid, v.err)
    if v.type.kind == "float" and rt.kind == "float":
        x = v.data
        with np.errstate(all="ignore"):
            if mode == "floor":
                return Val(rt, np.floor(x), v.valid, v.err)
            if mode == "ceil":
                return Val(rt, np.ceil(x), v.valid, v.err)
            if mode == "trunc":
                return Val(rt, np.trunc(x), v.valid, v.err)
            if places < 0:
                raise Unsupported("ROUND of a DOUBLE to negative places")
            if places == 0:
                return Val(rt, numeric.round_half_away(x), v.valid, v.err)
            if places > 22:  # 10^places is no longer an exact double; every double is its own rounding here
                return Val(rt, x, v.valid, v.err)
            r = numeric.round_places_exact(x, places)
            return Val(rt, select(np.isfinite(r), r, x), v.valid, v.err)
    if v.type.kind == "dec" and rt.kind == "dec":
        drop = v.type.scale - rt.scale
        if drop < 0 or (mode == "round" and rt.scale != max(0, min(places, v.type.scale))):
            raise Unsupported(f"{mode.upper()} of {v.type} giving {rt}")
        how = {"round": "half_away", "floor": "floor", "ceil": "ceil", "trunc": "trunc"}.get(mode)
        if mode == "round" and places < 0:  # to tens, hundreds …: DuckDB keeps the scale 0 result type
            tens = min(-places, 38)
            res = i128.div_pow10(v.data, drop + tens, how)
            res, over = i128.mul_pow10(res, tens)
            return Val(rt, res, v.valid, np.maximum(v.err, ev.fail(over & v.valid, f"Out of Range Error: "
                                                                     f"Overflow in ROUND of {v.type}")))
        res = i128.div_pow10(v.data, drop, how)
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


@handles(exp.Trunc)
def _ev_trunc_number(ev, node):
    """TRUNC(x): towards zero, x's type kept (DECIMAL to scale 0)."""
    if node.args.get("decimals") is not None:
        raise Unsupported("TRUNC with decimals")
    return _round_like(ev, node, "trunc")


@handles(exp.Round)
def _ev_round(ev, node):
    places = node.args.get("decimals")
    k = 0 if places is None else int(ev.literal(places, "ROUND"))
    return _round_like(ev, node, "round", k)
