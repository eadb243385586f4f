"""Lookup passes against the sort join, on the TPC-H queries whose plans look up a public side.

Each query runs warm with the planner's choice as it is (``COST_PER_STAGE`` of
``dodb/operators/lookup.py``) and with lookups turned off (every public join side sorted),
interleaved, so the ratio comes from one run on one machine.  It calibrates the
lookup-or-sort cost model: a lookup should be chosen only where it is the faster plan.

    python -m benchmarks lookup_choice --scale 0.1 --queries 2,5,7,8,9,11,16,17,19,20
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from .common import machine_info, machine_lines, protected_tpch

RESULTS = Path(__file__).parent / "results"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", type=float, default=0.1)
    p.add_argument("--queries", default="2,5,7,8,9,11,16,17,19,20")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=None)


def _lookups(plan) -> int:
    return plan.explain().count("lookup in a small public relation")


def run(args: argparse.Namespace) -> None:
    from dodb.datasets.tpch import tpch_query
    from dodb.operators import lookup

    db = protected_tpch(args.scale)
    stage = lookup.COST_PER_STAGE
    rows = []
    for q in [int(x) for x in args.queries.split(",")]:
        sql = tpch_query(q)
        times: dict[str, list[float]] = {"model": [], "sort": []}
        counts = {}
        for _ in range(args.repeats + 1):
            for name, cost in (("model", stage), ("sort", 0.0)):
                lookup.COST_PER_STAGE = cost
                try:
                    counts[name] = _lookups(db.plan(sql, epsilon=1.0))
                    t0 = time.perf_counter()
                    db.sql(sql, epsilon=1.0).arrow()
                    times[name].append(time.perf_counter() - t0)
                finally:
                    lookup.COST_PER_STAGE = stage
        m, s = (statistics.median(times[k][1:]) for k in ("model", "sort"))
        rows.append((q, counts["model"], m, s))
        print(f"Q{q}: {counts['model']} lookups; with the model {m * 1000:.0f} ms, all sorted {s * 1000:.0f} ms "
              f"({s / m:.2f}x)", flush=True)
    lines = [f"# Lookup passes or sort join, TPC-H sf {args.scale:g} (do, ε = 1, warm)", "",
             f"Command: `python -m benchmarks lookup_choice --scale {args.scale:g} --queries {args.queries} "
             f"--repeats {args.repeats}`", "",
             f"`model`: the planner's choice with COST_PER_STAGE = {stage:g}; `sorted`: lookups off. "
             "Medians of the repeats after one warm-up, interleaved.", "",
             "| query | lookups chosen | model ms | sorted ms | sorted / model |", "| :--- | ---: | ---: | ---: | ---: |"]
    lines += [f"| Q{q} | {n} | {m * 1000:.0f} | {s * 1000:.0f} | {s / m:.2f}× |" for q, n, m, s in rows]
    lines += [""] + machine_lines(machine_info())
    out = Path(args.out) if args.out else RESULTS / f"lookup_choice_sf{args.scale:g}.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
