"""``dodb audit``: the coupled-neighbour audit from the command line (docs/design.md §Audit).

Builds a TPC-H database in memory (``--scale``), protects it as the demo does, and audits
the given queries (arguments, ``--queries-file`` with one query per line, ``--tpch``
numbers, or the built-in set).  One line per query; the last line is
``audit: N of M neighbour pairs identical``.  Exit status 0 when every pair is identical,
1 when some pair differs (a leak), 2 on a user error.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DodbError

__all__ = ["parameters", "run", "BUILTIN_QUERIES"]

# Ad-hoc queries that reach the private tables in the ways the operators differ: plain
# counts, filters with CASE / LIKE / IN / NULL tests, DISTINCT, NOT IN, joins along the
# unit path and to public tables, ORDER BY ... LIMIT, set operations.
BUILTIN_QUERIES = [
    "SELECT count(*) FROM customer",
    "SELECT c_mktsegment, count(*), sum(c_acctbal) FROM customer WHERE c_acctbal > 1000 GROUP BY 1",
    "SELECT CASE WHEN c_acctbal > 5000 THEN 'rich' ELSE 'other' END AS k, count(*) FROM customer GROUP BY 1",
    "SELECT count(*) FROM customer WHERE c_name LIKE '%1%' AND c_nationkey IN (1, 2, 3)",
    "SELECT DISTINCT c_nationkey FROM customer",
    "SELECT count(*) FROM customer WHERE c_custkey NOT IN (SELECT o_custkey FROM orders)",
    "SELECT n_name, count(*) FROM customer JOIN nation ON c_nationkey = n_nationkey GROUP BY n_name",
    "SELECT o_orderpriority, count(*) FROM orders JOIN customer ON o_custkey = c_custkey "
    "WHERE c_mktsegment = 'BUILDING' GROUP BY 1",
    "SELECT c_custkey, c_acctbal FROM customer ORDER BY c_acctbal DESC LIMIT 5",
    "SELECT c_nationkey FROM customer EXCEPT SELECT n_nationkey FROM nation WHERE n_regionkey = 0",
]


def parameters() -> list:
    """The command's arguments and options, as click parameters (``dodb/cli/parser.py``)."""
    import click

    def opt(*decls: str, **kw) -> click.Option:
        return click.Option(list(decls), **kw)

    return [
        click.Argument(["sql"], nargs=-1, metavar="[SQL]..."),  # queries to audit (default: the built-in set)
        opt("--queries-file", type=click.Path(path_type=Path), default=None,
            help="a file with one query per line ('--' lines are comments)"),
        opt("--tpch", default=None, help="TPC-H query numbers to audit, comma-separated, or 'all'"),
        opt("--scale", type=float, default=0.002, help="TPC-H scale factor of the audited data"),
        opt("--pairs", type=int, default=3, help="neighbour pairs (sampled privacy units) per query"),
        opt("--mode", type=click.Choice(["do", "oblivious", "plain"]), default="do", help="the execution mode audited"),
        opt("--allow-insecure", is_flag=True, help="required for --mode plain"),
        opt("--neighbour", type=click.Choice(["add_remove", "replace"]), default=None,
            help="neighbour relation (default: add_remove; with --database, the file's own setting)"),
        opt("--database", type=click.Path(path_type=Path), metavar="FILE", default=None,
            help="audit this protected database (a temporary copy: the file is not changed) instead of a "
                 "generated TPC-H sample; units that stress its bounds are audited, plus --pairs sampled ones"),
        opt("--epsilon", type=float, default=1.0, help="ε of each audited query"),
        opt("--cluster", metavar="inline:P", default=None,
            help="audit the plans a cluster of P workers runs, over the data sharded P ways; the workers "
                 "run in this process so that runs can be replayed (docs/distributed.md §Audit across "
                 "workers)"),
        opt("--seed", type=int, default=0, help="the seed of the sampled units and of the noise"),
        opt("--no-allocations", is_flag=True,
            help="skip the allocation records (numpy's allocator, tracemalloc): faster, sees less"),
        opt("--addresses", is_flag=True,
            help="measure instead whether any branch or memory address depends on private data: the "
                 "queries run under valgrind's memcheck with private rows marked undefined (needs "
                 "valgrind; minutes per query at the default scale; docs/design.md §Address audit)"),
    ]


def _labels(args: Any, queries: list[str]) -> list[str]:
    """How the report names each query: ``q<n>`` by its TPC-H number for ``--tpch``, else by
    its position (``--sql`` and ``--queries-file`` come first, in that order)."""
    labels = [f"q{i + 1}" for i in range(len(queries))]
    if args.tpch:
        nums = range(1, 23) if args.tpch == "all" else [int(x) for x in args.tpch.split(",")]
        labels[len(queries) - len(nums):] = [f"q{n}" for n in nums]
    return labels


def _queries(args: Any) -> list[str]:
    from ..datasets import tpch_query
    from .neighbour import AuditError

    out = list(args.sql)
    if args.database is not None and args.tpch:
        raise AuditError("--tpch audits the generated TPC-H sample: give queries over your tables with --database")
    if args.queries_file is not None:
        try:
            lines = args.queries_file.read_text().splitlines()
        except OSError as e:
            raise AuditError(f"cannot read --queries-file: {e.strerror}: {args.queries_file}") from None
        out += [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("--")]
    if args.tpch:
        nums = range(1, 23) if args.tpch == "all" else []
        if args.tpch != "all":
            try:
                nums = [int(x) for x in args.tpch.split(",")]
            except ValueError:
                raise AuditError(f"--tpch {args.tpch!r}: give numbers 1-22, comma-separated, or 'all'") from None
        for n in nums:
            if not 1 <= n <= 22:
                raise AuditError(f"--tpch: there is no TPC-H query {n} (1-22)")
            out.append(tpch_query(n))
    if args.database is not None:
        return out  # none given: owner_data.default_queries makes them from the file's schema
    return out or list(BUILTIN_QUERIES)


def run(args: Any) -> int:
    import dodb
    from ..datasets import generate_tpch, protect_tpch
    from ..oblivious.rng import seeded_mode
    from .neighbour import AuditError
    from .run import audit

    if args.mode == "plain" and not args.allow_insecure:
        raise DodbError("--mode plain runs private rows without protection: add --allow-insecure to audit it")
    if args.pairs < 1:
        raise AuditError(f"--pairs must be at least 1, got {args.pairs}")
    if not 0 < args.scale <= 1:
        raise AuditError(f"--scale must be in (0, 1], got {args.scale}")
    queries = _queries(args)
    if args.addresses:
        return _audit_addresses(args, queries)
    if args.cluster is not None and not args.cluster.startswith("inline:"):
        args.cluster = "inline:" + args.cluster.split(":", 1)[-1]  # the same plans and views, replayable here
    with seeded_mode():
        if args.database is not None:
            report = _audit_database(args, queries)
        else:
            db = dodb.connect(neighbour=args.neighbour or "add_remove", allow_insecure=args.allow_insecure,
                              seed=args.seed, cluster=args.cluster)
            try:
                generate_tpch(db.con, args.scale)
                db.set_budget(epsilon=1e9, delta=0.5)  # the audit charges nothing; protect needs a budget
                protect_tpch(db)
                if db.executor is not None:
                    db.shard(db.executor.workers)
                report = audit(db, queries, pairs=args.pairs, mode=args.mode, epsilon=args.epsilon,
                               seed=args.seed, allocations=not args.no_allocations)
            finally:
                db.close()
    labels = _labels(args, queries) if len(queries) == len(report.queries) else None
    lines = report.lines(labels)
    for q, line, label in zip(report.queries, lines, labels or [f"q{i + 1}" for i in range(len(report.queries))]):
        print(line)
        if q.identical != len(q.pairs) or q.error:
            print(f"      {label} = {' '.join(q.sql.split())[:200]}")
    print(lines[-1])
    return 0 if report.ok else 1


def _audit_database(args: Any, queries: list[str]):
    """The audit on a copy of the owner's database (dodb/audit/owner_data.py)."""
    import shutil

    import dodb
    from .neighbour import Neighbourhood
    from .owner_data import audit_units, copy_database, default_queries, temporary_copy_path
    from .run import audit

    path = temporary_copy_path()
    con = copy_database(args.database, path)
    try:
        db = dodb.attach(con, neighbour=args.neighbour, allow_insecure=args.allow_insecure, seed=args.seed)
        if db.ledger.budget is None:
            db.set_budget(epsilon=1e9, delta=0.5)  # on the copy only: planning needs a budget, nothing is charged
        queries = queries or default_queries(db.catalog)
        units = audit_units(Neighbourhood.read(db.con, db.catalog), args.pairs, args.seed)
        print(f"audit of {args.database} (a copy), {db.neighbour} neighbours, {len(units)} units:")
        for u, why in units:
            print(f"  {u!r}: {why}")
        return audit(db, queries, units=[u for u, _ in units], mode=args.mode, epsilon=args.epsilon,
                     seed=args.seed, allocations=not args.no_allocations)
    finally:
        con.close()
        shutil.rmtree(path.parent, ignore_errors=True)


def _audit_addresses(args: Any, queries: list[str]) -> int:
    """``--addresses``: the queries under memcheck, over a file the child process opens."""
    import shutil

    import dodb
    from ..datasets import generate_tpch, protect_tpch
    from ..oblivious.rng import seeded_mode
    from .addresses import audit_addresses
    from .neighbour import AuditError
    from .owner_data import copy_database, default_queries, temporary_copy_path

    if args.cluster is not None:
        raise AuditError("--addresses measures one process: leave out --cluster")
    path = temporary_copy_path()
    try:
        with seeded_mode():
            if args.database is not None:
                con = copy_database(args.database, path)
                try:
                    db = dodb.attach(con, seed=args.seed)
                    queries = queries or default_queries(db.catalog)
                finally:
                    con.close()
            else:
                db = dodb.connect(str(path), seed=args.seed)
                try:
                    generate_tpch(db.con, args.scale)
                    db.set_budget(epsilon=1e9, delta=0.5)  # the audit charges nothing; protect needs a budget
                    protect_tpch(db)
                finally:
                    db.close()
        print(f"audit --addresses: {len(queries)} queries under valgrind's memcheck (a few minutes each)",
              flush=True)
        report = audit_addresses(path, queries, mode=args.mode, epsilon=args.epsilon, seed=args.seed,
                                 labels=_labels(args, queries))
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)
    lines = report.lines()
    for q, line in zip(report.queries, lines):
        print(line)
        if not q.ok:
            print(f"      {q.label} = {' '.join(q.sql.split())[:200]}")
            for f in _distinct(q.findings)[:12]:
                print(f"      {f.describe()}")
    print(lines[-1])
    return 0 if report.ok else 1


def _distinct(findings: list) -> list:
    """One finding per (node, line, frame), counts summed, in order of first appearance."""
    out: dict = {}
    for f in findings:
        key = (f.node, f.line, f.frame)
        if key in out:
            out[key].count += f.count
        else:
            out[key] = f
    return list(out.values())
