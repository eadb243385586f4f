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

from ..errors import InvalidParameterError

__all__ = ["threads", "set_threads", "pool"]

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
