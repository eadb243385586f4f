"""How many threads the compiled kernels use, and their shared pools (docs/design.md §Threads).

The sorting network splits its blocks and the groups of its whole-array stages between
threads, a binned compaction its bins; every split is a function of public sizes and the
thread count, the threads write disjoint rows, and the trace is recorded by the caller
from public sizes: rows, trace and releases are the same whatever the count
(``tests/oblivious/test_threads.py``).

The count defaults to the machine's cores; ``DODB_THREADS`` (read when first needed) or
:func:`set_threads` change it for the whole process.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from ..errors import InvalidParameterError

__all__ = ["threads", "set_threads", "pool", "run_parts"]

_chosen: list[int] = []  # the count once decided (environment or set_threads)
_POOLS: dict[int, ThreadPoolExecutor] = {}
os.register_at_fork(after_in_child=_POOLS.clear)  # a forked child has none of the parent's pool threads


def _check(n, source: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidParameterError(f"{source} must be a positive number of threads, got {n!r}")
    return n


def threads() -> int:
    """The number of threads a kernel may split its work between."""
    if not _chosen:
        raw = os.environ.get("DODB_THREADS", "").strip()
        if raw:
            try:
                value = int(raw)
            except ValueError:
                value = raw
            _chosen.append(_check(value, "DODB_THREADS"))
        else:
            _chosen.append(max(1, os.cpu_count() or 1))
    return _chosen[0]


def set_threads(n: int | None) -> int:
    """Use ``n`` threads from now on (``None``: the default again); returns the previous count."""
    if n is not None:
        _check(n, "the thread count")  # a refused count changes nothing
    previous = threads()
    _chosen.clear()
    if n is not None:
        _chosen.append(n)
    return previous


def pool(size: int) -> ThreadPoolExecutor:
    """One shared pool per size (the compiled kernels release the GIL)."""
    got = _POOLS.get(size)
    if got is None:
        got = _POOLS.setdefault(size, ThreadPoolExecutor(size, thread_name_prefix="dodb-kernel"))
    return got


def run_parts(calls: Sequence[tuple[Callable, tuple]]) -> list[Any]:
    """Each ``fn(*args)`` of ``calls`` on its own thread of the shared pool; their results, in order.

    A pool thread keeps its finished task — function, arguments and future, with the
    result — until it takes the next one, so arrays passed or returned could outlive the
    call by a moment that depends on thread timing, and the audit counts the live arrays
    at every operator's end (docs/threat-model.md §Measured and modelled).  Arguments and results
    travel in boxes emptied here, before this returns: no pool thread holds an array after
    the call.  A single call runs on the calling thread."""
    if len(calls) == 1:
        fn, args = calls[0]
        return [fn(*args)]
    boxes: list[list] = [[fn, args, None] for fn, args in calls]
    try:
        for f in [pool(len(boxes)).submit(_run_box, box) for box in boxes]:
            f.result()
        return [box[2] for box in boxes]
    finally:
        for box in boxes:
            box.clear()


def _run_box(box: list) -> None:
    box[2] = box[0](*box[1])
