"""The ``dodb`` command line."""
from __future__ import annotations

import argparse
import sys

import numpy as np


def _demo_kernels() -> int:
    from .oblivious import Trace, compact, oblivious_sort
    from .oblivious.noise import ShiftedTruncatedDiscreteLaplace
    from .oblivious.rng import new_rng

    data = np.array([5, 3, 9, 1, 3, 7, 2, 8], dtype=np.uint64)
    t = Trace()
    (keys,), _ = oblivious_sort([data], trace=t)
    print("oblivious sort:", keys.tolist(), "trace:", t.summary())
    mask = data > 4
    t = Trace()
    live, (vals,) = compact(mask, [data], trace=t)
    noise = ShiftedTruncatedDiscreteLaplace.for_privacy(1.0, 1e-6, 1)
    padded = int(live.sum()) + noise.sample(new_rng())
    print(f"filter >4: {vals[live].tolist()}  padded size {padded} (noise shift {noise.shift})", t.summary())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dodb", description="Differentially oblivious SQL for DuckDB")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run the built-in demo")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return _demo_kernels()
    return 2


if __name__ == "__main__":
    sys.exit(main())
