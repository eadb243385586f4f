"""Tests for the built-in TPC-H generator (dodb.datasets.tpch) at SF 0.01."""
from __future__ import annotations

import duckdb
import pytest

from dodb.datasets import generate_tpch, tpch_query
from dodb.datasets.tpch import TABLES

SF = 0.01


@pytest.fixture(scope="module")
def generated() -> tuple[duckdb.DuckDBPyConnection, dict[str, int]]:
    c = duckdb.connect()
    return c, generate_tpch(c, SF, seed=0)


@pytest.fixture(scope="module")
def con(generated: tuple[duckdb.DuckDBPyConnection, dict[str, int]]
        ) -> duckdb.DuckDBPyConnection:
    return generated[0]


@pytest.fixture(scope="module")
def counts(generated: tuple[duckdb.DuckDBPyConnection, dict[str, int]]
           ) -> dict[str, int]:
    return generated[1]


def _scalar(con: duckdb.DuckDBPyConnection, sql: str):
    return con.execute(sql).fetchone()[0]


def test_row_counts_follow_spec(con: duckdb.DuckDBPyConnection,
                                counts: dict[str, int]) -> None:
    assert list(counts) == list(TABLES)
    expected = {"region": 5, "nation": 25, "supplier": int(SF * 10_000),
                "customer": int(SF * 150_000), "part": int(SF * 200_000),
                "partsupp": 4 * int(SF * 200_000), "orders": int(SF * 1_500_000)}
    for table, n in expected.items():
        assert counts[table] == n
    for table in TABLES:
        assert _scalar(con, f"SELECT count(*) FROM {table}") == counts[table]
    # 1..7 lines per order, line numbers 1..k.
    lo, hi, bad = con.execute(
        "SELECT min(c), max(c), count(*) FILTER (WHERE c <> m) FROM "
        "(SELECT count(*) c, max(l_linenumber) m FROM lineitem GROUP BY l_orderkey)"
    ).fetchone()
    assert (lo, hi, bad) == (1, 7, 0)
    assert 3.5 < counts["lineitem"] / counts["orders"] < 4.5


def test_schema_matches_dbgen(con: duckdb.DuckDBPyConnection) -> None:
    types = dict(con.execute(
        "SELECT column_name, data_type FROM information_schema.columns").fetchall())
    assert types["l_quantity"] == "DECIMAL(15,2)"
    assert types["o_totalprice"] == "DECIMAL(15,2)"
    assert types["o_orderdate"] == "DATE" and types["l_receiptdate"] == "DATE"
    assert types["l_orderkey"] == "BIGINT" and types["n_nationkey"] == "INTEGER"
    assert types["ps_availqty"] == "BIGINT" and types["p_size"] == "INTEGER"
    assert types["c_phone"] == "VARCHAR"
    n_fk = _scalar(con, "SELECT count(*) FROM duckdb_constraints() "
                        "WHERE constraint_type = 'FOREIGN KEY'")
    assert n_fk == 0


def test_deterministic_per_seed() -> None:
    a, b, c = duckdb.connect(), duckdb.connect(), duckdb.connect()
    generate_tpch(a, SF, seed=7)
    generate_tpch(b, SF, seed=7)
    generate_tpch(c, SF, seed=8, schema="other")
    for t in TABLES:
        ta = a.sql(f"SELECT * FROM {t}").to_arrow_table()
        assert ta.equals(b.sql(f"SELECT * FROM {t}").to_arrow_table()), t
        if t not in ("region", "nation"):
            assert not ta.equals(c.sql(f"SELECT * FROM other.{t}").to_arrow_table()), t


def test_key_integrity(con: duckdb.DuckDBPyConnection, counts: dict[str, int]) -> None:
    orphans = {
        "l_orderkey": "SELECT count(*) FROM lineitem ANTI JOIN orders "
                      "ON l_orderkey = o_orderkey",
        "o_custkey": "SELECT count(*) FROM orders ANTI JOIN customer "
                     "ON o_custkey = c_custkey",
        "(l_partkey, l_suppkey)": "SELECT count(*) FROM lineitem ANTI JOIN partsupp "
                                  "ON l_partkey = ps_partkey AND l_suppkey = ps_suppkey",
        "ps_suppkey": "SELECT count(*) FROM partsupp ANTI JOIN supplier "
                      "ON ps_suppkey = s_suppkey",
        "c_nationkey": "SELECT count(*) FROM customer ANTI JOIN nation "
                       "ON c_nationkey = n_nationkey",
    }
    for what, sql in orphans.items():
        assert _scalar(con, sql) == 0, what
    # Primary keys are unique; partsupp pairs are distinct.
    assert _scalar(con, "SELECT count(DISTINCT o_orderkey) FROM orders") == counts["orders"]
    n_pairs = _scalar(con, "SELECT count(DISTINCT (ps_partkey, ps_suppkey)) FROM partsupp")
    assert n_pairs == counts["partsupp"]
    # dbgen: customers with custkey % 3 == 0 never order; sparse keys 8 of every 32.
    assert _scalar(con, "SELECT count(*) FROM orders WHERE o_custkey % 3 = 0") == 0
    assert _scalar(con, "SELECT count(*) FROM orders WHERE o_orderkey % 32 >= 8") == 0


def test_derived_columns_follow_spec(con: duckdb.DuckDBPyConnection) -> None:
    bad = {
        "dates": "SELECT count(*) FROM lineitem JOIN orders ON l_orderkey = o_orderkey "
                 "WHERE l_shipdate - o_orderdate NOT BETWEEN 1 AND 121 "
                 "OR l_commitdate - o_orderdate NOT BETWEEN 30 AND 90 "
                 "OR l_receiptdate - l_shipdate NOT BETWEEN 1 AND 30",
        "flags": "SELECT count(*) FROM lineitem WHERE "
                 "(l_returnflag = 'N') <> (l_receiptdate > DATE '1995-06-17') "
                 "OR (l_linestatus = 'O') <> (l_shipdate > DATE '1995-06-17')",
        "price": "SELECT count(*) FROM lineitem JOIN part ON l_partkey = p_partkey "
                 "WHERE l_extendedprice <> l_quantity * p_retailprice "
                 "OR p_retailprice * 100 <> 90000 + (p_partkey // 10) % 20001 "
                 "+ 100 * (p_partkey % 1000)",
        "status": "SELECT count(*) FROM orders JOIN (SELECT l_orderkey, "
                  "bool_and(l_linestatus = 'F') f, bool_and(l_linestatus = 'O') o, "
                  "sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) t "
                  "FROM lineitem GROUP BY 1) ON l_orderkey = o_orderkey "
                  "WHERE o_orderstatus <> CASE WHEN f THEN 'F' WHEN o THEN 'O' ELSE 'P' END "
                  "OR abs(o_totalprice - t) > 0.14",
        "phone": "SELECT count(*) FROM customer "
                 "WHERE c_phone NOT LIKE CAST(c_nationkey + 10 AS VARCHAR) || '-___-___-____'",
    }
    for what, sql in bad.items():
        assert _scalar(con, sql) == 0, what


# Queries answering with a single aggregate row, which must not be NULL.
_SCALAR_QUERIES = {6, 14, 17, 19}


@pytest.mark.parametrize("n", range(1, 23))
def test_all_queries_answer(con: duckdb.DuckDBPyConnection, n: int) -> None:
    rows = con.execute(tpch_query(n)).fetchall()
    assert len(rows) >= 1
    if n in _SCALAR_QUERIES:
        assert len(rows) == 1 and rows[0][0] is not None


def test_tpch_query_text() -> None:
    assert "l_returnflag" in tpch_query(1)
    assert "Customer%Complaints" in tpch_query(16)
    with pytest.raises(ValueError):
        tpch_query(23)


def test_schema_name_is_quoted_not_pasted() -> None:
    con = duckdb.connect()
    weird = 'we"ird; DROP TABLE x; --'
    counts = generate_tpch(con, 0.001, schema=weird)
    assert counts["region"] == 5
    schemas = {r[0] for r in con.execute("SELECT schema_name FROM information_schema.schemata").fetchall()}
    assert weird in schemas
    assert con.execute('SELECT count(*) FROM "we""ird; DROP TABLE x; --".region').fetchone() == (5,)
