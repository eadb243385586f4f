"""Leaks planted for the address audit (``tests/audit/test_addresses.py``).

Each function returns a context manager that the audit's child process (under valgrind)
enters around one query: the planted leak must be found there, by measurement.  Both
replace the compaction the DO filter and GROUP BY use (``dodb.operators.kernels``):

* ``argsort_compaction``: compaction by ``np.argsort`` — the right rows, the same sizes,
  the same self-reported trace, but the sort's comparisons branch on the private flags;
* ``compiled_branch``: the real compaction, after a numba kernel that loops over the
  flags with a branch on each one (writing a row number only for marked rows).
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
from numba import njit

import dodb.operators.kernels as K


@contextmanager
def _compaction(replacement):
    real = K.ocompact
    K.ocompact = replacement
    try:
        yield
    finally:
        K.ocompact = real


def argsort_compaction():
    def compact(marked, payload=(), *, block=None, rows=None, trace=None):
        marked = np.asarray(marked, dtype=bool)
        order = np.argsort(~marked, kind="stable")
        if rows is not None:  # the caller's public choice of output rows, as the real compaction
            order = order[:rows] if isinstance(rows, (int, np.integer)) else order[rows]
        return marked[order], [p[order] for p in payload]

    return _compaction(compact)


@njit(cache=False)
def _marked_rows(marked, out):
    c = 0
    for i in range(marked.shape[0]):
        if marked[i]:  # a branch (and a store address) that depends on the flag
            out[c] = i
            c += 1
    return c


def compiled_branch():
    real = K.ocompact

    def compact(marked, payload=(), *, block=None, rows=None, trace=None):
        _marked_rows(np.asarray(marked, dtype=bool), np.zeros(len(marked), dtype=np.int64))
        return real(marked, payload, block=block, rows=rows, trace=trace)

    return _compaction(compact)
