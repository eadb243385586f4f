"""Keep freed memory in the process, so a query reuses the pages of the one before
(docs/design.md §Freed memory kept).

A DO operator works on word blocks of hundreds of megabytes at TPC-H sf 1.  glibc serves
every request above its mmap threshold (at most 32 MiB) with a fresh mapping and unmaps it
on free, so every large array a query writes costs a page fault per page on first touch,
query after query (measured on the development machine: 46–96 ms to first-touch 244 MB,
15 ms to write it again; TPC-H Q21 at sf 1 ran in 4.5–5.2 s instead of 8.0–8.4 s with the
setting below).  :func:`keep_freed_memory` asks glibc (``mallopt``) to serve large requests
from the heap and to keep freed memory at the top of the heap up to a bound, so freed pages
stay mapped and the next query's arrays land on them.

What it changes is where arrays live, never which of their slots are touched: sizes are
public, and so is everything that decides an allocation.  The process keeps its
high-water mark of heap memory (as DuckDB's buffer manager keeps its buffers);
:func:`release_freed_memory` hands the free pages back.  Process-wide and idempotent;
glibc only (elsewhere it does nothing); ``DODB_KEEP_FREED_MEMORY=0`` turns it off.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys

__all__ = ["keep_freed_memory", "release_freed_memory", "KEEP_AT_TOP_BYTES"]

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
# freed memory kept at the heap's top before glibc trims it; mallopt takes an int
KEEP_AT_TOP_BYTES = (1 << 31) - 1

@functools.cache
def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
        return None  # not glibc (musl has no mallopt parameters to speak of)
    return libc


@functools.cache
def keep_freed_memory() -> bool:
    """Serve large allocations from the heap and keep freed heap memory (once per process).

    Returns whether the setting is in force.  Called when a database opens and in cluster
    workers; a no-op off glibc or with ``DODB_KEEP_FREED_MEMORY=0``.
    """
    on = False
    if os.environ.get("DODB_KEEP_FREED_MEMORY", "1").strip() not in ("0", "false", "no", "off"):
        libc = _libc()
        if libc is not None:
            # in force only if both took: without the trim threshold the freed top goes back at once
            on = bool(libc.mallopt(_M_TRIM_THRESHOLD, KEEP_AT_TOP_BYTES)) and bool(libc.mallopt(_M_MMAP_MAX, 0))
    return on


def release_freed_memory() -> None:
    """Hand the heap's free pages back to the system (``malloc_trim``); the next large query
    pays its page faults again."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(ctypes.c_size_t(0))
