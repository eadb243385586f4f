"""Parts of a DATE/TIMESTAMP by function name, epoch, MAKE_DATE, MAKE_TIME and MAKE_TIMESTAMP
(docs/design.md §Expressions).

``hour(ts)``, ``millisecond(ts)``, ``century(dt)`` … are :func:`~.functions.part_of` under
DuckDB's function names; ``epoch`` is seconds as DOUBLE and ``epoch_us`` microseconds as
BIGINT; ``make_date(y, m, d)`` builds a DATE.  Each is whole-column integer arithmetic over
every slot (dummies and NULLs included), with ±infinity NULL as in DuckDB.

>>> sorted(PART_FUNCTIONS)[:4]
['CENTURY', 'DECADE', 'ERA', 'ISOYEAR']
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from . import dates, numeric, zoned
from .functions import ANON, BIGINT, epoch_seconds, handles, part_of
from .numeric import Unsupported, cast_number
from .types import parse_type
from .value import Val
from ...oblivious.select import floor_div, floor_mod, select

__all__ = ["PART_FUNCTIONS"]

DOUBLE = parse_type("DOUBLE")

# functions sqlglot leaves anonymous, each one date part of its argument
PART_FUNCTIONS = {"MILLISECOND": "millisecond", "MICROSECOND": "microsecond", "CENTURY": "century",
                  "DECADE": "decade", "MILLENNIUM": "millennium", "ERA": "era", "ISOYEAR": "isoyear",
                  "YEARWEEK": "yearweek", "WEEKDAY": "dow"}


def _one_argument(node: exp.Expression, name: str) -> exp.Expression:
    args = node.expressions
    if len(args) != 1:
        raise Unsupported(f"{name} with {len(args)} arguments")
    return args[0]


for _name, _part in PART_FUNCTIONS.items():
    ANON[_name] = (lambda part, name: lambda ev, node: part_of(ev, node, part, _one_argument(node, name)))(_part, _name)


@handles(exp.Hour, exp.Minute, exp.Second)
def _ev_time_part(ev, node):
    return part_of(ev, node, type(node).__name__.lower(), node.this)


@handles(exp.TimeToUnix)
def _ev_epoch(ev, node):
    """``epoch(x)``: seconds since 1970-01-01 as DOUBLE."""
    return epoch_seconds(ev.ev(node.this), ev.type_of(node))


def _epoch_us(ev, node):
    """``epoch_us(x)``: microseconds since 1970-01-01 as BIGINT (a DATE is its midnight)."""
    v = zoned.as_timestamp(ev.ev(_one_argument(node, "EPOCH_US")))  # an instant: zone-free
    rt = ev.type_of(node)
    if rt.kind != "int" or v.type.kind not in ("date", "ts"):
        raise Unsupported(f"EPOCH_US of {v.type}")
    finite = v.valid & dates.finite(v.data, v.type.kind)
    us, bad = dates.to_us(v.data, v.type.kind)
    err = np.maximum(v.err, ev.fail(bad & finite, "Conversion Error: Date and time not in timestamp range"))
    return Val(rt, select(finite, us, 0), finite, err)


ANON["EPOCH_US"] = _epoch_us

_MS_MAX = (2 ** 63 - 1) // 1000  # DuckDB checks the rounded milliseconds back in microseconds


@handles(exp.UnixToTime)
def _ev_epoch_ms(ev, node):
    """``epoch_ms(x)`` of a DATE/TIMESTAMP: milliseconds since 1970 as BIGINT, rounded half away
    from zero (DuckDB; an error where the rounded value leaves the TIMESTAMP range in µs).
    sqlglot reads ``epoch_ms(bigint)`` (milliseconds to a TIMESTAMP) as the same node: that
    one is refused."""
    scale = node.args.get("scale")
    if scale is None:  # to_timestamp(seconds)
        return _to_timestamp(ev, node)
    v = zoned.as_timestamp(ev.ev(node.this))  # an instant: zone-free
    rt = ev.type_of(node)
    if not (isinstance(scale, exp.Literal) and str(scale.this) == "3") or v.type.kind not in ("date", "ts") \
            or rt.kind != "int":  # lint: public types and the query's shape
        raise Unsupported(f"EPOCH_MS of {v.type} giving {rt}")
    finite = v.valid & dates.finite(v.data, v.type.kind)
    us, bad = dates.to_us(v.data, v.type.kind)
    us = select(finite, us, 0)
    mag = np.abs(us)  # no overflow: a TIMESTAMP's µs are within ±(2^63 − 2)
    ms = floor_div(mag, 1000) + (floor_mod(mag, 1000) >= 500)
    ms = select(us < 0, -ms, ms)
    bad = (bad | (np.abs(ms) > _MS_MAX)) & finite
    err = np.maximum(v.err, ev.fail(bad, "Conversion Error: Could not convert Timestamp to higher precision."))
    return Val(rt, select(bad, 0, ms), finite, err)


def _to_timestamp(ev, node):
    """``to_timestamp(seconds)``: the TIMESTAMPTZ ``seconds × 10^6`` µs after 1970 UTC, rounded
    as DuckDB casts a DOUBLE to BIGINT; an error where that cast fails (NaN, ±inf, beyond
    64 bits).  An instant: no time zone involved."""
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if rt.kind != "tstz" or v.type.kind not in ("int", "float", "dec"):  # lint: public types only
        raise Unsupported(f"TO_TIMESTAMP of {v.type}")
    with np.errstate(all="ignore"):
        seconds = Val(DOUBLE, numeric.as_f64(v) * 1e6, v.valid, v.err)
    us, bad, _ = cast_number(seconds, BIGINT)
    bad = bad & v.valid
    err = np.maximum(v.err, ev.fail(bad, "Conversion Error: Epoch seconds out of range for TIMESTAMP WITH TIME ZONE"))
    return Val(rt, select(bad, 0, us), v.valid, err)


@handles(exp.DateFromParts)
def _ev_make_date(ev, node):
    """``make_date(year, month, day)``: the DATE, an error where it does not exist (DuckDB:
    'Date out of range'); year 0 is 1 BC, as DuckDB counts."""
    parts = [node.args.get(k) for k in ("year", "month", "day")]
    if None in parts or node.args.get("allow_overflow"):  # lint: public the query's shape
        raise Unsupported("MAKE_DATE with these arguments")
    y, m, d = (ev.ev(p) for p in parts)
    rt = ev.type_of(node)
    kinds = {y.type.kind, m.type.kind, d.type.kind}
    if rt.kind != "date" or kinds != {"int"}:  # lint: public types only
        raise Unsupported(f"MAKE_DATE of {y.type}, {m.type}, {d.type}")
    valid = y.valid & m.valid & d.valid
    err = np.maximum(np.maximum(y.err, m.err), d.err)
    # every row through the same arithmetic; rows that name no date are cut to a safe one first
    yv = np.clip(y.data, -dates.DATE_MAX // 365, dates.DATE_MAX // 365)
    mv = np.clip(m.data, 1, 12)
    dv = np.clip(d.data, 1, dates.month_days(yv, mv))
    exists = (yv == y.data) & (mv == m.data) & (dv == d.data)
    days = dates.days_from_civil(yv, mv, dv)
    exists = exists & dates.finite_date(days)
    err = np.maximum(err, ev.fail(~exists & valid, "Conversion Error: Date out of range"))
    return Val(rt, select(exists, days, 0), valid, err)


_I32 = (-(1 << 31), (1 << 31) - 1)


def _clock(ev, hour: Val, minute: Val, second: Val) -> tuple[np.ndarray, np.ndarray]:
    """DuckDB's MakeTime on whole columns: (microseconds since midnight, no such time).

    Seconds are a DOUBLE: their floor is the second and the rest, rounded to the nearest
    microsecond (half away from zero), the microseconds (so 59.9999999 carries to the next
    minute); hour 0–24, minute 0–59, second 0–60, and 24 only as 24:00:00."""
    from .numeric import as_f64, round_half_away
    h, m = hour.data, minute.data
    ss = as_f64(second)
    finite = np.isfinite(ss) & (np.abs(ss) < 1e15)
    ss = select(finite, ss, 0.0)
    whole = np.floor(ss)
    micros = round_half_away((ss - whole) * 1e6).astype(np.int64)
    s = whole.astype(np.int64)
    ok = finite & (h >= 0) & (h <= 24) & (m >= 0) & (m < 60) & (s >= 0) & (s <= 60) & (micros >= 0) \
        & (micros <= 1_000_000) & ((h < 24) | ((m == 0) & (s == 0) & (micros == 0)))
    us = ((np.clip(h, 0, 24) * 60 + np.clip(m, 0, 59)) * 60 + np.clip(s, 0, 60)) * 1_000_000 + np.clip(micros, 0, 10 ** 6)
    return select(ok, us, 0), ~ok


def _int_parts(ev, node, names: tuple[str, ...], what: str) -> list[Val]:
    parts = [node.args.get(k) for k in names]
    extra = [k for k in ("milli", "nano", "zone", "fractions", "precision") if node.args.get(k) is not None]
    if None in parts or extra:  # lint: public the query's shape
        raise Unsupported(f"{what} with these arguments")
    vals = [ev.ev(p) for p in parts]
    kinds = [v.type.kind for v in vals]
    if set(kinds[:-1]) != {"int"} or kinds[-1] not in ("int", "dec", "float"):  # lint: public types only
        raise Unsupported(f"{what} of {', '.join(str(v.type) for v in vals)}")
    return vals


def _joined(vals: list[Val]) -> tuple[np.ndarray, np.ndarray]:
    valid, err = vals[0].valid, vals[0].err
    for v in vals[1:]:
        valid, err = valid & v.valid, np.maximum(err, v.err)
    return valid, err


@handles(exp.TimeFromParts)
def _ev_make_time(ev, node):
    """``make_time(hour, minute, seconds)``: the TIME, an error where there is none (DuckDB:
    'Time out of range')."""
    vals = _int_parts(ev, node, ("hour", "min", "sec"), "MAKE_TIME")
    rt = ev.type_of(node)
    if rt.kind != "time":  # lint: public types only
        raise Unsupported(f"MAKE_TIME giving {rt}")
    valid, err = _joined(vals)
    us, bad = _clock(ev, *vals)
    err = np.maximum(err, ev.fail(bad & valid, "Conversion Error: Time out of range"))
    return Val(rt, us, valid, err)


@handles(exp.TimestampFromParts)
def _ev_make_timestamp(ev, node):
    """``make_timestamp(y, m, d, hour, minute, seconds)``: MAKE_DATE's day plus MAKE_TIME's
    time (24:00:00 is the next midnight), an error outside either or the TIMESTAMP range."""
    vals = _int_parts(ev, node, ("year", "month", "day", "hour", "min", "sec"), "MAKE_TIMESTAMP")
    rt = ev.type_of(node)
    if rt.kind != "ts":  # lint: public types only
        raise Unsupported(f"MAKE_TIMESTAMP giving {rt}")
    y, m, d = vals[:3]
    valid, err = _joined(vals)
    yv = np.clip(y.data, -dates.DATE_MAX // 365, dates.DATE_MAX // 365)
    mv = np.clip(m.data, 1, 12)
    dv = np.clip(d.data, 1, dates.month_days(yv, mv))
    days = dates.days_from_civil(yv, mv, dv)
    date_ok = (yv == y.data) & (mv == m.data) & (dv == d.data) & dates.finite_date(days)
    us, bad_time = _clock(ev, *vals[3:])
    days = select(date_ok, days, 0)
    in_range = (days >= dates.TS_MIN_US // dates.US_PER_DAY - 1) & (days <= dates.TS_MAX_US // dates.US_PER_DAY + 1)
    total = select(in_range, days, 0) * dates.US_PER_DAY + us
    bad_ts = date_ok & ~bad_time & (~in_range | (total < dates.TS_MIN_US) | (total > dates.TS_MAX_US))
    err = np.maximum(err, ev.fail(~date_ok & valid, "Conversion Error: Date out of range"))
    err = np.maximum(err, ev.fail(date_ok & bad_time & valid, "Conversion Error: Time out of range"))
    err = np.maximum(err, ev.fail(bad_ts & valid, "Conversion Error: Date and time not in timestamp range"))
    return Val(rt, select(date_ok & ~bad_time & ~bad_ts, total, 0), valid, err)
