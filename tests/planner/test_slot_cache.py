"""Decoded slot arrays kept between queries (docs/design.md §Slot cache)."""
from __future__ import annotations

import duckdb
import pytest

import dodb
from dodb.planner.catalog import slot_cache_bytes

# COUNT(DISTINCT) sorts its own pass: the scan is not kept sorted too (planner/presort.py), so
# the slot arrays are the cache's one entry (tests/planner/test_sorted_sides.py has the others)
GROUPED = ("SELECT ward, count(*) AS n, sum(age) AS s, count(DISTINCT age) AS d FROM patients GROUP BY ward "
           "ORDER BY ward")


def _db():
    con = duckdb.connect()
    con.execute("CREATE TABLE patients (id INTEGER, ward INTEGER NOT NULL, age INTEGER, note VARCHAR)")
    con.execute("INSERT INTO patients SELECT range, range % 4, 20 + range % 50, 'n' || range FROM range(60)")
    db = dodb.attach(con, seed=1)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("patients", "id", max_contributions=1, keys=[["id"]], widths={"note": 4}, capacity=80)
    return db


def test_repeated_scans_are_served_from_memory_with_the_same_answer():
    db = _db()
    first = db.sql(GROUPED, epsilon=1.0).arrow()
    cache = db.catalog.slot_cache
    assert cache.misses == 1 and cache.hits == 0
    again = db.sql(GROUPED, epsilon=1.0).arrow()
    assert cache.hits == 1 and again.equals(first)
    db.sql("SELECT count(*) FROM patients WHERE note = 'n1'", epsilon=1.0)  # other columns: their own entry
    assert cache.misses == 2


def test_handed_out_arrays_are_read_only():
    """An operator writing its input in place fails instead of reaching the kept arrays."""
    db = _db()
    db.sql(GROUPED, epsilon=1.0)
    (value, _), = db.catalog.slot_cache._entries.values()
    kept = value[1]["age"].values.copy()
    from dodb.planner import execute

    tried = []
    real = execute.Executor._scan_private

    def spoil(self, node, info):
        t = real(self, node, info)
        for c in t.columns:
            with pytest.raises(ValueError, match="read-only"):
                c.values[...] = 0  # vandalise what this query got
            tried.append(c)
        return t

    execute.Executor._scan_private = spoil
    try:
        db.sql(GROUPED, epsilon=1.0)
    finally:
        execute.Executor._scan_private = real
    assert tried and (value[1]["age"].values == kept).all()
    res = db.sql(GROUPED, epsilon=1.0).arrow()
    assert res.column("n").to_pylist() == [15, 15, 15, 15]


def test_a_write_through_dodb_is_seen_at_once():
    db = _db()
    before = db.sql(GROUPED, epsilon=1.0).arrow()
    import pyarrow as pa

    db.insert("patients", pa.table({"id": pa.array([100], pa.int32()), "ward": pa.array([0], pa.int32()),
                                    "age": pa.array([99], pa.int32()), "note": ["x"]}), capacity=80)
    after = db.sql(GROUPED, epsilon=1.0).arrow()
    assert after.column("n").to_pylist()[0] == before.column("n").to_pylist()[0] + 1
    assert db.catalog.slot_cache.hits == 0  # the new storage version missed


def test_size_zero_turns_it_off(monkeypatch):
    monkeypatch.setenv("DODB_SLOT_CACHE_BYTES", "0")
    assert slot_cache_bytes() == 0
    db = _db()
    db.sql(GROUPED, epsilon=1.0)
    db.sql(GROUPED, epsilon=1.0)
    assert db.catalog.slot_cache.hits == 0 and not db.catalog.slot_cache._entries
    monkeypatch.setenv("DODB_SLOT_CACHE_BYTES", "lots")
    with pytest.raises(dodb.DodbError, match="DODB_SLOT_CACHE_BYTES"):
        slot_cache_bytes()


def test_a_hit_records_the_same_trace_as_a_read():
    """The trace (which slots and sizes the operators touch) is the same whether the scan hit."""
    from dodb.oblivious.rng import new_rng
    from dodb.operators import ExecContext

    db = _db()
    traces = []
    for _ in range(2):
        p = db.plan(GROUPED, epsilon=1.0)
        ctx = ExecContext(mode="do", rng=new_rng(5), neighbour=db.neighbour)
        p.execute(ctx=ctx)
        traces.append(list(ctx.trace.events))
    assert db.catalog.slot_cache.hits == 1 and traces[0] == traces[1]
