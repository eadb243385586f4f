"""One way in (issue 12, docs/design.md §Pushdown allow-list, §Bind before charge).

Every query that reaches a private table indirectly — a subquery inside a predicate on a
public table, ANY/IN/EXISTS, UNION with a private table, LIMIT tricks, CTEs named like
tables, views, macros, table functions, qualified or quoted names — is either

* planned privately: the private table is read only by dodb's slot scan (every statement
  sent to DuckDB is checked with ``EXPLAIN``), the answer is DuckDB's answer on the raw
  data, and the query is charged whenever its plan releases a size (a DO plan whose only
  private step feeds a global aggregate releases nothing: no size depends on data); or
* refused before admission with a :class:`~dodb.DodbError` naming the construct, and
  nothing is charged or written to the history.
"""
from __future__ import annotations

import pytest

import dodb
from dodb.compare import same_answer
from dodb.planner.logical import Scan, walk

from ..tpch_fixture import tpch_database
from .oneway import ask, private_reads, watch

VIEWS = [  # made before protect (over the raw tables) and also in the oracle
    "CREATE VIEW rich_early AS SELECT c_custkey, c_mktsegment, c_acctbal FROM customer WHERE c_acctbal > 5000",
    "CREATE VIEW seg(s, nk) AS SELECT c_mktsegment, c_nationkey FROM customer",
    "CREATE VIEW seg_rich AS SELECT s FROM seg WHERE nk < 10",
    "CREATE VIEW pubview AS SELECT n_nationkey, n_name FROM nation WHERE n_regionkey = 1",
    "CREATE VIEW pubview2 AS SELECT n_name FROM pubview",
]
AFTER_PROTECT = [  # reach the slot arrays or the shadows directly
    "CREATE VIEW rich AS SELECT * FROM dodb_private.customer",
    "CREATE VIEW shadowview AS SELECT * FROM dodb_shadow.customer",
    "CREATE VIEW via_rich AS SELECT c_custkey FROM rich",
    "CREATE MACRO ncust() AS (SELECT count(*) FROM dodb_private.customer)",
    "CREATE MACRO plus(a, b) AS a + b",
    "CREATE MACRO rich_t() AS TABLE SELECT * FROM dodb_private.customer",
]


@pytest.fixture(scope="module")
def db():
    def prepare(con):
        for v in VIEWS:
            con.execute(v)

    d = tpch_database(0.002, budget=1e6, prepare=prepare)
    for v in VIEWS:
        d.oracle.execute(v)
    for v in AFTER_PROTECT:
        d.con.execute(v)
    d.catalog.refresh()
    d.log = watch(d)
    yield d
    d.close()


PRIVATE = [
    # scalar subqueries inside predicates and expressions on public tables
    "SELECT n_regionkey, count(*) FROM nation WHERE n_nationkey < "
    "(SELECT count(*) FROM customer WHERE c_acctbal > 9000) / 10 GROUP BY n_regionkey",
    "SELECT n_name, CASE WHEN (SELECT count(*) FROM customer WHERE c_acctbal > 5000) > 10 THEN 1 ELSE 0 END AS big "
    "FROM nation",
    "SELECT n_name FROM nation WHERE n_name = (SELECT max(c_name) FROM customer)",
    "SELECT n_name FROM nation n WHERE (SELECT count(*) FROM customer c WHERE c.c_nationkey = n.n_nationkey) > 10",
    "SELECT n_regionkey, count(*) FROM nation GROUP BY 1 HAVING count(*) < "
    "(SELECT count(*) FROM customer WHERE c_acctbal > 9990)",
    # IN / EXISTS / ANY in public predicates
    "SELECT count(*) FROM nation WHERE n_nationkey IN (SELECT c_nationkey FROM customer WHERE c_acctbal > 9000)",
    "SELECT n_name FROM nation WHERE EXISTS (SELECT 1 FROM customer WHERE c_nationkey = n_nationkey "
    "AND c_acctbal > 9900)",
    "SELECT n_name FROM nation WHERE NOT EXISTS (SELECT 1 FROM customer WHERE c_nationkey = n_nationkey "
    "AND c_acctbal > 9900)",
    "SELECT n_name FROM nation WHERE n_nationkey = ANY (SELECT c_nationkey FROM customer WHERE c_acctbal > 9900)",
    "SELECT r_name FROM region WHERE r_regionkey IN (SELECT n_regionkey FROM nation WHERE n_nationkey IN "
    "(SELECT c_nationkey FROM customer WHERE c_acctbal > 9950))",
    # set operations with a private side
    "SELECT n_nationkey FROM nation UNION SELECT c_nationkey FROM customer",
    "SELECT n_nationkey FROM nation UNION ALL SELECT c_nationkey FROM customer WHERE c_acctbal > 9900",
    "SELECT n_nationkey FROM nation EXCEPT SELECT c_nationkey FROM customer WHERE c_acctbal > 9900",
    "SELECT n_nationkey FROM nation INTERSECT SELECT c_nationkey FROM customer WHERE c_acctbal > 9900",
    # LIMIT tricks
    "SELECT n_name FROM nation WHERE n_nationkey IN (SELECT c_nationkey FROM customer ORDER BY c_acctbal DESC "
    "LIMIT 3)",
    "SELECT c_custkey FROM customer WHERE c_acctbal > 9000 LIMIT 0",
    "SELECT c_custkey FROM customer ORDER BY c_custkey LIMIT 10 OFFSET 290",
    # CTEs named like tables, both directions, and CTE scopes
    "WITH nation AS (SELECT * FROM customer) SELECT c_mktsegment, count(*) FROM nation GROUP BY 1",
    "WITH nation AS (SELECT * FROM customer) SELECT r_name FROM region WHERE r_regionkey IN "
    "(SELECT c_nationkey FROM nation)",
    "SELECT c_mktsegment, count(*) FROM customer WHERE c_custkey IN "
    "(WITH customer AS (SELECT n_nationkey AS k FROM nation) SELECT k FROM customer) GROUP BY 1",
    "WITH c AS (SELECT * FROM customer), d AS (SELECT c_mktsegment AS m FROM c WHERE c_acctbal > 0) "
    "SELECT m, count(*) FROM d GROUP BY m",
    "WITH region AS (SELECT c_nationkey AS r_regionkey, c_name AS r_name FROM customer WHERE c_acctbal > 9950) "
    "SELECT r_name FROM region",
    # quoted and differently cased names
    'SELECT "c_mktsegment", count(*) FROM "customer" GROUP BY 1',
    "SELECT c_mktsegment, count(*) FROM CUSTOMER GROUP BY 1",
    'SELECT c_mktsegment, count(*) FROM "Customer" GROUP BY 1',
    # views over the private table (made before it was protected): planned privately
    "SELECT c_mktsegment, count(*) FROM rich_early GROUP BY 1",
    "SELECT s, count(*) FROM seg WHERE nk < 5 GROUP BY s",
    "SELECT s, count(*) FROM seg_rich GROUP BY s",
    "WITH customer AS (SELECT 1 AS a) SELECT c_mktsegment, count(*) FROM rich_early GROUP BY 1",
]

PUBLIC = [
    "WITH customer AS (SELECT n_nationkey AS c_custkey FROM nation) SELECT count(*) FROM customer",
    "WITH Customer AS (SELECT n_nationkey AS c_custkey FROM nation) SELECT count(*) FROM customer",
    "SELECT * FROM pubview",
    "SELECT * FROM pubview2",
    "SELECT n_name FROM nation WHERE n_name LIKE 'A%' AND n_nationkey + 1 > 2",
]

REFUSED = {
    # reads of the storage, the shadows or the metadata
    "SELECT count(*) FROM dodb_private.customer": "internal schema dodb_private",
    'SELECT count(*) FROM "dodb_private"."customer"': "internal schema dodb_private",
    "SELECT count(*) FROM dodb_shadow.customer": "internal schema dodb_shadow",
    "SELECT * FROM dodb_meta.private_tables": "internal schema dodb_meta",
    "WITH customer AS (SELECT 1 AS a) SELECT count(*) FROM dodb_private.customer": "internal schema dodb_private",
    "SELECT count(*) FROM main.nation": "qualified table name",
    "SELECT count(*) FROM memory.main.nation": "qualified table name",
    # views and macros over the slot arrays
    "SELECT count(*) FROM rich": "view rich",
    "SELECT count(*) FROM shadowview": "view shadowview",
    "SELECT count(*) FROM via_rich": "view via_rich",
    "SELECT count(*) FROM nation WHERE n_nationkey < ncust()": "macro ncust",
    "SELECT plus(n_nationkey, 1) FROM nation": "macro plus",
    "SELECT count(*) FROM rich_t()": "table macro rich_t",
    # table functions and files
    "SELECT count(*) FROM query('SELECT * FROM dodb_private.customer')": "table function query",
    "SELECT count(*) FROM query_table('dodb_private.customer')": "table function query_table",
    "SELECT * FROM read_csv('/etc/passwd')": "table function",
    "SELECT * FROM read_parquet('x.parquet')": "table function",
    "SELECT * FROM range(10)": "table function",
    "SELECT * FROM duckdb_tables()": "table function duckdb_tables",
    "SELECT n_name FROM nation, generate_series(1, 3)": "table function",
    # expressions off the allow-list
    "SELECT count(*) FROM nation WHERE n_nationkey < len(ARRAY(SELECT COLUMNS('c_custkey') FROM customer "
    "WHERE COLUMNS('c_acctbal') > 9000))": "ARRAY",
    "SELECT COLUMNS('c_.*') FROM customer": "COLUMNS",
    "SELECT * EXCLUDE (c_name) FROM customer": "EXCLUDE",
    "SELECT {'a': c_custkey} FROM customer": "STRUCT",
    "SELECT [c_custkey] FROM customer": "ARRAY",
    "SELECT $1 FROM customer": "parameter",
    "SELECT getenv('HOME') FROM nation": "getenv",
    "SELECT n_name FROM nation LIMIT (SELECT count(*) FROM customer)": "LIMIT",
    "SELECT n_name FROM nation LIMIT 10%": "PERCENT",
    "SELECT n_name FROM nation ORDER BY (SELECT count(*) FROM customer)": "subquery",
    "SELECT c_custkey FROM customer ORDER BY ALL": "ORDER BY ALL",
    "SELECT n_nationkey FROM nation UNION BY NAME SELECT c_nationkey AS n_nationkey FROM customer": "BY NAME",
    "SELECT CAST(c_custkey AS INTERVAL) FROM customer": "CAST to INTERVAL",
    # result types dodb cannot return: refused when bound, before admission
    "SELECT INTERVAL 1 DAY * c_custkey FROM customer": "INTERVAL",  # a constant INTERVAL answers since stop 41
    "SELECT c_custkey, customer FROM customer": "type STRUCT",
}

FAILS_WHEN_BOUND = {  # data-independent failures: found before admission
    "SELECT nope FROM customer": "nope",
    "SELECT c_name + 1 FROM customer": "No function matches",
    "SELECT * FROM no_such_table": "no_such_table",
    "SELECT * FROM 'x.csv'": "x.csv",
}


# The queries that failed only because dummy rows were evaluated as all-NULL rows:
# DuckDB answers them, so dodb must too (the oblivious evaluator never fails on a dummy).
ANSWERED_LIKE_DUCKDB = [
    "SELECT CAST(coalesce(CAST(c_custkey AS VARCHAR), 'x') AS INTEGER) FROM customer",
    "SELECT 100 // (CASE WHEN c_custkey IS NULL THEN 0 ELSE 1 END) FROM customer",
]


def _private_scans(res) -> set[str]:
    return {n.table for n in walk(res.plan.root) if isinstance(n, Scan) and n.private}


def _oracle(db, sql):
    return db.oracle.sql(sql).to_arrow_table()


@pytest.mark.parametrize("sql", PRIVATE)
def test_indirect_reads_are_planned_privately(db, sql):
    del db.log[:]
    res, before, after, grew = ask(db, sql)
    assert not isinstance(res, Exception), f"{type(res).__name__}: {res}"
    assert same_answer(res.arrow(), _oracle(db, sql), ordered="ORDER BY" in sql.split(")")[-1])
    assert "customer" in _private_scans(res)
    assert private_reads(db, db.log) == []  # private rows reached DuckDB only as slot scans
    if res.plan.events:
        assert res.privacy.charged_epsilon > 0 and grew == 1 and after[0] > before[0]
    else:  # nothing released: the answer's every size is public
        assert res.privacy.charged_epsilon == 0 and grew == 0


@pytest.mark.parametrize("sql", PUBLIC)
def test_public_queries_stay_public_and_free(db, sql):
    del db.log[:]
    res, before, after, grew = ask(db, sql)
    assert not isinstance(res, Exception), f"{type(res).__name__}: {res}"
    assert same_answer(res.arrow(), _oracle(db, sql))
    assert not _private_scans(res) and res.privacy.charged_epsilon == 0
    assert after == before and grew == 0
    assert private_reads(db, db.log) == []


@pytest.mark.parametrize("sql", sorted(REFUSED))
def test_refused_before_admission_naming_the_construct(db, sql):
    del db.log[:]
    err, before, after, grew = ask(db, sql)
    assert isinstance(err, dodb.UnsupportedQueryError), f"{type(err).__name__}: {err}"
    assert REFUSED[sql].lower() in err.construct.lower()
    assert "\n" not in str(err)
    assert after == before and grew == 0
    assert private_reads(db, db.log) == []


@pytest.mark.parametrize("sql", sorted(FAILS_WHEN_BOUND))
def test_data_independent_failures_charge_nothing(db, sql):
    err, before, after, grew = ask(db, sql)
    assert isinstance(err, (dodb.PlanningError, dodb.CatalogError)), f"{type(err).__name__}: {err}"
    assert FAILS_WHEN_BOUND[sql].lower() in str(err).lower() and "\n" not in str(err)
    assert after == before and grew == 0


@pytest.mark.parametrize("sql", ANSWERED_LIKE_DUCKDB)
def test_dummies_never_make_a_query_fail_that_duckdb_answers(db, sql):
    del db.log[:]
    res, before, after, grew = ask(db, sql)
    assert not isinstance(res, Exception), f"{type(res).__name__}: {res}"
    assert same_answer(res.arrow(), _oracle(db, sql))
    assert _private_scans(res) == {"customer"} and private_reads(db, db.log) == []


def test_the_checker_sees_a_read_of_the_slots(db):
    """The EXPLAIN-based check itself: a view over the slot array is caught, the slot read is not."""
    assert private_reads(db, [("SELECT count(*) FROM rich", None)])
    assert private_reads(db, [("SELECT n_nationkey FROM nation WHERE n_nationkey < ncust()", None)])
    assert not private_reads(db, [('SELECT "__dodb_slot", "__dodb_real", "c_acctbal" '
                                   'FROM "dodb_private"."customer"', None)])


def test_temporary_objects_of_the_session_connection_are_not_used():
    """Public scans run on a fresh cursor with qualified names: a temporary view or macro made
    on ``db.con`` cannot stand in for a public table."""
    d = tpch_database(0.002, budget=1e6)
    d.con.execute("CREATE TEMP VIEW nation AS SELECT c_custkey AS n_nationkey, c_name AS n_name, "
                  "c_nationkey AS n_regionkey, c_comment AS n_comment FROM dodb_private.customer")
    res = d.sql("SELECT count(*) AS n, max(n_name) AS m FROM nation WHERE n_nationkey >= 0", epsilon=0.5)
    assert res.fetchall() == d.oracle.sql("SELECT count(*), max(n_name) FROM nation").fetchall()
    d.close()


def test_a_macro_shadowing_a_builtin_is_refused():
    d = tpch_database(0.002, budget=1e6)
    d.con.execute("CREATE MACRO upper(x) AS (SELECT max(c_name) FROM dodb_private.customer)")
    before = d.budget["spent"]
    with pytest.raises(dodb.UnsupportedQueryError, match="macro upper"):
        d.sql("SELECT n_name FROM nation WHERE upper(n_name) = 'FRANCE'", epsilon=0.5)
    assert d.budget["spent"] == before
    d.close()


def test_deep_nesting_is_a_dodb_error(db):
    err, before, after, grew = ask(db, "SELECT " + "(" * 300 + "c_custkey" + ")" * 300 + " FROM customer")
    assert isinstance(err, dodb.UnsupportedQueryError) and "nested" in str(err)
    err, *_ = ask(db, "SELECT c_custkey FROM customer WHERE " + " AND ".join(["c_acctbal > 0"] * 2000))
    assert isinstance(err, dodb.DodbError)
    assert after == before and grew == 0


def test_error_family():
    """Budget, ledger and parameter errors are DodbErrors (an invalid ε is also a ValueError)."""
    assert issubclass(dodb.BudgetExceededError, dodb.DodbError)
    assert issubclass(dodb.LedgerError, dodb.DodbError) and issubclass(dodb.BudgetNotSetError, dodb.DodbError)
    d = dodb.connect()
    d.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(20)")
    with pytest.raises(dodb.BudgetNotSetError):
        d.sql("SELECT count(*) FROM t", epsilon=1.0)
    d.set_budget(epsilon=1.0, delta=1e-6)
    d.protect("t", "id", max_contributions=1, capacity=32)
    for eps in (-1, 0, float("nan")):
        with pytest.raises(dodb.InvalidParameterError) as e:
            d.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=eps)
        assert isinstance(e.value, ValueError)
    with pytest.raises(dodb.InvalidParameterError):
        d.set_budget(epsilon=-1, delta=1e-6)
    with pytest.raises(dodb.InvalidParameterError):
        d.sql("SELECT count(*) FROM t", epsilon=1.0, mode="nope")
    with pytest.raises(dodb.BudgetExceededError):
        d.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=5.0)
    d.close()


def test_unsigned_and_huge_sums_are_exact():
    d = dodb.connect()
    d.con.execute("CREATE TABLE t AS SELECT range AS id, range % 2 AS g, "
                  "range::UBIGINT + 18446744073709551000::UBIGINT AS u, "
                  "range::HUGEINT * 100000000000000000000::HUGEINT AS h FROM range(10)")
    oracle = d.con.sql("SELECT g, sum(u), sum(h), avg(u) FROM t GROUP BY g ORDER BY g").fetchall()
    d.set_budget(epsilon=10.0, delta=1e-6)
    d.protect("t", "id", max_contributions=1, capacity=16)
    got = d.sql("SELECT g, sum(u), sum(h), avg(u) FROM t GROUP BY g ORDER BY g", epsilon=1.0).fetchall()
    assert [tuple(int(v) if i < 3 else v for i, v in enumerate(r)) for r in got] == \
        [tuple(int(v) if i < 3 else v for i, v in enumerate(r)) for r in oracle]
    assert all(r[1] > 2 ** 64 for r in got)
    # a HUGEINT sum beyond 38 digits: DuckDB raises an overflow, so does dodb (on the analyst's side)
    d.con.execute("CREATE TABLE big AS SELECT range AS id, 90000000000000000000000000000000000000::HUGEINT AS h FROM range(4)")
    d.protect("big", "id", max_contributions=1, capacity=8)
    for _ in range(3):  # the slots are placed at random: the last one may be real or a dummy
        assert d.sql("SELECT sum(h) FROM big WHERE id = 0", epsilon=1.0).fetchall() == [(9 * 10 ** 37,)]
        for q in ("SELECT sum(h) FROM big", "SELECT id % 2 AS g, sum(h) FROM big GROUP BY g"):
            with pytest.raises(dodb.DodbError, match="Overflow in SUM"):
                d.sql(q, epsilon=1.0)
        rows = d.con.sql("SELECT range AS id, 90000000000000000000000000000000000000::HUGEINT AS h "
                         "FROM range(4)").to_arrow_table()
        d.replace_data("big", rows, capacity=8)
    d.close()
