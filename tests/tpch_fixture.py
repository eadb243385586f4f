"""A small protected TPC-H database shared by planner and API tests (customer = privacy unit)."""
from __future__ import annotations

import dodb
from dodb.compare import snapshot
from dodb.datasets import PRIVATE_TABLES as PRIVATE
from dodb.datasets import PUBLIC_TABLES as PUBLIC
from dodb.datasets import generate_tpch, protect_tpch

__all__ = ["PRIVATE", "PUBLIC", "protect_tpch", "tpch_database"]


def tpch_database(scale: float = 0.01, path: str = ":memory:", budget: float = 1e6, seed: int = 1,
                  prepare=None) -> "dodb.Database":
    """``prepare(con)`` may change the raw tables before they are protected."""
    db = dodb.connect(path, seed=seed, allow_insecure=True)
    generate_tpch(db.con, scale)
    if prepare is not None:
        prepare(db.con)
    db.oracle = snapshot(db.con)  # DuckDB on the raw data: the tests' oracle (taken before protecting)
    db.set_budget(epsilon=budget, delta=0.5)
    protect_tpch(db)
    return db
