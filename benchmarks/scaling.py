"""TPC-H scaling: the exponent k in time ∝ sf^k, per query and engine, from ``tpch_sf*.json``.

No benchmark is run: the report reads the TPC-H results already in the input folders
(``python -m benchmarks tpch --scale …`` writes them) and fits, per query and engine, the
least-squares slope of log(seconds) against log(scale factor) over every scale at which the
run finished.  An exponent near 1 is linear work; an oblivious sort contributes
log²n on top.  Peak memory is fitted the same way.

    python -m benchmarks scaling --inputs benchmarks/results/tpch_sf0.01.json \\
        benchmarks/results/tpch_sf0.1.json benchmarks/results/tpch_sf1.json
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from .common import DEFAULT_OUT, read_json, write_json
from .report import md_table

__all__ = ["add_arguments", "run", "slope", "exponents"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inputs", type=Path, nargs="+", required=True, help="tpch_sf*.json files (two or more scales)")
    p.add_argument("--labels", nargs="+", default=["duckdb", "do ε=1"], help="engine labels to fit")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(y) on log(x); None with fewer than two distinct x."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y and y > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


def exponents(runs: dict[float, list[dict]], label: str, field: str) -> dict[int, float | None]:
    """Per query: the fitted exponent of ``field`` for the engine ``label``."""
    out: dict[int, float | None] = {}
    queries = sorted({r["query"] for rs in runs.values() for r in rs})
    for q in queries:
        pts = [(sf, r[field]) for sf, rs in runs.items() for r in rs
               if r["query"] == q and r["label"] == label and r["status"] == "ok" and r.get(field)]
        out[q] = slope(pts)
    return out


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def run(args: argparse.Namespace) -> int:
    runs: dict[float, list[dict]] = {}
    commits = {}
    for f in args.inputs:
        data = read_json(f)
        runs[float(data["scale"])] = data["results"]
        commits[float(data["scale"])] = str(data.get("machine", {}).get("git_commit", "?"))[:7]
    scales = sorted(runs)
    rows, fits = [], {}
    for label in args.labels:
        fits[label] = (exponents(runs, label, "seconds"), exponents(runs, label, "peak_bytes"))
    queries = sorted({r["query"] for rs in runs.values() for r in rs})
    fmt = (lambda v: "" if v is None else f"{v:.2f}")
    for q in queries:
        row = [f"Q{q}"]
        for label in args.labels:
            t, m = fits[label]
            row += [fmt(t.get(q)), fmt(m.get(q))]
        rows.append(row)
    head = ["Q"] + [h for label in args.labels for h in (f"{label} time", f"{label} peak memory")]
    summary = []
    for label in args.labels:
        t, _ = fits[label]
        per_scale = {sf: _geomean([r["seconds"] for r in runs[sf] if r["label"] == label and r["status"] == "ok"
                                   and all(x["query"] != r["query"] or x["status"] == "ok"
                                           for s2 in scales for x in runs[s2] if x["label"] == label)])
                     for sf in scales}
        whole = slope([(sf, v) for sf, v in per_scale.items() if v])
        vals = [v for v in t.values() if v is not None]
        summary.append([label, fmt(whole), fmt(sum(vals) / len(vals) if vals else None),
                        ", ".join(f"sf {sf:g}: {v:.3g} s" for sf, v in per_scale.items() if v)])
    cmd = "python -m benchmarks scaling --inputs " + " ".join(str(f) for f in args.inputs)
    text = "\n".join([
        "# TPC-H scaling exponents", "",
        f"Command: `{cmd}`", "",
        "Each exponent k is the least-squares slope of log(time) (or log(peak memory)) against log(scale "
        f"factor) over the scales {', '.join(f'{s:g}' for s in scales)} at which the run finished: time ∝ sf^k. "
        "The inputs were measured in separate runs (commits: "
        + ", ".join(f"sf {s:g} at {commits[s]}" for s in scales)
        + "), on a shared 2-core machine: read the exponents to one decimal.", "",
        "## Summary", "",
        md_table(["engine", "k of the geomean time (queries finished at every scale)", "mean of per-query k",
                  "geomean time per scale"], summary), "",
        "## Per query", "",
        md_table(head, rows), "",
    ])
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "tpch_scaling.md"
    path.write_text(text)
    write_json(args.out / "tpch_scaling.json", {"scales": scales, "labels": args.labels,
                                                 "fits": {lb: {"seconds": fits[lb][0], "peak_bytes": fits[lb][1]}
                                                          for lb in args.labels}})
    print(f"wrote {path}")
    return 0
