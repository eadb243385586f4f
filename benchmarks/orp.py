"""ORP + comparison sort vs the bitonic network (issue 13, item 3; docs/design.md §Sorting by random permutation).

For n = 2^k rows of one uniform 64-bit key word and one int64 payload word, in one run:
``oblivious_sort`` (the flip-form bitonic network, compiled backend; the key is not
packable, so it compares two words: key and position) against ``orp_sort`` (bucket
oblivious random permutation, then a merge sort of ``(key, position)``), with the ORP's
two phases timed on their own (``orp_permute``: the levels, the bucket sort and the dummy
removal; ``comparison``: the merge sort and the gather) and a non-oblivious reference
(numpy stable argsort + take).  Each row also carries the data-independent work of both
sides: row-passes (a network stage or a compaction round reads and writes every row it
covers once) so the measured ratio can be read against the work ratio.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .common import DEFAULT_OUT, NOISE_CAVEAT, log2_sizes, machine_info, machine_lines, measure, progress, write_json
from .report import md_table

from dodb.oblivious.backend import kernel_backend_scope

__all__ = ["add_arguments", "run", "render", "work"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--min-log2", type=int, default=16)
    p.add_argument("--max-log2", type=int, default=22)
    p.add_argument("--step", type=int, default=1, help="step between log2 sizes")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--long", type=float, default=20.0, help="runs longer than this many seconds are not repeated")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--seed", type=int, default=0)


def work(n: int) -> dict:
    """Row-passes of both methods at ``n`` (public sizes only): what each must at least stream."""
    from dodb.oblivious.orp import buckets_for, choose_bucket_size, orp_delta
    from dodb.oblivious.sort import bitonic_network_stages, next_pow2

    m = next_pow2(n)
    Z = choose_bucket_size(n)
    B = buckets_for(n, Z)
    levels = B.bit_length() - 1
    rounds = (2 * Z).bit_length() - 1
    net = len(bitonic_network_stages(m)) * m  # every stage touches every (padded) row once
    # per level and side: copy the 2Z rows of a pair in, `rounds` compaction rounds over them, copy Z out
    orp = levels * 2 * (B * Z) * (rounds + 2) + len(bitonic_network_stages(Z)) * B * Z
    return {"Z": Z, "B": B, "levels": levels, "delta_orp": orp_delta(n, Z), "network_row_passes": net,
            "orp_row_passes": orp, "work_ratio": orp / net}


def run(args: argparse.Namespace) -> int:
    from dodb.oblivious.orp import comparison_order, orp_permute, orp_sort
    from dodb.oblivious.rng import new_rng
    from dodb.oblivious.sort import oblivious_sort
    from dodb.oblivious.trace import Trace

    g = np.random.default_rng(args.seed)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    sizes = log2_sizes(args.min_log2, args.max_log2, args.step)
    rows = []
    bar = progress(total=len(sizes), desc="orp")
    rng = new_rng()  # the production CSPRNG: its cost is part of the ORP
    for lg in sizes:
        n = 1 << lg
        key = g.integers(0, 2**64, n, dtype=np.uint64)
        pay = g.integers(-2**62, 2**62, n)
        w = work(n)
        rows_in = np.stack([key, np.arange(n, dtype=np.uint64), pay.view(np.uint64)])
        permuted = orp_permute(rows_in, n, rng, w["Z"], Trace(), 0)[0]
        with kernel_backend_scope("compiled"):
            t_net = measure(lambda: oblivious_sort([key], [pay]), warmup=args.warmup, repeats=args.repeats,
                            long_seconds=args.long)
            t_orp = measure(lambda: orp_sort([key], [pay], rng=rng), warmup=args.warmup, repeats=args.repeats,
                            long_seconds=args.long)
        t_perm = measure(lambda: orp_permute(rows_in, n, rng, w["Z"], Trace(), 0), warmup=args.warmup,
                         repeats=args.repeats, long_seconds=args.long)
        t_cmp = measure(lambda: permuted[:, comparison_order([permuted[0], permuted[1]])], warmup=args.warmup,
                        repeats=args.repeats, long_seconds=args.long)
        t_ref = measure(lambda: pay[np.argsort(key, kind="stable")], warmup=args.warmup, repeats=args.repeats,
                        long_seconds=args.long)
        rows.append({"log2": lg, "n": n, **w, "network_seconds": t_net["median"], "network_runs": t_net["runs"],
                     "orp_seconds": t_orp["median"], "orp_runs": t_orp["runs"],
                     "permute_seconds": t_perm["median"], "comparison_seconds": t_cmp["median"],
                     "argsort_seconds": t_ref["median"], "orp_over_network": t_orp["median"] / t_net["median"]})
        bar.update(1)
    bar.close()
    data = {"benchmark": "orp", "machine": machine_info(),
            "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "func"},
            "rows": rows}
    write_json(out / "orp.json", data)
    (out / "orp.md").write_text(render(data))
    print(f"wrote {out / 'orp.md'}")
    return 0


def render(data: dict) -> str:
    p = data["params"]
    cmd = (f"python -m benchmarks orp --min-log2 {p['min_log2']} --max-log2 {p['max_log2']} --step {p['step']} "
           f"--repeats {p['repeats']} --warmup {p['warmup']}")
    body = []
    for r in data["rows"]:
        ns = 1e9 / r["n"]
        body.append([f"2^{r['log2']}", r["Z"], r["B"], r["levels"], f"{r['delta_orp']:.1e}",
                     f"{r['network_seconds'] * ns:.0f}", f"{r['orp_seconds'] * ns:.0f}",
                     f"{r['permute_seconds'] * ns:.0f}", f"{r['comparison_seconds'] * ns:.0f}",
                     f"{r['argsort_seconds'] * ns:.0f}", f"{r['orp_over_network']:.1f}×", f"{r['work_ratio']:.1f}×"])
    lines = ["# ORP + comparison sort vs the bitonic network", "", f"Command: `{cmd}`", "",
             *machine_lines(data["machine"]), "", NOISE_CAVEAT, "",
             "64-bit uniform keys + one int64 payload word; times in ns per element (median of the repeats). "
             "`network`: `oblivious_sort` (compiled). `orp`: `orp_sort` end to end (production CSPRNG), split into "
             "`permute` (ORP levels, bucket sort, dummy removal) and `comparison` (merge sort of (key, position) "
             "and the gather). `argsort`: numpy stable argsort + take (not oblivious), for scale. "
             "`work` = ORP row-passes / network row-passes (public sizes only; see `benchmarks/orp.py`).", "",
             md_table(["n", "Z", "B", "levels", "δ_orp", "network", "orp", "permute", "comparison", "argsort",
                       "orp / network", "work"], body), ""]
    return "\n".join(lines)
