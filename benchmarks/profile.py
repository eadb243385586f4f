"""Where a warm TPC-H query's time goes: plan, load, expressions, sorts, compaction, scans, lookups, accounting, decode.

Each query runs warm (after two runs) under ``cProfile``; the report gives each class's
share of the profiled query (cumulative time of the functions that do that work, listed
in ``CLASSES``) and the unprofiled wall time against DuckDB on the same data.  Classes are
disjoint by construction (no listed function calls another class's function), and
"other" is the rest: operator glue (packing rows, key encoding, copies), Python overhead.
cProfile slows Python-heavy code more than the compiled kernels, so shares of the Python
classes are upper bounds.

    python -m benchmarks profile --scale 0.1 --queries 1,3,5,6,9,13,14,18,21
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from pathlib import Path

from .common import DEFAULT_OUT, NOISE_CAVEAT, machine_info, machine_lines, protected_tpch, write_json
from .report import md_table

# class -> (file suffix, function name) whose cumulative time is the class's
CLASSES = {
    "plan": [("dodb/session.py", "plan")],
    "load": [("dodb/planner/execute.py", "_scan")],
    "expressions": [("dodb/operators/expressions/__init__.py", "evaluate")],
    "sorts": [("dodb/oblivious/sort.py", "oblivious_sort"), ("dodb/oblivious/sort.py", "oblivious_merge")],
    "compaction": [("dodb/oblivious/compact.py", "compact"), ("dodb/oblivious/compact.py", "distribute"),
                   ("dodb/oblivious/expand.py", "expand")],
    "scans": [("dodb/oblivious/scan.py", "segmented_scan"), ("dodb/oblivious/scan.py", "segmented_lex_scan"),
              ("dodb/oblivious/scan.py", "forward_fill"), ("dodb/operators/global_aggregate.py", "global_row")],
    "lookups": [("dodb/operators/lookup.py", "_passes_compiled")],
    "accounting": [("dodb/accountant/ledger.py", "admit"), ("dodb/accountant/ledger.py", "complete")],
    "decode": [("dodb/wire.py", "encode"), ("dodb/wire.py", "decode"), ("dodb/planner/execute.py", "cast_result")],
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", type=float, default=0.1)
    p.add_argument("--queries", default="1,3,5,6,9,13,14,18,21")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)


def _shares(stats: pstats.Stats, total: float) -> dict[str, float]:
    out = {name: 0.0 for name in CLASSES}
    for (path, _line, func), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():
        for name, targets in CLASSES.items():
            if any(path.endswith(suffix) and func == fn for suffix, fn in targets):
                out[name] += ct
    out["other"] = max(0.0, total - sum(out.values()))
    return {k: v / total for k, v in out.items()}


def run(args: argparse.Namespace) -> int:
    import duckdb

    from dodb.datasets import generate_tpch, tpch_query

    db = protected_tpch(args.scale)
    ref = duckdb.connect()
    generate_tpch(ref, args.scale)
    rows, records = [], []
    for q in [int(x) for x in args.queries.split(",")]:
        sql = tpch_query(q)
        for _ in range(2):
            db.sql(sql, epsilon=1.0).arrow()
        walls = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            db.sql(sql, epsilon=1.0).arrow()
            walls.append(time.perf_counter() - t)
        duck = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            ref.sql(sql).arrow()
            duck.append(time.perf_counter() - t)
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.enable()
        db.sql(sql, epsilon=1.0).arrow()
        prof.disable()
        profiled = time.perf_counter() - t
        shares = _shares(pstats.Stats(prof), profiled)
        wall, dd = statistics.median(walls), statistics.median(duck)
        records.append({"query": q, "wall_s": wall, "duckdb_s": dd, "profiled_s": profiled, "shares": shares})
        rows.append([f"Q{q}", f"{wall * 1e3:.0f}", f"{dd * 1e3:.1f}", f"{wall / dd:.0f}×"]
                    + [f"{100 * shares[c]:.0f}%" for c in list(CLASSES) + ["other"]])
        print(rows[-1], flush=True)
    info = machine_info()
    head = ["query", "dodb ms", "DuckDB ms", "ratio"] + list(CLASSES) + ["other"]
    text = "\n".join([
        f"# Where the time goes, TPC-H sf {args.scale:g} (do, ε = 1, warm)", "",
        f"Command: `python -m benchmarks profile --scale {args.scale:g} --queries {args.queries} "
        f"--repeats {args.repeats}`", "",
        (__doc__ or "").strip().split("\n\n")[1], "",
        "dodb and DuckDB times are medians of the repeats without the profiler; shares are of one profiled run.", "",
        md_table(head, rows), "",
        *machine_lines(info), "", NOISE_CAVEAT, ""])
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"profile_sf{args.scale:g}"
    (args.out / f"{name}.md").write_text(text)
    write_json(args.out / f"{name}.json", {"benchmark": "profile", "scale": args.scale, "machine": info,
                                           "results": records})
    print(f"wrote {args.out / (name + '.md')}")
    return 0
