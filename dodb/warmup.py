"""``dodb warmup``: compile every oblivious kernel once, ahead of the first query (issue 26).

The kernels are compiled by numba on first use and cached per user, numba version and CPU
(:mod:`dodb.oblivious.kernel_cache`).  Warming up compiles every signature listed in
:mod:`dodb.oblivious.kernel_signatures` on every core at once (:mod:`dodb.precompile`):
numba compiles on one core per process, and a cold compile is a minute of LLVM passes.  A
later process loads them from the cache in milliseconds.

The list is what a small built-in workload (:func:`run_workload`: a tiny TPC-H sample
protected as the demo protects it, and queries that reach every kernel: the sorting
networks, compaction, expansion, the scans, the int128 and string kernels) and the
reference queries (:func:`run_reference_queries`: the 22 TPC-H queries and the audit's
built-in set, both private modes) call; ``python -m dodb.warmup --record`` writes it.
``tests/test_warmup.py`` checks that the reference queries compile nothing after a warmup
and call nothing the list lacks.  If a compile process fails, the workload runs instead.
"""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

__all__ = ["WARMUP_QUERIES", "warmup", "run_workload", "run_reference_queries", "record_signatures"]

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
    # the C library's mathematical functions (compiled_libm)
    "SELECT avg(ln(l_quantity) + pow(l_discount, 2) + atan2(l_tax, l_discount)) FROM lineitem",
    # a predicate with more 64-bit leaves than one compiled program has slots: node by node
    "SELECT count(*) FROM lineitem WHERE l_orderkey > 0 AND l_partkey > 0 AND l_suppkey > 0 AND l_linenumber > 0 "
    "AND l_quantity > 0 AND l_extendedprice > 0 AND l_discount >= 0 AND l_tax >= 0 AND l_orderkey + 1 > 1",
    # many-to-many join (general expansion)
    "SELECT count(*) FROM orders o1 JOIN orders o2 ON o1.o_orderdate = o2.o_orderdate",
]


@contextmanager
def _tiny_tpch(scale: float, epsilon: float) -> Iterator:
    """A new in-memory database with a TPC-H sample protected as the demo protects it."""
    import dodb
    from .datasets import generate_tpch, protect_tpch

    db = dodb.connect()
    try:
        generate_tpch(db.con, scale)
        db.set_budget(epsilon=epsilon, delta=0.5)
        protect_tpch(db)
        yield db
    finally:
        db.close()


def run_workload(progress: Callable[[int, int, str], None] | None = None, *, scale: float = 0.001) -> None:
    """Protect a tiny TPC-H sample and run :data:`WARMUP_QUERIES` (every kernel signature the
    engine uses is then compiled or loaded)."""
    steps = 1 + len(WARMUP_QUERIES)
    report = progress or (lambda i, n, label: None)
    report(0, steps, "protecting a tiny TPC-H sample (random permutation, checksums)")
    with _tiny_tpch(scale, 1e6) as db:
        for i, q in enumerate(WARMUP_QUERIES):
            report(1 + i, steps, q[:60] + ("…" if len(q) > 60 else ""))
            db.sql(q, epsilon=1.0).arrow()


def warmup(progress: Callable[[int, int, str], None] | None = None, *, scale: float = 0.001,
           jobs: int | None = None) -> float:
    """Compile (or load from the cache) every kernel the engine uses; returns the seconds taken.

    The listed signatures (:mod:`dodb.precompile`) are compiled in ``jobs`` processes at once
    (default: one per core).  The list holds every signature the workload and the reference
    queries call (``tests/test_warmup.py``), so the workload runs only when a process failed:
    it compiles whatever was left out.  ``progress(step, steps, label)`` is called before each step.
    """
    from .oblivious.kernel_signatures import SIGNATURES
    from .precompile import compile_in_parallel, useful_jobs

    t0 = time.perf_counter()
    report = progress or (lambda i, n, label: None)
    workers = useful_jobs(jobs)
    count = sum(len(v) for v in SIGNATURES.values())
    report(0, 1, f"compiling {count} kernel signatures ({workers} process{'es' if workers > 1 else ''})")
    failures = compile_in_parallel(workers)
    if failures:
        for line in failures:
            print(f"dodb warmup: {line}; running the workload to compile what it left out", file=sys.stderr)
        run_workload(progress, scale=scale)
        from .oblivious import ir_cache

        ir_cache.save()  # the IR of what was compiled here, for the IR lint (no second compile)
    report(1, 1, "done")
    return time.perf_counter() - t0


def run_reference_queries() -> None:
    """The 22 TPC-H queries and the audit's built-in set, in both private modes, on a tiny
    sample: what the warmup (and :mod:`dodb.oblivious.kernel_signatures`) must cover."""
    from .audit.command import BUILTIN_QUERIES
    from .datasets import tpch_query

    with _tiny_tpch(0.001, 1e9) as db:
        for mode in ("do", "oblivious"):
            for q in [tpch_query(n) for n in range(1, 23)] + list(BUILTIN_QUERIES):
                db.sql(q, epsilon=1.0, mode=mode).arrow()


def record_signatures() -> Path:
    """Run the warmup workload and :func:`run_reference_queries`, and write every kernel
    signature they called to :mod:`dodb.oblivious.kernel_signatures`."""
    from .precompile import recorded_signatures

    run_workload()
    run_reference_queries()
    lines = ['"""Every kernel signature the warmup workload, the TPC-H queries and the audit\'s built-in set',
             "call (generated by ``python -m dodb.warmup --record``; read by :mod:`dodb.precompile`).",
             '"""', "", "SIGNATURES: dict[str, list[str]] = {"]
    for name, sigs in recorded_signatures().items():
        lines.append(f"    {name!r}: [")
        lines += [f"        {s!r}," for s in sigs]
        lines.append("    ],")
    lines.append("}")
    target = Path(__file__).parent / "oblivious" / "kernel_signatures.py"
    target.write_text("\n".join(lines) + "\n")
    return target


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python -m dodb.warmup --record   (rewrites dodb/oblivious/kernel_signatures.py)")
    print(record_signatures())
