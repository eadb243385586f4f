"""Compile the kernels' known signatures on every core, ahead of the first query (issue 26).

A cold compile is numba's LLVM passes, on one core per process, and the sorting network
is most of it (``sort_blocks`` alone is ~50 s on the 2-core development machine).  numba
compiles a kernel when it is first called with new argument types, so the signatures a
query needs are known only by running queries — unless they are listed.
:mod:`dodb.oblivious.kernel_signatures` lists every signature that the warmup workload, the 22 TPC-H
queries and the audit's built-in set call (``tests/test_warmup.py`` checks that it is
complete); :func:`compile_in_parallel` compiles them in a few processes at once, each
writing the shared per-user cache (:mod:`dodb.oblivious.kernel_cache`) and the IR the lint reads
(:mod:`dodb.oblivious.ir_cache`).  The groups are balanced by each kernel's compile time
(:func:`plan_groups`).

Whether a kernel is compiled depends on the machine and the cache, never on data.  A
signature missing from the list is still compiled on first use, as before.

Regenerate the list after changing a kernel's argument types::

    python -m dodb.warmup --record
"""
from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys

__all__ = ["parse_signature", "kernel", "compile_kernels", "plan_groups", "useful_jobs", "compile_in_parallel",
           "recorded_signatures", "COMPILE_SECONDS"]

# Seconds of a cold compile on the 2-core development machine, with the callees each one
# compiles (the two entry points of the sorting network share some: each compiles them).
# Any other kernel takes about a second.  Only the grouping depends on these.
COMPILE_SECONDS = {
    "dodb.oblivious.compiled_sort.sort_blocks": 38.0,
    "dodb.oblivious.compiled_sort.sort_long": 28.0,
    "dodb.oblivious.compiled.distribute_rounds": 6.0,
    "dodb.oblivious.compiled.compact_rounds": 3.0,
    "dodb.oblivious.compiled_strings.like_rows": 2.0,
}


def parse_signature(text: str) -> tuple:
    """numba argument types from their ``str`` (``"(Array(uint64, 1, 'C', False, aligned=True), int64)"``)."""
    from numba.core import types

    value = eval(text, {"__builtins__": {}}, dict(vars(types)))  # lint: our own table, never user text
    return value if isinstance(value, tuple) else (value,)


def kernel(name: str):
    """The dispatcher of a kernel named ``module.function``."""
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def compile_kernels(names: list[str]) -> int:
    """Compile (or load from the cache) each listed signature of ``names`` in this process; keep
    the IR of what was compiled for the lint.  Returns how many signatures were compiled or loaded."""
    from .oblivious import ir_cache
    from .oblivious.kernel_signatures import SIGNATURES

    done = 0
    for name in names:
        dispatcher = kernel(name)
        for text in SIGNATURES.get(name, ()):
            dispatcher.compile(parse_signature(text))
            done += 1
    ir_cache.save()
    return done


def plan_groups(names: list[str], jobs: int) -> list[list[str]]:
    """``names`` in at most ``jobs`` groups of about equal compile time: heaviest first, each to
    the lightest group so far (longest-processing-time scheduling, :data:`COMPILE_SECONDS`).

    >>> plan_groups(["dodb.oblivious.compiled.a", "dodb.oblivious.compiled_sort.sort_long",
    ...              "dodb.oblivious.compiled.b", "dodb.oblivious.compiled_sort.sort_blocks"], 2)
    [['dodb.oblivious.compiled_sort.sort_blocks'], ['dodb.oblivious.compiled_sort.sort_long', 'dodb.oblivious.compiled.a', 'dodb.oblivious.compiled.b']]
    """
    groups: list[list[str]] = [[] for _ in range(max(1, jobs))]
    load = [0.0] * len(groups)
    for name in sorted(names, key=lambda n: (-COMPILE_SECONDS.get(n, 1.0), n)):
        g = load.index(min(load))
        groups[g].append(name)
        load[g] += COMPILE_SECONDS.get(name, 1.0)
    return [g for g in groups if g]


def useful_jobs(jobs: int | None = None) -> int:
    """How many compile processes to start for ``jobs`` cores (default: the CPU count): never
    more than the listed compile time over its heaviest kernel's, since no more processes can
    finish sooner than that kernel alone (a 64-core machine starts 3, not 64)."""
    from .oblivious.kernel_signatures import SIGNATURES

    weights = [COMPILE_SECONDS.get(n, 1.0) for n in SIGNATURES] or [1.0]
    return max(1, min(jobs or os.cpu_count() or 1, math.ceil(sum(weights) / max(weights))))


def compile_in_parallel(jobs: int | None = None) -> list[str]:
    """Compile every listed signature in ``jobs`` processes (default: the CPU count), the last
    group in this one.  Returns one line per process that failed (the workload that follows
    compiles whatever a failed process left out)."""
    from .oblivious.kernel_signatures import SIGNATURES

    groups = plan_groups(sorted(SIGNATURES), useful_jobs(jobs))
    children = [subprocess.Popen([sys.executable, "-m", "dodb.precompile", *group],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                for group in groups[:-1]]
    failures = []
    try:
        compile_kernels(groups[-1])
    except Exception as e:  # noqa: BLE001 - reported like a child's failure; the workload compiles the rest
        failures.append(f"compiling in this process failed: {type(e).__name__}: {e}")
    for child in children:
        _, err = child.communicate()
        if child.returncode != 0:
            failures.append(f"a kernel compile process failed (exit {child.returncode}): "
                            f"{(err.strip().splitlines() or ['no message'])[-1]}")
    return failures


def recorded_signatures() -> dict[str, list[str]]:
    """The signatures of every dodb kernel known to this process, without the literal-typed
    ones (those are a callee's specialisations, compiled with their caller)."""
    from numba.core.registry import CPUDispatcher

    out: dict[str, list[str]] = {}
    for mod in list(sys.modules.values()):
        name = getattr(mod, "__name__", "") or ""
        if not name.startswith("dodb.oblivious"):
            continue
        for attr, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.__module__ == name:
                sigs = sorted({str(s) for s in obj.signatures if "Literal" not in str(s)})
                if sigs:
                    out[f"{name}.{attr}"] = sigs
    return dict(sorted(out.items()))


def main(argv: list[str]) -> int:
    from .oblivious.kernel_cache import quiet

    quiet()  # the parent (``dodb warmup``) reports progress
    compile_kernels(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
