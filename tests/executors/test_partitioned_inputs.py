"""No exchange of an input already partitioned by the keys needed (docs/distributed.md §Partitioned inputs).

With ``cluster="inline:2"`` on TPC-H data: a GROUP BY on a join key above a co-partitioned join
(either side's key, under a rename and a filter), a join of two keyed aggregates on their keys,
and a join whose one side is partitioned but arrives a round early run with fewer exchanges
(the count asserted), equal DuckDB's and the single-process answers, and move within 10% of the
cost model; a GROUP BY on the *right* key above a LEFT join (whose NULL-extended rows do not sit
at ``partition_of(NULL)``) is still exchanged.  The coupled-neighbour audit (3 workers) is
identical.  Planted wrong skips — a GROUP BY above rows partitioned by other keys, a LEFT join
taken as partitioned by its right keys — are caught by the answer comparison.
"""
from __future__ import annotations

import pytest

from dodb.planner import exchanges as exchanges_mod
from dodb.planner import key_partitioning, placement
from dodb.planner.logical import Aggregate, Exchange, Join, walk

from ..operators.util import assert_same_rows
from .cluster_db import assert_audit_identical, assert_stages_within_cost_model, assert_wrong_answer_with

JOIN = "FROM orders JOIN lineitem ON o_orderkey = l_suppkey"
LEFT = "FROM orders LEFT JOIN lineitem ON o_orderkey = l_partkey"
AGG_L = "SELECT l_orderkey AS k, count(*) AS n FROM lineitem GROUP BY l_orderkey"
# (query, exchanges planned, exchanges when every keyed node had its own)
CASES = [
    (f"SELECT l_suppkey, count(*), sum(l_quantity) {JOIN} GROUP BY l_suppkey", 2, 3),
    (f"SELECT o_orderkey, max(l_quantity) {JOIN} WHERE l_quantity > 20 GROUP BY o_orderkey", 2, 3),
    (f"SELECT k, count(*) FROM (SELECT l_suppkey AS k, l_quantity AS q {JOIN}) WHERE q > 10 GROUP BY k", 2, 3),
    # the LEFT join's rows sit at their left key: grouped by it, no exchange; by the right key, one
    (f"SELECT o_orderkey, count(l_partkey) {LEFT} WHERE o_orderkey < 3000 GROUP BY o_orderkey", 2, 3),
    (f"SELECT l_partkey, count(*) {LEFT} GROUP BY l_partkey", 3, 3),
    # two keyed aggregates joined on their keys: no join exchange
    (f"SELECT a.k, a.n, b.m FROM ({AGG_L}) a JOIN (SELECT o_orderkey AS k, max(o_totalprice) AS m "
     "FROM orders GROUP BY o_orderkey) b ON a.k = b.k", 2, 4),
    # b arrives in round 3 by its key; a is keyed in round 2: a is exchanged (not held a round), b is not
    (f"SELECT a.k, a.n, b.c FROM ({AGG_L}) a JOIN (SELECT l_orderkey AS k, count(*) AS c {JOIN} "
     "GROUP BY l_orderkey) b ON a.k = b.k", 5, 6),
]


@pytest.mark.parametrize("sql,exchanges,before", CASES)
def test_fewer_exchanges_same_answers(db2, sql, exchanges, before, monkeypatch):
    res = db2.sql(sql, epsilon=1.0, delta=1e-6)
    plan, pl = res.plan, res.plan.placement
    want = db2.oracle.sql(sql).to_arrow_table()
    assert_same_rows(res.arrow(), want)
    assert len(pl.exchanges) == exchanges
    assert len(pl.gathers) == 1 and all(
        n.node_id in pl.keyed for n in walk(plan.root) if isinstance(n, (Join, Aggregate)) and
        any(isinstance(x, Exchange) for x in walk(n)))
    assert_stages_within_cost_model(plan)
    # one release fewer per skipped exchange: the plan's events are the single-process plan's
    # plus one per exchange (docs/distributed.md §Group-by)
    assert sum(1 for e in plan.events if e.operator.startswith("Exchange#")) == exchanges
    monkeypatch.setattr(db2, "executor", None)  # the same database in one process
    assert_same_rows(db2.sql(sql, epsilon=1.0, delta=1e-6).arrow(), want)
    # with every keyed node exchanged, as before: ``before`` exchanges
    monkeypatch.undo()
    monkeypatch.setattr(placement, "covers", lambda parts, keys: False)
    monkeypatch.setattr(exchanges_mod, "paired_positions", lambda parts, keys: set())
    again = db2.sql(sql + " ", epsilon=1.0, delta=1e-6)  # a new text: planned afresh
    assert len(again.plan.placement.exchanges) == before
    assert_same_rows(again.arrow(), want)


def test_the_round_early_side_is_exchanged(db2):
    plan = db2.sql(CASES[-1][0], epsilon=1.0, delta=1e-6).plan
    top = next(n for n in walk(plan.root) if isinstance(n, Join) and n.left_keys == ["a.k"])
    assert isinstance(top.left, Exchange) and not isinstance(top.right, Exchange)
    assert top.copartitioned and top.node_id in plan.placement.keyed


def test_explain_names_the_skipped_exchange(db2):
    text = db2.explain(CASES[0][0])
    line = next(x for x in text.splitlines() if "Aggregate by [lineitem.l_suppkey]" in x)
    assert "on 2 workers, by key, an input already partitioned by its keys" in line
    assert text.count("moves (exchange") == 2


def test_planted_skip_over_other_keys_is_caught(db2, monkeypatch):
    """A GROUP BY o_orderpriority above rows partitioned by the join key (o_orderkey), taken as
    covered: every priority's rows are on both workers, so each worker makes its own group of it."""
    monkeypatch.setattr(placement, "covers", lambda parts, keys: True)
    assert_wrong_answer_with(db2, f"SELECT o_orderpriority, count(*) AS n {JOIN} GROUP BY o_orderpriority", 2)


def test_planted_left_join_taken_as_partitioned_by_its_right_keys_is_caught(db2, monkeypatch):
    """A LEFT join's unmatched rows hold a NULL right key but sit at their left key's worker:
    taken as partitioned by the right key, the NULL group is split over the workers."""
    real = key_partitioning.partitioning

    def wrong(n, kids):
        out = real(n, kids)
        return out | kids[1] if isinstance(n, Join) and n.how == "left" and len(kids) > 1 else out

    monkeypatch.setattr(placement, "partitioning", wrong)
    assert_wrong_answer_with(db2, f"SELECT l_partkey, count(*) AS n {LEFT} GROUP BY l_partkey", 2)


def test_cluster_audit_is_identical_on_coupled_neighbours(three):
    assert_audit_identical(three, [CASES[0][0], CASES[3][0], CASES[-1][0]])
