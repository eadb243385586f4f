"""Cost-model tables: the DO exchange against a fully oblivious exchange and Opaque's column sort.

For ``P`` workers and ``n`` rows (TPC-H lineitem and orders at sf 1 and 10), the rows each
way of moving every row to the worker its key hashes to sends (in all blocks, to itself
included), its rounds of messages and its padding (rows beyond the real ones), from
dodb/planner/exchange_cost.py (docs/distributed.md §Exchange cost).  The DO exchange's
noise is the one-sided shifted truncated discrete Laplace of one release at ``(ε, δ)`` and
the relation's stability under the TPC-H protection (customer units: an order's stability
is 40, a line's 280; ``s = 1`` is a relation with one row per unit).  Nothing is run: the
figures are the model's, at scales this machine cannot hold.

    python -m benchmarks exchange_cost --workers 16,64 --epsilon 1 --delta 1e-6
"""
from __future__ import annotations

import argparse
from pathlib import Path

from .common import DEFAULT_OUT, machine_info, write_json
from .report import md_table

# rows at TPC-H scale factor 1 and 10 (dbgen's counts)
SIZES = {("lineitem", 1): 6_001_215, ("orders", 1): 1_500_000,
         ("lineitem", 10): 59_986_052, ("orders", 10): 15_000_000}
STABILITY = {"lineitem": 280, "orders": 40}  # dodb.datasets.protect_tpch's bounds: 40 orders a customer, 7 lines an order


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", default="16,64")
    p.add_argument("--epsilon", type=float, default=1.0, help="the exchange release's ε")
    p.add_argument("--delta", type=float, default=1e-6, help="the exchange release's δ")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)


def rows_for(workers: list[int], epsilon: float, delta: float) -> list[dict]:
    """One row per (relation, scale, P, stability, method)."""
    from dodb.oblivious.noise import ShiftedTruncatedDiscreteLaplace
    from dodb.planner.exchange_cost import column_sort, do_exchange, oblivious_exchange

    out = []
    for (table, sf), n in SIZES.items():
        for s in (1, STABILITY[table]):
            shift = ShiftedTruncatedDiscreteLaplace.for_privacy(epsilon, delta, s).shift
            for p in workers:
                for cost in (do_exchange(n, p, shift), oblivious_exchange(n, p), column_sort(n, p)):
                    out.append({"table": table, "scale": sf, "n": n, "workers": p, "stability": s,
                                "noise_mean": shift, "method": cost.method, "rows": cost.rows,
                                "rounds": cost.rounds, "padding": cost.padding})
    return out


def render(data: dict) -> str:
    lines = [f"# Exchange cost model: P = {', '.join(str(p) for p in data['workers'])}", "",
             f"Command: `{data['command']}`", "",
             f"- dodb commit {data['machine'].get('git_commit') or '?'}, run {data['machine']['date']}",
             f"- the DO exchange's release: ε = {data['epsilon']:g}, δ = {data['delta']:g}; its noise mean per "
             "block is the mechanism's shift for the stability `s`", "",
             "Rows sent in all blocks (to itself included), rounds of messages, padding rows (sent beyond the "
             "real ones) and rows sent as a multiple of the DO exchange's.  The DO exchange: `n + P²·E[η]` in "
             "one round; the fully oblivious exchange: every one of the `P²` blocks padded to its source's whole "
             "size, `P·n`; column sort (Opaque): `n` padded to `r·P` with `r ≥ 2(P-1)²`, four shuffles of all "
             "rows with a local sort before each (docs/distributed.md §Exchange cost).", ""]
    for p in data["workers"]:
        lines += [f"## P = {p}", ""]
        body = []
        for r in (r for r in data["rows"] if r["workers"] == p):
            do = next(x for x in data["rows"] if x["workers"] == p and x["table"] == r["table"]
                      and x["scale"] == r["scale"] and x["stability"] == r["stability"] and x["method"] == "DO exchange")
            body.append([f"{r['table']} sf {r['scale']}", f"{r['n']:,}", r["stability"], r["method"],
                         f"{r['rows']:,}", r["rounds"], f"{r['padding']:,}", f"{r['rows'] / do['rows']:.2f}×"])
        lines += [md_table(["relation", "n", "s", "method", "rows sent", "rounds", "padding rows", "÷ DO"], body), ""]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    workers = [int(p) for p in args.workers.split(",")]
    data = {"benchmark": "exchange_cost", "workers": workers, "epsilon": args.epsilon, "delta": args.delta,
            "rows": rows_for(workers, args.epsilon, args.delta), "machine": machine_info(),
            "command": f"python -m benchmarks exchange_cost --workers {args.workers} --epsilon {args.epsilon:g} "
                       f"--delta {args.delta:g}"}
    args.out.mkdir(parents=True, exist_ok=True)
    name = "exchange_cost_p" + "_".join(str(p) for p in workers)
    write_json(args.out / f"{name}.json", data)
    text = render(data)
    (args.out / f"{name}.md").write_text(text)
    print(text)
    return 0
