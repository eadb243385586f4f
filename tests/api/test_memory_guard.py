"""The memory guard (docs/design.md §Memory guard): a plan's peak memory is estimated from
public sizes, shown by EXPLAIN, and a plan above the limit is refused before admission."""
from __future__ import annotations

import tracemalloc

import pytest

import dodb
from dodb.datasets import generate_tpch, protect_tpch, tpch_query
from dodb.planner.memory import BASE_BYTES, estimate_peak_bytes, parse_bytes


@pytest.fixture(scope="module")
def db():
    d = dodb.connect(seed=2)
    generate_tpch(d.con, 0.002)
    d.set_budget(epsilon=100.0, delta=1e-3)
    protect_tpch(d)
    yield d
    d.close()


def test_explain_shows_the_estimate_and_the_limit(db):
    text = db.explain(tpch_query(3))
    assert "memory: estimated peak ≤" in text and "limit" in text and "above the limit" not in text
    d = db.explain(tpch_query(3), as_dict=True)["memory"]
    assert d["estimated_peak_bytes"] > 0 and d["limit_bytes"] == db.memory_limit


@pytest.mark.parametrize("q", [1, 3, 13, 18])
def test_the_estimate_bounds_what_the_run_allocates(db, q):
    p = db.plan(tpch_query(q), epsilon=1.0, delta=1e-6)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        p.execute()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert 0 < peak <= p.memory_bytes, f"Q{q}: traced peak {peak} above the estimate {p.memory_bytes}"


def test_a_plan_above_the_limit_is_refused_and_charges_nothing(db):
    spent, hist = db.budget["spent"], len(db.history())
    old = db.memory_limit
    db.memory_limit = 10_000
    try:
        with pytest.raises(dodb.MemoryLimitError, match="nothing was charged") as e:
            db.sql(tpch_query(3), epsilon=1.0)
        assert "\n" not in str(e.value)
        assert "above the limit" in db.explain(tpch_query(3))
    finally:
        db.memory_limit = old
    assert db.budget["spent"] == spent and len(db.history()) == hist
    assert db.sql(tpch_query(3), epsilon=1.0).arrow().num_rows == 10  # under the limit it runs


def test_an_unbounded_self_join_is_estimated_large():
    d = dodb.connect(seed=3)
    d.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(3000)")
    d.set_budget(epsilon=10.0, delta=1e-3)
    d.protect("t", "id", max_contributions=1)
    small = d.plan("SELECT count(*) FROM t", epsilon=1.0)
    big = d.plan("SELECT count(*) FROM t a JOIN t b ON a.g = b.g", epsilon=1.0)
    # no degree bound: the join may produce capacity² rows
    assert big.memory_bytes - BASE_BYTES > 100 * (small.memory_bytes - BASE_BYTES)
    assert estimate_peak_bytes(big.root) == big.memory_bytes


def test_memory_sizes_parse():
    assert parse_bytes("512M") == 512 << 20 and parse_bytes("8GiB") == 8 << 30 and parse_bytes("1000") == 1000
    with pytest.raises(ValueError, match="memory size"):
        parse_bytes("lots")
