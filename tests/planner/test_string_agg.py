"""string_agg / group_concat / listagg (docs/design.md §string_agg): answers equal DuckDB's
(NULLs skipped, all-NULL or empty group NULL, default separator ',', ORDER BY inside the
call, multi-byte UTF-8, empty strings); the result width is public and bounded, a bound
above the limit is refused before admission with nothing charged; the operator's view does
not depend on the data."""
from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import dodb
from dodb.compare import snapshot
from dodb.errors import DodbError, UnsupportedQueryError
from dodb.oblivious.rng import new_rng
from dodb.operators import Agg, ExecContext, from_arrow, group_by
from dodb.operators import string_agg as string_agg_module

WORDS = ["", "a", "b", "é", "日本", "ab", "zz", "x,y", "🙂", "aé"]


def _database(rows, width=12, max_degree=None, g_type="INTEGER"):
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t (id INTEGER PRIMARY KEY, g {g_type}, x VARCHAR, y INTEGER)")
    if rows:
        con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    d = dodb.attach(con, seed=7, allow_insecure=True)
    d.oracle = snapshot(con)
    d.set_budget(epsilon=1e6, delta=0.5)
    d.protect("t", "id", max_contributions=1, keys=[["id"]], widths={"x": width}, max_degree=max_degree)
    return d


def _answer(res):
    return res.fetchall()


ORDERED = [
    "SELECT g, string_agg(x, ', ' ORDER BY y, id) AS s FROM t GROUP BY g ORDER BY g NULLS LAST",
    "SELECT g, string_agg(x ORDER BY y DESC NULLS FIRST, id DESC) AS s, count(*) AS c FROM t GROUP BY g "
    "ORDER BY g NULLS LAST",
    "SELECT group_concat(x, '' ORDER BY id) AS s FROM t",
    "SELECT listagg(x, ' | ' ORDER BY x, id) AS s, count(x) AS c FROM t",
    "SELECT g, string_agg(x, '-' ORDER BY id) AS s FROM t WHERE y > 2 GROUP BY g ORDER BY g NULLS LAST",
    "SELECT string_agg(x, ';' ORDER BY id) AS s FROM t WHERE id < 0",
    "SELECT g, string_agg(upper(x), '/' ORDER BY id) AS s, min(x) AS m FROM t GROUP BY g ORDER BY g NULLS LAST",
    "SELECT g, string_agg(x, ',' ORDER BY id) FILTER (WHERE y > 1) AS s FROM t GROUP BY g ORDER BY g NULLS LAST",
    "SELECT string_agg(y + 1, ',' ORDER BY id) AS s, string_agg(x, ',' ORDER BY id DESC) AS r FROM t",
]

rows_st = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.one_of(st.none(), st.sampled_from(WORDS)),
                             st.integers(0, 5)), max_size=14)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=rows_st, mode=st.sampled_from(["do", "oblivious", "plain"]))
def test_ordered_string_agg_equals_duckdb(rows, mode):
    d = _database([(i, g, x, y) for i, (g, x, y) in enumerate(rows)])
    try:
        for sql in ORDERED:
            got = _answer(d.sql(sql, epsilon=1.0, mode=mode))
            want = d.oracle.sql(sql).fetchall()
            assert got == want, sql
    finally:
        d.close()


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=rows_st)
def test_unordered_string_agg_has_duckdb_pieces(rows):
    """Without ORDER BY the order is unspecified (in DuckDB too): the pieces are equal."""
    d = _database([(i, g, x, y) for i, (g, x, y) in enumerate(rows)])
    sql = "SELECT g, string_agg(x, '#') AS s FROM t GROUP BY g ORDER BY g NULLS LAST"
    try:
        for mode in ("do", "oblivious"):
            got = _answer(d.sql(sql, epsilon=1.0, mode=mode))
            want = d.oracle.sql(sql).fetchall()

            def pieces(rs):
                return [(g, None if s is None else sorted(s.split("#"))) for g, s in rs]
            assert pieces(got) == pieces(want)
        got = _answer(d.sql("SELECT string_agg(x) AS s FROM t", epsilon=1.0))[0][0]
        want = d.oracle.sql("SELECT string_agg(x) AS s FROM t").fetchall()[0][0]
        assert (got is None) == (want is None)
        assert got is None or len(got) == len(want)
    finally:
        d.close()


def test_degree_bound_narrows_the_width_and_plan_says_so():
    rows = [(i, i % 50, "v" + str(i), i) for i in range(200)]
    sql = "SELECT g, string_agg(x, ',' ORDER BY id) AS s FROM t GROUP BY g ORDER BY g"
    # the degree bound counts non-NULL values: it caps the groups of a NOT NULL column only
    for g_type, bounded in (("INTEGER NOT NULL", True), ("INTEGER", False)):
        d = _database(rows, width=6, max_degree={"g": 4}, g_type=g_type)
        try:
            assert _answer(d.sql(sql, epsilon=1.0)) == d.oracle.sql(sql).fetchall()
            assert ("≤4 rows/group" in d.plan(sql, epsilon=1.0).explain()) == bounded
        finally:
            d.close()


def test_over_the_limit_is_refused_before_admission_charging_nothing():
    rows = [(i, i % 3, "w" * 5, i) for i in range(4000)]
    d = _database(rows, width=300)
    try:
        before = d.budget["spent"]
        for sql in ("SELECT string_agg(x, ',') FROM t", "SELECT g, string_agg(x, ',') FROM t GROUP BY g"):
            with pytest.raises(UnsupportedQueryError) as e:
                d.sql(sql, epsilon=1.0)
            msg = str(e.value)
            assert "string_agg" in msg and "max_degree" in msg and "bytes" in msg, msg
            assert d.budget["spent"] == before
        # a narrower input fits: the same query runs
        sql = "SELECT string_agg(substring(x, 1, 2), ',') AS s FROM t WHERE id < 10"
        assert d.sql(sql, epsilon=1.0).arrow().num_rows == 1
    finally:
        d.close()


@pytest.mark.parametrize("sql,construct", [
    ("SELECT string_agg(DISTINCT x, ',') FROM t", "string_agg(DISTINCT"),
    ("SELECT string_agg(x, x) FROM t", "constant"),
    ("SELECT list(x) = ['a'] FROM t", "list/array_agg inside an expression"),
    ("SELECT array_agg(DISTINCT x ORDER BY id) FROM t", "list/array_agg (DISTINCT"),
])
def test_refused_by_name_charging_nothing(sql, construct):
    d = _database([(1, 1, "a", 1)])
    try:
        before = d.budget["spent"]
        with pytest.raises(DodbError) as e:
            d.sql(sql, epsilon=1.0)
        assert construct.lower() in str(e.value).lower(), str(e.value)
        assert d.budget["spent"] == before
    finally:
        d.close()


# --- the operator's view: identical for equal public shapes ------------------------------

_WATCHED = (str(Path(string_agg_module.__file__)),
            str(Path(string_agg_module.__file__).parent / "expressions" / "strings.py"))


def _view(table: pa.Table, real: np.ndarray, keys: list[str]):
    seen = []

    def tracer(frame, event, arg):
        if frame.f_code.co_filename in _WATCHED:
            if event == "line":
                seen.append((frame.f_code.co_filename, frame.f_lineno))
            elif event == "return" and isinstance(arg, (tuple, np.ndarray)):
                for a in (arg if isinstance(arg, tuple) else (arg,)):
                    if isinstance(a, np.ndarray):
                        seen.append((str(a.dtype), a.shape))
            return tracer
        return None

    pt = from_arrow(table, stability=1, widths={"x": 6}, is_real=real)
    ctx = ExecContext(mode="oblivious", rng=new_rng(1))
    agg = Agg("string_agg", "x", "s", param="::", order=(("y", True, False),), rows=4, total=table.num_rows)
    sys.settrace(tracer)
    try:
        res = group_by(pt, keys, [agg], ctx=ctx)
    finally:
        sys.settrace(None)
    out = res.table
    return seen, list(ctx.trace.events), [(a.dtype.str, a.shape) for a in out.arrays()]


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), n=st.integers(1, 10), keys=st.sampled_from([[], ["g"]]))
def test_view_is_independent_of_the_data(data, n, keys):
    views = []
    for _ in range(2):
        g = data.draw(st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=n, max_size=n))
        x = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "é", "日本", "ab"])),
                               min_size=n, max_size=n))
        y = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        real = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        t = pa.table({"g": pa.array(g, pa.int64()), "x": pa.array(x, pa.string()), "y": pa.array(y, pa.int64())})
        views.append(_view(t, real, keys))
    assert len(views[0][0]) > 50  # the tracer saw the operator run
    assert views[0] == views[1]


def test_memory_estimate_counts_the_concatenation_buffer():
    d = _database([(i, i % 3, "abc", i) for i in range(300)], width=20)
    try:
        base = d.plan("SELECT g, min(x) FROM t GROUP BY g", epsilon=1.0).memory_bytes
        agg = d.plan("SELECT g, string_agg(x, ',') FROM t GROUP BY g", epsilon=1.0).memory_bytes
        assert agg - base >= 300 * 300 * 21  # n slots × R·(w + s) candidate bytes
    finally:
        d.close()


def test_view_detects_a_planted_data_dependent_branch(monkeypatch):
    """The view above has teeth: a branch on whether any value is included shows up."""
    real_pieces = string_agg_module._pieces

    def leaky(col, sep, inc, first):
        if inc.any():
            inc = inc.copy()
        return real_pieces(col, sep, inc, first)

    monkeypatch.setattr(string_agg_module, "_pieces", leaky)
    leaky.__code__ = leaky.__code__.replace(co_filename=_WATCHED[0])
    real = np.ones(3, dtype=bool)
    t1 = pa.table({"g": [1, 1, 2], "x": ["a", "b", "c"], "y": [1, 2, 3]})
    t2 = pa.table({"g": [1, 1, 2], "x": pa.array([None, None, None], pa.string()), "y": [1, 2, 3]})
    assert _view(t1, real, ["g"]) != _view(t2, real, ["g"])
