"""Markdown tables and matplotlib plots for the benchmark reports."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Sequence

__all__ = ["md_table", "plot_kernels", "plot_operators", "plot_tpch_epsilon", "plot_tpch_scale",
           "plot_tpch_padding", "plot_cluster_curve", "have_matplotlib", "write_tpch_reports"]


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table; ``align`` is one char per column (l/r/c), default: first l, rest r."""
    header = [str(h) for h in header]
    align = align or ("l" + "r" * (len(header) - 1))
    sep = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep[a] for a in align) + " |"]
    for r in rows:
        lines.append("| " + " | ".join("" if v is None else str(v).replace("|", "\\|") for v in r) + " |")
    return "\n".join(lines)


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_kernels(rows: list[dict], path: Path) -> Path | None:
    """ns/element vs n for every kernel and its numpy reference (log-log)."""
    if not have_matplotlib():
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    kernels = sorted({r["kernel"] for r in rows}, key=lambda k: [r["kernel"] for r in rows].index(k))
    for k in kernels:
        rs = [r for r in rows if r["kernel"] == k]
        line, = ax.plot([r["n"] for r in rs], [r["ns_per_elem"] for r in rs], marker="o", label=k)
        ax.plot([r["n"] for r in rs], [r["bound_ns_per_elem"] for r in rs], ls=":", color=line.get_color())
    refs = {}
    for r in rows:
        refs.setdefault(r["ref_name"], {})[r["n"]] = r["ref_ns_per_elem"]
    for name, pts in refs.items():
        xs = sorted(pts)
        ax.plot(xs, [pts[x] for x in xs], ls="--", marker="x", color="grey", alpha=0.6, label=f"ref: {name}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("rows n")
    ax.set_ylabel("ns per element")
    ax.set_title("dodb oblivious kernels (dotted: bandwidth bound)")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_operators(rows: list[dict], path: Path, selectivity: float) -> Path | None:
    """Seconds vs n per operator and mode at one selectivity (log-log), one panel per operator."""
    if not have_matplotlib():
        return None
    plt = _plt()
    ops = []
    for r in rows:
        if r["selectivity"] == selectivity and r["operator"] not in ops:
            ops.append(r["operator"])
    if not ops:
        return None
    cols = min(3, len(ops))
    nrows = math.ceil(len(ops) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.3 * nrows), squeeze=False)
    for ax, op in zip(axes.flat, ops):
        engines = ["do", "oblivious", "plain", "duckdb", "oblivious-compact"]
        engines += sorted({r["engine"] for r in rows if r["operator"] == op} - set(engines))
        for engine in engines:
            rs = sorted((r for r in rows if r["operator"] == op and r["selectivity"] == selectivity
                         and r["engine"] == engine and r.get("seconds")), key=lambda r: r["n"])
            if rs:
                ax.plot([r["n"] for r in rs], [r["seconds"] for r in rs], marker="o", label=engine)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(op, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_xlabel("n")
        ax.set_ylabel("seconds")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(ops):]:
        ax.axis("off")
    fig.suptitle(f"operators at selectivity {selectivity:g}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_tpch_epsilon(results: list[dict], path: Path, scale: float) -> Path | None:
    """Per query: time of do at each ε, with oblivious / plain / DuckDB as horizontal marks."""
    if not have_matplotlib():
        return None
    plt = _plt()
    queries = sorted({r["query"] for r in results})
    eps = sorted({r["epsilon"] for r in results if r["engine"] == "do"})
    if not eps:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    by = {(r["query"], r["engine"], r.get("epsilon")): r for r in results}
    cmap = plt.get_cmap("tab10")
    for i, q in enumerate(queries):
        color, marker, ls = cmap(i % 10), "os^"[i // 10 % 3], ["-", "--", ":"][i // 10 % 3]
        ys = [_secs(by.get((q, "do", e))) for e in eps]
        if any(y is not None for y in ys):
            ax.plot(eps, [y if y is not None else float("nan") for y in ys], marker=marker, ls=ls, color=color,
                    label=f"Q{q}")
            ob = _secs(by.get((q, "oblivious", None)))
            if ob is not None:
                ax.scatter([max(eps) * 1.6], [ob], marker=marker, s=30, color=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(list(eps) + [max(eps) * 1.6])
    ax.set_xticklabels([f"{e:g}" for e in eps] + ["obl."])
    ax.minorticks_off()
    ax.set_xlabel("ε (do mode);  marks at 'obl.': oblivious mode")
    ax.set_ylabel("seconds (median)")
    ax.set_title(f"TPC-H sf {scale:g}: time vs ε")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=6, ncol=1, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _secs(r: dict | None) -> float | None:
    if not r:
        return None
    return r.get("seconds") if r.get("status") == "ok" else None


def plot_tpch_scale(per_scale: dict[float, dict[str, float]], path: Path) -> Path | None:
    """Geometric-mean query time vs scale factor per engine (needs ≥ 2 scale reports)."""
    if not have_matplotlib() or len(per_scale) < 2:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    scales = sorted(per_scale)
    engines = sorted({e for s in scales for e in per_scale[s]})
    for e in engines:
        pts = [(s, per_scale[s][e]) for s in scales if per_scale[s].get(e)]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=e)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("TPC-H scale factor")
    ax.set_ylabel("geometric mean seconds (common queries)")
    ax.set_title("TPC-H: time vs scale factor")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_cluster_curve(lines: dict[str, list[tuple[float, float, bool]]], refs: dict[str, list[tuple[float, float]]],
                       path: Path, *,
                       xlabel: str, logx: bool, title: str, caption: str,
                       colors: dict[str, str] | None = None) -> Path | None:
    """Geomean seconds (log) against x, one line per engine; ``(x, y, open)`` points, open markers
    (not on the line) for results included from elsewhere; ``refs``: engines drawn as a horizontal line at the geomean
    of their measurements (the dots), for engines that do not depend on x.  ``caption`` under the axes;
    ``colors``: a matplotlib colour per label (default: the colour cycle)."""
    import textwrap

    if not have_matplotlib() or not (any(lines.values()) or any(refs.values())):
        return None
    plt = _plt()
    wrapped = textwrap.fill(caption, 125)
    n_cap = wrapped.count("\n") + 1
    fig, ax = plt.subplots(figsize=(7.5, 4.6 + 0.13 * n_cap))
    xs = sorted({x for pts in lines.values() for x, _, _ in pts} | {x for pts in refs.values() for x, _ in pts})
    for i, (label, pts) in enumerate(lines.items()):
        if not pts:
            continue
        color = (colors or {}).get(label, f"C{i}")
        run = [p for p in pts if not p[2]]  # an included point is a marker, off the line
        ax.plot([p[0] for p in run], [p[1] for p in run], color=color, label=label)
        for x, y, hollow in pts:
            ax.plot([x], [y], marker="o", color=color, markerfacecolor="white" if hollow else color)
    for j, (label, pts) in enumerate(refs.items()):
        if not pts:
            continue
        color = (colors or {}).get(label, f"C{len(lines) + j}")
        g = math.exp(sum(math.log(y) for _, y in pts) / len(pts))
        ax.axhline(g, ls="--", color=color, label=f"{label} (reference, {g:.3g} s)")
        ax.plot([x for x, _ in pts], [y for _, y in pts], ls="none", marker=".", color=color)
    if logx:
        ax.set_xscale("log")
    else:
        ax.set_xticks(xs)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("geometric mean seconds over the queries")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.text(0.01, 0.01, wrapped, fontsize=6, va="bottom", ha="left")
    fig.tight_layout(rect=(0, 0.02 + 0.022 * n_cap, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_tpch_padding(ops: list[dict], path: Path, scale: float) -> Path | None:
    """Padded rows / real rows of each operator's output, per operator kind and engine (box plot).

    Only the operators that do work on private data (filters, joins, aggregates, sorts,
    distinct, set operations); projections just inherit their input's padding.
    """
    if not have_matplotlib() or not ops:
        return None
    plt = _plt()
    kinds = [k for k in ("Filter", "Join", "Aggregate", "Sort", "Distinct", "SetOp")
             if any(o["kind"] == k and o.get("overhead") is not None for o in ops)]
    engines = []
    for o in ops:
        if o["engine"] not in engines:
            engines.append(o["engine"])
    if not kinds:
        return None
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    width = 0.8 / max(1, len(engines))
    cmap = plt.get_cmap("tab10")
    for j, e in enumerate(engines):
        data, pos = [], []
        for i, k in enumerate(kinds):
            vals = [max(o["overhead"], 1.0) for o in ops if o["kind"] == k and o["engine"] == e
                    and o.get("overhead") is not None]
            if vals:
                data.append(vals)
                pos.append(i + (j - (len(engines) - 1) / 2) * width)
        if data:
            bp = ax.boxplot(data, positions=pos, widths=width * 0.9, patch_artist=True, showfliers=True,
                            flierprops={"markersize": 3})
            for b in bp["boxes"]:
                b.set_facecolor(cmap(j % 10))
                b.set_alpha(0.6)
            ax.plot([], [], color=cmap(j % 10), lw=6, alpha=0.6, label=e)
    ax.set_xticks(range(len(kinds)))
    ax.set_xticklabels(kinds)
    ax.set_yscale("log")
    ax.set_ylabel("padded rows / real rows (operator output)")
    ax.set_title(f"TPC-H sf {scale:g}: padding overhead per operator (all queries)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- TPC-H report -------------------------------------------------------------------------------
def _cell_time(r: dict | None, timeout: float) -> str:
    from .common import fmt_seconds

    if r is None:
        return ""
    if r["status"] == "ok":
        s = fmt_seconds(r["seconds"])
        if not r.get("match", True):
            s += " **MISMATCH**"
        return s
    est = r.get("extrapolated_seconds")
    what = {"timeout": f"timeout >{timeout:g} s", "memory": "out of memory", "crashed": "crashed"}.get(
        r["status"], "error")
    return f"**{what}**" + (f" (est. {fmt_seconds(est)})" if est else "")


def write_tpch_reports(data: dict, out: Path, plots: bool = True) -> Path:
    """``tpch_sf{scale}.md`` (+ PNG plots) from the JSON data of one scale factor."""
    from .common import NOISE_CAVEAT, fmt_bytes, fmt_ratio, fmt_seconds, geomean, machine_lines, read_json

    scale = data["scale"]
    res = data["results"]
    p = data["params"]
    labels = data["summary"]["labels"]
    by = {(r["query"], r["label"]): r for r in res}
    queries = sorted({r["query"] for r in res})
    plot_files = []
    if plots:
        plot_files.append(plot_tpch_epsilon(res, out / f"tpch_sf{scale:g}_epsilon.png", scale))
        ops = [dict(o, engine=r["label"]) for r in res if r["status"] == "ok" for o in r.get("ops", [])
               if not o["mode"].startswith("plain") and o["kind"] != "Scan"]
        plot_files.append(plot_tpch_padding(ops, out / f"tpch_sf{scale:g}_padding.png", scale))
        per_scale = {}
        for f in sorted(out.glob("tpch_sf*.json")):
            try:
                d = data if f.name == f"tpch_sf{scale:g}.json" else read_json(f)
            except (OSError, ValueError):
                continue
            if d.get("benchmark") == "tpch" and d.get("summary"):
                per_scale[d["scale"]] = d["results"]
        if len(per_scale) >= 2:
            common = set.intersection(*({r["query"] for r in rs if r["status"] == "ok"} for rs in per_scale.values()))
            geo = {}
            for s, rs in per_scale.items():
                labs = sorted({r["label"] for r in rs})
                geo[s] = {lab: geomean([r["seconds"] for r in rs if r["label"] == lab and r["status"] == "ok"
                                        and r["query"] in common]) for lab in labs}
            plot_files.append(plot_tpch_scale(geo, out / "tpch_scale.png"))
    plot_files = [f for f in plot_files if f]

    cmd = (f"python -m benchmarks tpch --scale {scale:g} --queries {_qspec(p['queries'])} --epsilons "
           f"{' '.join(f'{e:g}' for e in p['epsilons'])} --repeats {p['repeats']} --warmup {p['warmup']} "
           f"--timeout {p['timeout']:g}" + (" --quick" if p.get("quick") else "")
           + (f" --engines {' '.join(p['engines'])}" if p.get("engines") and len(p["engines"]) < 4 else ""))
    setup = data["setup"]
    lines = [f"# TPC-H end to end, scale factor {scale:g}", "", f"Command: `{cmd}`", "",
             *machine_lines(data["machine"]),
             f"- Data: {setup['generator']}; rows: " + ", ".join(f"{k} {v}" for k, v in setup["rows"].items()),
             f"- Privacy: customer is the privacy unit (orders, lineitem reach it by keys); part, partsupp, supplier, "
             f"nation, region public. δ = {p['delta']:g} per query; budget large enough for every run.",
             "", f"> {NOISE_CAVEAT} Runs longer than {p['long']:g} s were measured once. dodb runs numpy and numba "
             "kernels (the sort on up to 2 threads); DuckDB uses all cores. Peak memory = resident-set high-water mark of the worker process during "
             "a run minus its resident set before (reset with `/proc/self/clear_refs`; the first run of each configuration, "
             "after dodb's kept free heap pages are handed back), so it includes DuckDB's and Arrow's memory.", ""]
    lines += [line for n in data.get("notes", []) for line in (f"> {n}", "")]
    bad = [r for r in res if r["status"] == "ok" and not r.get("match", True)]
    failed = [r for r in res if r["status"] != "ok"]
    lines += ["## Correctness", ""]
    if bad:
        lines += ["**MISMATCHES — these answers differ from DuckDB's:**", ""]
        lines += [f"- **Q{r['query']} {r['label']}**: {r.get('rows')} rows, DuckDB {r.get('want_rows')}" for r in bad]
    else:
        n_ok = len([r for r in res if r["status"] == "ok" and r["engine"] != "duckdb"])
        lines += [f"Every finished dodb run ({n_ok}) returned DuckDB's answer (`dodb.compare.same_answer`, in order "
                  "when the query has ORDER BY)."]
    if failed:
        lines += ["", "Runs that did not finish (recorded with an extrapolated time, see below):", ""]
        lines += [f"- Q{r['query']} {r['label']}: {r['status']} — {r.get('error', '')}"
                  + (f"; est. {fmt_seconds(r['extrapolated_seconds'])} ({r['extrapolation']})"
                     if r.get("extrapolated_seconds") else "; no extrapolation available") for r in failed]
    lines += ["", "## Summary (geometric means over the queries both engines finished)", ""]
    pairs = data["summary"]["pairs"]
    want = [f"{a} / {b}" for a in labels if a.startswith("do") for b in ("oblivious", "duckdb", "plain")]
    want += ["oblivious / duckdb", "plain / duckdb"]
    rows = []
    for k in want:
        v = pairs.get(k)
        if v and v["geomean"] is not None:
            est = v["geomean_with_estimates"]
            rows.append([k, fmt_ratio(v["geomean"]), v["queries"],
                         f"{fmt_ratio(est)} ({v['queries_with_estimates']})" if v["queries_with_estimates"]
                         != v["queries"] else ""])
    lines += [md_table(["ratio of times", "geomean", "queries", "incl. estimates for unfinished runs (queries)"],
                       rows), "", "A ratio a / b below 1 means a is faster.", ""]
    ref = "do ε=1" if "do ε=1" in labels else next((lab for lab in labels if lab.startswith("do")), None)
    if ref:
        worst = []
        for q in queries:
            a, d, o = by.get((q, ref)), by.get((q, "duckdb")), by.get((q, "oblivious"))
            if a and a["status"] == "ok":
                vs_duck = a["seconds"] / d["seconds"] if d and d["status"] == "ok" else None
                ot = _secs_or_est(o)
                worst.append((q, vs_duck, ot / a["seconds"] if ot else None))
        slow = sorted((w for w in worst if w[1]), key=lambda w: -w[1])[:3]
        lows = sorted((w for w in worst if w[2]), key=lambda w: w[2])[:3]
        lines += [f"Worst queries for {ref}: slowest relative to DuckDB "
                  + ", ".join(f"Q{q} ({fmt_ratio(r)})" for q, r, _ in slow)
                  + "; smallest gain over oblivious " + ", ".join(f"Q{q} (oblivious/do {fmt_ratio(g)})"
                                                                  for q, _, g in lows) + ".", ""]
    lines += ["## Time per query (median)", ""]
    head = ["Q"] + labels + ([f"{ref} / DuckDB", f"oblivious / {ref}"] if ref else [])
    body = []
    for q in queries:
        row = [f"Q{q}"] + [_cell_time(by.get((q, lab)), p["timeout"]) for lab in labels]
        if ref:
            a, d, o = by.get((q, ref)), by.get((q, "duckdb")), by.get((q, "oblivious"))
            ok = a and a["status"] == "ok"
            row.append(fmt_ratio(a["seconds"] / d["seconds"]) if ok and d and d["status"] == "ok" else "")
            ot = _secs_or_est(o)
            row.append((fmt_ratio(ot / a["seconds"]) + ("" if o["status"] == "ok" else " (est.)")) if ok and ot else "")
        body.append(row)
    lines += [md_table(head, body), ""]
    lines += ["## Peak memory per query", "", md_table(
        ["Q"] + labels, [[f"Q{q}"] + [fmt_bytes(by[(q, lab)]["peak_bytes"]) if (q, lab) in by and
                                      by[(q, lab)]["status"] == "ok" else "" for lab in labels] for q in queries]), ""]
    dos = [lab for lab in labels if lab.startswith("do")]
    if dos:
        lines += ["## Privacy charged per query", "", "ε charged (composition method); every release is listed in "
                  "the JSON.", "", md_table(["Q"] + dos, [[f"Q{q}"] + [
                      (f"{by[(q, lab)]['charged_epsilon']:.3g} ({by[(q, lab)].get('composition') or 'none'}, "
                       f"{by[(q, lab)]['releases']} releases)") if (q, lab) in by and by[(q, lab)]["status"] == "ok"
                      else "" for lab in dos] for q in queries]), ""]
    priv = [lab for lab in labels if lab.startswith("do") or lab == "oblivious"]
    lines += ["## Padding: padded rows vs real rows", "",
              "Sum over the operators on private data (scans excluded) of their padded output rows, against the real "
              "rows (= the plain run's output sizes of the same plan).", "", md_table(
                  ["Q", "real rows"] + [f"{lab} padded (×)" for lab in priv],
                  [[f"Q{q}", next((by[(q, lab)].get("real_rows") for lab in priv if (q, lab) in by
                                   and by[(q, lab)].get("real_rows") is not None), "")]
                   + [(f"{by[(q, lab)]['padded_rows']} ({fmt_ratio(by[(q, lab)]['padded_rows'] / max(1, by[(q, lab)]['real_rows']))})"
                       if (q, lab) in by and by[(q, lab)].get("padded_rows") is not None else "") for lab in priv]
                   for q in queries]), ""]
    lines += ["<details><summary>Per-operator padded and real rows (output), per query</summary>", ""]
    for q in queries:
        base = next((by[(q, lab)] for lab in priv if (q, lab) in by and by[(q, lab)].get("ops")), None)
        if not base:
            continue
        cols = [lab for lab in priv if (q, lab) in by and by[(q, lab)].get("ops")
                and len(by[(q, lab)]["ops"]) == len(base["ops"])]
        body = []
        for i, o in enumerate(base["ops"]):
            if o["kind"] == "Scan" or o["mode"].startswith("plain"):
                continue
            body.append(["  " * o["depth"] + o["operator"][:70], o.get("real_out", ""), o["bound"]]
                        + [by[(q, lab)]["ops"][i]["padded_out"] for lab in cols])
        lines += [f"**Q{q}**", "", md_table(["operator", "real", "worst-case bound"] + cols, body), ""]
    lines += ["</details>", ""]
    for f in plot_files:
        lines += [f"![{f.stem}]({f.name})", ""]
    path = out / f"tpch_sf{scale:g}.md"
    path.write_text("\n".join(lines))
    return path


def _secs_or_est(r: dict | None) -> float | None:
    if not r:
        return None
    return r["seconds"] if r["status"] == "ok" else r.get("extrapolated_seconds")


def _qspec(qs) -> str:
    qs = list(qs)
    if qs == list(range(qs[0], qs[-1] + 1)) and len(qs) > 2:
        return f"{qs[0]}-{qs[-1]}"
    return ",".join(map(str, qs))
