"""Bad input fails cleanly, names the construct, and charges nothing."""
from __future__ import annotations

import pytest

import dodb
from dodb.errors import CatalogError, PlanningError, UnsupportedQueryError

from ..tpch_fixture import tpch_database


@pytest.fixture(scope="module")
def db():
    d = tpch_database(0.002, budget=10.0)
    yield d
    d.close()


UNSUPPORTED = {
    "SELECT o_orderkey, sum(o_totalprice) OVER (ORDER BY o_orderdate RANGE BETWEEN INTERVAL '7 days 2 hours' PRECEDING "
    "AND CURRENT ROW) FROM orders": "RANGE frame",
    "SELECT o_custkey, string_agg(DISTINCT o_comment, ',') FROM orders GROUP BY 1": "string_agg(DISTINCT",
    "SELECT * FROM orders RIGHT JOIN customer ON o_custkey = c_custkey": "RIGHT OUTER JOIN",
    "SELECT * FROM orders FULL JOIN customer ON o_custkey < c_custkey": "FULL JOIN condition that is not an equality",
    "SELECT * FROM orders FULL JOIN customer ON o_custkey = c_custkey AND c_acctbal > 0":
        "FULL JOIN condition that is not an equality",
    "INSERT INTO region VALUES (9, 'X', 'y')": "INSERT statement",
    "DELETE FROM orders": "DELETE statement",
    "SELECT o_custkey, approx_count_distinct(o_totalprice) FROM orders GROUP BY 1": "aggregate",
    "SELECT * FROM lineitem, orders": "cross join of lineitem with orders",
    "SELECT o_orderkey FROM orders WHERE o_totalprice > 1 UNION ALL SELECT 1; SELECT 2": "2 statements",
    "SELECT o_custkey, sum(DISTINCT o_totalprice) FROM orders GROUP BY 1": "SUM(DISTINCT",
}


@pytest.mark.parametrize("sql", sorted(UNSUPPORTED))
def test_unsupported_names_the_construct_and_charges_nothing(db, sql):
    before = db.budget["spent"]
    with pytest.raises(UnsupportedQueryError) as e:
        db.sql(sql, epsilon=0.5)
    assert UNSUPPORTED[sql].lower() in str(e.value).lower()
    assert db.budget["spent"] == before


def test_position_is_reported(db):
    with pytest.raises(UnsupportedQueryError, match=r"line 1, col \d+"):
        db.sql("SELECT min(o_totalprice) OVER (ORDER BY o_orderdate RANGE INTERVAL '1 day 2 hours' PRECEDING) "
               "FROM orders", epsilon=0.5)


@pytest.mark.parametrize("sql,err,msg", [
    ("SELEC * FROM orders", PlanningError, "malformed SQL"),
    ("SELECT * FROM orders WHERE", PlanningError, "malformed SQL"),
    ("SELECT nope FROM orders", PlanningError, "nope"),
    ("SELECT * FROM no_such_table", CatalogError, "no_such_table"),
    ("", PlanningError, "empty"),
])
def test_malformed_and_unknown(db, sql, err, msg):
    before = db.budget["spent"]
    with pytest.raises(err, match=msg):
        db.sql(sql, epsilon=0.5)
    assert db.budget["spent"] == before


@pytest.mark.parametrize("eps,delta", [(0, None), (-1, None), (float("nan"), None), (1.0, 0.0), (1.0, 1.0),
                                       (1.0, -0.1)])
def test_invalid_privacy_parameters(db, eps, delta):
    before = db.budget["spent"]
    with pytest.raises(ValueError):
        db.sql("SELECT count(*) FROM orders", epsilon=eps, delta=delta)
    assert db.budget["spent"] == before


def test_over_budget_refused_before_running(db):
    before = db.budget["spent"]
    with pytest.raises(dodb.BudgetExceededError) as e:
        db.sql("SELECT o_orderpriority, count(*) FROM orders GROUP BY 1", epsilon=30.0)  # of a budget of 10
    assert e.value.requested.epsilon > e.value.remaining.epsilon
    assert db.budget["spent"] == before
    assert "nothing was charged" in str(e.value)


def test_plain_mode_on_private_data_needs_explicit_opt_in():
    d = dodb.connect()
    d.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(20)")
    d.set_budget(epsilon=1.0, delta=1e-6)
    d.protect("t", "id", max_contributions=1)
    with pytest.raises(dodb.DodbError, match="allow_insecure"):
        d.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=0.1, mode="plain")


def test_bad_declarations_change_nothing():
    d = dodb.connect()
    d.con.execute("CREATE TABLE t AS SELECT range % 5 AS unit, range AS v FROM range(20)")
    d.set_budget(epsilon=1.0, delta=1e-6)
    with pytest.raises(CatalogError, match="max_contributions"):
        d.protect("t", "unit", max_contributions=2)  # each unit owns 4 rows
    with pytest.raises(CatalogError, match="declare max_contributions"):
        d.protect("t", "unit")  # no bound computed from the data is published
    with pytest.raises(CatalogError, match="not unique"):
        d.protect("t", "unit", max_contributions=4, keys=[["unit"]])
    with pytest.raises(CatalogError, match="no column"):
        d.protect("t", "nope", max_contributions=4)
    assert not d.catalog.table("t").private
    assert d.budget["spent"] == (0.0, 0.0)  # refused declarations charge nothing
