"""Invariant 1 for every operator: the trace is simulatable from public info + leaks.

Also: oblivious mode gives identical traces for equal public sizes, and stability
propagates as docs/design.md §Operators and stability says.
"""
from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from dodb.oblivious.rng import new_rng
from dodb.operators import (
    Agg, ExecContext, SortKey, UnboundedStabilityError, distinct, filter_table, from_arrow,
    group_by, join, order_by, predicate_mask, set_operation, simulate,
)

from .util import tables

SIM_MODES = ["do", "oblivious"]


def run(op, tables_, mode, masks=(), **params):
    ctx = ExecContext(mode=mode, rng=new_rng(3))
    res = op(*tables_, ctx=ctx, **params)
    sim = simulate(op, tables_, _in_order(res.trace), mode=mode, masks=masks, **params)
    assert sim == res.trace, "simulated trace differs from the real one"
    return res


def _in_order(trace):
    return [e.sizes[0] for e in trace.events if e.kind.startswith("leak:")]


two_tables = st.tuples(tables(kinds=["int", "str"], max_rows=25), tables(kinds=["int", "str"], max_rows=25))


@pytest.mark.parametrize("mode", SIM_MODES)
@given(t=tables(kinds=["int", "str"], max_rows=40), bins=st.sampled_from([None, 2, 4]))
def test_filter_simulatable(mode, t, bins):
    pt = from_arrow(t, stability=1, widths={"c1": 8})
    mask = predicate_mask(pt, "c0 > 0")
    run(filter_table, [pt], mode, masks=("mask",), mask=mask, bin_size=bins)


@pytest.mark.parametrize("mode", SIM_MODES)
@given(t=tables(kinds=["int", "str", "dec"], max_rows=40))
def test_group_by_simulatable(mode, t):
    pt = from_arrow(t, stability=2, widths={"c1": 8})
    aggs = [Agg("count_star", None, "n"), Agg("sum", "c2", "s"), Agg("min", "c1", "m"), Agg("count_distinct", "c2", "d")]
    run(group_by, [pt], mode, keys=["c0"], aggs=aggs)
    run(group_by, [pt], mode, keys=[], aggs=aggs)
    several = aggs + [Agg("count_distinct", "c1", "d1")]  # one sorted pass per distinct column
    run(group_by, [pt], mode, keys=["c0"], aggs=several)
    run(group_by, [pt], mode, keys=[], aggs=several)


@pytest.mark.parametrize("mode", SIM_MODES)
@pytest.mark.parametrize("how", ["inner", "left", "semi", "anti"])
@given(lr=two_tables, public_right=st.booleans())
def test_join_simulatable(mode, how, lr, public_right):
    l, r = lr
    lt = from_arrow(l, stability=1, widths={"c1": 8})
    rt = from_arrow(r, stability=0 if public_right else 1, widths={"c1": 8})
    params = dict(how=how, left_degree=40, right_degree=None if public_right else 40)
    if mode == "oblivious" and how in ("inner", "left"):
        params["left_degree"] = 40
    run(join, [lt, rt], mode, left_keys=["c0"], right_keys=["c0"], **params)


@pytest.mark.parametrize("mode", SIM_MODES)
@given(t=tables(kinds=["int", "str"], max_rows=30), limit=st.none() | st.integers(0, 8))
def test_order_by_and_distinct_simulatable(mode, t, limit):
    pt = from_arrow(t, stability=1, widths={"c1": 8})
    run(order_by, [pt], mode, keys=[SortKey("c1", True), SortKey("c0")], limit=limit)
    run(distinct, [pt], mode)


@pytest.mark.parametrize("mode", SIM_MODES)
@pytest.mark.parametrize("kind", ["union", "intersect", "except"])
@given(lr=two_tables)
def test_set_operations_simulatable(mode, kind, lr):
    a, b = lr
    op = functools.partial(set_operation, kind)
    run(op, [from_arrow(a, stability=1, widths={"c1": 8}), from_arrow(b, stability=1, widths={"c1": 8})], mode)


def test_simulator_catches_a_leaky_operator():
    def leaky_filter(table, *, mask, ctx):
        res = filter_table(table, mask, ctx=ctx)
        ctx.trace.record("oops", -1, table.real_count)  # reveals the true size
        return res

    pt = from_arrow(pa.table({"k": [1, 2, 3]}), stability=1)
    with pytest.raises(AssertionError, match="differs"):
        run(leaky_filter, [pt], "do", masks=("mask",), mask=np.ones(3, bool))


def _op_trace(seed, n):
    rng = np.random.default_rng(seed)
    t = pa.table({"k": rng.integers(0, 3, n), "v": rng.integers(-5, 5, n)})
    pt = from_arrow(t, stability=1)
    ctx = ExecContext(mode="oblivious", rng=new_rng(0))
    f = filter_table(pt, predicate_mask(pt, "v > 0"), ctx=ctx).table
    g = group_by(f, ["k"], [Agg("sum", "v", "s")], ctx=ctx).table
    join(g, pt, ["k"], ["k"], ctx=ctx, left_degree=n, right_degree=n)
    order_by(pt, [SortKey("v")], limit=3, ctx=ctx)
    return ctx.trace


@given(st.integers(0, 30), st.integers(0, 2**31), st.integers(0, 2**31))
def test_oblivious_mode_same_size_same_trace(n, a, b):
    assert _op_trace(a, n) == _op_trace(b, n)


def test_do_mode_trace_depends_on_leaks_only():
    # DO traces legitimately differ between inputs only through the leaked noisy sizes
    t1 = _op_trace(1, 20)
    assert len(t1) > 10


def test_stability_propagation():
    t = pa.table({"k": [1, 2, 2, 3], "v": [1, 2, 3, 4]})
    priv = from_arrow(t, stability=3)
    pub = from_arrow(t, stability=0)
    ctx = ExecContext(mode="do", rng=new_rng(0))
    assert filter_table(priv, np.ones(4, bool), ctx=ctx).table.stability == 3
    assert group_by(priv, ["k"], [], ctx=ctx).table.stability == 3
    rep = ExecContext(mode="do", rng=new_rng(0), neighbour="replace")
    assert group_by(priv, ["k"], [], ctx=rep).table.stability == 6
    # join: s_L * deg_R + s_R * deg_L; the public side's degree is computed exactly (2)
    assert join(priv, pub, ["k"], ["k"], ctx=ctx).table.stability == 3 * 2
    assert join(priv, from_arrow(t, stability=1), ["k"], ["k"], ctx=ctx,
                left_degree=2, right_degree=5).table.stability == 3 * 5 + 1 * 2
    assert join(pub, pub, ["k"], ["k"], ctx=ctx).table.stability == 0
    assert not join(pub, pub, ["k"], ["k"], ctx=ctx).leaks  # public inputs leak nothing


def test_semi_and_left_join_leaks_count_both_sides():
    t = pa.table({"k": [1, 2, 2, 3]})
    ctx = ExecContext(mode="do", rng=new_rng(0))
    left, right = from_arrow(t, stability=2), from_arrow(t, stability=3)
    semi = join(left, right, ["k"], ["k"], how="semi", ctx=ctx, left_degree=2, right_degree=2)
    assert [lk.sensitivity for lk in semi.leaks] == [2 + 3 * 2]
    lj = join(left, right, ["k"], ["k"], how="left", ctx=ctx, left_degree=2, right_degree=2)
    assert sorted(lk.sensitivity for lk in lj.leaks) == sorted([2 * 2 + 2 * 3 * 2, 2 + 3 * 2])


def test_join_without_degree_bound_is_refused():
    t = pa.table({"k": [1, 2, 2], "v": [1, 2, 3]})
    with pytest.raises(UnboundedStabilityError, match="degree bound"):
        join(from_arrow(t, stability=1), from_arrow(t, stability=1), ["k"], ["k"], ctx=ExecContext(rng=new_rng(0)))


def test_degree_bound_is_enforced():
    l = pa.table({"k": [1, 1, 1, 1]})
    r = pa.table({"k": [1]})
    res = join(from_arrow(l, stability=1), from_arrow(r, stability=1), ["k"], ["k"],
               ctx=ExecContext(rng=new_rng(0)), left_degree=2, right_degree=1)
    assert res.table.real_count == 2  # contribution bounding: only 2 left rows per key
    assert res.table.stability == 1 * 1 + 1 * 2


def test_invalid_privacy_parameters_fail_cleanly():
    pt = from_arrow(pa.table({"k": [1, 2]}), stability=1)
    for eps, delta in [(0, 1e-6), (float("nan"), 1e-6), (1.0, 0.0), (1.0, 1.5)]:
        with pytest.raises(ValueError):
            filter_table(pt, np.ones(2, bool), epsilon=eps, delta=delta, ctx=ExecContext(rng=new_rng(0)))



def _pk_fk_trace(seed, n_fk, n_pk, how):
    """An oblivious PK–FK join (declared unique right side) on random data of fixed sizes:
    inner joins skip the re-sort, left joins use operators/pkfk.py."""
    rng = np.random.default_rng(seed)
    fk = pa.table({"k": rng.integers(0, 4, n_fk), "v": rng.integers(-5, 5, n_fk)})
    pk = pa.table({"k2": rng.integers(0, 6, n_pk), "w": [f"s{x}" for x in rng.integers(0, 9, n_pk)]})
    ctx = ExecContext(mode="oblivious", rng=new_rng(0))
    f = filter_table(from_arrow(fk, stability=1), predicate_mask(from_arrow(fk, stability=1), "v > 0"), ctx=ctx).table
    join(f, from_arrow(pk, stability=1, widths={"w": 4}), ["k"], ["k2"], how=how, ctx=ctx, left_degree=n_fk,
         right_degree=1)
    assert any(e.kind == "join:pk_fk_left" for e in ctx.trace.events) == (how == "left")
    return ctx.trace


@given(st.integers(0, 25), st.integers(0, 8), st.sampled_from(["inner", "left"]),
       st.integers(0, 2**31), st.integers(0, 2**31))
def test_oblivious_pk_fk_join_same_size_same_trace(n_fk, n_pk, how, a, b):
    assert _pk_fk_trace(a, n_fk, n_pk, how) == _pk_fk_trace(b, n_fk, n_pk, how)


@pytest.mark.parametrize("how", ["inner", "left"])
@given(lr=two_tables, public_right=st.booleans())
def test_pk_fk_join_simulatable(how, lr, public_right):
    l, r = lr
    lt = from_arrow(l, stability=1, widths={"c1": 8})
    # a unique right side: its first row per key (NULL keys dropped) — declared when private
    r = r.filter(pa.compute.is_valid(r.column("c0")))
    keep = sorted({k: i for i, k in reversed(list(enumerate(r.column("c0").to_pylist())))}.values())
    rt = from_arrow(r.take(pa.array(keep, pa.int64())), stability=0 if public_right else 1, widths={"c1": 8})
    res = run(join, [lt, rt], "oblivious", left_keys=["c0"], right_keys=["c0"], how=how, left_degree=40,
              right_degree=None if public_right else 1)
    assert any(e.kind == "join:pk_fk_left" for e in res.trace.events) == (how == "left")
