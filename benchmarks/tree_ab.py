"""Two dodb trees side by side in one run: kernels and TPC-H queries, interleaved.

Run as a file so each worker imports the ``dodb`` of its tree (``PYTHONPATH``).  Each tree
gets one long-lived worker process; the two are asked in turn (A, B, A, B, …), so load on
this shared machine hits both alike.  Writes ``--out`` (markdown) with the command line.

    git worktree add /tmp/dodb-before <commit>
    python benchmarks/tree_ab.py kernels --before /tmp/dodb-before --after . --log2 16 18 20
    python benchmarks/tree_ab.py tpch --before /tmp/dodb-before --after . --scale 0.1 --queries 1-22
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

_WORKER = r'''
import json, sys, time
import numpy as np
import dodb

def best(fn, repeats):
    fn()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return min(ts)

def kernels(log2, repeats):
    from dodb.oblivious import forward_fill, segmented_lex_scan, segmented_scan
    from dodb.operators.lookup import _passes_compiled
    n = 1 << log2
    rng = np.random.default_rng(0)
    v = rng.integers(0, 1000, n); f = rng.random(n); st = rng.random(n) < 0.01
    pay = [rng.integers(0, 1 << 60, n) for _ in range(4)]
    w = v.astype(np.uint64)
    k = 1103
    lw = [rng.integers(0, 20000, n).astype(np.uint64)]
    rw = [rng.choice(20000, k, replace=False).astype(np.uint64)]
    pub = [rng.integers(0, 1 << 60, (2, k)).astype(np.uint64)]
    ok, r_ok = np.ones(n, bool), np.ones(k, bool)
    return {
        "segmented_scan int64 sum": best(lambda: segmented_scan(v, st, "sum"), repeats),
        "segmented_scan float64 sum": best(lambda: segmented_scan(f, st, "sum"), repeats),
        "segmented_scan int64 max (suffix)": best(lambda: segmented_scan(v, st, "max", reverse=True), repeats),
        "forward_fill 4 int64 columns": best(lambda: forward_fill(st, pay), repeats),
        "segmented_lex_scan max 2 words + 1 payload": best(lambda: segmented_lex_scan([w, w], st, "max", payload=[pay[0]]), repeats),
        "lookup join k=1103, 1 key word, 2 payload words": best(lambda: _passes_compiled(lw, rw, ok, r_ok, pub, n, k), repeats),
    }

def tpch_setup(scale):
    from dodb.datasets import generate_tpch, protect_tpch
    from dodb.oblivious.rng import enable_seeding
    enable_seeding()
    db = dodb.connect(":memory:", allow_insecure=True, seed=1)
    generate_tpch(db.con, scale)
    db.set_budget(epsilon=1e9, delta=0.999)
    protect_tpch(db)
    return db

def duckdb_seconds(scale, sql, repeats):
    global ref
    import duckdb
    from dodb.datasets import generate_tpch
    if ref is None:
        ref = duckdb.connect()
        generate_tpch(ref, scale)
    return best(lambda: ref.sql(sql).arrow(), repeats)

db = None
ref = None
for line in sys.stdin:
    task = json.loads(line)
    if task["kind"] == "kernels":
        out = kernels(task["log2"], task["repeats"])
    else:
        from dodb.datasets import tpch_query
        if db is None:
            db = tpch_setup(task["scale"])
        sql = tpch_query(task["query"])
        ts = []
        for i in range(1 + task["repeats"]):
            t = time.perf_counter(); r = db.sql(sql, epsilon=1.0, delta=1e-6); dt = time.perf_counter() - t
            if i:
                ts.append(dt)
        out = {"seconds": min(ts), "rows": r.arrow().num_rows}
        if task.get("duckdb"):
            out["duckdb"] = duckdb_seconds(task["scale"], sql, task["repeats"])
    print(json.dumps(out), flush=True)
'''


class Tree:
    def __init__(self, path: str):
        self.path = str(Path(path).resolve())
        env = dict(os.environ, PYTHONPATH=self.path, DODB_ALLOW_SEED="1")
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER], cwd=self.path, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.commit = subprocess.run(["git", "-C", self.path, "rev-parse", "--short", "HEAD"], text=True,
                                     capture_output=True).stdout.strip() or "?"

    def ask(self, task: dict) -> dict:
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker for {self.path} died")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _queries(spec: str) -> list[int]:
    out = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def _header(args, before: Tree, after: Tree) -> list[str]:
    load = os.getloadavg()
    return [f"Command: `python benchmarks/tree_ab.py {' '.join(sys.argv[1:])}`", "",
            f"- before: {before.commit} ({args.before}); after: {after.commit} ({args.after}); "
            f"run {datetime.now(timezone.utc).isoformat(timespec='seconds')}",
            f"- {platform.processor() or platform.machine()}, {os.cpu_count()} cores; load average at start: "
            f"{load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}; Python {platform.python_version()}", "",
            "> A shared 2-core machine: the two trees are asked in turn so load hits both alike; read the ratios, "
            "not the absolute times.", ""]


def run(args: argparse.Namespace) -> int:
    before, after = Tree(args.before), Tree(args.after)
    lines = [f"# Before / after: {args.what}", ""] + _header(args, before, after)
    try:
        if args.what == "kernels":
            lines += ["Best of the repeats, milliseconds; compiled backend.", "",
                      "| kernel | n | before | after | speedup |", "| :--- | ---: | ---: | ---: | ---: |"]
            for log2 in args.log2:
                task = {"kind": "kernels", "log2": log2, "repeats": args.repeats}
                b, a = before.ask(task), after.ask(task)
                for name in b:
                    lines.append(f"| {name} | 2^{log2} | {1e3 * b[name]:.1f} | {1e3 * a[name]:.1f} | "
                                 f"{b[name] / a[name]:.2f}× |")
                print("\n".join(lines[-len(b):]), flush=True)
        else:
            lines += [f"TPC-H scale factor {args.scale}, do mode, ε = 1, δ = 1e-6; best of {args.repeats} after a "
                      "warm-up run, seconds; DuckDB on the same data at its default threads (all cores), "
                      "timed in the after tree's worker between the two.", "",
                      "| Q | before | after | before / after | DuckDB | before / DuckDB | after / DuckDB |",
                      "| :--- | ---: | ---: | ---: | ---: | ---: | ---: |"]
            logs, logs_b, logs_a, tb, ta = [], [], [], 0.0, 0.0
            for q in _queries(args.queries):
                task = {"kind": "tpch", "query": q, "scale": args.scale, "repeats": args.repeats}
                b, a = before.ask(task), after.ask({**task, "duckdb": True})
                assert b["rows"] == a["rows"], f"Q{q}: row counts differ"
                d = a["duckdb"]
                logs.append(math.log(b["seconds"] / a["seconds"]))
                logs_b.append(math.log(b["seconds"] / d))
                logs_a.append(math.log(a["seconds"] / d))
                tb, ta = tb + b["seconds"], ta + a["seconds"]
                lines.append(f"| Q{q} | {b['seconds']:.3f} | {a['seconds']:.3f} | {b['seconds'] / a['seconds']:.2f}× | "
                             f"{d:.4f} | {b['seconds'] / d:.1f}× | {a['seconds'] / d:.1f}× |")
                print(lines[-1], flush=True)

            def geo(xs):
                return math.exp(sum(xs) / len(xs))
            lines += ["", f"Geometric mean of before / after: **{geo(logs):.2f}×**; total {tb:.1f} s → {ta:.1f} s.",
                      f"Geometric mean against DuckDB: before **{geo(logs_b):.1f}×**, after **{geo(logs_a):.1f}×**."]
    finally:
        before.close()
        after.close()
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["kernels", "tpch"])
    p.add_argument("--before", required=True)
    p.add_argument("--after", default=".")
    p.add_argument("--log2", type=int, nargs="+", default=[16, 18, 20])
    p.add_argument("--scale", type=float, default=0.1)
    p.add_argument("--queries", default="1-22")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", required=True)
    return run(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
