"""The one-pass global aggregate (dodb/operators/global_aggregate.py) against the scans it replaces.

For random tables — integers of every width, narrow and 38-digit DECIMALs up to the edges
of their type (so SUM overflows), doubles with NaN, ±inf and -0.0, booleans, NULLs, an
all-NULL column, dummy rows holding garbage, empty tables — a GROUP BY-less ``group_by``
must return the same bytes, the same status code and the **same trace** whether the
totals come from the compiled pass or from the reference's segmented scans; and with the
reference turned off, a planted difference in either is caught.
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.oblivious.rng import new_rng
from dodb.operators import Agg, ExecContext, from_arrow, group_by
from dodb.operators import aggregate as aggregate_mod
from dodb.operators import global_aggregate

BIG = 10 ** 38 - 1
COLUMNS = {
    "i8": (pa.int8(), st.integers(-128, 127)),
    "i64": (pa.int64(), st.sampled_from([-(2 ** 63), 2 ** 63 - 1, 0, -1]) | st.integers(-10 ** 6, 10 ** 6)),
    "u64": (pa.uint64(), st.sampled_from([0, 2 ** 64 - 1]) | st.integers(0, 10 ** 6)),
    "d": (pa.decimal128(15, 2), st.decimals(-10 ** 13 + 1, 10 ** 13 - 1, places=2, allow_nan=False,
                                           allow_infinity=False)),
    "w": (pa.decimal128(38, 0), st.sampled_from([decimal.Decimal(BIG), decimal.Decimal(-BIG), decimal.Decimal(0)])
          | st.integers(-10 ** 20, 10 ** 20).map(decimal.Decimal)),
    "f": (pa.float64(), st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([-0.0, 0.0, 1e308])),
    "b": (pa.bool_(), st.booleans()),
    "z": (pa.null(), st.none()),
}
AGGS = [Agg("count_star", None, "n")] + [Agg(f, c, f"{f}_{c}") for c in COLUMNS for f in ("count", "sum", "avg")
                                          if not (c == "z" and f == "avg")]


@st.composite
def padded_tables(draw):
    n = draw(st.integers(0, 12))
    cols = {name: pa.array([draw(st.none() | values) for _ in range(n)], type=typ)
            for name, (typ, values) in COLUMNS.items()}
    real = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return from_arrow(pa.table(cols), stability=1, is_real=real)


def run_aggregate(pt, aggs, mode: str, keys: tuple = ()):
    """``group_by`` of ``pt``: the output's bytes, the status code and the trace (what must not
    differ between a fast path and the reference)."""
    ctx = ExecContext(mode=mode, rng=new_rng(1))
    res = group_by(pt, list(keys), aggs, ctx=ctx)
    arrays = [(a.dtype.str, a.tobytes()) for a in res.table.arrays()]
    return arrays, ctx.error_code, [(e.kind, e.buffer, e.sizes) for e in res.trace.events]


@pytest.mark.parametrize("mode", ["do", "plain"])
@settings(max_examples=40, deadline=None)
@given(pt=padded_tables(), data=st.data())
def test_one_pass_equals_the_scans(mode, pt, data, monkeypatch):
    aggs = data.draw(st.lists(st.sampled_from(AGGS), min_size=1, max_size=6, unique_by=lambda a: a.name))
    fast = run_aggregate(pt, aggs, mode)
    with monkeypatch.context() as m:
        m.setattr(aggregate_mod, "global_row", lambda *a: None)  # the reference: segmented scans
        ref = run_aggregate(pt, aggs, mode)
    assert fast[0] == ref[0], "values"
    assert fast[1] == ref[1], "status"
    assert fast[2] == ref[2], "trace"


def test_the_fast_path_runs_and_overflow_is_a_status():
    pt = from_arrow(pa.table({"w": pa.array([decimal.Decimal(BIG)] * 3, pa.decimal128(38, 0))}), stability=1,
                    is_real=np.array([True, True, False]))
    calls = []
    real = global_aggregate.global_row

    def spy(*a):
        out = real(*a)
        calls.append(out is not None)
        return out

    aggregate_mod.global_row, saved = spy, aggregate_mod.global_row
    try:
        _, status, _ = run_aggregate(pt, [Agg("sum", "w", "s")], "do")
    finally:
        aggregate_mod.global_row = saved
    assert calls == [True] and status == aggregate_mod.SUM_OVERFLOW


@pytest.mark.parametrize("plant", ["value", "trace"])
def test_a_planted_difference_is_caught(plant, monkeypatch):
    pt = from_arrow(pa.table({"d": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(15, 2))}), stability=1,
                    is_real=np.array([True, True]))
    aggs = [Agg("sum", "d", "s")]
    ref = None
    with monkeypatch.context() as m:
        m.setattr(aggregate_mod, "global_row", lambda *a: None)
        ref = run_aggregate(pt, aggs, "do")
    if plant == "value":  # one limb dropped
        m_real = global_aggregate._int128_total

        def wrong(k, kern, agg, col, inc, n, nonnull):
            c, o = m_real(k, kern, agg, col, inc, n, nonnull)
            c.values[0, 0] += np.uint64(1)
            return c, o
        monkeypatch.setattr(global_aggregate, "_int128_total", wrong)
    else:  # one scan not recorded
        monkeypatch.setattr(type(ExecContext(mode="do").kernels), "scan_events", lambda self, n, op: None)
    assert run_aggregate(pt, aggs, "do") != ref
