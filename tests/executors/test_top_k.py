"""ORDER BY … LIMIT on a cluster: a local top-k on every worker, then a gather at a public size
(docs/distributed.md §Top-k).

With ``cluster="inline:2"`` on TPC-H data: answers equal DuckDB's and the single-process
engine's; every worker's block is ``min(k, its padded input)`` rows; EXPLAIN marks the local
top-k; the coupled-neighbour audit (3 workers) is identical; and a worker that keeps only the
real rows among its top k is caught in the exchange log.  Q2 reads public tables only under
``protect_tpch`` (nothing is placed); in Q18 and Q21 the ORDER BY sits above nodes the driver
runs until a plan has more than two rounds (§Rounds), so their sorts are checked where they
run on the workers there.
"""
from __future__ import annotations

import pytest

from dodb.audit import audit
from dodb.datasets import tpch_query
from dodb.executors.moves import DRIVER
from dodb.planner import execute as execute_mod
from dodb.planner.logical import Sort, walk

from ..operators.util import assert_same_rows
from .cluster_db import tpch_cluster_db

# over sharded rows (a unit-local filter) with an OFFSET, over a keyed aggregate, and a LIMIT
# above every worker's padded size (each keeps all its slots)
OWN = [
    "SELECT o_orderkey, o_totalprice FROM orders WHERE o_totalprice > 1000 "
    "ORDER BY o_totalprice DESC, o_orderkey LIMIT 7 OFFSET 3",
    "SELECT o_orderpriority, count(*) AS n FROM orders GROUP BY o_orderpriority ORDER BY n DESC, o_orderpriority "
    "LIMIT 2",
    "SELECT c_custkey, c_acctbal FROM customer WHERE c_acctbal > 0 ORDER BY c_acctbal, c_custkey LIMIT 5000",
]
# every unit owns one customer row, and no worker has 500 of them: each keeps its padded size,
# so a worker that cuts its block to its real rows shows how many it has
EVERY_UNIT = "SELECT c_custkey, c_acctbal FROM customer WHERE c_acctbal > -10000 ORDER BY c_acctbal DESC LIMIT 500"


def _db(neighbour: str, workers: int, scale: float):
    return tpch_cluster_db(neighbour, workers, scale, seed=7)


@pytest.fixture(scope="module")
def db():
    d = _db("add_remove", 2, 0.01)
    yield d
    d.close()


def _top_k(plan) -> list[Sort]:
    return [n for n in walk(plan.root) if isinstance(n, Sort) and n.per_worker and n.node_id in plan.placement.keyed]


@pytest.mark.parametrize("sql", [tpch_query(3), tpch_query(10)] + OWN)
def test_answers_equal_duckdb_and_the_single_process_engine(db, sql, monkeypatch):
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    plan = res.plan
    tops = _top_k(plan)
    assert len(tops) == 1 and tops[0] in plan.placement.gathers  # the local top-k is what the driver gathers
    top = tops[0]
    want = db.oracle.sql(sql).to_arrow_table()
    assert_same_rows(res.arrow(), want, ordered=True)
    # every worker's block is its first min(k, padded input) slots: a public size
    stage = f"gather {plan.placement.gathers.index(top)}"
    blocks = sorted((m.source, m.rows) for m in plan.moves if m.stage == stage and m.destination == DRIVER)
    assert [s for s, _ in blocks] == [0, 1]
    assert sum(r for _, r in blocks) == plan.stats[top.node_id].padded_out
    assert all(r <= top.limit for _, r in blocks)
    monkeypatch.setattr(db, "executor", None)  # the same database in one process
    assert_same_rows(db.sql(sql, epsilon=1.0, delta=1e-6).arrow(), want, ordered=True)


def test_each_block_is_its_worker_first_k_slots(db):
    """A LIMIT above a worker's padded size keeps that worker's whole block; a small one keeps k."""
    big = db.sql(OWN[2], epsilon=1.0, delta=1e-6).plan
    small = db.sql(OWN[0], epsilon=1.0, delta=1e-6).plan
    for plan, k in ((big, 5000), (small, 10)):
        (top,) = _top_k(plan)
        assert top.limit == k
        stage = f"gather {plan.placement.gathers.index(top)}"
        rows = [m.rows for m in sorted(plan.moves, key=lambda m: m.source) if m.stage == stage]
        assert len(rows) == 2 and sum(rows) == plan.stats[top.node_id].padded_out
        if k == 10:  # LIMIT 7 OFFSET 3: every worker keeps 10 of its more than 10 slots
            assert rows == [10, 10]
        else:  # every slot of every worker: the workers' padded inputs, summed
            assert sum(rows) == plan.stats[top.child.node_id].padded_out < 5000


def test_explain_marks_the_local_top_k(db):
    text = db.explain(tpch_query(3))
    lines = text.splitlines()
    final = next(i for i, x in enumerate(lines) if "Sort [revenue DESC, o_orderdate] LIMIT 10" in x)
    assert "on 2 workers" not in lines[final]  # the final ORDER BY … LIMIT runs on the driver
    assert "(each worker's own top rows)" in lines[final + 1]
    assert "on 2 workers, each keeps its first 10 rows, gathered to the driver" in lines[final + 1]
    assert "padded ≤20" in lines[final + 1]  # two blocks of at most 10 rows
    # an OFFSET is applied on the driver: every worker keeps limit + offset rows
    assert "each keeps its first 10 rows" in db.explain(OWN[0])


@pytest.fixture(scope="module")
def small():
    d = _db("add_remove", 3, 0.002)
    yield d
    d.close()


def test_cluster_audit_is_identical_on_coupled_neighbours(small):
    report = audit(small, [tpch_query(3), EVERY_UNIT, OWN[1]], pairs=2, seed=1)
    assert report.ok, "\n".join(report.lines())


def test_planted_top_k_of_real_rows_only_is_caught(small, monkeypatch):
    """A worker that keeps only the real rows among its top k (its block sized by its count)."""
    real = execute_mod.Executor._dispatch

    def cut(self, node, inputs, ctx, eps, delta):
        out = real(self, node, inputs, ctx, eps, delta)
        if isinstance(node, Sort) and node.per_worker:
            out = out.with_arrays([a[out.is_real] for a in out.arrays()])
        return out

    monkeypatch.setattr(execute_mod.Executor, "_dispatch", cut)
    report = audit(small, [EVERY_UNIT], pairs=2, seed=1)
    assert not report.ok and report.identical == 0
    assert all(p.difference.startswith("moves item") and "gather" in p.difference
               for p in report.queries[0].pairs), report.lines()
