"""A join hands on only the columns someone above it reads (planner/prune.py ``_narrow_join``;
operators/join.py ``keep``): keys used by no one are not expanded, answers still equal
DuckDB's, and consumers that read every column of their input (DISTINCT, set operations)
see exactly the narrowed columns."""
from __future__ import annotations

import pytest

from dodb.compare import same_answer
from dodb.datasets import tpch_query
from dodb.planner.logical import Join, walk

from ..tpch_fixture import tpch_database


@pytest.fixture(scope="module")
def dbs():
    db = tpch_database(0.002, seed=4)
    yield db, db.oracle
    db.close()


def _joins(db, sql: str) -> list[Join]:
    return [n for n in walk(db.plan(sql, epsilon=1.0).root) if isinstance(n, Join)]


def test_unused_join_keys_are_not_handed_on(dbs):
    db, _ = dbs
    joins = _joins(db, tpch_query(5))
    orders_lineitem = [j for j in joins if "orders.o_orderkey" in j.left_keys + j.right_keys]
    assert orders_lineitem
    for j in orders_lineitem:
        assert "orders.o_orderkey" not in j.columns and "lineitem.l_orderkey" not in j.columns
        assert set(j.columns) < set(j.left.columns) | set(j.right.columns)


def test_a_key_read_above_is_kept(dbs):
    db, _ = dbs
    sql = ("SELECT o_orderkey, sum(l_quantity) FROM orders JOIN lineitem ON o_orderkey = l_orderkey "
           "GROUP BY o_orderkey ORDER BY 2 DESC, 1 LIMIT 5")
    (j,) = _joins(db, sql)
    assert "orders.o_orderkey" in j.columns or "lineitem.l_orderkey" in j.columns


QUERIES = [
    tpch_query(3), tpch_query(5), tpch_query(10), tpch_query(13),
    # every column of the join's output read positionally above it
    "SELECT DISTINCT c_nationkey FROM customer JOIN orders ON c_custkey = o_custkey ORDER BY 1",
    "SELECT c_nationkey FROM customer JOIN orders ON c_custkey = o_custkey "
    "EXCEPT SELECT n_nationkey FROM nation WHERE n_regionkey = 1 ORDER BY 1",
    # outer, semi and anti joins, a side of which nothing is read
    "SELECT count(*), sum(o_totalprice) FROM customer LEFT JOIN orders ON c_custkey = o_custkey "
    "AND o_orderstatus = 'F'",
    "SELECT count(*), count(o_totalprice) FROM customer FULL JOIN (SELECT * FROM orders WHERE o_totalprice > 200000) o "
    "ON c_custkey = o_custkey",
    "SELECT count(*) FROM customer WHERE c_custkey IN (SELECT o_custkey FROM orders WHERE o_totalprice > 250000)",
    "SELECT count(*) FROM customer WHERE c_custkey NOT IN (SELECT o_custkey FROM orders)",
    # a cross join with a one-row side, and a public lookup
    "SELECT count(*) FROM orders, (SELECT max(c_acctbal) AS m FROM customer) WHERE o_totalprice > m * 20",
    "SELECT sum(o_totalprice) FROM orders JOIN customer ON o_custkey = c_custkey JOIN nation "
    "ON c_nationkey = n_nationkey WHERE n_name = 'FRANCE'",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_narrowed_joins_answer_as_duckdb(dbs, sql):
    db, oracle = dbs
    got = db.sql(sql, epsilon=1.0).arrow()
    want = oracle.sql(sql).to_arrow_table()
    assert same_answer(got, want, ordered="order by" in sql.lower())


def test_a_lookup_selects_only_the_public_columns_read_above(dbs, monkeypatch):
    """Q8's lookup in part reads no column of part above it: its passes select no public
    word (a membership test), and the filter after it moves no unused private column."""
    from dodb.operators import lookup

    db, oracle = dbs
    seen = []
    real = lookup._passes_compiled

    def record(lw, rw, ok, r_ok, pub_words, n, k):
        seen.append(len(pub_words))
        return real(lw, rw, ok, r_ok, pub_words, n, k)

    monkeypatch.setattr(lookup, "_passes_compiled", record)
    sql = ("SELECT count(*), sum(l_extendedprice) FROM lineitem JOIN part ON l_partkey = p_partkey "
           "WHERE p_type = 'ECONOMY ANODIZED STEEL'")
    joins = _joins(db, sql)
    assert [j.method for j in joins] == ["lookup"] and "part.p_partkey" not in joins[0].columns
    got = db.sql(sql, epsilon=1.0).arrow()
    assert seen and set(seen) == {0}  # every run of the passes (the dry run too)
    assert same_answer(got, oracle.sql(sql).to_arrow_table())
