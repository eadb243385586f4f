"""The exchange log and the cost model (docs/distributed.md §Exchange log, §Exchange cost).

On TPC-H queries run with ``cluster="inline:2"``: every exchange stage logs its ``P × P``
blocks at exactly the released sizes, every gather one block per worker at its padded
size; the bytes measured (what the object store carries) are within 10% of the cost
model's released rows × public row width; EXPLAIN prints each exchange stage's release,
its bytes by the cost model and its rounds.
"""
from __future__ import annotations

import re

import pytest

import dodb
from dodb.datasets import generate_tpch, protect_tpch, tpch_query
from dodb.executors.moves import DRIVER
from dodb.planner.exchange_cost import column_sort, do_exchange, oblivious_exchange, stage_bytes, stage_rows

QUERIES = (1, 3, 5, 10, 13, 18)  # each groups sharded rows through an exchange


@pytest.fixture(scope="module")
def db():
    d = dodb.connect(seed=4, cluster="inline:2")
    generate_tpch(d.con, 0.01)
    d.set_budget(epsilon=1e6, delta=0.5)
    protect_tpch(d)
    d.shard(2)
    yield d
    d.close()


@pytest.mark.parametrize("q", QUERIES)
def test_measured_bytes_per_stage_are_within_ten_percent_of_the_cost_model(db, q):
    res = db.sql(tpch_query(q), epsilon=1.0, delta=1e-6)
    plan = res.plan
    stages = sorted({m.stage for m in plan.moves})
    exchanges = [s for s in stages if s.startswith("exchange")]
    assert exchanges, f"Q{q} ran no exchange"
    for stage in stages:
        sent = [m for m in plan.moves if m.stage == stage]
        assert len({(m.dtypes, tuple(s[1:] for s in m.shapes)) for m in sent}) == 1  # one public schema
        measured = sum(m.bytes for m in sent)
        model = stage_bytes([m.rows for m in sent], sent[0].row_bytes, sent[0].header_bytes)
        assert model > 0 and abs(measured - model) <= 0.1 * model, (stage, measured, model)
    # every block is its released size: the releases come round by round, worker by worker,
    # each worker's exchanges of the round in placement order (docs/distributed.md §Rounds)
    released = [lk.values for lk in plan.leaks if lk.name == "dest_counts"]
    xs, rounds = plan.placement.exchanges, plan.placement.rounds
    order = [(i, s) for r in sorted({rounds[x.node_id] for x in xs}) for s in range(2)
             for i, x in enumerate(xs) if rounds[x.node_id] == r]
    assert len(released) == len(order) == 2 * len(xs)
    by = dict(zip(order, released))
    for i, x in enumerate(xs):
        sent = [m for m in plan.moves if m.stage == f"exchange {i}"]
        assert sorted((m.source, m.destination) for m in sent) == [(s, d) for s in range(2) for d in range(2)]
        for m in sent:  # ñ = min(n, c + η): a block clipped to its source's n is its source's largest
            want = by[(i, m.source)][m.destination]
            assert m.rows == want or m.rows == max(b.rows for b in sent if b.source == m.source) < want
        assert sum(m.rows for m in sent) == plan.stats[x.node_id].padded_out
    for m in plan.moves:
        if m.stage.startswith("gather"):
            assert m.destination == DRIVER


def test_explain_prints_each_exchange_stage_release_bytes_and_rounds(db):
    res = db.sql(tpch_query(18), epsilon=1.0, delta=1e-6)
    text = res.plan.explain()
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "Exchange by [lineitem.l_orderkey]" in line)
    below = "\n".join(lines[at + 1:at + 4])
    assert "leaks dest_counts" in below and re.search(r"moves \(exchange \d+, 1 round\): 4 blocks", below)
    assert "B a row (cost model" in below and "moved:" in below and "B by the cost model" in below
    plain = db.explain(tpch_query(18))  # before running: the model, no measurement
    assert "moves (exchange 0, 1 round)" in plain and "moved:" not in plain


def test_cost_model_against_the_oblivious_exchange_and_column_sort():
    assert stage_rows([[1, 2], [3, 4]]) == 10 and stage_bytes([5, 5], 3) == 30
    n, p, shift = 6_001_215, 16, 40.0
    do, obl, cs = do_exchange(n, p, shift), oblivious_exchange(n, p), column_sort(n, p)
    assert (do.rows, do.rounds, do.padding) == (n + 256 * 40, 1, 256 * 40)
    assert (obl.rows, obl.padding) == (16 * n, 15 * n)
    assert cs.rounds == 4 and cs.rows >= 4 * n and cs.rows % (4 * p * p) == 0
    # column sort needs r ≥ 2(P-1)² = 7938 rows a column, a multiple of P: 8000
    assert column_sort(1000, 64).rows == 4 * 64 * 8000
