"""The Ray runner on a local cluster of 2 workers (docs/distributed.md §Ray).

One test, so that one process owns the one cluster of the suite (pytest-xdist may put
tests of a module on different workers).  The cluster's servers listen on the loopback
interface only, and it stops when the database closes.  Answers equal DuckDB's; a worker
process killed mid-query fails the query with a one-line DodbError that says what was
charged (tasks are never retried: a retry would draw fresh, uncharged noise), and the next
query runs on a fresh worker.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

ray = pytest.importorskip("ray")

import dodb  # noqa: E402
from dodb.compare import snapshot  # noqa: E402
from dodb.datasets import generate_tpch, protect_tpch, tpch_query  # noqa: E402
from dodb.errors import DodbError  # noqa: E402

from ..operators.util import assert_same_rows  # noqa: E402


def _ours(pid: int) -> bool:
    """Whether ``pid`` descends from this process (our cluster's raylet, its workers), not from
    another test's cluster."""
    me = os.getpid()
    while pid > 1:
        if pid == me:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def _running(pids: list[int]) -> list[int]:
    """Those of ``pids`` (our cluster's worker processes) running a query's task now."""
    out = []
    for p in pids:
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if b"ray::run_worker" in f.read():
                    out.append(p)
        except OSError:
            pass
    return out


def _listening_beyond_loopback(pids: set[int]) -> list[str]:
    """Listening sockets of ``pids`` on an address other than the loopback interface."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    bad = []
    for line in out.splitlines():
        if any(f"pid={p}," in line for p in pids):
            local = line.split()[3]
            if not local.startswith(("127.0.0.1:", "[::1]:", "[::ffff:127.0.0.1]:")):
                bad.append(line)
    return bad


def test_answers_kill_and_recovery_on_a_local_ray_cluster():
    db = dodb.connect(seed=2, cluster="local:2")
    try:
        generate_tpch(db.con, 0.01)
        db.oracle = snapshot(db.con)
        db.set_budget(epsilon=1e6, delta=0.5)
        protect_tpch(db)
        db.shard(2)
        for q in (3, 18):  # a unit-path join, a group-by through the exchange
            sql = tpch_query(q)
            res = db.sql(sql, epsilon=1.0, delta=1e-6)
            assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table(), ordered=True)
            assert res.plan.placement.sharded
        ours = db.executor.runner.worker_pids()  # this cluster's workers, never another test's
        ray_pids = set(ours) | {int(p) for p in subprocess.run(["pgrep", "-f", "ray"], capture_output=True,
                                                               text=True).stdout.split() if _ours(int(p))}
        assert ours and not _listening_beyond_loopback(ray_pids)

        errors: list[BaseException] = []

        def query():
            try:
                db.sql(tpch_query(21), epsilon=1.0, delta=1e-6)
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        t = threading.Thread(target=query)
        t.start()
        killed = False
        deadline = time.monotonic() + 120
        while t.is_alive() and time.monotonic() < deadline and not killed:
            pids = _running(ours)
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed = True
            time.sleep(0.005)
        t.join(300)
        if killed:
            assert errors and isinstance(errors[0], DodbError), errors
            msg = str(errors[0])
            assert "cluster worker failed" in msg and "charge" in msg and "\n" not in msg
            assert db.history()[-1]["status"] == "failed"
        # the cluster replaces the worker: the next query runs
        res = db.sql(tpch_query(6), epsilon=1.0, delta=1e-6)
        assert_same_rows(res.arrow(), db.oracle.sql(tpch_query(6)).to_arrow_table())
        assert killed, "the query finished before a worker could be killed"
    finally:
        db.close()
    assert not ray.is_initialized()  # the cluster stopped with the database
