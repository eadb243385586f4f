"""The coupled-neighbour audit across workers (docs/distributed.md §Audit across workers).

On a database sharded 3 ways, run by the sharded executor with its workers inline (the
tasks a Ray cluster runs, in this process so that runs replay): coupled neighbours — one
unit removed from its shard, or replaced by a unit landing on the same shard — give
identical views.  Each leak class of a cluster is planted and caught:

- a gather that cuts a worker's block to its exact real rows (a block sized by its count),
  on the driver or in the worker (then the exchange log shows it first);
- an exchange whose blocks are cut to their real rows after its release (the exchange log
  shows it first);
- a task whose placement depends on the data;
- a retried task that draws fresh noise nobody charged.
"""
from __future__ import annotations

import numpy as np
import pytest

import dodb
from dodb.audit import audit
from dodb.datasets import generate_tpch, protect_tpch, tpch_query
from dodb.executors import sharded as sharded_mod
from dodb.executors.worker import run_worker

from ..executors.planted import plant_exact_size_exchange

# every unit owns one customer row: its removal changes every exact size below
EVERY_UNIT = "SELECT c_mktsegment, count(*) FROM customer WHERE c_acctbal > -10000 GROUP BY c_mktsegment"
# ... and the rows the driver gathers for its sort are those rows themselves
GATHERED = "SELECT c_custkey FROM customer WHERE c_acctbal > -10000 ORDER BY c_custkey"
QUERIES = [tpch_query(q) for q in (3, 10)] + [EVERY_UNIT,
    "SELECT o_orderpriority, count(*) FROM orders WHERE o_totalprice > 100000 GROUP BY o_orderpriority",
    "SELECT c_mktsegment, sum(o_totalprice) FROM customer JOIN orders ON c_custkey = o_custkey "
    "JOIN nation ON c_nationkey = n_nationkey WHERE n_regionkey = 1 GROUP BY c_mktsegment",
]


def _db(neighbour: str):
    db = dodb.connect(neighbour=neighbour, seed=5, cluster="inline:3")
    generate_tpch(db.con, 0.002)
    db.set_budget(epsilon=1e9, delta=0.5)
    protect_tpch(db)
    db.shard(3)
    return db


@pytest.fixture(scope="module")
def db():
    d = _db("add_remove")
    yield d
    d.close()


def test_cluster_views_are_identical_under_add_remove(db):
    report = audit(db, QUERIES, pairs=2, seed=1)
    assert report.ok, "\n".join(report.lines())
    assert report.total == 2 * len(QUERIES)


def test_cluster_views_are_identical_under_replace():
    d = _db("replace")
    try:
        report = audit(d, QUERIES[:2], pairs=2, seed=2)
        assert report.ok, "\n".join(report.lines())
    finally:
        d.close()


def test_planted_exact_size_gather_is_caught(db, monkeypatch):
    def exact(node, parts):
        cut = [p.with_arrays([a[p.is_real] for a in p.arrays()]) for p in parts]
        return sharded_mod.concat_tables(cut, stability=node.stability)

    monkeypatch.setattr(sharded_mod.ShardedExecutor, "gather", staticmethod(exact))
    report = audit(db, [GATHERED], pairs=2, seed=1)
    assert not report.ok and report.identical == 0


def test_planted_exact_size_gathered_block_is_caught_in_the_log(db, monkeypatch):
    """A worker that returns its output cut to its real rows: the logged block shows it."""
    class Cutting(sharded_mod.InlineRunner):
        def map(self, tasks):
            out = []
            for t in tasks:
                r = run_worker(t)
                r.outputs = [o.with_arrays([a[o.is_real] for a in o.arrays()]) for o in r.outputs]
                out.append(r)
            return out

    monkeypatch.setattr(db.executor, "runner", Cutting(3))
    try:
        report = audit(db, [GATHERED], pairs=2, seed=1)
    finally:
        monkeypatch.undo()
    assert not report.ok and all(p.difference.startswith("moves item") and "gather 0" in p.difference
                                 for p in report.queries[0].pairs), report.lines()


def test_planted_exact_size_exchange_blocks_are_caught(db, monkeypatch):
    """An exchange that sends each destination a block cut to its real rows (after making its
    release, so the release check passes) shows in the replayed view."""
    plant_exact_size_exchange(monkeypatch)
    report = audit(db, [EVERY_UNIT], pairs=2, seed=1)
    assert not report.ok and report.identical == 0
    # the exchange log (docs/distributed.md §Exchange log) is where the views first part
    assert all(p.difference.startswith("moves item") and "exchange 0" in p.difference
               for p in report.queries[0].pairs), report.lines()


def test_planted_data_dependent_placement_is_caught(db, monkeypatch):
    """Tasks sent to the worker named by the number of real rows they read."""
    class Placing(sharded_mod.InlineRunner):
        def map(self, tasks):
            out = []
            for t in tasks:
                r = run_worker(t)
                where = int(sum(int(np.count_nonzero(o.is_real)) for o in r.outputs)) % 7
                r.events.insert(0, type(r.events[0])("placed", -1, (where,)))
                out.append(r)
            return out

    monkeypatch.setattr(db.executor, "runner", Placing(3))
    try:
        report = audit(db, [GATHERED], pairs=2, seed=1)
    finally:
        monkeypatch.undo()
    assert not report.ok


def test_planted_uncharged_retry_is_refused(db, monkeypatch):
    """A worker's task run twice (a retry with fresh noise) releases more than the plan
    announced: the driver refuses it, before the answer is used."""
    class Retrying(sharded_mod.InlineRunner):
        def map(self, tasks):
            out = []
            for t in tasks:
                first = run_worker(t)
                again = run_worker(t)
                again.leaks = first.leaks + again.leaks
                again.events = first.events + again.events
                out.append(again)
            return out

    monkeypatch.setattr(db.executor, "runner", Retrying(3))
    with pytest.raises(Exception, match="made releases"):
        db.sql(GATHERED, epsilon=1.0)
