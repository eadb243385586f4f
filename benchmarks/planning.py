"""Planning and accounting time per TPC-H query (issue 13 item 5: target < 50 ms).

For each query: **plan** is :meth:`dodb.Database.plan` (catalog refresh, guard, bind,
sqlglot optimisation, plan building, noise calibration, dry run); **accounting** is the
ledger's pricing of the query's events against the history (what admission computes,
via :meth:`~dodb.accountant.Ledger.preview`).  *Cold* is the first time in the process
(caches of optimised queries, planning caches and leaf curves empty); *warm* is the median of repeats —
the same query asked again, as in a dashboard or a notebook re-run.  CPU time of the
process (``time.process_time``) and wall time are both reported; on this shared machine
wall time includes waiting for a core.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from .common import DEFAULT_OUT, NOISE_CAVEAT, machine_info, machine_lines, protected_tpch, write_json

TARGET_MS = 50.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", type=float, default=0.01)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)


def _clear_caches(db) -> None:
    from dodb.accountant import pld, renyi
    from dodb.planner import optimize

    optimize._cache.clear()
    renyi._laplace_rdp_cached.cache_clear()
    pld._laplace_pld_cached.cache_clear()
    db.catalog.schema_cache.clear()  # front end, dry run, dry-run scans (docs/design.md §Planning caches)
    db.catalog.public_facts.clear()  # public sub-plan results and key multiplicities


def _time(fn) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - w) * 1000, (time.process_time() - c) * 1000


def run(args: argparse.Namespace) -> int:
    from dodb.datasets import tpch_query

    db = protected_tpch(args.scale, epsilon=1e6)
    db.plan(tpch_query(1), epsilon=1.0)  # imports, numba, DuckDB warm-up: not a query's cost
    _clear_caches(db)
    rows = []
    for q in range(1, 23):
        sql = tpch_query(q)
        plan_cold = _time(lambda: db.plan(sql, epsilon=1.0))
        p = db.plan(sql, epsilon=1.0)
        acct_cold = _time(lambda: db.ledger.preview(p.events, delta=p.delta)) if p.events else (0.0, 0.0)
        plans, accts = [], []
        for _ in range(args.repeats):
            plans.append(_time(lambda: db.plan(sql, epsilon=1.0)))
            if p.events:
                accts.append(_time(lambda: db.ledger.preview(p.events, delta=p.delta)))
        med = lambda xs, i: statistics.median(x[i] for x in xs) if xs else 0.0  # noqa: E731
        rows.append({"query": q, "releases": len(p.events),
                     "cold_wall_ms": plan_cold[0] + acct_cold[0], "cold_cpu_ms": plan_cold[1] + acct_cold[1],
                     "plan_warm_wall_ms": med(plans, 0), "plan_warm_cpu_ms": med(plans, 1),
                     "acct_warm_wall_ms": med(accts, 0), "acct_warm_cpu_ms": med(accts, 1)})
        r = rows[-1]
        r["warm_wall_ms"] = r["plan_warm_wall_ms"] + r["acct_warm_wall_ms"]
        r["warm_cpu_ms"] = r["plan_warm_cpu_ms"] + r["acct_warm_cpu_ms"]
        print(f"Q{q:>2}: cold {r['cold_wall_ms']:6.1f} ms, warm {r['warm_wall_ms']:6.1f} ms "
              f"(plan {r['plan_warm_wall_ms']:.1f} + accounting {r['acct_warm_wall_ms']:.1f})", flush=True)
    data = {"benchmark": "planning", "scale": args.scale, "repeats": args.repeats, "target_ms": TARGET_MS,
            "machine": machine_info(), "rows": rows}
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / f"planning_sf{args.scale:g}.json", data)
    (out / f"planning_sf{args.scale:g}.md").write_text(render(data))
    print(f"wrote {out / f'planning_sf{args.scale:g}.md'}")
    return 0


def render(data: dict) -> str:
    rows = data["rows"]
    t = data["target_ms"]
    lines = [f"# Planning + accounting time per TPC-H query (sf {data['scale']:g})", "",
             f"Command: `python -m benchmarks planning --scale {data['scale']:g} --repeats {data['repeats']}`", "",
             (__doc__ or "").strip().split("\n\n", 1)[1].replace("\n", " "), "",
             "| query | releases | cold wall ms | cold CPU ms | warm plan ms | warm accounting ms | warm total ms |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| Q{r['query']} | {r['releases']} | {r['cold_wall_ms']:.1f} | {r['cold_cpu_ms']:.1f} | "
                     f"{r['plan_warm_wall_ms']:.1f} | {r['acct_warm_wall_ms']:.1f} | {r['warm_wall_ms']:.1f} |")
    under_cold = sum(r["cold_wall_ms"] < t for r in rows)
    under_warm = sum(r["warm_wall_ms"] < t for r in rows)
    lines += ["", f"Under {t:g} ms: **{under_warm} of {len(rows)} warm**, {under_cold} of {len(rows)} cold "
              f"(wall time). Max warm {max(r['warm_wall_ms'] for r in rows):.1f} ms, "
              f"max cold {max(r['cold_wall_ms'] for r in rows):.1f} ms; median cold "
              f"{statistics.median(r['cold_wall_ms'] for r in rows):.1f} ms.", "",
              *machine_lines(data["machine"]), "", NOISE_CAVEAT, ""]
    return "\n".join(lines)
