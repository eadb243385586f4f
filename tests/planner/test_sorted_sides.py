"""A join side that is a private table's scan keeps its sorted lanes in the slot cache for
later joins (operators/join.py ``_sorted_side``; docs/design.md §Slot cache): the second run
of a query finds them, answers as DuckDB does, and records the same trace as the first; an
owner's insert changes the storage version, so the lanes are sorted again."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

import dodb
from dodb.datasets import generate_tpch, protect_tpch
from dodb.oblivious.rng import new_rng
from dodb.operators.context import ExecContext

Q18ISH = ("SELECT o_orderpriority, count(*) AS n, sum(l_quantity) AS q FROM orders, lineitem "
          "WHERE o_orderkey = l_orderkey AND o_totalprice > 100000 GROUP BY 1 ORDER BY 1")


def _sorted_entries(db) -> int:
    return sum(1 for k in db.catalog.slot_cache._entries if k[0] == "sorted side")


def _run(db, sql: str):
    plan = db.plan(sql, epsilon=1.0)
    ctx = ExecContext(mode="do", rng=new_rng(11), neighbour=db.neighbour)
    out = plan.execute(ctx=ctx, executor=db.executor)
    return out, [str(e) for e in ctx.trace.events]


def test_a_second_join_of_a_private_scan_reuses_its_sorted_side():
    db = dodb.connect(seed=2)
    generate_tpch(db.con, 0.002)
    oracle = duckdb.connect()
    generate_tpch(oracle, 0.002)
    db.set_budget(epsilon=1e6, delta=0.5)
    protect_tpch(db)
    want = oracle.sql(Q18ISH).fetchall()
    db.catalog.slot_cache.clear()
    first, trace1 = _run(db, Q18ISH)
    kept = _sorted_entries(db)
    hits = db.catalog.slot_cache.hits
    second, trace2 = _run(db, Q18ISH)
    assert kept >= 1 and db.catalog.slot_cache.hits > hits
    assert trace1 == trace2  # the kept side records the sort's events
    for out in (first, second):
        got = db.sql(Q18ISH, epsilon=1.0).fetchall()
        assert got == want
    assert np.array_equal(first.table.column(0).to_numpy(zero_copy_only=False),
                          second.table.column(0).to_numpy(zero_copy_only=False))

    # an owner's insert: a new storage version, so the side is sorted again and answers change
    extra = oracle.sql("SELECT * FROM lineitem WHERE l_orderkey IN (SELECT o_orderkey FROM orders "
                       "WHERE o_totalprice > 100000 LIMIT 3) LIMIT 5").to_arrow_table()
    extra = extra.set_column(extra.schema.get_field_index("l_linenumber"), "l_linenumber",
                             pa.array(range(9, 9 + extra.num_rows), extra.schema.field("l_linenumber").type))
    oracle.sql("INSERT INTO lineitem SELECT * FROM extra")
    db.insert("lineitem", extra, epsilon=1.0)
    assert db.sql(Q18ISH, epsilon=1.0).fetchall() == oracle.sql(Q18ISH).fetchall()
