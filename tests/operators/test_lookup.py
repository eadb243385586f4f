"""Lookup joins with a small public relation: DuckDB's answers, simulatable traces."""
from __future__ import annotations

import functools

import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from dodb.oblivious.rng import new_rng
from dodb.operators import ExecContext, from_arrow, simulate
from dodb.operators.lookup import lookup_join

from .util import assert_same_rows, duck, tables

SQL = {"inner": "JOIN", "left": "LEFT JOIN", "semi": "SEMI JOIN", "anti": "ANTI JOIN"}


@st.composite
def inputs(draw):
    l = draw(tables(kinds=["int", "str"], names={0: "lk", 1: "lv"}))
    keys = draw(st.lists(st.integers(-3, 3), unique=True, max_size=6))
    names = draw(st.lists(st.sampled_from(["x", "y", "é", None]), min_size=len(keys), max_size=len(keys)))
    r = pa.table({"rk": pa.array(keys, pa.int64()), "rv": pa.array(names, pa.string())})
    return l, r


@pytest.mark.parametrize("mode", ["do", "oblivious", "plain"])
@pytest.mark.parametrize("how", ["inner", "left", "semi", "anti"])
@given(lr=inputs())
def test_lookup_join_matches_duckdb(mode, how, lr):
    l, r = lr
    res = lookup_join(from_arrow(l, stability=2), from_arrow(r, stability=0), ["lk"], ["rk"], how=how,
                      ctx=ExecContext(mode=mode, rng=new_rng(0)))
    assert res.table.padded_size >= res.table.real_count
    assert_same_rows(res.table.to_arrow(), duck(f"SELECT * FROM l {SQL[how]} r ON lk = rk", l=l, r=r))
    if mode == "do":
        assert [lk.sensitivity for lk in res.leaks] == ([] if how == "left" else [2])


@pytest.mark.parametrize("how", ["inner", "semi", "anti", "left"])
@given(lr=inputs())
def test_lookup_join_trace_is_simulatable(how, lr):
    l, r = lr
    lt, rt = from_arrow(l, stability=1, widths={"lv": 8}), from_arrow(r, stability=0)
    ctx = ExecContext(mode="do", rng=new_rng(1))
    res = lookup_join(lt, rt, ["lk"], ["rk"], how=how, ctx=ctx)
    leaked = [e.sizes[0] for e in res.trace.events if e.kind.startswith("leak:")]
    op = functools.partial(lookup_join, left_keys=["lk"], right_keys=["rk"], how=how)
    assert simulate(op, [lt, rt], leaked, mode="do") == res.trace


def test_public_side_must_have_unique_keys():
    l = from_arrow(pa.table({"lk": [1, 2]}), stability=1)
    r = from_arrow(pa.table({"rk": [1, 1]}), stability=0)
    with pytest.raises(ValueError, match="not unique"):
        lookup_join(l, r, ["lk"], ["rk"], ctx=ExecContext(rng=new_rng(0)))


def test_lookup_cost_model_matches_the_measured_break_even():
    from dodb.operators.lookup import lookup_pays, pass_cost
    import pyarrow as pa
    from dodb.operators.table import from_arrow

    narrow = from_arrow(pa.table({"b": list(range(4)), "z": list(range(4))}))
    wide = from_arrow(pa.table({"b": list(range(4)), "s": ["x" * 100] * 4}))
    assert pass_cost(narrow) == 6.0  # compare + flag, two 1-word columns with their validity words
    assert pass_cost(wide) > 3 * pass_cost(narrow)  # 100-byte strings: 13 words at 2.5 each
    # measured (n = 2^16): narrow lookups win up to k ~ 1,000, lose at 2,048
    assert lookup_pays(256, 1 << 16, pass_cost(narrow))
    assert not lookup_pays(2048, 1 << 16, pass_cost(narrow))
    # 100-byte strings: a sort already wins at k = 256
    assert not lookup_pays(256, 1 << 16, pass_cost(wide))
    # more private rows make the sort dearer, so more public rows still pay
    assert lookup_pays(700, 600_000, pass_cost(narrow)) and not lookup_pays(700, 1 << 12, pass_cost(narrow))


@st.composite
def two_key_inputs(draw):
    """Two-column keys with NULLs on both sides (at most one NULL key row on the public side)."""
    key = st.one_of(st.none(), st.integers(-2, 2))
    n = draw(st.integers(0, 24))
    l = pa.table({"a": pa.array(draw(st.lists(key, min_size=n, max_size=n)), pa.int64()),
                  "b": pa.array(draw(st.lists(st.sampled_from(["p", "q", None]), min_size=n, max_size=n)),
                                pa.string()),
                  "v": pa.array(range(n), pa.int32())})
    pairs = draw(st.lists(st.tuples(st.integers(-2, 2), st.sampled_from(["p", "q"])), unique=True, max_size=8))
    if draw(st.booleans()):
        pairs.append((None, "p"))
    r = pa.table({"ra": pa.array([p[0] for p in pairs], pa.int64()), "rb": pa.array([p[1] for p in pairs], pa.string()),
                  "rv": pa.array(draw(st.lists(st.sampled_from(["x", "yy", None]), min_size=len(pairs),
                                               max_size=len(pairs))), pa.string()),
                  "rw": pa.array([float(i) / 3 for i in range(len(pairs))], pa.float64())})
    return l, r


@pytest.mark.parametrize("mode", ["do", "oblivious"])
@pytest.mark.parametrize("how", ["inner", "left", "semi", "anti"])
@given(lr=two_key_inputs())
def test_compiled_lookup_passes_equal_the_numpy_reference(mode, how, lr):
    from dodb.oblivious.backend import kernel_backend_scope

    l, r = lr
    out = {}
    for backend in ("numpy", "compiled"):
        with kernel_backend_scope(backend):
            res = lookup_join(from_arrow(l, stability=1), from_arrow(r, stability=0), ["a", "b"], ["ra", "rb"],
                              how=how, ctx=ExecContext(mode=mode, rng=new_rng(3)))
        out[backend] = res
    a, b = out["numpy"], out["compiled"]
    assert a.trace == b.trace
    assert a.table.names == b.table.names and a.table.padded_size == b.table.padded_size
    assert a.table.is_real.tobytes() == b.table.is_real.tobytes()
    for x, y in zip(a.table.arrays(), b.table.arrays()):
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    assert_same_rows(b.table.to_arrow(), duck(f"SELECT * FROM l {SQL[how]} r ON a = ra AND b = rb", l=l, r=r))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("n", [100, 4096 * 2 + 7, 4096 * 3 + 1])
def test_compiled_lookup_on_threads_equals_the_reference(threads, n):
    """The compiled passes split rows between threads by public counts (``MIN_ROWS_PER_THREAD``):
    whatever the split, the matched flags and selected words are the reference's."""
    import numpy as np

    import dodb
    from dodb.operators.lookup import _passes_compiled, _passes_numpy

    rng = np.random.default_rng(n + threads)
    k = 37
    lw = [rng.integers(0, 60, n).astype(np.uint64), rng.integers(0, 2, n).astype(np.uint64)]
    rw = [rng.permutation(60)[:k].astype(np.uint64), np.ones(k, dtype=np.uint64)]
    ok, r_ok = rng.random(n) < 0.9, rng.random(k) < 0.9
    pub = [rng.integers(0, 1 << 63, (2, k), dtype=np.uint64), rng.integers(0, 9, (1, k), dtype=np.uint64)]
    old = dodb.set_threads(threads)
    try:
        got = _passes_compiled(lw, rw, ok, r_ok, pub, n, k)
    finally:
        dodb.set_threads(old)
    want = _passes_numpy(lw, rw, ok, r_ok, pub, n, k)
    assert np.array_equal(got[0], want[0])
    assert all(np.array_equal(a, b) for a, b in zip(got[1], want[1]))
