"""Intervals made per row and TIME ± INTERVAL (docs/design.md §Expressions, TIME values).

dodb holds no INTERVAL lanes: an interval is a public constant (``INTERVAL 3 HOUR``) or
one of DuckDB's constructors applied to an integer expression (``to_hours(x)``,
``to_minutes``, ``to_microseconds``, ``to_days``, ``to_weeks``) right where it is added
to or subtracted from a DATE, TIMESTAMP or TIME.  A constructed interval is (days, µs)
per row, with DuckDB's errors: the product out of its field's range (Out of Range, on
every row whose argument is not NULL, as DuckDB computes the interval before the sum),
the negation of the smallest value under ``-``.  ``to_seconds``/``to_milliseconds``
(DOUBLE arguments) and the month constructors are refused.

TIME ± INTERVAL is DuckDB's ``Interval::Add`` on a time: the months and days are ignored,
the microseconds' remainder modulo a day (truncated, C's ``%``) is added and the sum
wraps once around midnight (so 24:00:00 + 0 is 00:00:00).
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from . import dates
from .numeric import Unsupported
from .value import Val
from ...oblivious.select import floor_mod, select

__all__ = ["CONSTRUCTORS", "is_constructed", "constructed", "shift_time", "shift_time_value"]

_I64_MAX, _I32_MAX = (1 << 63) - 1, (1 << 31) - 1
# name: (field, factor, smallest and largest argument whose product fits the field)
CONSTRUCTORS = {"TO_HOURS": ("micros", 3_600_000_000, -(_I64_MAX // 3_600_000_000), _I64_MAX // 3_600_000_000),
                "TO_MINUTES": ("micros", 60_000_000, -(_I64_MAX // 60_000_000), _I64_MAX // 60_000_000),
                "TO_MICROSECONDS": ("micros", 1, -_I64_MAX - 1, _I64_MAX),
                "TO_DAYS": ("days", 1, -_I32_MAX - 1, _I32_MAX), "TO_WEEKS": ("days", 7, -(_I32_MAX // 7), _I32_MAX // 7)}


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def is_constructed(node: exp.Expression) -> bool:
    """``to_hours(x)`` and the like (possibly in parentheses)."""
    node = _unparen(node)
    return isinstance(node, exp.ToDays) or isinstance(node, exp.Anonymous) and node.name.upper() in CONSTRUCTORS


def _call(node: exp.Expression) -> tuple[str, list[exp.Expression]]:
    """(constructor name, arguments); sqlglot models ``to_days`` as a node of its own."""
    if isinstance(node, exp.ToDays):
        return "TO_DAYS", [node.this]
    return node.name.upper(), list(node.expressions)


def constructed(ev, node: exp.Expression, sign: int, base_valid: np.ndarray) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(days, µs, valid, error codes) of ``sign`` × a constructed interval, per row; the
    negation under ``-`` is the subtraction's, so it fails only where ``base_valid``."""
    name, args = _call(_unparen(node))
    if len(args) != 1:
        raise Unsupported(f"{name} with {len(args)} arguments")
    field, factor, smallest, largest = CONSTRUCTORS.get(name)
    arg = ev.ev(args[0])
    if arg.type.kind != "int":  # lint: public types only
        raise Unsupported(f"{name} of {arg.type}")
    x = arg.data.astype(np.int64)
    over = (x > largest) | (x < smallest)
    err = np.maximum(arg.err, ev.fail(over & arg.valid, "Out of Range Error: Interval value out of range"))
    value = select(over, 0, x) * factor
    if sign < 0:  # DuckDB negates the interval: its smallest field value has no negation
        least = -(1 << 63) if field == "micros" else -(1 << 31)
        err = np.maximum(err, ev.fail((value == least) & arg.valid & base_valid & (err == 0),
                                      f"Out of Range Error: Interval {field} value out of range"))
        value = -select(value == least, 0, value)
    zero = np.zeros_like(value)
    days, micros = (zero, value) if field == "micros" else (value, zero)
    return days, micros, arg.valid, err


def shift_time(tod: np.ndarray, micros) -> np.ndarray:
    """TIME + an interval's µs (months and days ignored): the remainder modulo a day, wrapped once."""
    micros = np.asarray(micros, dtype=np.int64)
    rest = floor_mod(micros, dates.US_PER_DAY)  # C's remainder has the sign of the µs (no abs: −2^63 has none)
    t = tod + select((micros < 0) & (rest != 0), rest - dates.US_PER_DAY, rest)
    return t - dates.US_PER_DAY * (t >= dates.US_PER_DAY) + dates.US_PER_DAY * (t < 0)


def shift_time_value(base: Val, micros, valid: np.ndarray, err: np.ndarray, rt) -> Val:
    """``time ± interval`` given the interval's signed µs (a constant or per row)."""
    if rt.kind != "time":  # lint: public types only
        raise Unsupported(f"TIME ± INTERVAL giving {rt}")
    return Val(rt, select(valid, shift_time(base.data, micros), 0), valid, err)
