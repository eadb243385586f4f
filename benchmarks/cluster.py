"""TPC-H on one process against a cluster: the embedded engine, ``inline:P`` and a local Ray cluster.

One TPC-H database at ``--scale`` is protected once and sharded ``P`` ways; each query runs
warm (after one run) ``--repeats`` times on the embedded engine (all cores, kernel threads
as configured), on the inline runner (the cluster's plan, workers one after another in
this process) and on a local Ray cluster of ``P`` worker processes with one kernel thread
each.  DuckDB on the same data is the baseline.  Answers are checked against DuckDB.

    python -m benchmarks cluster --scale 0.1 --workers 2 --queries 1,3,5,7,8,9,18,21
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from .common import DEFAULT_OUT, NOISE_CAVEAT, machine_info, machine_lines, write_json
from .report import md_table

HEAVY = "1,3,5,7,8,9,18,21"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", type=float, default=0.1)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--queries", default=HEAVY)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-ray", action="store_true", help="skip the Ray cluster (embedded and inline only)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)


def _median_time(fn, repeats: int) -> float:
    fn()  # warm: caches, worker processes, kernels
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run(args: argparse.Namespace) -> int:
    data = measure(args)
    write(data, args.out)
    print(render(data))
    return 0


def measure(args: argparse.Namespace) -> dict:
    """One configuration (``args.scale``, ``args.workers``): the report's data, nothing written."""
    import duckdb

    import dodb
    from dodb.datasets import generate_tpch, protect_tpch, tpch_query
    from dodb.oblivious.rng import enable_seeding

    from tests.operators.util import assert_same_rows

    enable_seeding()
    queries = [int(q) for q in args.queries.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="dodb-cluster-bench-"))
    path = str(folder / "tpch.duckdb")
    try:
        db = dodb.connect(path, seed=1)
        generate_tpch(db.con, args.scale)
        raw = duckdb.connect()
        generate_tpch(raw, args.scale)
        db.set_budget(epsilon=1e9, delta=0.5)
        t = time.perf_counter()
        protect_tpch(db)
        protect_s = time.perf_counter() - t
        t = time.perf_counter()
        shard_report = db.shard(args.workers)
        shard_s = time.perf_counter() - t
        db.close()
        kinds = ["embedded", f"inline:{args.workers}"] + ([] if args.no_ray else [f"local:{args.workers}"])
        rows = {q: {"query": q} for q in queries}
        for kind in kinds:
            d = dodb.connect(path, seed=1, cluster=None if kind == "embedded" else kind)
            try:
                for q in queries:
                    sql = tpch_query(q)
                    got = d.sql(sql, epsilon=1.0, delta=1e-6).arrow()
                    assert_same_rows(got, raw.sql(sql).to_arrow_table(), ordered=True)
                    rows[q][kind] = _median_time(lambda: d.sql(sql, epsilon=1.0, delta=1e-6).arrow(), args.repeats)
            finally:
                d.close()
        for q in queries:
            sql = tpch_query(q)
            rows[q]["duckdb"] = _median_time(lambda: raw.sql(sql).fetchall(), args.repeats)
        data = {"benchmark": "cluster", "scale": args.scale, "workers": args.workers, "repeats": args.repeats,
                "protect_seconds": protect_s, "shard_seconds": shard_s, "shards": shard_report,
                "rows": list(rows.values()), "kinds": kinds, "machine": machine_info(),
                "command": f"python -m benchmarks cluster --scale {args.scale:g} --workers {args.workers} "
                           f"--queries {args.queries} --repeats {args.repeats}" + (" --no-ray" if args.no_ray else "")}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return data


def write(data: dict, out: Path) -> Path:
    """``cluster_sf{S}_p{P}.json`` and ``.md`` in ``out``; returns the JSON's path."""
    out.mkdir(parents=True, exist_ok=True)
    name = f"cluster_sf{data['scale']:g}_p{data['workers']}"
    write_json(out / f"{name}.json", data)
    (out / f"{name}.md").write_text(render(data))
    return out / f"{name}.json"


def render(data: dict) -> str:
    kinds = data["kinds"]
    head = ["Q", "DuckDB ms"] + [f"{k} ms" for k in kinds] + [f"embedded / {k}" for k in kinds[1:]]
    body = []
    for r in data["rows"]:
        body.append([f"Q{r['query']}", f"{1e3 * r['duckdb']:.1f}"] + [f"{1e3 * r[k]:.0f}" for k in kinds]
                    + [f"{r['embedded'] / r[k]:.2f}×" for k in kinds[1:]])
    geo = {}
    for k in kinds[1:]:
        ratios = [r["embedded"] / r[k] for r in data["rows"]]
        geo[k] = statistics.geometric_mean(ratios)
    lines = [f"# TPC-H sf {data['scale']:g}: one process against {data['workers']} workers", "",
             f"Command: `{data['command']}`", "", *machine_lines(data["machine"]), "", NOISE_CAVEAT, "",
             f"Protect: {data['protect_seconds']:.1f} s; shard {data['workers']} ways: {data['shard_seconds']:.1f} s "
             f"(shard capacities {', '.join(str(s['table']) + ' ' + str(s['capacities']) for s in data['shards'])}).",
             "", md_table(head, body), "",
             "Speed-up of the cluster over the embedded engine (geomean over these queries; >1 is faster): "
             + ", ".join(f"{k} {v:.2f}×" for k, v in geo.items()) + ".", ""]
    return "\n".join(lines)
