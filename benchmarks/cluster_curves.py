"""Cluster curves: TPC-H time against scale and against workers, one process vs a cluster (issue 27).

Runs ``python -m benchmarks cluster``'s measurement (:func:`benchmarks.cluster.measure`) for
every configuration asked — each of ``--scales`` with ``--workers`` workers (time against
scale) and ``--scale`` with each of ``--workers-list`` (time against workers) — adds earlier
``cluster_sf*_p*.json`` results given with ``--include``, and writes ``cluster_curves.json``,
``cluster_curves.md`` and two plots: ``cluster_time_vs_scale.png`` and
``cluster_time_vs_workers.png`` (geomean seconds over the queries every point has).  Each
configuration's own report (``cluster_sf{S}_p{P}.md``) is written beside them.

    python -m benchmarks cluster_curves --scales 0.01,0.03,0.1 --workers 2 --scale 0.05 \\
        --workers-list 1,2,3 --include benchmarks/results/stop41/cluster_sf1_p2.json --repeats 2
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from . import cluster
from .common import DEFAULT_OUT, NOISE_CAVEAT, geomean, machine_info, machine_lines, read_json, write_json
from .report import md_table, plot_cluster_curve

__all__ = ["add_arguments", "run", "point", "summarise", "render", "ENGINES", "OVERSUBSCRIBED"]

# engine -> the key of a cluster JSON row (P filled in per point)
ENGINES = {"duckdb": "duckdb", "embedded": "embedded", "inline": "inline:{p}", "ray": "local:{p}"}
LABELS = {"duckdb": "DuckDB", "embedded": "embedded", "inline": "inline:P", "ray": "Ray local:P"}
COLORS = {"duckdb": "C0", "embedded": "C1", "inline": "C2", "ray": "C3"}

OVERSUBSCRIBED = ("The machine has 2 cores, shared with other jobs that ran at the same time: with more than "
                  "2 workers the Ray processes oversubscribe the cores (and inline:P runs its workers one after "
                  "another in one process), so points with P > 2 measure the overhead of more shards, not more "
                  "hardware; compare engines within one configuration rather than absolute times.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scales", default="", help="comma-separated scale factors, each run with --workers")
    p.add_argument("--workers", type=int, default=2, help="workers of the time-against-scale curve")
    p.add_argument("--scale", type=float, default=None, help="scale factor of the time-against-workers curve")
    p.add_argument("--workers-list", default="", help="comma-separated worker counts, each run at --scale")
    p.add_argument("--queries", default=cluster.HEAVY)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--no-ray", action="store_true", help="skip the Ray cluster (embedded and inline only)")
    p.add_argument("--include", type=Path, nargs="*", default=[],
                   help="cluster_sf*_p*.json results (python -m benchmarks cluster) to add as points")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def configurations(args: argparse.Namespace) -> list[tuple[float, int]]:
    """(scale, workers) to run, in order, without repeats."""
    if args.workers_list and args.scale is None:
        raise SystemExit("cluster_curves: --workers-list needs --scale")
    todo = [(s, args.workers) for s in _floats(args.scales)]
    todo += [(args.scale, int(p)) for p in _floats(args.workers_list)]
    return list(dict.fromkeys(todo))


def command(args: argparse.Namespace) -> str:
    parts = ["python -m benchmarks cluster_curves"]
    if args.scales:
        parts.append(f"--scales {args.scales} --workers {args.workers}")
    if args.workers_list:
        parts.append(f"--scale {args.scale:g} --workers-list {args.workers_list}")
    if args.include:
        parts.append("--include " + " ".join(str(f) for f in args.include))
    parts.append(f"--queries {args.queries} --repeats {args.repeats}" + (" --no-ray" if args.no_ray else ""))
    return " ".join(parts)


def point(data: dict, source: str) -> dict:
    """One configuration's times per query and engine from a ``cluster`` JSON (None: not run)."""
    p = data["workers"]
    keys = {e: k.format(p=p) for e, k in ENGINES.items()}
    machine = data.get("machine", {})
    return {"scale": data["scale"], "workers": p, "source": source, "command": data.get("command"),
            "repeats": data.get("repeats"), "git_commit": machine.get("git_commit"), "date": machine.get("date"),
            "loadavg_at_start": machine.get("loadavg_at_start"), "protect_seconds": data.get("protect_seconds"),
            "shard_seconds": data.get("shard_seconds"), "error": None,
            "rows": [{"query": r["query"], **{e: r.get(k) for e, k in keys.items()}} for r in data["rows"]]}


def summarise(points: list[dict]) -> tuple[list[int], list[dict]]:
    """The queries every point measured and, per point, the geomean seconds of each engine over them."""
    ok = [pt for pt in points if not pt["error"]]
    common = sorted(set.intersection(*({r["query"] for r in pt["rows"]} for pt in ok))) if ok else []
    out = []
    for pt in ok:
        rows = [r for r in pt["rows"] if r["query"] in common]
        out.append({"scale": pt["scale"], "workers": pt["workers"], "source": pt["source"],
                    "geomean": {e: (geomean(r[e] for r in rows) if all(r[e] for r in rows) else None)
                                for e in ENGINES}})
    return common, out


def run(args: argparse.Namespace) -> int:
    todo = configurations(args)
    if not todo and not args.include:
        raise SystemExit("cluster_curves: nothing to do (give --scales, --workers-list or --include)")
    data = {"benchmark": "cluster_curves", "command": command(args), "queries": args.queries,
            "repeats": args.repeats, "scale_curve_workers": args.workers, "workers_curve_scale": args.scale,
            "machine": machine_info(), "points": [point(read_json(f), str(f)) for f in args.include]}
    for scale, workers in todo:
        t = time.perf_counter()
        one = argparse.Namespace(scale=scale, workers=workers, queries=args.queries, repeats=args.repeats,
                                 no_ray=args.no_ray, out=args.out)
        try:
            got = cluster.measure(one)
        except Exception as e:  # a failed configuration (a wrong answer too) is reported, the others still run
            data["points"].append({"scale": scale, "workers": workers, "source": "this run", "rows": [],
                                   "error": f"{type(e).__name__}: {e}"[:2000]})
        else:
            cluster.write(got, args.out)
            data["points"].append(point(got, "this run"))
        data["points"][-1]["wall_seconds"] = time.perf_counter() - t
        print(f"cluster_curves: sf {scale:g}, P = {workers}: {data['points'][-1]['wall_seconds']:.0f} s"
              + (f" FAILED {data['points'][-1]['error']}" if data["points"][-1]["error"] else ""), flush=True)
        write_json(args.out / "cluster_curves.json", data)  # partial results survive an interrupted run
    data["common_queries"], data["summary"] = summarise(data["points"])
    data["plots"] = write_plots(data, args.out)
    write_json(args.out / "cluster_curves.json", data)
    (args.out / "cluster_curves.md").write_text(render(data))
    print(render(data))
    return 1 if any(pt["error"] for pt in data["points"]) else 0


def caption(data: dict, what: str) -> str:
    return f"{what}. {OVERSUBSCRIBED} Command: {data['command']}"


def write_plots(data: dict, out: Path) -> dict[str, str | None]:
    """Time against scale (P = ``scale_curve_workers``) and against workers (sf = ``workers_curve_scale``)."""
    summary = data["summary"]
    pw, sw = data["scale_curve_workers"], data["workers_curve_scale"]
    included = {s["source"] for s in summary if s["source"] != "this run"}
    qs = "Q" + ",".join(str(q) for q in data["common_queries"])
    scale_pts = sorted((s for s in summary if s["workers"] == pw), key=lambda s: s["scale"])
    workers_pts = sorted((s for s in summary if sw is not None and s["scale"] == sw), key=lambda s: s["workers"])
    label = {e: LABELS[e].replace(":P", f":{pw}") for e in ENGINES}
    lines = {label[e]: [(s["scale"], s["geomean"][e], s["source"] in included) for s in scale_pts if s["geomean"][e]]
             for e in ENGINES}
    path_s = plot_cluster_curve(
        lines, {}, out / "cluster_time_vs_scale.png", xlabel="TPC-H scale factor", logx=True,
        colors={label[e]: COLORS[e] for e in ENGINES},
        title=f"TPC-H {qs}: time against scale, P = {pw}",
        caption=caption(data, "Geomean over the queries" + (
            "; open markers (off the lines): results included from an earlier run (" + ", ".join(sorted(included))
            + ")" if included else "")))
    lines = {LABELS[e]: [(s["workers"], s["geomean"][e], False) for s in workers_pts if s["geomean"][e]]
             for e in ("inline", "ray")}
    refs = {LABELS[e]: [(s["workers"], s["geomean"][e]) for s in workers_pts if s["geomean"][e]]
            for e in ("embedded", "duckdb")}
    path_w = plot_cluster_curve(
        lines, refs, out / "cluster_time_vs_workers.png", xlabel="workers P", logx=False,
        colors={LABELS[e]: COLORS[e] for e in ENGINES},
        title=f"TPC-H {qs} at sf {sw:g}: time against workers" if sw is not None else "time against workers",
        caption=caption(data, "Geomean over the queries; embedded and DuckDB do not use P: their line is the "
                              "geomean of their runs in each configuration (dots)"))
    return {"time_vs_scale": path_s and path_s.name, "time_vs_workers": path_w and path_w.name}


def _s(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def _x(a: float | None, b: float | None) -> str:
    return "–" if not a or not b else f"{a / b:.2f}×"


def render(data: dict) -> str:
    qs = ",".join(str(q) for q in data["common_queries"])
    lines = [f"# TPC-H Q{qs}: time against scale and against workers (embedded, inline:P, Ray local:P, DuckDB)",
             "", f"Command: `{data['command']}`", "", *machine_lines(data["machine"]), "", NOISE_CAVEAT, "",
             OVERSUBSCRIBED, "",
             "Each configuration protects a fresh TPC-H database, shards it P ways and runs each query once "
             "(its answer checked against DuckDB's), once more to warm, then the median of the repeats "
             f"(`benchmarks/cluster.py`).  Geomeans are over Q{qs} (the queries every point has).", "",
             "## Geomean seconds per configuration", ""]
    head = ["sf", "P", "DuckDB s", "embedded s", "inline:P s", "Ray local:P s", "embedded / inline:P",
            "embedded / Ray", "Ray / DuckDB", "source"]
    body = []
    for s in sorted(data["summary"], key=lambda s: (s["scale"], s["workers"])):
        g = s["geomean"]
        body.append([f"{s['scale']:g}", s["workers"], _s(g["duckdb"]), _s(g["embedded"]), _s(g["inline"]),
                     _s(g["ray"]), _x(g["embedded"], g["inline"]), _x(g["embedded"], g["ray"]),
                     _x(g["ray"], g["duckdb"]), s["source"]])
    lines += [md_table(head, body, align="l" + "r" * 8 + "l"), "",
              "embedded / X > 1: the cluster is faster than one process.", ""]
    failed = [pt for pt in data["points"] if pt["error"]]
    if failed:
        lines += ["## Failed configurations", ""] + [f"- sf {pt['scale']:g}, P = {pt['workers']}: {pt['error']}"
                                                     for pt in failed] + [""]
    for key, what in (("time_vs_scale", "Time against scale"), ("time_vs_workers", "Time against workers")):
        if data["plots"].get(key):
            lines += [f"## {what}", "", f"![{what}]({data['plots'][key]})", "",
                      caption(data, f"{what}, geomean seconds over Q{qs}"), ""]
    lines += ["## Per query (ms)", ""]
    body = []
    for pt in sorted((pt for pt in data["points"] if not pt["error"]), key=lambda p: (p["scale"], p["workers"])):
        for r in pt["rows"]:
            body.append([f"{pt['scale']:g}", pt["workers"], f"Q{r['query']}"]
                        + [("–" if r[e] is None else f"{1e3 * r[e]:.1f}" if e == "duckdb" else f"{1e3 * r[e]:.0f}")
                           for e in ENGINES])
    lines += [md_table(["sf", "P", "Q", "DuckDB", "embedded", "inline:P", "Ray local:P"], body), ""]
    lines += ["## Points", ""] + [
        f"- sf {pt['scale']:g}, P = {pt['workers']}: {pt['source']}"
        + ("" if pt["error"] else f", commit {pt.get('git_commit')}, run {pt.get('date')}, repeats {pt.get('repeats')}")
        + (f", protect {pt['protect_seconds']:.1f} s, shard {pt['shard_seconds']:.1f} s"
           if pt.get("protect_seconds") else "")
        + (f", wall {pt['wall_seconds']:.0f} s" if pt.get("wall_seconds") else "") for pt in data["points"]] + [""]
    return "\n".join(lines)
