"""Sharded storage and the sharded executor (docs/distributed.md), without a cluster.

``cluster="inline:P"`` runs the very tasks a Ray cluster runs, one after another in this
process, so these tests check the distributed plan itself: answers equal DuckDB's on all
22 TPC-H queries, the privacy events are the single-process plan's, every unit's rows lie
on one shard, and missing, stale or tampered shards are refused (before any charge).
"""
from __future__ import annotations

import re
from collections import Counter

import pyarrow as pa
import pytest

import dodb
from dodb.compare import snapshot
from dodb.datasets import generate_tpch, protect_tpch, tpch_query
from dodb.errors import CatalogError, DodbError
from dodb.planner.placement import place
from dodb.storage.shards import StaleShardsError, read_manifest, read_shard, shard_of
from dodb.storage.units import slot_units

from ..operators.util import assert_same_rows


def _database(workers: int, path: str = ":memory:"):
    db = dodb.connect(path, seed=3, cluster=f"inline:{workers}")
    generate_tpch(db.con, 0.01)
    db.oracle = snapshot(db.con)
    db.set_budget(epsilon=1e6, delta=0.5)
    protect_tpch(db)
    db.shard(workers)
    return db


@pytest.fixture(scope="module")
def db2():
    d = _database(2)
    yield d
    d.close()


def _ordered(sql: str) -> bool:
    return re.search(r"\border\s+by\b", sql, re.I) is not None


@pytest.mark.parametrize("q", range(1, 23))
def test_tpch_on_two_shards_matches_duckdb(db2, q):
    sql = tpch_query(q)
    res = db2.sql(sql, epsilon=1.0, delta=1e-6)
    assert_same_rows(res.arrow(), db2.oracle.sql(sql).to_arrow_table(), ordered=_ordered(sql))


def test_three_shards_and_the_events_of_the_cluster_plan():
    db = _database(3)
    try:
        for q in (3, 5, 10, 13, 18, 21):
            sql = tpch_query(q)
            res = db.sql(sql, epsilon=1.0, delta=1e-6)
            assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table(), ordered=_ordered(sql))
            p = res.plan
            assert p.placement is not None and p.placement.sharded  # it did run on the shards
            # every planned release of a sharded node is made once per worker, with the planned
            # sensitivity (each over its own units); a driver node's once: the charge is the
            # single-process plan's (docs/distributed.md §Sharded execution)
            on_workers = p.placement.sharded | p.placement.keyed | {x.node_id for x in p.placement.exchanges}
            want = sorted(s for n in _walk(p.root) for _, s in _leaks(n)
                          for _ in range(3 if n.node_id in on_workers else 1))
            assert sorted(lk.sensitivity for lk in p.leaks) == want
            # the cluster's plan charges the single-process plan's events, plus one per exchange
            # (of the exchanged rows' stability), less the releases of filters that feed an
            # exchange, which only mark rows there (docs/distributed.md §Group-by); and plus
            # the filters that one process skips by sorting their scans (planner/presort.py)
            mine = Counter(e.operator.split("#")[0] + f":{e.sensitivity}" for e in p.events)
            exch = Counter(f"Exchange:{x.child.stability}" for x in p.placement.exchanges)
            single = Counter(e.operator.split("#")[0] + f":{e.sensitivity}" for e in _single(db, sql))
            assert Counter({k: v for k, v in (mine - single).items() if not k.startswith("Filter:")}) == exch
            assert all(k.startswith("Filter:") for k in single - mine)
    finally:
        db.close()


def _single(db, sql):
    """The events of ``sql`` planned for one process (the same catalog)."""
    from dodb.planner import plan_query

    return plan_query(sql, db.catalog, epsilon=1.0, delta=1e-6, neighbour=db.neighbour).events


def _walk(root):
    from dodb.planner.logical import walk
    return list(walk(root))


def _leaks(n):
    from dodb.planner.logical import leaks
    return leaks(n)


def test_every_unit_lies_on_one_shard(db2):
    shards = read_manifest(db2.con, db2.shard_directory())
    assert shards.workers == 2
    tables = ["customer", "orders", "lineitem"]
    slots = {}
    for t in tables:
        info = db2.catalog.table(t)
        parts = [read_shard(shards, info, p, info.logical_columns) for p in range(2)]
        assert [int(r.shape[0]) for r, _ in parts] == list(shards.tables[t].capacities)
        slots[t] = parts
    # the customer key of every real row, found through the unit path on each shard
    cust = [set(c["c_custkey"].values[r]) for r, c in slots["customer"]]
    assert not cust[0] & cust[1]
    for p in range(2):
        r, o = slots["orders"][p]
        assert set(o["o_custkey"].values[r]) <= cust[p]  # orders of a customer beside it
        okeys = set(o["o_orderkey"].values[r])
        rl, li = slots["lineitem"][p]
        assert set(li["l_orderkey"].values[rl]) <= okeys  # lines beside their order
    total = {t: sum(int(r.sum()) for r, _ in slots[t]) for t in tables}
    assert total == {t: int(db2.oracle.sql(f"SELECT count(*) FROM {t}").fetchall()[0][0]) for t in tables}


def test_unit_labels_through_orphans_and_null_keys():
    vals = {("c", "id"): [1, None, 2, 3], ("o", "cid"): [2, 7, None, 1], ("o", "oid"): [10, 11, 12, 13],
            ("l", "oid"): [11, 12, 13, 99, None]}
    real = {"c": [True, True, True, False], "o": [True] * 4, "l": [True] * 5}
    units = slot_units(["c", "o", "l"], {"c": None, "o": ("c", "id"), "l": ("o", "oid")}.get,
                       {"c": "id", "o": "cid", "l": "oid"}.get, lambda t, c: vals[(t, c)], real.get)
    assert units["c"][3] is None  # a dummy slot has no unit
    assert units["l"] == [("orphan", "c", 7), ("null", "o", 2), ("unit", 1), ("orphan", "o", 99), ("null", "l", 4)]
    key = b"x" * 32
    assert len({shard_of(("unit", i), key, 4) for i in range(200)}) == 4


def test_missing_and_stale_shards_are_refused_before_any_charge(tmp_path):
    db = dodb.connect(str(tmp_path / "d.duckdb"), seed=1, cluster="inline:2")
    try:
        generate_tpch(db.con, 0.01)
        db.set_budget(epsilon=100.0, delta=0.5)
        protect_tpch(db)
        spent = db.budget["spent"]
        with pytest.raises(StaleShardsError, match="no shards"):
            db.sql(tpch_query(6), epsilon=1.0)
        db.shard(2)
        spent = db.budget["spent"]
        assert db.sql("SELECT count(*) FROM orders", epsilon=1.0).arrow().num_rows == 1
        db.insert("customer", pa.table({"c_custkey": [10 ** 6], "c_name": ["n"], "c_address": ["a"],
                                        "c_nationkey": [1], "c_phone": ["p"], "c_acctbal": [1.0],
                                        "c_mktsegment": ["BUILDING"], "c_comment": ["c"]}))
        spent = db.budget["spent"]
        with pytest.raises(StaleShardsError, match="older version"):
            db.sql("SELECT count(*) FROM customer WHERE c_acctbal > 0", epsilon=1.0)
        assert db.budget["spent"] == spent
        db.shard(2)
        got = db.sql("SELECT count(*) FROM customer", epsilon=1.0).arrow().column(0)[0].as_py()
        assert got == 1501
        # a shard file changed outside dodb is refused
        shards = read_manifest(db.con, db.shard_directory())
        path = tmp_path / "d.duckdb.shards" / shards.tables["customer"].files[1]
        table = pa.ipc.open_file(pa.BufferReader(path.read_bytes())).read_all()
        bal = table.column("c_acctbal").to_pylist()
        bal[0] = (bal[0] or 0) + 1
        table = table.set_column(table.column_names.index("c_acctbal"), "c_acctbal",
                                 pa.array(bal, table.schema.field("c_acctbal").type))
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
        spent = db.budget["spent"]
        with pytest.raises(CatalogError, match="shard 1 of 'customer' was changed outside dodb"):
            db.sql("SELECT sum(c_acctbal) FROM customer", epsilon=1.0)
        with pytest.raises(DodbError, match="from 1 to"):
            db.shard(0)
    finally:
        db.close()


def test_placement_keeps_preserved_public_sides_and_sorts_on_the_driver(db2):
    def placed(sql):
        p = db2.plan(sql, epsilon=1.0, delta=1e-6)
        return p, place(p.root, p.catalog, 2)

    p, pl = placed("SELECT o_orderkey FROM orders ORDER BY o_totalprice LIMIT 5")
    kinds = {n.kind for n in _walk(p.root) if n.node_id in pl.sharded}
    assert "Sort" not in kinds and "Scan" in kinds
    # a public side preserved by an outer join would be repeated on every worker
    p, pl = placed("SELECT n_name, o_orderkey FROM nation LEFT JOIN orders ON o_orderkey = n_nationkey")
    joins = [n for n in _walk(p.root) if n.kind == "Join"]
    assert joins and all(j.node_id not in pl.sharded for j in joins)
    assert sorted(db2.sql("SELECT n_name, o_orderkey FROM nation LEFT JOIN orders ON o_orderkey = n_nationkey",
                          epsilon=1.0).arrow().to_pylist(), key=str) == \
        sorted(db2.oracle.sql("SELECT n_name, o_orderkey FROM nation LEFT JOIN orders ON o_orderkey = n_nationkey")
               .to_arrow_table().to_pylist(), key=str)
    # EXPLAIN names the workers and what runs where
    text = db2.explain(tpch_query(3))
    assert "cluster: 2 workers" in text and "on 2 shards" in text
    assert "Exchange by [lineitem.l_orderkey" in text and "on 2 workers, by key]" in text
    assert "on 2 workers, each keeps its first 10 rows, gathered to the driver" in text  # its local top-k


def test_cluster_argument_errors_are_one_line():
    for bad in ("local", "inline:0", "spark://x", 3):
        with pytest.raises(DodbError):
            dodb.connect(cluster=bad)
