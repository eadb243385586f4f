"""The Ray runner on a local cluster of 2 workers (docs/distributed.md §Ray).

The cluster binds to the loopback interface and stops when the database closes.  Answers
equal DuckDB's; a worker process killed mid-query fails the query with a one-line
DodbError that says what was charged (tasks are never retried: a retry would draw fresh,
uncharged noise), and the next query runs on a fresh worker.
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


@pytest.fixture(scope="module")
def db():
    d = dodb.connect(seed=2, cluster="local:2")
    generate_tpch(d.con, 0.01)
    d.oracle = snapshot(d.con)
    d.set_budget(epsilon=1e6, delta=0.5)
    protect_tpch(d)
    d.shard(2)
    yield d
    d.close()
    assert not ray.is_initialized()  # the cluster stopped with the database


@pytest.mark.parametrize("q", [3, 18])
def test_answers_on_a_local_ray_cluster(db, q):
    sql = tpch_query(q)
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table(), ordered=True)
    assert res.plan.placement.sharded


def _worker_pids() -> list[int]:
    out = subprocess.run(["pgrep", "-f", "ray::run_worker"], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def test_a_worker_killed_mid_query_fails_it_and_says_what_was_charged(db):
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
        pids = _worker_pids()
        if pids:
            os.kill(pids[0], signal.SIGKILL)
            killed = True
        time.sleep(0.005)
    t.join(300)
    if not killed:
        pytest.skip("the query finished before a worker could be killed")
    assert errors and isinstance(errors[0], DodbError), errors
    msg = str(errors[0])
    assert "cluster worker failed" in msg and "charge" in msg and "\n" not in msg
    last = db.history()[-1]
    assert last["status"] == "failed"
    # the cluster replaces the worker: the next query runs
    res = db.sql(tpch_query(6), epsilon=1.0, delta=1e-6)
    assert_same_rows(res.arrow(), db.oracle.sql(tpch_query(6)).to_arrow_table())
