"""CAST / TRY_CAST between the types dodb evaluates, and implicit coercions.
See docs/design.md §Expressions.

Numbers go through :func:`.numeric.cast_number`; text is written by :mod:`.format`.
A failing row gets an error code under CAST and becomes NULL under TRY_CAST.
"""
from __future__ import annotations

import numpy as np

from . import dates, format as fmt, strings, zoned
from .numeric import Unsupported, cast_number
from .types import SqlType
from .value import Val, constant
from ...oblivious.select import select

__all__ = ["cast", "text_width"]

_NUMERIC = ("int", "dec", "float", "bool")


def text_width(t: SqlType) -> int:
    """Public byte bound of a value of type ``t`` written as text."""
    if t.kind == "int":
        return {8: 4, 16: 6, 32: 11, 64: 20}[t.bits]
    if t.huge:
        return fmt.dec_text_width(39, 0)
    if t.kind == "dec":
        return fmt.dec_text_width(t.precision, t.scale)
    return {"date": fmt.DATE_TEXT_WIDTH, "ts": fmt.TS_TEXT_WIDTH, "tstz": fmt.TS_TEXT_WIDTH + 3, "time": fmt.TIME_TEXT_WIDTH, "bool": 5}.get(t.kind, 0)


def _to_text(ev, v: Val, to: SqlType) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    k = v.type.kind
    none = np.zeros(v.n, dtype=bool)
    if k == "int":
        mat, lengths = fmt.int_text(v.data)
        return mat[:, : text_width(v.type)], lengths, none, ""
    if k == "dec":
        mat, lengths = fmt.dec_text(v.data, 39 if v.type.huge else v.type.precision, v.type.scale)
        return mat[:, : text_width(v.type)], lengths, none, ""
    if k == "bool":
        mat, lengths = fmt.bool_text(v.data.astype(bool))
        return mat, lengths, none, ""
    if k == "date":
        mat, lengths, bad = fmt.date_text(v.data)
        return mat, lengths, bad, ""
    if k == "ts":
        mat, lengths, bad = fmt.ts_text(v.data)
        return mat, lengths, bad, ""
    if k == "time":
        mat, lengths = fmt.time_text(v.data)
        return mat, lengths, none, ""
    if k == "tstz":  # the UTC wall clock and '+00' (not after ±infinity)
        zoned.require_utc("CAST of TIMESTAMP WITH TIME ZONE to VARCHAR")
        mat, lengths, bad = fmt.ts_text(v.data)
        infinite = (v.data == fmt.TS_INFINITY) | (v.data == -fmt.TS_INFINITY)  # not -2^63 (to_timestamp makes it: a time)
        suffix = np.broadcast_to(np.frombuffer(b"+00", np.uint8), (v.n, 3))
        mat, lengths = strings.concat([(mat, lengths), (suffix, select(infinite, 0, 3))])
        return mat, lengths, bad, ""
    raise Unsupported(f"CAST of {v.type} to VARCHAR")


def cast(ev, v: Val, to: SqlType, try_: bool) -> Val:
    """``CAST(v AS to)`` (``TRY_CAST`` when ``try_``)."""
    src = v.type
    if src.name == to.name:
        return v
    if src.kind == "null":
        out = constant(to, None, v.n)
        out.err = v.err
        return out
    data, fails, msg, lengths, err_always = None, [], "", None, None
    if src.kind in _NUMERIC and to.kind in _NUMERIC:
        data, bad, msg = cast_number(v, to)
        fails = [(bad, msg)]
    elif to.kind == "str":
        data, lengths, bad, msg = _to_text(ev, v, to)
        fails = [(bad, msg)]
    elif src.kind == "str" and to.kind == "int":
        from .format import parse_int
        from .types import INT_NAME
        data, bad, unread = parse_int(v.data, v.lengths, to.bits)
        fails = [(bad, f"Conversion Error: Could not convert string to {INT_NAME[to.bits]}")]
        err_always = ev.fail(unread & v.valid, "Not implemented Error: dodb reads integers only as "
                                               "[sign]digits[.digits] (no hexadecimal, binary, exponent or '_')")
    elif src.kind == "str" and to.kind == "date":
        from .date_text import parse_date
        data, bad, timed = parse_date(v.data, v.lengths)
        fails = [(bad, "Conversion Error: invalid date field format, expected format is (YYYY-MM-DD)")]
        err_always = ev.fail(timed & v.valid, "Not implemented Error: dodb reads a date from text without a time "
                                              "part")
    elif src.kind == "date" and to.kind == "ts":  # ±infinity stays ±infinity, in both directions
        data, bad = dates.to_us(v.data, "date")
        data = dates.keep_infinities(v.data, "date", data, "ts")
        fails = [(bad & dates.finite(v.data, "date"), "Conversion Error: Date and time not in timestamp range")]
    elif src.kind == "ts" and to.kind == "date":
        data = dates.keep_infinities(v.data, "ts", dates.split_ts(v.data)[0], "date")
    elif "tstz" in (src.kind, to.kind) and {src.kind, to.kind} <= {"tstz", "ts", "date"}:
        # in UTC the TIMESTAMP operation on the same lane (expressions/zoned.py)
        zoned.require_utc(f"CAST from {src} to {to}")
        as_ts = zoned.as_timestamp(v)
        mid = cast(ev, as_ts, zoned.TIMESTAMP, try_) if src.kind == "date" else as_ts  # a TIMESTAMP
        out = cast(ev, mid, to, try_) if to.kind == "date" else mid
        return Val(to, out.data, out.valid, out.err)
    else:
        raise Unsupported(f"CAST from {src} to {to}")
    valid = v.valid.copy()
    err = v.err if err_always is None else np.maximum(v.err, err_always)
    for bad, message in fails:
        if try_:
            valid = valid & ~bad
        else:
            err = np.maximum(err, ev.fail(bad & v.valid, message))
    return Val(to, data, valid, err, lengths)
