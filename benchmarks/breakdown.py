"""Where DO time goes against the fully oblivious baseline, per operator, from a TPC-H JSON.

No benchmark is run: the report reads the per-operator times and padded sizes a
``python -m benchmarks tpch`` run records for the ``do`` and ``oblivious`` engines (the two
plans are the same operator tree; the modes differ in the padded sizes).  Each operator is

* **same size**: its largest padded input (a scan: its output) is equal in both modes — a
  base table read whole, a filter over it, a join one of whose sides is a base table (its
  sorts, merge and compactions are dominated by that side).  DO cannot make these cheaper:
  DP padding only shrinks what an operator *outputs*, and a DO filter or join spends extra
  work (a compaction) to shrink it;
* **smaller in do**: its largest input is smaller in DO mode (an earlier release padded it
  to the real size plus noise, where the oblivious mode pads to the worst case).

With ``S`` and ``R`` the seconds in each class, oblivious/do = (S_obl + R_obl) / (S_do + R_do).
Since S_obl ≈ S_do, a ratio of ``k`` needs R_obl ≥ k·(S_do + R_do) − S_obl: the size-dependent
part of the oblivious run must be that many times DO's *whole* run.  The report lists, per
query, the share of DO time in same-size operators and the ratio it caps the speed-up at when
the oblivious operators after the first release cost ``m`` times their DO counterparts
(``(S + m·R) / (S + R)``), with ``m`` the measured R_obl / R_do.

    python -m benchmarks breakdown --input benchmarks/results/stop25/tpch_sf0.1.json
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from .common import DEFAULT_OUT, read_json, write_json
from .report import md_table

__all__ = ["add_arguments", "run", "split_times"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", type=Path, required=True, help="a tpch_sf*.json with do and oblivious runs")
    p.add_argument("--label", default="do ε=1", help="the DO engine label in the JSON")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)


def _size(op: dict) -> int:
    return max(op.get("padded_in") or [op.get("padded_out") or 0])


def split_times(do_ops: list[dict], obl_ops: list[dict]) -> dict[str, float] | None:
    """Seconds of same-size and smaller-in-do operators in each mode; None if the plans differ.

    >>> a = [{"operator": "Scan t", "padded_in": [], "padded_out": 8, "seconds": 1.0},
    ...      {"operator": "Join", "padded_in": [3, 8], "padded_out": 3, "seconds": 2.0},
    ...      {"operator": "Sort", "padded_in": [3], "padded_out": 3, "seconds": 0.5}]
    >>> b = [{"operator": "Scan t", "padded_in": [], "padded_out": 8, "seconds": 1.0},
    ...      {"operator": "Join", "padded_in": [8, 8], "padded_out": 8, "seconds": 3.0},
    ...      {"operator": "Sort", "padded_in": [8], "padded_out": 8, "seconds": 2.0}]
    >>> split_times(a, b)
    {'same_do': 3.0, 'smaller_do': 0.5, 'same_obl': 4.0, 'smaller_obl': 2.0}
    """
    if [o["operator"] for o in do_ops] != [o["operator"] for o in obl_ops]:
        return None
    out = {"same_do": 0.0, "smaller_do": 0.0, "same_obl": 0.0, "smaller_obl": 0.0}
    for a, b in zip(do_ops, obl_ops):
        cls = "same" if _size(a) == _size(b) else "smaller"
        out[f"{cls}_do"] += a.get("seconds") or 0.0
        out[f"{cls}_obl"] += b.get("seconds") or 0.0
    return out


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def run(args: argparse.Namespace) -> int:
    data = read_json(args.input)
    ok = {(r["query"], r["label"]): r for r in data["results"] if r.get("status") == "ok" and r.get("ops")}
    rows, recs = [], []
    for q in sorted({r["query"] for r in data["results"]}):
        a, b = ok.get((q, args.label)), ok.get((q, "oblivious"))
        if a is None or b is None:
            continue
        t = split_times(a["ops"], b["ops"])
        if t is None:
            rows.append([f"Q{q}", "plans differ", "", "", "", "", ""])
            continue
        do, obl = t["same_do"] + t["smaller_do"], t["same_obl"] + t["smaller_obl"]
        if do < 1e-3:  # only public inputs: DuckDB runs it in both modes
            rows.append([f"Q{q}", "public only", "", "", "", "", ""])
            continue
        share = t["same_do"] / do
        m = t["smaller_obl"] / t["smaller_do"] if t["smaller_do"] > 0 else None
        recs.append({"query": q, **t, "share_same": share, "obl_over_do": obl / do, "m": m})
        rows.append([f"Q{q}", f"{do:.3f} s", f"{100 * share:.0f}%", f"{obl / do:.1f}×",
                     f"{m:.1f}×" if m else "–",
                     f"{max(0.0, 10 * do - t['same_obl']) / t['smaller_do']:.0f}×" if t["smaller_do"] > 0 else "∞",
                     f"{t['same_obl'] / t['same_do']:.2f}" if t["same_do"] > 0 else "–"])
    shares = sorted(r["share_same"] for r in recs)
    median = shares[len(shares) // 2] if shares else None
    lines = [
        "# DO against the fully oblivious baseline: where the time goes", "",
        f"Command: `python -m benchmarks breakdown --input {args.input}`", "",
        f"Input: {args.input} ({data.get('scale')} scale factor, engine `{args.label}` against `oblivious`; "
        "per-operator seconds and padded sizes as recorded by that run).", "",
        "An operator is *same size* when its largest padded input is equal in both modes (base tables, filters over "
        "them, joins with a base-table side): DP padding cannot make it cheaper.  `needed m` is how many times slower "
        "than in DO the oblivious mode's other operators would have to be for oblivious/do = 10×, given the "
        "measured same-size times; `measured m` is what they are.", "",
        md_table(["Q", "do (operators)", "do time in same-size operators", "oblivious / do", "measured m",
                  "needed m for 10×", "same-size obl/do"], rows), "",
    ]
    if recs:
        lines += [f"Over the {len(recs)} queries with private operators: median share of DO time in same-size "
                  f"operators {100 * median:.0f}%; geomean oblivious/do of the operator times "
                  f"{_geomean([r['obl_over_do'] for r in recs]):.2f}×; geomean measured m "
                  f"{_geomean([r['m'] for r in recs if r['m']]):.1f}×.", ""]
    path = args.out / "oblivious_do_breakdown.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    write_json(args.out / "oblivious_do_breakdown.json", {"input": str(args.input), "queries": recs})
    print(f"wrote {path}")
    return 0
