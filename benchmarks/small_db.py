"""The fixed costs of a small database: connect, protect, and queries in each mode.

What one example of the test suite's DuckDB-oracle property tests does (two tiny protected
tables, three queries per mode), so it measures dodb's own overhead — DuckDB statements,
catalog reads, the ledger, planning — rather than its kernels.  Medians of ``--repeats``
runs after three warm-ups.  For a before/after, run it once per tree, interleaved::

    for t in OLD NEW; do PYTHONPATH=$t python -m benchmarks small_db; done
"""
from __future__ import annotations

import argparse
import statistics
import time

QUERIES = [
    "SELECT a % 3 AS k, count(*), sum(d) FROM t1 WHERE a > 5 GROUP BY 1 UNION ALL SELECT b, 1, 2.0 FROM t2 ORDER BY 1, 2",
    "SELECT t1.a, t2.b FROM t1 JOIN t2 ON t1.id = t2.id WHERE t1.a < 20",
    "SELECT count(*) FROM t1 WHERE s LIKE 'x1%'",
]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeats", type=int, default=12)


def _one(i: int) -> dict[str, float]:
    import dodb

    t: dict[str, float] = {}
    t0 = time.perf_counter()
    db = dodb.connect(seed=i + 1, allow_insecure=True)
    db.con.execute("CREATE TABLE t1 (id INTEGER NOT NULL, a INTEGER, s VARCHAR, d DECIMAL(10,2))")
    db.con.execute("INSERT INTO t1 SELECT i % 7, i, 'x' || i, i * 1.5 FROM range(40) r(i)")
    db.con.execute("CREATE TABLE t2 (id INTEGER NOT NULL, b INTEGER)")
    db.con.execute("INSERT INTO t2 SELECT i % 5, i FROM range(30) r(i)")
    db.set_budget(epsilon=1e9, delta=0.5)
    t["connect + set_budget"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    db.protect("t1", "id", max_contributions=7, widths={"s": 4})
    db.protect("t2", "id", max_contributions=6)
    t["two protects"] = time.perf_counter() - t0
    for mode in ("do", "oblivious", "plain"):
        t0 = time.perf_counter()
        for q in QUERIES:  # constants vary, so no answer is reused
            db.sql(q.replace("5", str(5 + i % 3)), epsilon=1.0, delta=1e-6, mode=mode).arrow()
        t[f"three {mode} queries"] = time.perf_counter() - t0
    db.close()
    return t


def run(args: argparse.Namespace) -> None:
    import dodb
    from dodb.oblivious.rng import enable_seeding

    enable_seeding()
    for i in range(3):
        _one(i)
    runs = [_one(i) for i in range(args.repeats)]
    print(f"dodb at {dodb.__file__}")
    for k in runs[0]:
        print(f"  {k:<24} {statistics.median(r[k] for r in runs) * 1000:8.1f} ms")
