"""``dodb warmup``: compile every oblivious kernel once, ahead of the first query (issue 26).

The kernels are compiled by numba on first use and cached per user, numba version and CPU
(:mod:`dodb.oblivious.kernel_cache`).  Warming up runs a small built-in workload — a tiny
TPC-H sample protected as the demo protects it, and queries that reach every kernel: the
sorting networks, compaction, expansion, the scans, the int128 and string kernels and the
random permutation — so that every kernel signature the engine uses is compiled and
cached.  A later process loads them from the cache in milliseconds.

``tests/test_warmup.py`` checks that the workload reaches every signature that the TPC-H
queries and the audit's built-in set use.
"""
from __future__ import annotations

import sys
import time
from typing import Callable

__all__ = ["WARMUP_QUERIES", "warmup", "compiled_signatures"]

# One query per kernel family beyond what protecting the sample already runs (the random
# permutation, checksums).  Kept small: each query costs its plan and run at scale 0.001.
WARMUP_QUERIES = [
    # global and grouped aggregates, decimals (int128 lanes), the segmented scans
    "SELECT l_returnflag, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)), avg(l_quantity), count(*) "
    "FROM lineitem WHERE l_shipdate <= DATE '1998-09-01' GROUP BY 1 ORDER BY 1",
    # MIN/MAX (the lexicographic scan), decimal column against decimal column (64-bit lanes), a
    # 38-digit sum rescaled to a constant's larger scale (int128 products by 10^k, comparisons)
    "SELECT l_linestatus, min(l_extendedprice), max(l_shipdate), min(l_comment) FROM lineitem "
    "WHERE l_discount < l_tax GROUP BY 1 HAVING sum(l_extendedprice) > 100.125",
    # a global aggregate: one pass per column (128-bit limb sums, a double summed in row order)
    "SELECT sum(l_extendedprice * l_discount), avg(l_quantity::DOUBLE) FROM lineitem WHERE l_quantity < 24",
    # PK-FK joins along the unit path, LIMIT (the merge network)
    "SELECT o_orderkey, sum(l_extendedprice) AS r FROM customer, orders, lineitem WHERE c_custkey = o_custkey "
    "AND l_orderkey = o_orderkey AND c_mktsegment = 'BUILDING' GROUP BY 1 ORDER BY r DESC LIMIT 10",
    # LEFT join with expansion, string LIKE, count of counts
    "SELECT c_count, count(*) FROM (SELECT c_custkey, count(o_orderkey) AS c_count FROM customer LEFT JOIN orders "
    "ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%' GROUP BY c_custkey) GROUP BY 1",
    # string comparisons against constants, IN lists, DISTINCT, NOT IN (anti join)
    "SELECT count(*) FROM customer WHERE c_name LIKE '%1%' AND c_nationkey IN (1, 2, 3)",
    "SELECT DISTINCT c_nationkey FROM customer",
    "SELECT count(*) FROM customer WHERE c_custkey NOT IN (SELECT o_custkey FROM orders)",
    # a public lookup join, a full sort, set operations
    "SELECT n_name, count(*) FROM customer JOIN nation ON c_nationkey = n_nationkey GROUP BY n_name",
    "SELECT c_custkey, c_acctbal FROM customer ORDER BY c_acctbal DESC, c_custkey",
    "SELECT c_nationkey FROM customer EXCEPT SELECT n_nationkey FROM nation WHERE n_regionkey = 0",
    # windows
    "SELECT c_custkey, rank() OVER (PARTITION BY c_nationkey ORDER BY c_acctbal), "
    "sum(c_acctbal) OVER (PARTITION BY c_nationkey) FROM customer",
    # many-to-many join (general expansion)
    "SELECT count(*) FROM orders o1 JOIN orders o2 ON o1.o_orderdate = o2.o_orderdate",
]


def compiled_signatures() -> dict[str, int]:
    """Signatures compiled or loaded in this process, per dodb kernel (``module.name``)."""
    from numba.core.registry import CPUDispatcher

    out: dict[str, int] = {}
    for mod in list(sys.modules.values()):
        name = getattr(mod, "__name__", "") or ""
        if not name.startswith("dodb.oblivious"):
            continue
        for attr, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.__module__ == name:
                out[f"{name}.{attr}"] = len(obj.signatures)
    return out


def warmup(progress: Callable[[int, int, str], None] | None = None, *, scale: float = 0.001) -> float:
    """Compile (or load from the cache) every kernel the engine uses; returns the seconds taken.

    ``progress(step, steps, label)`` is called before each step.
    """
    import dodb
    from .datasets import generate_tpch, protect_tpch

    t0 = time.perf_counter()
    steps = 2 + len(WARMUP_QUERIES)
    report = progress or (lambda i, n, label: None)
    report(0, steps, "building a tiny TPC-H sample")
    db = dodb.connect()
    try:
        generate_tpch(db.con, scale)
        db.set_budget(epsilon=1e6, delta=0.5)
        report(1, steps, "protecting it (random permutation, checksums)")
        protect_tpch(db)
        for i, q in enumerate(WARMUP_QUERIES):
            report(2 + i, steps, q[:60] + ("…" if len(q) > 60 else ""))
            db.sql(q, epsilon=1.0).arrow()
    finally:
        db.close()
    from .oblivious import ir_cache

    ir_cache.save()  # the IR of what was compiled here, for the IR lint (no second compile)
    report(steps, steps, "done")
    return time.perf_counter() - t0
