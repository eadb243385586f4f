"""TPC-H end to end (issue 7): DuckDB, dodb plain, dodb do at several ε, dodb oblivious.

The database lives in a worker process (``multiprocessing``, spawn): the parent sends one
(query, engine) at a time and enforces the per-run time limit ``--timeout`` by killing the
worker; a new worker regenerates the (deterministic) data.  A run that times out, runs out
of memory or fails is recorded with its reason and an **extrapolated** time — never dropped:

* ``scale``: the same query and engine at a smaller scale factor (a ``tpch_sf*.json`` in the
  output folder) × the ratio of the plans' cost units at the two scales;
* ``calibrated``: otherwise, the median seconds per cost unit of the queries this engine
  finished at this scale × this plan's cost units.

Cost units come from the plan's public padded-size bounds (``upper_rows``, what EXPLAIN
shows): ``n·log²n`` for sorts, joins, aggregates, distinct and set operations on their input
bound ``n``, ``n·log₂(min(n, 1024))`` for filters, ``n`` otherwise.

Privacy setup as in ``tests/tpch_fixture.py``: customer is the privacy unit; orders and
lineitem reach it by keys; part, partsupp, supplier, nation, region are public.
"""
from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import re
import statistics
import time
import traceback
from pathlib import Path

from .common import (DEFAULT_OUT, PeakMemory, machine_info, progress, read_json, write_json)

__all__ = ["add_arguments", "run", "plan_cost_units", "parse_queries", "QUICK"]

QUICK = {"scale": 0.002, "queries": [1, 3, 6, 12, 14], "epsilons": [1.0], "repeats": 1, "warmup": 0,
         "timeout": 60.0}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", type=float, default=0.01, help="TPC-H scale factor (default 0.01; also try 0.1)")
    p.add_argument("--queries", default="1-22", help="e.g. 1-22 or 1,3,6")
    p.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 4.0], help="ε values for do mode")
    p.add_argument("--engines", nargs="+", default=["duckdb", "plain", "do", "oblivious"],
                   choices=["duckdb", "plain", "do", "oblivious"])
    p.add_argument("--delta", type=float, default=1e-6, help="δ per query")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--long", type=float, default=30.0, help="runs longer than this many seconds are not repeated")
    p.add_argument("--timeout", type=float, default=600.0, help="time limit per run, seconds")
    p.add_argument("--generator", choices=["builtin", "duckdb"], default="builtin",
                   help="data: dodb's generator, or DuckDB's tpch extension (falls back to builtin if unavailable)")
    p.add_argument("--seed", type=int, default=1, help="noise seed (benchmark mode)")
    p.add_argument("--quick", action="store_true",
                   help=f"CI mode: sf {QUICK['scale']}, queries {QUICK['queries']}, ε {QUICK['epsilons']}, one run")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--no-plots", action="store_true")


def parse_queries(spec: str) -> list[int]:
    out: list[int] = []
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    bad = [q for q in out if not 1 <= q <= 22]
    if bad:
        raise SystemExit(f"TPC-H queries are 1..22, got {bad}")
    return out


# -- plan helpers (used in the worker and for extrapolation) ---------------------------------
def flatten_plan(d: dict) -> list[dict]:
    """Pre-order list of a ``QueryPlan.to_dict()['plan']`` tree (shared nodes once)."""
    out: list[dict] = []

    def go(nd: dict, depth: int) -> None:
        out.append({"id": nd["id"], "operator": nd["operator"], "kind": nd["operator"].split(" ", 1)[0],
                    "depth": depth, "mode": nd["mode"], "stability": nd["stability"],
                    "bound": nd["padded_out_bound"], "padded_in": nd.get("padded_in"),
                    "padded_out": nd.get("padded_out"), "seconds": nd.get("seconds"),
                    "releases": len(nd.get("leaks", [])), "shared": bool(nd.get("shared"))})
        for c in nd.get("children", []):
            go(c, depth + 1)
    go(d, 0)
    return out


_NLOG2 = {"Join", "Aggregate", "Sort", "Distinct", "SetOp"}


def plan_cost_units(plan: dict) -> float:
    """Oblivious work estimate from the plan's public size bounds (see the module docstring)."""
    total = 0.0

    def go(nd: dict) -> None:
        nonlocal total
        kids = nd.get("children", [])
        kind = nd["operator"].split(" ", 1)[0]
        n = max(2, sum(c["padded_out_bound"] for c in kids) if kids else nd["padded_out_bound"])
        if kind in _NLOG2:
            total += n * math.log2(n) ** 2
        elif kind == "Filter":
            total += n * math.log2(min(n, 1024))
        else:
            total += n
        if not nd.get("shared"):
            for c in kids:
                go(c)
    go(plan)
    return total


# -- the worker process -----------------------------------------------------------------------
def _load_data(con, scale: float, generator: str) -> tuple[str, dict]:
    if generator == "duckdb":
        try:
            con.execute("INSTALL tpch")
            con.execute("LOAD tpch")
            con.execute(f"CALL dbgen(sf={scale})")
            counts = {t: con.sql(f"SELECT count(*) FROM {t}").fetchall()[0][0]
                      for t in ("customer", "orders", "lineitem", "part", "partsupp", "supplier", "nation", "region")}
            return "duckdb tpch extension (dbgen)", counts
        except Exception as e:  # no network / extension: fall back, and say so in the report
            note = f"builtin (DuckDB tpch extension unavailable: {str(e).splitlines()[0][:120]})"
            from dodb.datasets import generate_tpch
            return note, generate_tpch(con, scale)
    from dodb.datasets import generate_tpch
    return "builtin (dodb.datasets.generate_tpch)", generate_tpch(con, scale)


def has_order_by(sql: str) -> bool:
    return re.search(r"\border\s+by\b", sql, re.I) is not None


def _worker(conn, scale: float, generator: str, seed: int, delta: float) -> None:
    import dodb
    from dodb.compare import same_answer, snapshot
    from dodb.datasets import protect_tpch, tpch_query
    from dodb.oblivious.rng import enable_seeding

    enable_seeding()  # seeded noise: benchmark mode only
    t0 = time.perf_counter()
    db = dodb.connect(":memory:", allow_insecure=True, seed=seed)
    gen, counts = _load_data(db.con, scale, generator)
    oracle = snapshot(db.con)  # DuckDB on the raw tables: the baseline and the oracle (protect moves them)
    db.set_budget(epsilon=1e9, delta=0.999)
    protect_tpch(db)
    conn.send(("ready", {"generator": gen, "rows": counts, "setup_seconds": time.perf_counter() - t0}))
    want_cache: dict[int, object] = {}
    while True:
        task = conn.recv()
        if task is None:
            return
        try:
            q, engine, eps = task["query"], task["engine"], task.get("epsilon")
            sql = tpch_query(q)
            if q not in want_cache:
                want_cache[q] = oracle.sql(sql).to_arrow_table()
            mode = None if engine == "duckdb" else engine
            cost = None
            if mode is not None:
                p = db.plan(sql, epsilon=eps or 1.0, delta=delta, mode=mode)
                cost = plan_cost_units(p.to_dict()["plan"])
            conn.send(("planned", {"cost_units": cost}))
            fn = (lambda: oracle.sql(sql).to_arrow_table()) if mode is None else \
                (lambda: db.sql(sql, epsilon=eps or 1.0, delta=delta, mode=mode))
            times, peak, res, method = [], 0, None, ""
            for i in range(task["warmup"] + task["repeats"]):
                timed = i >= task["warmup"]
                with PeakMemory(release_heap=i == 0) as pm:  # the first run measures memory
                    t1 = time.perf_counter()
                    res = fn()
                    dt = time.perf_counter() - t1
                method = pm.method
                peak = max(peak, pm.peak_bytes)
                conn.send(("progress", {"seconds": dt, "timed": timed}))
                if timed or dt > task["long"]:
                    times.append(dt)
                if dt > task["long"] or len(times) >= task["repeats"]:
                    break
            out = {"times": times, "seconds": statistics.median(times), "runs": len(times),
                   "peak_bytes": peak, "memory_method": method, "cost_units": cost}
            if mode is None:
                out.update(match=True, rows=res.num_rows)
            else:
                got = res.arrow()
                same = same_answer(got, want_cache[q], ordered=has_order_by(sql))
                out.update(match=bool(same), rows=got.num_rows,
                           want_rows=want_cache[q].num_rows, charged_epsilon=res.privacy.charged_epsilon,
                           charged_delta=res.privacy.charged_delta, composition=res.privacy.chosen,
                           releases=len(res.privacy.operators), ops=flatten_plan(res.plan.to_dict()["plan"]))
            conn.send(("result", out))
        except MemoryError as e:
            conn.send(("error", {"status": "memory", "error": f"MemoryError: {e}"}))
        except Exception as e:  # recorded with the run, never dropped
            conn.send(("error", {"status": "error", "error": f"{type(e).__name__}: {e}",
                                 "traceback": traceback.format_exc()[-2000:]}))


class Worker:
    def __init__(self, args):
        self.args = args
        self.proc = None
        self.conn = None
        self.info = None

    def start(self) -> dict:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, self.args.scale, self.args.generator,
                                                      self.args.seed, self.args.delta), daemon=True)
        self.proc.start()
        child.close()
        kind, info = self._recv(max(600.0, self.args.timeout))
        if kind != "ready":
            raise RuntimeError(f"benchmark worker failed to start: {info}")
        self.info = info
        return info

    def _recv(self, timeout: float):
        if not self.conn.poll(timeout):
            return "timeout", None
        try:
            return self.conn.recv()
        except (EOFError, ConnectionError):
            return "crashed", {"exitcode": self.proc.exitcode}

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
            self.proc.join(10)
            if self.proc.is_alive():
                self.proc.kill()
        self.proc.join(10)
        self.proc = None

    def run(self, task: dict) -> dict:
        """Send one task; wait at most ``timeout`` s for each run; restart the worker on a kill."""
        if self.proc is None:
            self.start()
        self.conn.send(task)
        done_runs: list[float] = []
        cost = None
        while True:
            kind, body = self._recv(self.args.timeout)
            if kind == "planned":
                cost = body["cost_units"]
            elif kind == "progress":
                done_runs.append(body["seconds"])
            elif kind == "result":
                return {"status": "ok", **body}
            elif kind == "error":
                return {**body, "cost_units": cost, "completed_runs": done_runs}
            else:  # timeout or crash (e.g. killed for memory)
                exitcode = body.get("exitcode") if body else None
                self.stop(kill=True)
                status = "timeout" if kind == "timeout" else "crashed"
                msg = (f"no run finished within {self.args.timeout:g} s" if kind == "timeout"
                       else f"worker died (exit code {exitcode}; out of memory?)")
                return {"status": status, "error": msg, "cost_units": cost, "completed_runs": done_runs}


# -- driver -----------------------------------------------------------------------------------
def _engine_list(args) -> list[tuple[str, float | None]]:
    out = []
    for e in args.engines:
        if e == "do":
            out.extend(("do", float(x)) for x in args.epsilons)
        else:
            out.append((e, None))
    return out


def label(engine: str, eps: float | None) -> str:
    return f"do ε={eps:g}" if engine == "do" else engine


def run(args: argparse.Namespace) -> int:
    from .report import write_tpch_reports as write_reports

    if args.quick:
        for k, v in QUICK.items():
            setattr(args, k, v)
    args.queries = parse_queries(",".join(map(str, args.queries)) if isinstance(args.queries, list) else args.queries)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    worker = Worker(args)
    bar = progress(total=len(args.queries) * len(_engine_list(args)), desc=f"TPC-H sf {args.scale:g}")
    bar.set_postfix_str("generating data")
    setup = worker.start()
    results: list[dict] = []
    data = {"benchmark": "tpch", "scale": args.scale, "machine": info, "setup": setup,
            "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "func"},
            "results": results}
    try:
        for q in args.queries:
            for engine, eps in _engine_list(args):
                bar.set_postfix_str(f"Q{q} {label(engine, eps)}")
                task = {"query": q, "engine": engine, "epsilon": eps, "warmup": args.warmup,
                        "repeats": args.repeats, "long": args.long}
                r = worker.run(task)
                rec = {"query": q, "engine": engine, "epsilon": eps, "label": label(engine, eps), **r}
                if rec["status"] != "ok":
                    bar.write(f"Q{q} {label(engine, eps)}: {rec['status'].upper()} — {rec.get('error')}")
                elif not rec.get("match", True):
                    bar.write(f"MISMATCH: Q{q} {label(engine, eps)} differs from DuckDB's answer "
                              f"({rec.get('rows')} rows vs {rec.get('want_rows')})")
                results.append(rec)
                bar.update(1)
                write_json(out / f"tpch_sf{args.scale:g}.json", data)  # incremental
    finally:
        bar.close()
        worker.stop()
    add_real_rows(results)
    extrapolate(results, args.scale, out)
    data["summary"] = summarize(results, args)
    write_json(out / f"tpch_sf{args.scale:g}.json", data)
    md = write_reports(data, out, plots=not args.no_plots)
    print(f"wrote {md}")
    bad = [r for r in results if r["status"] == "ok" and not r.get("match", True)]
    failed = [r for r in results if r["status"] != "ok"]
    if bad:
        print(f"{len(bad)} answers differ from DuckDB's: " + ", ".join(f"Q{r['query']} {r['label']}" for r in bad))
    if failed:
        print(f"{len(failed)} runs did not finish: " + ", ".join(f"Q{r['query']} {r['label']} ({r['status']})"
                                                                 for r in failed))
    return 1 if bad else 0


def add_real_rows(results: list[dict]) -> None:
    """Real row counts per operator, from the plain run of the same plan (plain keeps no dummies)."""
    plain = {r["query"]: r for r in results if r["engine"] == "plain" and r["status"] == "ok"}
    for r in results:
        p = plain.get(r["query"])
        if r["status"] != "ok" or "ops" not in r or p is None:
            continue
        pops = p["ops"]
        aligned = len(pops) == len(r["ops"]) and all(a["operator"] == b["operator"] for a, b in zip(pops, r["ops"]))
        r["real_rows_aligned"] = aligned
        for a, b in zip(r["ops"], pops if aligned else []):
            a["real_out"] = b["padded_out"]
            a["overhead"] = (a["padded_out"] / b["padded_out"]) if b["padded_out"] else None
        if aligned:
            priv = [a for a in r["ops"] if not a["mode"].startswith("plain") and a["kind"] != "Scan"]
            r["padded_rows"] = sum(a["padded_out"] or 0 for a in priv)
            r["real_rows"] = sum(a["real_out"] or 0 for a in priv)


def extrapolate(results: list[dict], scale: float, out: Path) -> None:
    """Give every run that did not finish an estimated time (see the module docstring)."""
    smaller = {}
    for f in sorted(out.glob("tpch_sf*.json")):
        try:
            d = read_json(f)
        except (OSError, ValueError):
            continue
        if d.get("benchmark") != "tpch" or not d.get("scale") or d["scale"] >= scale:
            continue
        for r in d.get("results", []):
            if r.get("status") == "ok" and r.get("cost_units"):
                key = (r["query"], r["label"])
                if key not in smaller or smaller[key][0] < d["scale"]:
                    smaller[key] = (d["scale"], r["seconds"], r["cost_units"])
    per_unit: dict[str, list[float]] = {}
    for r in results:
        if r["status"] == "ok" and r.get("cost_units"):
            per_unit.setdefault(r["label"], []).append(r["seconds"] / r["cost_units"])
    for r in results:
        if r["status"] == "ok" or not r.get("cost_units"):
            continue
        key = (r["query"], r["label"])
        if key in smaller:
            s, secs, units = smaller[key]
            r["extrapolated_seconds"] = secs * r["cost_units"] / units
            r["extrapolation"] = f"scale: sf {s:g} time × plan cost ratio"
        elif per_unit.get(r["label"]):
            r["extrapolated_seconds"] = statistics.median(per_unit[r["label"]]) * r["cost_units"]
            r["extrapolation"] = "calibrated: median s/cost-unit of finished queries × plan cost units"


def summarize(results: list[dict], args) -> dict:
    from .common import geomean

    by = {(r["query"], r["label"]): r for r in results}
    labels = [label(e, x) for e, x in _engine_list(args)]

    def secs(q, lab, allow_est=False):
        r = by.get((q, lab))
        if not r:
            return None
        if r["status"] == "ok":
            return r["seconds"]
        return r.get("extrapolated_seconds") if allow_est else None

    pairs = {}
    for a in labels:
        for b in labels:
            if a == b:
                continue
            vals = [secs(q, a) / secs(q, b) for q in args.queries if secs(q, a) and secs(q, b)]
            est = [secs(q, a, True) / secs(q, b, True) for q in args.queries if secs(q, a, True) and secs(q, b, True)]
            pairs[f"{a} / {b}"] = {"geomean": geomean(vals), "queries": len(vals),
                                   "geomean_with_estimates": geomean(est), "queries_with_estimates": len(est)}
    geo = {lab: geomean([secs(q, lab) for q in args.queries]) for lab in labels}
    return {"pairs": pairs, "geomean_seconds": geo, "labels": labels}
