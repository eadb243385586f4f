"""TPC-H on a protected database, every query once warm then best of 2, printed as JSON.

Used to compare process-wide settings side by side (run it in turn with each setting), e.g.
``DODB_KEEP_FREED_MEMORY=0`` against ``1`` (benchmarks/results/stop43/heap_ab_sf1.md)::

    DODB_KEEP_FREED_MEMORY=0 DODB_ALLOW_SEED=1 python benchmarks/heap_ab.py sf1.duckdb
"""
from __future__ import annotations

import json
import sys
import time

import dodb
from dodb.datasets import tpch_query
from dodb.oblivious.rng import enable_seeding


def main(path: str) -> dict[int, float]:
    enable_seeding()
    db = dodb.connect(path, seed=1)
    out = {}
    for q in range(1, 23):
        sql = tpch_query(q)
        db.sql(sql, epsilon=1).arrow()
        times = []
        for _ in range(2):
            t = time.perf_counter()
            db.sql(sql, epsilon=1).arrow()
            times.append(time.perf_counter() - t)
        out[q] = min(times)
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
