"""GROUP BY keys that declared keys determine ride as payload: rows are sorted and grouped by
the determining keys only (docs/design.md §Aggregates, *Fewer sort keys*).  The groups — and
so the answers — are DuckDB's; the choice depends on the plan's declared keys and widths."""
from __future__ import annotations

import duckdb
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dodb
from dodb.datasets import tpch_query
from dodb.operators import ExecContext, group_by
from dodb.operators.aggregate import Agg
from dodb.operators.table import from_arrow
from dodb.planner.logical import Aggregate, walk

from ..operators.util import assert_same_rows
from ..tpch_fixture import tpch_database


def _aggregates(db, sql):
    return [n for n in walk(db.plan(sql, epsilon=1.0, delta=1e-6).root) if isinstance(n, Aggregate)]


def test_tpch_q10_and_q18_sort_on_the_determining_keys():
    db = tpch_database(0.002)
    (q10,) = [a for a in _aggregates(db, tpch_query(10)) if len(a.keys) > 1]
    assert q10.sort_keys == ["customer.c_custkey", "nation.n_name"]
    q18 = [a for a in _aggregates(db, tpch_query(18)) if len(a.keys) > 1]
    assert [a.sort_keys for a in q18] == [["customer.c_custkey", "orders.o_orderkey", "orders.o_orderdate",
                                           "orders.o_totalprice"]]  # no string key
    (q1,) = _aggregates(db, tpch_query(1))
    assert q1.sort_keys is None  # nothing determines l_returnflag or l_linestatus
    for q in (10, 18):
        assert db.sql(tpch_query(q), epsilon=1.0, delta=1e-6).fetchall() == db.oracle.sql(tpch_query(q)).fetchall()


QUERIES = [
    "SELECT k, name, note, count(*), sum(v), min(note) FROM t GROUP BY k, name, note",
    "SELECT name, k, count(DISTINCT v), max(v) FROM t GROUP BY name, k HAVING count(*) > 0",
    "SELECT t.k, t.name, u.w, sum(u.x) FROM t JOIN u ON u.k = t.k GROUP BY t.k, t.name, u.w",
    "SELECT k, name, string_agg(note, ',' ORDER BY note) FROM t GROUP BY ALL",
]


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(st.tuples(st.sampled_from([None, "a", "bb", "é", ""]), st.sampled_from([None, "x", "yy"]),
                               st.integers(-3, 3) | st.none()), max_size=14),
       urows=st.lists(st.tuples(st.integers(0, 15), st.integers(0, 2) | st.none(), st.integers(-2, 2)), max_size=10))
def test_answers_equal_duckdb(rows, urows):
    t = pa.table({"k": pa.array(range(len(rows)), pa.int64()), "name": pa.array([r[0] for r in rows], pa.string()),
                  "note": pa.array([r[1] for r in rows], pa.string()), "v": pa.array([r[2] for r in rows], pa.int64())})
    u = pa.table({"id": pa.array(range(len(urows)), pa.int64()), "k": pa.array([r[0] for r in urows], pa.int64()),
                  "w": pa.array([r[1] for r in urows], pa.int64()), "x": pa.array([r[2] for r in urows], pa.int64())})
    raw, con = duckdb.connect(), duckdb.connect()
    for c in (raw, con):
        c.execute("CREATE TABLE t AS SELECT * FROM t")
        c.execute("CREATE TABLE u AS SELECT * FROM u")
    db = dodb.attach(con, seed=6, allow_insecure=True)
    try:
        db.set_budget(epsilon=1e6, delta=0.5)
        db.protect("t", "k", max_contributions=1, keys=[["k"]], widths={"name": 4, "note": 4})
        db.protect("u", "id", max_contributions=1)
        assert _aggregates(db, QUERIES[0])[0].sort_keys == ["t.k"]
        for sql in QUERIES:
            assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), raw.sql(sql).to_arrow_table())
    finally:
        db.close()


def test_the_operator_groups_by_the_sort_keys_alone():
    """With the dependency holding, the answer equals grouping by every key; where it does
    not hold the operator (trusting the plan) merges groups — the check can fail."""
    holds = pa.table({"k": pa.array([1, 2, 1, 3, 2], pa.int64()), "c": pa.array(["a", "b", "a", "c", "b"]),
                      "v": pa.array([1, 2, 3, 4, 5], pa.int64())})
    broken = holds.set_column(1, "c", pa.array(["a", "b", "z", "c", "b"]))
    aggs = [Agg("sum", "v", "s")]

    def run(t, sort_keys):
        pt = from_arrow(t, stability=1, widths={"c": 2})
        out = group_by(pt, ["k", "c"], aggs, ctx=ExecContext(mode="oblivious"), sort_keys=sort_keys).table
        real = out.to_arrow()
        return sorted(zip(*(real.column(n).to_pylist() for n in ("k", "c", "s"))))

    assert run(holds, ["k"]) == run(holds, None) == [(1, "a", 4), (2, "b", 7), (3, "c", 4)]
    assert run(broken, ["k"]) != run(broken, None)
