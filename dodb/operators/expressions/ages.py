"""``age(a, b)``: the INTERVAL from ``b`` to ``a`` in calendar fields (docs/design.md
§Expressions, INTERVAL values), DuckDB's ``Interval::GetAge``.

DuckDB subtracts the fields (years, months, days, and the time of day) of the later from
the earlier timestamp, borrows a day from the months when the time of day is short, the
days of the *earlier* timestamp's month when the day is short, and gives the result the
sign of ``a − b``.  Every borrow happens at most once, so the per-row loop of DuckDB is a
fixed sequence of selects here.  ±infinity on either side is NULL; a DATE outside the
TIMESTAMP range is DuckDB's cast error.  The result never overflows: the months of two
timestamps are at most ~7 million apart.

>>> import numpy as np
>>> us = lambda d: np.array([d * 86_400_000_000], dtype=np.int64)
>>> age_lanes(us(11017 + 60), us(11017 + 30)).tolist()  # 2000-03-01 − 2000-01-31
[[1, 1, 0]]
"""
from __future__ import annotations

import numpy as np

from . import dates
from .functions import ANON
from .numeric import Unsupported
from .value import Val
from ...oblivious.select import select

__all__ = ["age_lanes"]


def age_lanes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(n, 3)`` (months, days, µs) of ``age(a, b)`` for finite timestamps in µs."""
    flip = a < b
    late, early = select(flip, b, a), select(flip, a, b)
    (ld, lt), (ed, et) = dates.split_ts(late), dates.split_ts(early)
    (ly, lm, lday), (ey, em, eday) = dates.civil(ld), dates.civil(ed)
    tod = lt - et
    short_time = tod < 0                                     # borrow a day
    tod = tod + select(short_time, dates.US_PER_DAY, 0)
    days = lday - eday - short_time
    short_day = days < 0                                     # borrow the earlier month's days
    days = days + select(short_day, dates.month_days(ey, em), 0)
    months = (ly - ey) * 12 + (lm - em) - short_day
    sign = select(flip, -1, 1)
    return np.stack([sign * months, sign * days, sign * tod], axis=1)


def _age(ev, node):
    """``age(a, b)`` (``age(x)`` arrives as ``age(today's UTC midnight, x)``: expressions/now.py)."""
    args = node.expressions
    if len(args) != 2:
        raise Unsupported(f"AGE with {len(args)} arguments")
    a, b = ev.ev(args[0]), ev.ev(args[1])
    rt = ev.type_of(node)
    if {a.type.kind, b.type.kind} - {"date", "ts"} or rt.kind != "interval":  # lint: public types only
        raise Unsupported(f"AGE of {a.type} and {b.type}")
    fin_a, fin_b = dates.finite(a.data, a.type.kind), dates.finite(b.data, b.type.kind)
    (ua, bad_a), (ub, bad_b) = dates.to_us(a.data, a.type.kind), dates.to_us(b.data, b.type.kind)
    bad_a, bad_b = bad_a & fin_a & a.valid, bad_b & fin_b & b.valid  # ±infinity casts to ±infinity
    valid = a.valid & b.valid & fin_a & fin_b & ~bad_a & ~bad_b
    lanes = age_lanes(select(valid, ua, 0), select(valid, ub, 0))
    lanes = lanes * valid[:, None]
    # DuckDB casts each DATE argument to TIMESTAMP before the call: that cast fails on its
    # own argument, whatever the other one holds (NULL or not)
    err = np.maximum(a.err, b.err)
    err = np.maximum(err, ev.fail(bad_a | bad_b,
                                  "Conversion Error: Date and time not in timestamp range"))
    return Val(rt, lanes, valid, err)


ANON["AGE"] = _age
