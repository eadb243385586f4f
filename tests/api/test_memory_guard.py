"""The memory guard (docs/design.md §Memory guard): a plan's peak memory is estimated from
public sizes, shown by EXPLAIN, and a plan above the limit is refused before admission."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

import dodb
from dodb.datasets import generate_tpch, protect_tpch, tpch_query
from dodb.oblivious.rng import new_rng
from dodb.operators import ExecContext
from dodb.operators.table import Column, PaddedTable
from dodb.planner.execute import Executor, unpinned
from dodb.planner.memory import BASE_BYTES, estimate_peak_bytes, parse_bytes, timeline


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


CTE_TWICE = ("WITH big AS (SELECT l_orderkey, l_quantity, l_comment FROM lineitem WHERE l_quantity > 10) "
             "SELECT count(*), sum(a.l_quantity) FROM big a JOIN big b ON a.l_orderkey = b.l_orderkey")


@pytest.mark.parametrize("q", [1, 3, 10, 13, 18, 21, CTE_TWICE])
def test_the_estimate_bounds_what_the_run_allocates(db, q):
    p = db.plan(tpch_query(q) if isinstance(q, int) else q, epsilon=1.0, delta=1e-6)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        p.execute()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert 0 < peak <= p.memory_bytes, f"Q{q}: traced peak {peak} above the estimate {p.memory_bytes}"


def test_the_executor_keeps_exactly_the_outputs_still_to_be_read(db, monkeypatch):
    """At every node the executor holds the outputs of the nodes run so far that some node
    not yet run reads — the live set the estimate's timeline adds up — and at the end only
    the answer."""
    p = db.plan(CTE_TWICE, epsilon=1.0, delta=1e-6)
    p.operators()
    order = [n for n, *_ in timeline(p.root)]
    readers = {n.node_id: [m.node_id for m in order if n in m.children] for n in order}
    seen, done = [], set()
    original = Executor._dispatch

    def spy(self, node, inputs, ctx, eps, delta):
        want = {i for i in done if any(r not in done for r in readers[i])}
        seen.append((node.node_id, set(self.results), want))
        out = original(self, node, inputs, ctx, eps, delta)
        done.add(node.node_id)
        return out

    monkeypatch.setattr(Executor, "_dispatch", spy)
    ctx = ExecContext(mode=p.mode, rng=new_rng(), neighbour=p.neighbour)
    ex = Executor(p.catalog, ctx, p.allocation)
    out = ex.run(p.root)
    assert [i for i, *_ in seen] == [n.node_id for n in order]
    assert all(held == want for _, held, want in seen), seen
    assert any(len(want) < k for k, (_, _, want) in enumerate(seen))  # something was dropped before the end
    assert set(ex.results) == {p.root.node_id} and out.padded_size >= 1
    # the CTE is read twice: kept until its second reader ran
    assert any(len(readers[n.node_id]) == 2 for n in order)


def test_a_view_pinning_a_large_buffer_is_copied_out():
    big = np.arange(1 << 20, dtype=np.int64)
    small = big[:10]
    t = PaddedTable(["a"], [Column(pa.int64(), small, np.ones(1 << 20, dtype=bool)[:10])], big[:10] > -1, 1)
    u = unpinned(t)
    assert u.columns[0].values.base is None and np.array_equal(u.columns[0].values, small)
    assert u.columns[0].valid.base is None
    whole = PaddedTable(["a"], [Column(pa.int64(), big, np.ones(1 << 20, dtype=bool))], np.ones(1 << 20, dtype=bool), 1)
    assert unpinned(whole) is whole  # nothing pinned: nothing copied
    half = PaddedTable(["a"], [Column(pa.int64(), big[: 1 << 19], np.ones(1 << 19, dtype=bool))],
                       np.ones(1 << 19, dtype=bool), 1)
    assert unpinned(half).columns[0].values.base is big  # within PIN_FACTOR: kept as a view
    block = np.zeros((4, 1 << 18), dtype=np.int64)  # columns decoded into one block share it: no copy
    shared = PaddedTable(["a", "b", "c"], [Column(pa.int64(), block[i], block[3].view(bool)[: 1 << 18])
                                           for i in range(3)], np.ones(1 << 18, dtype=bool), 1)
    assert unpinned(shared) is shared
    alone = PaddedTable(["a"], [shared.columns[0]], shared.is_real, 1)  # one of them alone pins the block
    assert unpinned(alone).columns[0].values.base is None


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
