"""list / array_agg (docs/design.md §list): answers equal DuckDB's (``fetchall()`` and
``.arrow()``, NULL elements kept, empty or all-filtered group NULL, ORDER BY and FILTER
inside the call) on protected and public tables; the list is only a final output column and
every other use is refused by name before admission, charging nothing; the operator's view
does not depend on the data and equals its simulator's."""
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
from dodb.operators import list_agg as list_agg_module
from dodb.operators import simulate
from dodb.planner.simulate import simulate_plan

WORDS = ["", "a", "b", "é", "日本", "ab", "zz", "🙂"]
ROWS = [(1, 1, "a", 3, "2020-01-01", 1.5, "1.25", True), (2, 1, None, 2, None, None, None, None),
        (3, 2, "bb", None, "2021-02-03", 2.0, "-3.50", False), (4, None, "日本", 1, "2020-01-01", 0.5, "0.01", True),
        (5, 2, "", 5, None, 3.0, "7.00", None), (6, 1, "a", 3, "2022-12-31", -1.0, "2.00", False),
        (7, 3, None, None, None, None, None, None)]


def _database(rows, max_degree=None, g_type="INTEGER"):
    con = duckdb.connect()
    for name in ("t", "p"):
        con.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, g {g_type}, x VARCHAR, y INTEGER, d DATE, "
                    "v DOUBLE, m DECIMAL(9, 2), b BOOLEAN)")
        if rows:
            con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    d = dodb.attach(con, seed=7, allow_insecure=True)
    d.oracle = snapshot(con)
    d.set_budget(epsilon=1e6, delta=0.5)
    d.protect("t", "id", max_contributions=1, keys=[["id"]], widths={"x": 12}, max_degree=max_degree)
    return d


QUERIES = [
    "SELECT g, list(x ORDER BY id) AS l FROM {t} GROUP BY g ORDER BY g NULLS LAST",
    "SELECT list(y ORDER BY id) AS l FROM {t}",
    "SELECT array_agg(y ORDER BY y DESC NULLS FIRST, id) AS l FROM {t}",
    "SELECT g, array_agg(d ORDER BY id) FILTER (WHERE y > 1) AS l, count(*) AS c FROM {t} GROUP BY g "
    "ORDER BY g NULLS LAST",
    "SELECT list(v ORDER BY id) AS l FROM {t} WHERE id < 0",
    "SELECT g, list(v ORDER BY id) AS l FROM {t} WHERE id < 0 GROUP BY g",
    "SELECT g, list(m ORDER BY id) AS l, sum(m) AS s FROM {t} GROUP BY g ORDER BY g NULLS LAST",
    "SELECT g, list(b ORDER BY id) AS l FROM {t} GROUP BY g ORDER BY g NULLS LAST",
    "SELECT g, list(id ORDER BY id DESC) AS l FROM {t} GROUP BY g ORDER BY count(*) DESC, g NULLS LAST",
    "SELECT list(x ORDER BY x NULLS FIRST, id) FILTER (WHERE g = 1) AS l, list(id ORDER BY id) AS i FROM {t}",
    "SELECT list(x ORDER BY id) FILTER (WHERE false) AS l FROM {t}",
    "SELECT g, list(upper(x) ORDER BY id) AS l, min(x) AS mn FROM {t} GROUP BY g ORDER BY g NULLS LAST",
    "SELECT g, list(y + 1 ORDER BY id) AS l FROM {t} WHERE y IS NOT NULL GROUP BY g ORDER BY g NULLS LAST",
    "SELECT g, list(x || '!' ORDER BY id) AS l FROM {t} GROUP BY g HAVING count(*) > 1 ORDER BY g",
    "SELECT g, list(NULL ORDER BY id) AS l FROM {t} GROUP BY g ORDER BY g NULLS LAST",
    "SELECT list(d ORDER BY d, id) AS l FROM {t} WHERE d IS NOT NULL",
    "SELECT g, list(x ORDER BY id) AS l FROM {t} GROUP BY g ORDER BY g NULLS LAST LIMIT 2",
    "SELECT * FROM (SELECT g, list(x ORDER BY id) AS l FROM {t} GROUP BY g) AS s ORDER BY g NULLS LAST",
    "SELECT s.l, s.g AS k FROM (SELECT g, list(y ORDER BY id) AS l FROM {t} GROUP BY g) AS s WHERE s.g > 1 "
    "ORDER BY k",
    "WITH c AS (SELECT g, array_agg(id ORDER BY id) AS l FROM {t} GROUP BY g) SELECT l, g FROM c ORDER BY g "
    "NULLS LAST",
    "SELECT g, list(x ORDER BY id) AS l FROM {t} GROUP BY ALL ORDER BY g NULLS LAST",
    "SELECT g % 2 AS k, list(v ORDER BY id) AS l FROM {t} GROUP BY k ORDER BY k NULLS LAST",
    "SELECT list(x ORDER BY id) AS l, string_agg(x, ',' ORDER BY id) AS s FROM {t}",
    "SELECT g, list(y ORDER BY id) FILTER (WHERE x IS NULL) AS l FROM {t} GROUP BY g ORDER BY g NULLS LAST",
    "SELECT a.g, list(b.y ORDER BY b.id, a.id) AS l FROM {t} AS a JOIN {t} AS b ON a.g = b.g GROUP BY a.g "
    "ORDER BY a.g",
    "SELECT a.id, list(b.x ORDER BY b.id) AS l FROM {t} AS a LEFT JOIN p AS b ON a.g = b.id GROUP BY a.id "
    "ORDER BY a.id",
    "SELECT list(x ORDER BY id) AS l FROM {t} WHERE g IN (SELECT g FROM p WHERE y > 2)",
    "SELECT g, list(x ORDER BY id) AS l, rank() OVER (ORDER BY g) AS r FROM {t} GROUP BY g ORDER BY g",
    "SELECT g, l FROM (SELECT g, list(x ORDER BY id) AS l FROM {t} GROUP BY g ORDER BY g LIMIT 2) ORDER BY g",
    "SELECT b, a FROM (SELECT g, list(x ORDER BY id) FROM {t} GROUP BY g) AS s(a, b) ORDER BY a NULLS FIRST",
]


def _check(d, sql, mode="do"):
    got = d.sql(sql, epsilon=1.0, mode=mode)
    want = d.oracle.sql(sql)
    assert got.fetchall() == want.fetchall(), sql
    assert got.arrow().equals(d.oracle.sql(sql).to_arrow_table()), sql


@pytest.fixture(scope="module")
def db():
    d = _database(ROWS)
    yield d
    d.close()


@pytest.mark.parametrize("table", ["t", "p"])
@pytest.mark.parametrize("sql", QUERIES)
def test_equals_duckdb(db, sql, table):
    _check(db, sql.format(t=table))


@pytest.mark.parametrize("mode", ["oblivious", "plain"])
def test_modes(db, mode):
    for sql in QUERIES[:6]:
        _check(db, sql.format(t="t"), mode)


def test_empty_table_and_degree_bound():
    d = _database([])
    try:
        for sql in QUERIES[:4]:
            _check(d, sql.format(t="t"))
    finally:
        d.close()
    rows = [(i, i % 20, f"v{i}", i, None, float(i), None, i % 2 == 0) for i in range(80)]
    sql = "SELECT g, list(x ORDER BY id) AS l FROM t GROUP BY g ORDER BY g"
    # a degree bound counts non-NULL values: it caps a group only on a NOT NULL column
    # (docs/design.md §Storage, NOT NULL); on a nullable one the NULL group is unbounded
    for g_type, bounded in (("INTEGER NOT NULL", True), ("INTEGER", False)):
        d = _database(rows, max_degree={"g": 4}, g_type=g_type)
        try:
            _check(d, sql)
            assert ("list(t.x ORDER BY t.id; ≤4 rows/group" in d.plan(sql, epsilon=1.0).explain()) == bounded
        finally:
            d.close()


rows_st = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.one_of(st.none(), st.sampled_from(WORDS)),
                             st.one_of(st.none(), st.integers(-3, 5))), max_size=12)
PROPERTY = [
    "SELECT g, list(x ORDER BY y NULLS FIRST, id) AS l, list(y ORDER BY id DESC) FILTER (WHERE x <> '') AS f "
    "FROM t GROUP BY g ORDER BY g NULLS LAST",
    "SELECT array_agg(y ORDER BY x, id) AS l, array_agg(x ORDER BY id) FILTER (WHERE y > 0) AS f FROM t",
]


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=rows_st, mode=st.sampled_from(["do", "oblivious", "plain"]))
def test_random_tables_equal_duckdb(rows, mode):
    d = _database([(i, g, x, y, None, None, None, None) for i, (g, x, y) in enumerate(rows)])
    try:
        for sql in PROPERTY:
            _check(d, sql, mode)
    finally:
        d.close()


@pytest.mark.parametrize("sql,construct", [
    ("SELECT list(DISTINCT x) FROM t", "list/array_agg (DISTINCT"),
    ("SELECT len(list(x)) FROM t", "inside an expression"),
    ("SELECT list(x) = ['a'] AS e FROM t", "inside an expression"),
    ("SELECT list(x)[1] FROM t", "inside an expression"),
    ("SELECT CAST(list(y) AS VARCHAR) FROM t", "inside an expression"),
    ("SELECT g FROM t GROUP BY g HAVING list(y) IS NOT NULL", "inside an expression"),
    ("SELECT g, list(y) AS l FROM t GROUP BY g ORDER BY l", "in ORDER BY"),
    ("SELECT g, list(y) AS l FROM t GROUP BY g ORDER BY 2", "in ORDER BY"),
    ("SELECT g, list(y) FROM t GROUP BY g ORDER BY list(y)", "in ORDER BY"),
    ("SELECT DISTINCT g, list(y) FROM t GROUP BY g", "SELECT DISTINCT"),
    ("SELECT unnest(l) FROM (SELECT list(y) AS l FROM t)", "unnest"),
    ("SELECT l, count(*) FROM (SELECT g, list(y) AS l FROM t GROUP BY g) GROUP BY l", "in GROUP BY"),
    ("SELECT * FROM (SELECT g, list(y) AS l FROM t GROUP BY g) WHERE l IS NOT NULL", "in WHERE"),
    ("SELECT * FROM (SELECT g, list(y) AS l FROM t GROUP BY g) ORDER BY l", "in ORDER BY"),
    ("SELECT s.l FROM (SELECT g, list(y) AS l FROM t GROUP BY g) AS s JOIN t ON s.g = t.id",
     "inside a subquery, CTE, join"),
    ("SELECT (SELECT list(y) FROM t) AS l", "inside a subquery"),
    ("SELECT g, list(y) AS l FROM t GROUP BY g UNION ALL SELECT g, list(y) FROM t GROUP BY g", "set operation"),
    ("SELECT list(y) OVER (PARTITION BY g) FROM t", "window"),
    ("SELECT g, list(y) AS l FROM t GROUP BY ROLLUP (g)", "ROLLUP"),
    ("WITH c(a, b) AS (SELECT g, list(x) FROM t GROUP BY g) SELECT a FROM c WHERE b IS NULL", "in WHERE"),
    ("SELECT g, list(x) AS l FROM t GROUP BY g HAVING l IS NOT NULL", "inside an expression"),
    ("SELECT g, list(list(x)) AS l FROM t GROUP BY g", "inside an expression"),
    ("SELECT id FROM t WHERE id IN (SELECT unnest(list(y)) FROM t)", "unnest"),
])
def test_refused_by_name_charging_nothing(db, sql, construct):
    before = db.budget["spent"]
    with pytest.raises(DodbError) as e:
        db.sql(sql, epsilon=1.0)
    assert construct.lower() in str(e.value).lower(), str(e.value)
    assert "\n" not in str(e.value).strip()
    assert db.budget["spent"] == before


def test_over_the_limit_is_refused_before_admission_charging_nothing():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range::INTEGER AS id, (range % 3)::INTEGER AS g, 'wwwww' AS x "
                "FROM range(70000)")
    d = dodb.attach(con, seed=7, allow_insecure=True)
    d.set_budget(epsilon=1e6, delta=0.5)
    d.protect("t", "id", max_contributions=1, keys=[["id"]], widths={"x": 12})
    try:
        before = d.budget["spent"]
        for sql in ("SELECT list(x) FROM t", "SELECT g, list(x ORDER BY id) FROM t WHERE id < 3000 GROUP BY g"):
            with pytest.raises(UnsupportedQueryError) as e:
                d.sql(sql, epsilon=1.0)
            msg = str(e.value)
            assert "list/array_agg" in msg and "max_degree" in msg and "bytes" in msg, msg
            assert d.budget["spent"] == before
        assert d.sql("SELECT list(id) AS l FROM t WHERE id < 10", epsilon=1.0).arrow().num_rows == 1
    finally:
        d.close()


def test_no_privacy_event_beyond_the_group_count(db):
    base = db.plan("SELECT g, count(*) FROM t GROUP BY g", epsilon=1.0).events
    with_list = db.plan("SELECT g, count(*), list(x ORDER BY id) FROM t GROUP BY g", epsilon=1.0).events
    assert len(with_list) == len(base)


# --- the operator's view: identical for equal public shapes, and equal to its simulator ----

_WATCHED = (str(Path(list_agg_module.__file__)),)


def _view(table: pa.Table, real: np.ndarray, keys: list[str], rows: int = 4):
    seen = []

    def tracer(frame, event, arg):
        if frame.f_code.co_filename in _WATCHED:
            if event == "line":
                seen.append((frame.f_code.co_filename, frame.f_lineno))
            elif event == "return" and isinstance(arg, (tuple, list, np.ndarray)):
                for a in (arg if isinstance(arg, (tuple, list)) else (arg,)):
                    if isinstance(a, np.ndarray):
                        seen.append((str(a.dtype), a.shape))
            return tracer
        return None

    pt = from_arrow(table, stability=1, widths={"x": 6}, is_real=real)
    ctx = ExecContext(mode="oblivious", rng=new_rng(1))
    aggs = [Agg("list", "x", "l", order=(("y", True, False),), rows=rows, total=table.num_rows),
            Agg("list", "y", "f", column2="f", rows=rows, total=table.num_rows)]
    sys.settrace(tracer)
    try:
        res = group_by(pt, keys, aggs, ctx=ctx)
    finally:
        sys.settrace(None)
    out = res.table
    return seen, list(ctx.trace.events), [(a.dtype.str, a.shape) for a in out.arrays()]


def _table(data, n):
    g = data.draw(st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=n, max_size=n))
    x = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "é", "日本", "ab"])),
                           min_size=n, max_size=n))
    y = data.draw(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=n, max_size=n))
    f = data.draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n))
    real = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return pa.table({"g": pa.array(g, pa.int64()), "x": pa.array(x, pa.string()), "y": pa.array(y, pa.int64()),
                     "f": pa.array(f, pa.bool_())}), real


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), n=st.integers(1, 10), keys=st.sampled_from([[], ["g"]]))
def test_view_is_independent_of_the_data(data, n, keys):
    views = [_view(*_table(data, n), keys) for _ in range(2)]
    assert len(views[0][0]) > 30  # the tracer saw the operator run
    assert views[0] == views[1]


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), n=st.integers(0, 10), keys=st.sampled_from([[], ["g"]]), rows=st.integers(1, 12),
       mode=st.sampled_from(["do", "oblivious"]))
def test_trace_equals_the_simulator(data, n, keys, rows, mode):
    """The GROUP BY's trace with lists equals the simulator's (public sizes + leaked values)."""
    t, real = _table(data, n)
    pt = from_arrow(t, stability=1, widths={"x": 6}, is_real=real)
    aggs = [Agg("list", "x", "l", order=(("y", True, False),), rows=rows, total=n),
            Agg("list", "y", "f", column2="f", rows=rows, total=n), Agg("count_star", None, "c")]
    res = group_by(pt, keys, aggs, ctx=ExecContext(mode=mode, rng=new_rng(3)))
    leaked = [e.sizes[0] for e in res.trace.events if e.kind.startswith("leak:")]
    assert simulate(group_by, [pt], leaked, mode=mode, keys=keys, aggs=aggs) == res.trace


@pytest.mark.parametrize("mode", ["do", "oblivious"])
def test_whole_query_trace_equals_the_simulator(db, mode):
    p = db.plan("SELECT g, list(x ORDER BY id) FILTER (WHERE y > 1) AS l, count(*) AS c FROM t GROUP BY g "
                "ORDER BY g NULLS LAST", epsilon=1.0, mode=mode)
    p.execute(rng=new_rng(5))
    leaked = [e.sizes[0] for e in p.trace.events if e.kind.startswith("leak:")]
    assert len(p.trace) > 0 and simulate_plan(p, leaked) == p.trace


def test_view_detects_a_planted_data_dependent_branch(monkeypatch):
    """The view above has teeth: a branch on whether any slot is present shows up."""
    real_compact = list_agg_module.compact_slots

    def leaky(keep, payload):
        if keep.any():
            keep = keep.copy()
        return real_compact(keep, payload)

    leaky.__code__ = leaky.__code__.replace(co_filename=_WATCHED[0])
    monkeypatch.setattr(list_agg_module, "compact_slots", leaky)
    real = np.ones(3, dtype=bool)
    t1 = pa.table({"g": [1, 1, 2], "x": ["a", "b", "c"], "y": [1, 2, 3], "f": [True, True, True]})
    assert _view(t1, np.zeros(3, dtype=bool), ["g"]) != _view(t1, real, ["g"])


def test_unordered_lists_have_duckdbs_elements(db):
    """Without ORDER BY the element order is unspecified (in DuckDB too): the multisets are equal."""
    for sql in ("SELECT g, list(x) AS l FROM t GROUP BY g ORDER BY g NULLS LAST", "SELECT array_agg(y) AS l FROM t"):
        got = db.sql(sql, epsilon=1.0).fetchall()
        want = db.oracle.sql(sql).fetchall()

        def norm(rows):
            return [r[:-1] + (sorted(r[-1], key=lambda v: (v is None, v)),) for r in rows]
        assert norm(got) == norm(want), sql


def test_memory_estimate_counts_the_slot_buffer():
    d = _database([(i, i % 3, "abc", i, None, None, None, None) for i in range(300)])
    try:
        base = d.plan("SELECT g, min(x) FROM t GROUP BY g", epsilon=1.0).memory_bytes
        agg = d.plan("SELECT g, list(x) FROM t GROUP BY g", epsilon=1.0).memory_bytes
        assert agg - base >= 300 * 300 * 12  # n rows × R slots × the element's bytes
    finally:
        d.close()
