"""Cache-blocked compaction/distribution kernels vs the round-by-round kernels they replaced.

Both run in one process, interleaved call by call on copies of the same inputs (half the
rows marked, random payload words); prints the median ms per call of each and their ratio.
The previous kernels are the verbatim copies in ``tests/oblivious/test_compact_blocking.py``.
The machine is shared and noisy: compare ratios, not times across runs.

    PYTHONPATH=. python -m benchmarks.compact_blocking --log2 16 18 20 --words 2 8 16
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dodb.oblivious import compiled
from tests.oblivious.test_compact_blocking import compact_inputs, distribute_inputs, old_compact_rounds, \
    old_distribute_rounds


def bench(kind: str, n: int, words: int, repeats: int) -> tuple[float, float]:
    rng = np.random.default_rng(n + words)
    if kind == "compact":
        args = compact_inputs(rng.random(n) < 0.5, words, rng)
        old_k, new_k = old_compact_rounds, compiled.compact_rounds
    else:
        args = distribute_inputs(n, words, rng, "random")
        old_k, new_k = old_distribute_rounds, compiled.distribute_rounds
    rounds = args[3]
    chunk, wave = compiled.compact_blocking(n, words)
    msk_old = np.empty(n, np.uint64)
    mk, tmp = (np.empty(k, np.uint64) for k in compiled.scratch_rows(n, rounds, chunk, wave))
    times: dict[str, list[float]] = {"old": [], "new": []}
    for rep in range(repeats + 1):  # the first (compiling, warming) round is not counted
        for name in ("old", "new") if rep % 2 else ("new", "old"):
            a = [x.copy() for x in args[:3]]
            t0 = time.thread_time()
            if name == "old":
                old_k(*a, words, n, rounds, msk_old)
            else:
                new_k(*a, words, n, rounds, mk, tmp, chunk, wave)
            dt = time.thread_time() - t0
            if rep:
                times[name].append(dt)
    return statistics.median(times["old"]) * 1e3, statistics.median(times["new"]) * 1e3


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--log2", type=int, nargs="+", default=[16, 18, 20])
    p.add_argument("--words", type=int, nargs="+", default=[2, 8, 16])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--kinds", nargs="+", default=["compact", "distribute"])
    a = p.parse_args()
    print("| kernel | n | words | chunk | wave | old ms | new ms | old/new |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in a.kinds:
        for k in a.log2:
            for w in a.words:
                old, new = bench(kind, 1 << k, w, a.repeats)
                chunk, wave = compiled.compact_blocking(1 << k, w)
                print(f"| {kind} | 2^{k} | {w} | {chunk} | {wave} | {old:.1f} | {new:.1f} | {old / new:.2f} |", flush=True)


if __name__ == "__main__":
    main()
