"""Time ``oblivious_sort`` of the dodb tree on ``PYTHONPATH`` (one process per measurement).

Run as a file, not as a module, so the ``dodb`` imported is the one of the tree under test
(``kernels --before-tree`` runs this against an older checkout and the current one, size by
size in the same run).  Prints one JSON line: median seconds and ns per element.

    PYTHONPATH=/tmp/dodb-before python benchmarks/sort_timer.py --log2 20 --kind packed
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

KEY_BITS = 40  # as benchmarks/kernels.py


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--log2", type=int, required=True)
    p.add_argument("--kind", choices=["packed", "2word"], required=True)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=None, help="sort.THREADS, where the tree has it")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    import dodb
    from dodb.oblivious import oblivious_sort
    from dodb.oblivious import sort as sort_mod
    from dodb.oblivious.backend import kernel_backend_scope

    if a.threads is not None and hasattr(sort_mod, "THREADS"):
        sort_mod.THREADS = a.threads
    n = 1 << a.log2
    rng = np.random.default_rng(a.seed)
    k1 = rng.integers(0, 1 << KEY_BITS, n, dtype=np.uint64)
    k2 = rng.integers(0, 2**64, n, dtype=np.uint64)
    pay = rng.integers(0, 2**62, n)
    fn = (lambda: oblivious_sort([k1], [pay], key_bits=KEY_BITS)) if a.kind == "packed" else \
        (lambda: oblivious_sort([k1, k2], [pay]))
    times = []
    with kernel_backend_scope("compiled"):
        for _ in range(a.warmup):
            fn()
        for _ in range(max(1, a.repeats)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(json.dumps({"dodb": dodb.__file__, "threads": getattr(sort_mod, "THREADS", 1), "seconds": med,
                      "times": times, "ns_per_elem": med / n * 1e9}))


if __name__ == "__main__":
    main()
