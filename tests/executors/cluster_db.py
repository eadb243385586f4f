"""A sharded TPC-H database run by inline workers, shared by the cluster tests (docs/distributed.md)."""
from __future__ import annotations

import dodb
from dodb.compare import snapshot
from dodb.datasets import generate_tpch, protect_tpch


def tpch_cluster_db(neighbour: str, workers: int, scale: float, seed: int):
    """TPC-H at ``scale`` protected and sharded ``workers`` ways, ``cluster="inline:P"``, a
    large budget, and ``db.oracle``: a DuckDB snapshot of the plain tables."""
    db = dodb.connect(neighbour=neighbour, seed=seed, cluster=f"inline:{workers}")
    generate_tpch(db.con, scale)
    db.oracle = snapshot(db.con)
    db.set_budget(epsilon=1e9, delta=0.5)
    protect_tpch(db)
    db.shard(workers)
    return db


def assert_stages_within_cost_model(plan) -> None:
    """Every stage of the run's exchange log moves within 10% of the cost model's bytes
    (docs/distributed.md §Exchange cost)."""
    from dodb.planner.exchange_cost import stage_bytes

    for stage in sorted({m.stage for m in plan.moves}):
        sent = [m for m in plan.moves if m.stage == stage]
        model = stage_bytes([m.rows for m in sent], sent[0].row_bytes, sent[0].header_bytes)
        assert abs(sum(m.bytes for m in sent) - model) <= 0.1 * model, (stage, model)


def assert_wrong_answer_with(db, sql: str, exchanges: int) -> None:
    """Under a planted wrong skip, ``sql`` plans ``exchanges`` exchanges and its answer differs
    from DuckDB's: the comparison catches the skip (docs/distributed.md §Partitioned inputs)."""
    import pytest

    from ..operators.util import assert_same_rows

    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert len(res.plan.placement.exchanges) == exchanges  # the planted skip
    with pytest.raises(AssertionError):
        assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table())


def assert_audit_identical(db, queries: list[str]) -> None:
    """The coupled-neighbour audit of ``queries`` on ``db`` (docs/distributed.md §Audit across
    workers) finds every pair's views identical."""
    from dodb.audit import audit

    report = audit(db, queries, pairs=2, seed=1)
    assert report.ok, "\n".join(report.lines())
