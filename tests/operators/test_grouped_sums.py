"""A GROUP BY's one-pass SUM/AVG (dodb/operators/grouped_sums.py) against the scans it replaces.

For random tables with a grouping key — integers of every width up to their edges, narrow
and 38-digit DECIMALs (so SUM overflows), booleans, NULLs, dummy rows holding garbage,
empty tables — ``group_by`` must return the same bytes, the same status code and the
**same trace** whether the running sums come from the compiled pass or from the
reference's segmented scans; a planted difference in either is caught.
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.operators import Agg, ExecContext, from_arrow
from dodb.operators import aggregate as aggregate_mod
from dodb.operators import grouped_sums
from tests.operators.test_global_aggregate import BIG, COLUMNS as GLOBAL_COLUMNS, run_aggregate

# the global test's columns but the double and the all-NULL one (this path totals neither)
COLUMNS = {k: v for k, v in GLOBAL_COLUMNS.items() if k not in ("f", "z")}
AGGS = [Agg("count_star", None, "n")] + [Agg(f, c, f"{f}_{c}") for c in COLUMNS for f in ("sum", "avg")]


@st.composite
def padded_tables(draw):
    n = draw(st.integers(0, 14))
    cols = {name: pa.array([draw(st.none() | values) for _ in range(n)], type=typ)
            for name, (typ, values) in COLUMNS.items()}
    cols["k"] = pa.array([draw(st.none() | st.integers(0, 3)) for _ in range(n)], type=pa.int32())
    real = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return from_arrow(pa.table(cols), stability=1, is_real=real)


def _run(pt, aggs, mode: str):
    return run_aggregate(pt, aggs, mode, keys=("k",))


def _reference(m):
    m.setattr(aggregate_mod, "grouped_int128", lambda *a: None)  # the segmented scans


@pytest.mark.parametrize("mode", ["do", "oblivious", "plain"])
@settings(max_examples=30, deadline=None)
@given(pt=padded_tables(), data=st.data())
def test_one_pass_equals_the_scans(mode, pt, data, monkeypatch):
    aggs = data.draw(st.lists(st.sampled_from(AGGS), min_size=1, max_size=5, unique_by=lambda a: a.name))
    fast = _run(pt, aggs, mode)
    with monkeypatch.context() as m:
        _reference(m)
        ref = _run(pt, aggs, mode)
    assert fast[0] == ref[0], "values"
    assert fast[1] == ref[1], "status"
    assert fast[2] == ref[2], "trace"


def test_the_fast_path_runs_and_overflow_is_a_status(monkeypatch):
    pt = from_arrow(pa.table({"k": pa.array([1, 1, 2], pa.int32()),
                              "w": pa.array([decimal.Decimal(BIG)] * 3, pa.decimal128(38, 0))}), stability=1,
                    is_real=np.array([True, True, True]))
    calls = []
    real = grouped_sums.grouped_int128
    monkeypatch.setattr(aggregate_mod, "grouped_int128", lambda *a: calls.append(real(*a)) or calls[-1])
    _, status, _ = _run(pt, [Agg("sum", "w", "s")], "oblivious")
    calls = [c is not None for c in calls]
    assert calls == [True] and status == aggregate_mod.SUM_OVERFLOW


@pytest.mark.parametrize("plant", ["value", "run", "trace"])
def test_a_planted_difference_is_caught(plant, monkeypatch):
    pt = from_arrow(pa.table({"k": pa.array([1, 1, 2, 2], pa.int32()),
                              "d": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("2.50"),
                                             decimal.Decimal("-7.00")], pa.decimal128(15, 2))}),
                    stability=1, is_real=np.array([True, True, True, True]))
    aggs = [Agg("sum", "d", "s")]
    with monkeypatch.context() as m:
        _reference(m)
        ref = _run(pt, aggs, "oblivious")
    from dodb.oblivious import compiled_reduce
    kernel = compiled_reduce.seg_sum128_limbs
    if plant == "value":  # one limb dropped
        def wrong(lo, hi, inc, seg, out, n, limbs):
            kernel(lo, hi, inc, seg, out, n, limbs)
            out[n:2 * n] = 0  # the low word
        monkeypatch.setattr(compiled_reduce, "seg_sum128_limbs", wrong)
    elif plant == "run":  # the run boundaries ignored: one running total over every row
        monkeypatch.setattr(compiled_reduce, "seg_sum128_limbs",
                            lambda lo, hi, inc, seg, out, n, limbs: kernel(lo, hi, inc, np.ones_like(seg), out, n, limbs))
    else:  # one scan not recorded
        monkeypatch.setattr(type(ExecContext(mode="do").kernels), "scan_events", lambda self, n, op: None)
    assert _run(pt, aggs, "oblivious") != ref
