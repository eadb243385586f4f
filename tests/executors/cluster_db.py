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
