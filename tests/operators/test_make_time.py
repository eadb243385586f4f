"""make_time and make_timestamp (dodb/operators/expressions/times.py) against DuckDB: field
values at and past every limit (hour 24, second 60, carries of 59.9999999, negative zero,
NaN/±inf seconds, years at the TIMESTAMP range's ends) and NULLs, the real rows hidden
among dummy slots of garbage that would raise if they were looked at."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings, strategies as st

from dodb.operators.table import from_arrow

from tests.operators.expr_cases import compare

_INTS = st.sampled_from([0, 1, 23, 24, 25, 59, 60, 61, -1, 12, 2 ** 31, 2013, 294247, -290308, 2, 28, 29, 30, 31])
_SECONDS = st.sampled_from([0.0, -0.0, 59.9999999, 60.0, 60.0000001, 60.9, -1e-7, 0.5, float("nan"), float("inf"), 1e300,
                            54.775806, 54.775807, 3.25]) | st.floats(0, 61)
_GARBAGE = (2 ** 40, -(2 ** 40), 99, 99, 99, float("nan"))


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(_INTS, _INTS, _INTS, _INTS, _INTS, _SECONDS | st.none()), min_size=1, max_size=4),
       dummies=st.integers(0, 3))
def test_make_time_and_timestamp_match_duckdb(rows, dummies):
    real = pa.table(dict(zip(["y", "mo", "d", "h", "mi", "s"], [pa.array(c, t) for c, t in zip(
        zip(*rows), [pa.int64()] * 5 + [pa.float64()])])))
    slots = pa.table(dict(zip(real.column_names, [pa.array(list(c) + [_GARBAGE[i]] * dummies, real.schema.field(i).type)
                                                  for i, c in enumerate(zip(*rows))])))
    is_real = np.array([True] * len(rows) + [False] * dummies)
    pt = from_arrow(slots, stability=1, is_real=is_real)
    for sql in ["make_time(h, mi, s)", "make_timestamp(y, mo, d, h, mi, s)", "make_time(h, mi, 7)"]:
        compare(real, pt, sql)
