"""The fully oblivious baseline's PK–FK joins (docs/design.md §Fair oblivious baselines).

Answers equal DuckDB's; declared bounds are enforced exactly as the general algorithm
enforces them; an inner PK–FK join pads to the FK side and skips the re-sort, a left join
onto a unique right side (dodb/operators/pkfk.py) has exactly the left side's slots.
"""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from dodb.operators import ExecContext, from_arrow, join

from .test_operators_vs_duckdb import JOIN_SQL, ctx_for, padded
from .util import assert_same_rows, duck, tables


@st.composite
def pk_fk_inputs(draw):
    """An FK table (duplicates, NULLs) and a PK table whose non-NULL keys are unique."""
    fk = draw(tables(kinds=["int", "str"], names={0: "fk", 1: "fv"}, max_rows=30))
    keys = draw(st.lists(st.integers(-3, 12) | st.none(), max_size=12))
    seen, uniq = set(), []
    for k in keys:
        if k not in seen:  # at most one NULL too: a public table's exact degree counts NULL keys
            uniq.append(k)
            seen.add(k)
    vals = draw(st.lists(st.text("abc", max_size=3) | st.none(), min_size=len(uniq), max_size=len(uniq)))
    pk = pa.table({"pk": pa.array(uniq, pa.int64()), "pv": pa.array(vals, pa.string())})
    return fk, pk


def _kinds(trace) -> list[str]:
    return [e.kind for e in trace.events]


def _sorts(trace) -> int:
    return sum(k == "alloc:sort" for k in _kinds(trace))


@pytest.mark.parametrize("how", ["inner", "left"])
@given(inp=pk_fk_inputs(), pk_right=st.booleans(), public_pk=st.booleans(), data=st.data())
def test_pk_fk_join_matches_duckdb(how, inp, pk_right, public_pk, data):
    fk, pk = inp
    _, fkp = data.draw(padded(st.just(fk), stability=1))
    _, pkp = data.draw(padded(st.just(pk), stability=0 if public_pk else 1))
    ctx = ExecContext(mode="oblivious")
    if pk_right:
        res = join(fkp, pkp, ["fk"], ["pk"], how=how, ctx=ctx, left_degree=40,
                   right_degree=None if public_pk else 1)
        want = duck(f"SELECT * FROM l {JOIN_SQL[how]} r ON fk = pk", l=fk, r=pk)
    else:
        res = join(pkp, fkp, ["pk"], ["fk"], how=how, ctx=ctx, right_degree=40,
                   left_degree=None if public_pk else 1)
        want = duck(f"SELECT * FROM l {JOIN_SQL[how]} r ON pk = fk", l=pk, r=fk)
    assert_same_rows(res.table.to_arrow(), want)
    # the worst case of a PK–FK join is the FK side (or the smaller n_PK * deg_FK); an empty
    # public PK side has exact degree 0
    deg_pk = 1 if not public_pk or pk.num_rows else 0
    inner_worst = min(fkp.padded_size * deg_pk, pkp.padded_size * 40)
    if how == "left" and pk_right:  # exactly the left rows, without expansion
        assert "join:pk_fk_left" in _kinds(ctx.trace) and "join:expand" not in _kinds(ctx.trace)
        assert res.table.padded_size == fkp.padded_size
    else:
        assert "join:pk_fk_left" not in _kinds(ctx.trace)
        inner = res.table.padded_size if how == "inner" else res.table.padded_size - pkp.padded_size
        assert inner == inner_worst


@given(inp=pk_fk_inputs(), data=st.data())
def test_a_unique_side_skips_the_re_sort(inp, data):
    fk, pk = inp
    _, fkp = data.draw(padded(st.just(fk), stability=1))
    _, pkp = data.draw(padded(st.just(pk), stability=1))
    unique, general = ExecContext(mode="oblivious"), ExecContext(mode="oblivious")
    a = join(fkp, pkp, ["fk"], ["pk"], ctx=unique, left_degree=40, right_degree=1)
    b = join(fkp, pkp, ["fk"], ["pk"], ctx=general, left_degree=40, right_degree=2)
    assert_same_rows(a.table.to_arrow(), b.table.to_arrow())  # a bound of 2 holds too
    assert _sorts(unique.trace) == _sorts(general.trace) - 1


@given(l=tables(kinds=["int", "int"], names={0: "lk", 1: "lv"}, max_rows=30),
       r=tables(kinds=["int", "str"], names={0: "rk", 1: "rv"}, max_rows=20),
       fk_bound=st.integers(1, 3), how=st.sampled_from(["inner", "left"]))
def test_pk_fk_enforces_declared_bounds_like_the_general_join(l, r, fk_bound, how):
    # declarations that the data break (dodb checks them at protect time; operators enforce them):
    # only the first eligible PK row of a key run matches, FK rows past the bound do not
    lt, rt = from_arrow(l, stability=1), from_arrow(r, stability=1)
    args = dict(how=how, left_degree=fk_bound, right_degree=1)
    obl = join(lt, rt, ["lk"], ["rk"], ctx=ExecContext(mode="oblivious"), **args)
    general = join(lt, rt, ["lk"], ["rk"], ctx=ctx_for("plain"), **args)
    assert_same_rows(obl.table.to_arrow(), general.table.to_arrow())


def test_pk_fk_output_is_capped_by_a_small_pk_side():
    fk = pa.table({"k": [1, 1, 2, 2, 2, 3, 9, 9]})
    pk = pa.table({"k2": [1, 2], "v": ["a", "b"]})
    res = join(from_arrow(fk, stability=1), from_arrow(pk, stability=1), ["k"], ["k2"],
               ctx=ExecContext(mode="oblivious"), left_degree=3, right_degree=1)
    assert res.table.padded_size == 6  # n_PK * deg_FK = 2 * 3 < n_FK = 8
    assert sorted(res.table.to_arrow().column("v").to_pylist()) == ["a", "a", "b", "b", "b"]
    left = join(from_arrow(fk, stability=1), from_arrow(pk, stability=1), ["k"], ["k2"], how="left",
                ctx=ExecContext(mode="oblivious"), left_degree=3, right_degree=1)
    assert left.table.padded_size == 8  # every left row once
    assert sorted(left.table.to_arrow().column("v").to_pylist(), key=lambda v: (v is None, v or "")) == [
        "a", "a", "b", "b", "b", None, None, None]
