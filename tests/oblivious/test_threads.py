"""The kernel thread count changes nothing a query shows (docs/design.md §Threads).

A whole query — a join, a binned DO filter, a GROUP BY and an ORDER BY, with blocks small
enough that every sort and compaction splits — gives the same answer, the same trace
(every kernel pass, allocation and released value) and the same releases on 1, 2, 3 and 5
threads; and the count is the user's to set, with a clear error for a bad one.
"""
from __future__ import annotations

import os

import pytest

import dodb
from dodb.errors import InvalidParameterError
from dodb.oblivious import threads as threads_mod

QUERY = ("SELECT o.g, count(*) AS n, sum(i.v) AS s FROM orders o JOIN items i ON i.oid = o.oid "
         "WHERE i.v % 3 <> 0 GROUP BY o.g ORDER BY n DESC, o.g")


def _run(threads: int, monkeypatch):
    import importlib

    compact_mod = importlib.import_module("dodb.oblivious.compact")  # the package exports the function
    sort_mod = importlib.import_module("dodb.oblivious.sort")

    monkeypatch.setattr(sort_mod, "BLOCK", 64)
    monkeypatch.setattr(sort_mod, "SUB_BLOCK", 16)
    monkeypatch.setattr(compact_mod, "PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(importlib.import_module("dodb.oblivious.unmerge"), "BLOCK", 64)
    previous = threads_mod.set_threads(threads)
    try:
        db = dodb.connect(seed=7)
        db.con.execute("CREATE TABLE orders AS SELECT range AS oid, range % 5 AS g FROM range(300)")
        db.con.execute("CREATE TABLE items AS SELECT range AS iid, range % 300 AS oid, range AS v FROM range(900)")
        db.set_budget(epsilon=100.0, delta=1e-3)
        db.protect("orders", privacy_unit="oid", max_contributions=1, keys=[["oid"]])
        db.protect("items", privacy_unit="oid", parent=("orders", "oid"), max_contributions=3)
        padded, report, plan = db.run(QUERY, epsilon=1.0)
        answer = db.sql(QUERY, epsilon=1.0).fetchall()
        db.close()
    finally:
        threads_mod.set_threads(previous)
    # node ids count plans made in the process: the releases are compared by operator kind and order
    return answer, [str(e) for e in plan.trace.events], [(o["operator"].split("#")[0], o["release"], o["value"])
                                                         for o in report.operators]


def test_the_thread_count_changes_nothing_a_query_shows(monkeypatch):
    base = _run(1, monkeypatch)
    assert base[0] and len(base[1]) > 50  # a real answer and a real trace
    for t in (2, 3, 5):
        assert _run(t, monkeypatch) == base, f"{t} threads"


def test_the_count_is_set_and_checked(monkeypatch):
    previous = dodb.set_threads(3)
    try:
        assert threads_mod.threads() == 3
        with pytest.raises(InvalidParameterError, match="positive number of threads"):
            dodb.set_threads(0)
        assert threads_mod.threads() == 3  # a refused value changes nothing
    finally:
        dodb.set_threads(previous)
    monkeypatch.setattr(threads_mod, "_chosen", [])
    monkeypatch.setenv("DODB_THREADS", "two")
    with pytest.raises(InvalidParameterError, match="DODB_THREADS"):
        threads_mod.threads()
    monkeypatch.setattr(threads_mod, "_chosen", [])
    monkeypatch.setenv("DODB_THREADS", "4")
    assert threads_mod.threads() == 4
    monkeypatch.setattr(threads_mod, "_chosen", [])
    monkeypatch.delenv("DODB_THREADS")
    assert threads_mod.threads() == max(1, os.cpu_count() or 1)


class _KeepingPool:
    """A pool that keeps every task it was given, as a pool thread does until its next task."""

    def __init__(self, inner):
        self.inner, self.kept = inner, []

    def submit(self, fn, *args):
        f = self.inner.submit(fn, *args)
        self.kept.append((fn, args, f))
        return f


def _holds_array(obj, depth: int = 0) -> bool:
    import numpy as np

    if isinstance(obj, np.ndarray):
        return True
    if isinstance(obj, (list, tuple)) and depth < 4:
        return any(_holds_array(o, depth + 1) for o in obj)
    return False


@pytest.mark.parametrize("plant", [False, True])
def test_no_pool_thread_keeps_an_array_after_the_call(monkeypatch, plant):
    """What a pool thread keeps after a kernel call (its task's arguments and result) holds no
    array, so the arrays alive at an operator's end do not depend on when that thread takes
    its next task (the audit counts them).  Planted: submitting the arrays directly."""
    import numpy as np

    keeping = _KeepingPool(threads_mod.pool(2))
    monkeypatch.setattr(threads_mod, "pool", lambda size: keeping)
    a, b = np.arange(10), np.arange(20)
    if plant:
        futures = [keeping.submit(np.add, x, 1) for x in (a, b)]
        got = [f.result() for f in futures]
    else:
        got = threads_mod.run_parts([(np.add, (x, 1)) for x in (a, b)])
    assert np.array_equal(got[0], a + 1) and np.array_equal(got[1], b + 1)
    kept = [(args, f.result()) for _, args, f in keeping.kept]
    assert any(_holds_array(k) for k in kept) == plant
