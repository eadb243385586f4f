"""Every operator, every mode: real rows equal DuckDB's answer; no row is ever lost."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.oblivious.rng import new_rng
from dodb.operators import (
    Agg, ExecContext, SortKey, distinct, filter_table, from_arrow, group_by, join, order_by,
    predicate_mask, set_operation,
)

from .util import assert_same_rows, duck, tables

MODES = ["do", "oblivious", "plain"]
PRED = {
    "int": "c0 > 0", "bigint": "c0 > 0", "int32": "c0 % 2 = 0", "str": "c0 >= 'ab'",
    "dec": "c0 < 10.5", "float": "c0 > 1.5", "date": "c0 >= DATE '1992-01-05'", "bool": "c0",
}
KINDS = sorted(PRED)


def ctx_for(mode, seed=0):
    return ExecContext(mode=mode, rng=new_rng(seed))


@st.composite
def padded(draw, table_strategy, stability=1):
    """A padded table holding ``table``'s rows as real rows among random dummy rows.

    Dummies carry copies of real contents (as operators leave them), so an operator that
    forgets ``is_real`` anywhere produces wrong answers here.
    """
    t = draw(table_strategy)
    extra = draw(st.integers(0, 6)) if t.num_rows else draw(st.integers(0, 3))
    n = t.num_rows + extra
    real_pos = sorted(draw(st.permutations(range(n)))[: t.num_rows])
    src = [None] * n
    for i, p in enumerate(real_pos):
        src[p] = i
    # dummy slots copy a random real row (or row 0 of a dummy-only table)
    fill = [s if s is not None else (draw(st.integers(0, t.num_rows - 1)) if t.num_rows else None) for s in src]
    if t.num_rows:
        full = t.take(pa.array(fill))
    else:
        full = pa.table({c: pa.nulls(n, type=t.schema.field(c).type) for c in t.column_names})
    is_real = [s is not None for s in src]
    return t, from_arrow(full, stability=stability, is_real=is_real)


def check_padding(table):
    assert table.padded_size >= table.real_count


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data(), kind=st.sampled_from(KINDS), bins=st.sampled_from([None, 1, 2, 8]),
       s=st.integers(1, 3))
def test_filter(mode, data, kind, bins, s):
    t, pt = data.draw(padded(tables(kinds=[kind, "int"]), stability=s))
    mask = predicate_mask(pt, PRED[kind])
    res = filter_table(pt, mask, ctx=ctx_for(mode), epsilon=0.7, delta=1e-5, bin_size=bins)
    check_padding(res.table)
    assert res.table.stability == s
    assert_same_rows(res.table.to_arrow(), duck(f"SELECT * FROM t WHERE {PRED[kind]}", t=t))
    if mode == "do":
        assert len(res.leaks) == 1 and res.leaks[0].sensitivity == s


AGG_SQL = {
    "count_star": "count(*)", "count": "count({c})", "sum": "sum({c})", "avg": "avg({c})",
    "min": "min({c})", "max": "max({c})", "count_distinct": "count(DISTINCT {c})",
}
NUMERIC = {"int", "bigint", "int32", "dec", "float"}


@st.composite
def group_query(draw):
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=2, max_size=4))
    t = draw(tables(kinds=kinds))
    names = t.column_names
    nkeys = draw(st.integers(0, 2))
    keys = draw(st.permutations(names))[:nkeys]
    aggs = []
    for i in range(draw(st.integers(1, 4))):
        c = draw(st.sampled_from(names))
        kind = kinds[names.index(c)]
        funcs = ["count_star", "count", "min", "max", "count_distinct"] + (["sum", "avg"] if kind in NUMERIC else [])
        f = draw(st.sampled_from(funcs))
        aggs.append(Agg(f, None if f == "count_star" else c, f"a{i}"))
    return t, list(keys), aggs


def agg_sql(keys, aggs):
    sel = ", ".join(list(keys) + [AGG_SQL[a.func].format(c=a.column) + f" AS {a.name}" for a in aggs])
    return f"SELECT {sel} FROM t" + (f" GROUP BY {', '.join(keys)}" if keys else "")


@pytest.mark.parametrize("mode", MODES)
@given(q=group_query(), replace=st.booleans(), data=st.data())
def test_group_by(mode, q, replace, data):
    t, keys, aggs = q
    _, pt = data.draw(padded(st.just(t), stability=2))
    ctx = ExecContext(mode=mode, rng=new_rng(1), neighbour="replace" if replace else "add_remove")
    res = group_by(pt, keys, aggs, ctx=ctx, epsilon=1.0, delta=1e-6)
    check_padding(res.table)
    assert_same_rows(res.table.to_arrow(), duck(agg_sql(keys, aggs), t=t))
    if keys:
        assert res.table.stability == (4 if replace else 2)
        assert len(res.leaks) == (1 if mode == "do" else 0)
    else:
        assert res.table.padded_size == 1 and not res.leaks


JOIN_SQL = {"inner": "JOIN", "left": "LEFT JOIN", "semi": "SEMI JOIN", "anti": "ANTI JOIN"}


@st.composite
def join_inputs(draw):
    kind = draw(st.sampled_from(["int", "str", "int32", "date"]))
    l = draw(tables(kinds=[kind, "int"], names={0: "lk", 1: "lv"}))
    r = draw(tables(kinds=[kind, "str"], names={0: "rk", 1: "rv"}))
    return l, r


def max_degree(t, col):
    rows = duck(f"SELECT max(c) AS m FROM (SELECT count(*) c FROM t WHERE {col} IS NOT NULL GROUP BY {col})", t=t)
    return rows.column("m")[0].as_py() or 0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["inner", "left", "semi", "anti"])
@settings(max_examples=30)  # 12 combinations: lean enough for CI (DEVELOPERS.md), each a DuckDB round trip
@given(inp=join_inputs(), private=st.sampled_from(["left", "right", "both"]), data=st.data())
def test_join(mode, how, inp, private, data):
    l, r = inp
    sl = 1 if private in ("left", "both") else 0
    sr = 2 if private in ("right", "both") else 0
    _, lp = data.draw(padded(st.just(l), stability=sl))
    _, rp = data.draw(padded(st.just(r), stability=sr))
    # declared bounds that hold on the data (dodb verifies declarations at protect time)
    dl, dr = max(1, max_degree(l, "lk")), max(1, max_degree(r, "rk"))
    res = join(lp, rp, ["lk"], ["rk"], how=how,
               ctx=ctx_for(mode), left_degree=dl if sr else None, right_degree=dr if sl else None)
    check_padding(res.table)
    want = duck(f"SELECT * FROM l {JOIN_SQL[how]} r ON lk = rk", l=l, r=r)
    assert_same_rows(res.table.to_arrow(), want)


@pytest.mark.parametrize("mode", MODES)
@given(tp=padded(tables(kinds=["int", "str", "dec"])), desc=st.lists(st.booleans(), min_size=3, max_size=3),
       limit=st.none() | st.integers(0, 10), offset=st.integers(0, 5))
def test_order_by_limit(mode, tp, desc, limit, offset):
    t, pt = tp
    keys = [SortKey(c, d) for c, d in zip(t.column_names, desc)]
    res = order_by(pt, keys, limit=limit, offset=offset, ctx=ctx_for(mode))
    order = ", ".join(f"{c} {'DESC' if d else 'ASC'}" for c, d in zip(t.column_names, desc))
    sql = f"SELECT * FROM t ORDER BY {order}" + (f" LIMIT {limit}" if limit is not None else "") + f" OFFSET {offset}"
    assert_same_rows(res.table.to_arrow(), duck(sql, t=t), ordered=True)
    assert not res.leaks


@pytest.mark.parametrize("mode", MODES)
@given(tp=padded(tables(kinds=["int", "str"], max_rows=30)))
def test_distinct(mode, tp):
    t, pt = tp
    res = distinct(pt, ctx=ctx_for(mode))
    check_padding(res.table)
    assert_same_rows(res.table.to_arrow(), duck("SELECT DISTINCT * FROM t", t=t))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["union_all", "union", "intersect", "except"])
@given(ap=padded(tables(kinds=["int", "str"], max_rows=20)), bp=padded(tables(kinds=["int", "str"], max_rows=20)))
def test_set_operations(mode, kind, ap, bp):
    (a, pa_), (b, pb) = ap, bp
    res = set_operation(kind, pa_, pb, ctx=ctx_for(mode))
    check_padding(res.table)
    op = {"union_all": "UNION ALL", "union": "UNION", "intersect": "INTERSECT", "except": "EXCEPT"}[kind]
    assert_same_rows(res.table.to_arrow(), duck(f"SELECT * FROM a {op} SELECT * FROM b", a=a, b=b))
