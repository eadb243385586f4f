"""Budget allocation (issue 5): even split vs cost-aware split at equal total ε, TPC-H in do mode.

For every query and each allocation strategy the same query runs in ``do`` mode with the
same total (ε, δ); the noise is seeded per repeat, so both strategies see the same seeds.
Measured: the padded rows summed over the private operators' outputs (what the padding
costs in work downstream), the wall time, and the answer checked against DuckDB's.
Written to ``allocation_sf{scale}.json`` / ``.md``.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from .common import (DEFAULT_OUT, NOISE_CAVEAT, fmt_ratio, fmt_seconds, geomean, machine_info, machine_lines,
                     progress, write_json)
from .report import md_table
from .tpch import flatten_plan, has_order_by, parse_queries

__all__ = ["add_arguments", "run", "padded_rows"]

STRATEGIES = ("even", "cost")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", type=float, default=0.01, help="TPC-H scale factor (default 0.01)")
    p.add_argument("--queries", default="1-22", help="e.g. 1-22 or 3,5,10")
    p.add_argument("--epsilon", type=float, default=1.0, help="total ε per query (default 1)")
    p.add_argument("--delta", type=float, default=1e-6, help="total δ per query")
    p.add_argument("--repeats", type=int, default=3, help="runs per query and strategy (seeds 1..repeats)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)


def padded_rows(plan: dict) -> int:
    """Sum of padded output sizes of the private (non-scan) operators of an executed plan
    (a shared sub-plan — a CTE — counted once, as it runs once)."""
    return sum(o["padded_out"] or 0 for o in flatten_plan(plan)
               if not o["shared"] and not o["mode"].startswith("plain") and o["kind"] != "Scan")


def _measure(args: argparse.Namespace, bar) -> tuple[dict, list[dict]]:
    import dodb
    from dodb.compare import same_answer
    from dodb.compare import snapshot
    from dodb.datasets import generate_tpch, protect_tpch, tpch_query
    from dodb.oblivious.rng import enable_seeding

    enable_seeding()  # seeded noise: benchmark mode only
    db = dodb.connect(":memory:", allow_insecure=True, seed=1)
    counts = generate_tpch(db.con, args.scale)
    oracle = snapshot(db.con)  # the raw tables, before protect moves them
    db.set_budget(epsilon=1e9, delta=0.999)
    protect_tpch(db)
    # one session per noise seed over the same connection (they share catalog and ledger)
    seeded = {seed: dodb.attach(db.con, allow_insecure=True, seed=seed)
              for seed in range(1, args.repeats + 1)}
    rows = []
    for q in args.queries:
        sql = tpch_query(q)
        want = oracle.sql(sql).to_arrow_table()
        ordered = has_order_by(sql)
        row = {"query": q}
        for strategy in STRATEGIES:
            bar.set_postfix_str(f"Q{q} {strategy}")
            padded, times, ok, releases = [], [], True, 0
            for session in seeded.values():
                t0 = time.perf_counter()
                res = session.sql(sql, epsilon=args.epsilon, delta=args.delta, allocation=strategy)
                times.append(time.perf_counter() - t0)
                ok &= bool(same_answer(res.arrow(), want, ordered=ordered))
                padded.append(padded_rows(res.plan.to_dict()["plan"]))
                releases = len(res.privacy.operators)
            row[strategy] = {"padded_rows": statistics.mean(padded), "seconds": statistics.median(times),
                             "match": ok, "releases": releases}
            bar.update(1)
        rows.append(row)
    return counts, rows


def summarize(rows: list[dict]) -> dict:
    leaky = [r for r in rows if r["even"]["releases"] > 1]  # with one release both strategies are the same
    pad = [r["cost"]["padded_rows"] / r["even"]["padded_rows"] for r in leaky if r["even"]["padded_rows"]]
    sec = [r["cost"]["seconds"] / r["even"]["seconds"] for r in leaky]
    return {
        "queries_compared": len(leaky),
        "padded_rows": {s: sum(r[s]["padded_rows"] for r in leaky) for s in STRATEGIES},
        "seconds": {s: sum(r[s]["seconds"] for r in leaky) for s in STRATEGIES},
        "geomean_padded_cost_over_even": geomean(pad),
        "geomean_seconds_cost_over_even": geomean(sec),
        "cost_fewer_padded_rows": sum(p < 1 for p in pad),
        "all_match": all(r[s]["match"] for r in rows for s in STRATEGIES),
    }


def render(data: dict) -> str:
    p, s = data["params"], data["summary"]
    lines = [f"# Budget allocation: even vs cost-aware, TPC-H sf {p['scale']:g}", "",
             f"Command: `python -m benchmarks allocation --scale {p['scale']:g} --queries {p['queries_spec']} "
             f"--epsilon {p['epsilon']:g} --delta {p['delta']:g} --repeats {p['repeats']}`", "",
             *machine_lines(data["machine"]), "", f"> {NOISE_CAVEAT} dodb runs single-threaded numpy.", "",
             f"Every query runs in `do` mode at total ε = {p['epsilon']:g}, δ = {p['delta']:g}, once per noise "
             f"seed 1..{p['repeats']} with each strategy (same seeds). *Padded rows* = the padded output sizes of "
             "the private operators, summed (mean over the seeds); time = median. `even` gives every release the "
             "same share; `cost` gives release i a share ∝ sqrt((1 + downstream cost per row) × sensitivity) and a "
             "floor share to releases that would pad to their worst case anyway (`dodb/planner/plan.py`).", "",
             "## Summary (queries with two or more releases)", "",
             md_table(["", "even", "cost", "cost / even"], [
                 ["padded rows, total", f"{s['padded_rows']['even']:,.0f}", f"{s['padded_rows']['cost']:,.0f}",
                  fmt_ratio(s["padded_rows"]["cost"] / max(1, s["padded_rows"]["even"]))],
                 ["padded rows, geomean of per-query ratios", "", "", fmt_ratio(s["geomean_padded_cost_over_even"])],
                 ["time, total", fmt_seconds(s["seconds"]["even"]), fmt_seconds(s["seconds"]["cost"]),
                  fmt_ratio(s["seconds"]["cost"] / max(1e-9, s["seconds"]["even"]))],
                 ["time, geomean of per-query ratios", "", "", fmt_ratio(s["geomean_seconds_cost_over_even"])],
             ]), "",
             f"`cost` pads fewer rows on {s['cost_fewer_padded_rows']} of {s['queries_compared']} queries. "
             f"Every answer equal to DuckDB's: {'yes' if s['all_match'] else '**NO**'}.", "",
             "## Per query", "",
             md_table(["Q", "releases", "padded rows even", "padded rows cost", "cost / even", "time even",
                       "time cost"],
                      [[f"Q{r['query']}", r["even"]["releases"], f"{r['even']['padded_rows']:,.0f}",
                        f"{r['cost']['padded_rows']:,.0f}",
                        fmt_ratio(r["cost"]["padded_rows"] / r["even"]["padded_rows"])
                        if r["even"]["padded_rows"] else "–",
                        fmt_seconds(r["even"]["seconds"]), fmt_seconds(r["cost"]["seconds"])]
                       + ([] if r["even"]["match"] and r["cost"]["match"] else ["MISMATCH"])
                       for r in data["rows"]]), ""]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    spec = args.queries
    args.queries = parse_queries(spec)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    bar = progress(total=len(args.queries) * len(STRATEGIES), desc=f"allocation sf {args.scale:g}")
    try:
        counts, rows = _measure(args, bar)
    finally:
        bar.close()
    data = {"benchmark": "allocation", "machine": info, "rows_per_table": counts,
            "params": {"scale": args.scale, "queries": args.queries, "queries_spec": spec, "epsilon": args.epsilon,
                       "delta": args.delta, "repeats": args.repeats},
            "rows": rows, "summary": summarize(rows)}
    stem = f"allocation_sf{args.scale:g}"
    write_json(out / f"{stem}.json", data)
    (out / f"{stem}.md").write_text(render(data))
    print(f"wrote {out / (stem + '.md')}")
    return 0 if data["summary"]["all_match"] else 1
