"""Partition-aware budgets (docs/design.md §Partitions; paper 000 Thms IV.1/IV.11, Cor IV.13)."""
from __future__ import annotations

import pytest

import dodb
from dodb.accountant import BudgetExceededError
from dodb.compare import same_answer, snapshot
from dodb.datasets import TPCH_WIDTHS, generate_tpch
from dodb.errors import CatalogError
from dodb.planner.partitions import partition_key

NATIONS = range(25)


def _db(neighbour: str = "add_remove", epsilon: float = 2.0, path: str = ":memory:") -> dodb.Database:
    """customer (partitioned by nation) and orders, public capacities: nothing charged at loading."""
    db = dodb.connect(path, seed=3, neighbour=neighbour)
    generate_tpch(db.con, 0.002)
    db.con.execute("DROP TABLE lineitem")
    db.oracle = snapshot(db.con)
    db.set_budget(epsilon=epsilon, delta=1e-3)
    n_c = db.con.execute("SELECT count(*) FROM customer").fetchall()[0][0]
    n_o = db.con.execute("SELECT count(*) FROM orders").fetchall()[0][0]
    db.protect("customer", "c_custkey", max_contributions=1, keys=[["c_custkey"]], widths=TPCH_WIDTHS["customer"],
               capacity=n_c, partition_by="c_nationkey")
    db.protect("orders", "o_custkey", parent=("customer", "c_custkey"), max_contributions=40,
               keys=[["o_orderkey"]], widths=TPCH_WIDTHS["orders"], capacity=n_o)
    return db


CUSTOMER_Q = "SELECT c_mktsegment, count(*) FROM customer WHERE c_nationkey = {k} GROUP BY c_mktsegment"
ORDERS_Q = ("SELECT o_orderstatus, count(*) FROM orders JOIN customer ON o_custkey = c_custkey "
            "WHERE c_nationkey = {k} GROUP BY o_orderstatus")
ALL_CUSTOMERS = "SELECT c_mktsegment, count(*) FROM customer GROUP BY c_mktsegment"
ALL_ORDERS = "SELECT o_orderstatus, count(*) FROM orders GROUP BY o_orderstatus"


@pytest.mark.parametrize("per_nation, everyone", [(CUSTOMER_Q, ALL_CUSTOMERS), (ORDERS_Q, ALL_ORDERS)],
                         ids=["customer", "orders"])
def test_disjoint_partitions_cost_the_maximum(per_nation, everyone):
    db = _db()
    for k in NATIONS:
        r = db.sql(per_nation.format(k=k), epsilon=1.0)
        assert r.privacy.partitions == [partition_key("customer", "c_nationkey", k)]
        assert same_answer(r.arrow(), db.oracle.sql(per_nation.format(k=k)).to_arrow_table())
    b = db.budget
    assert len(b["partitions"]) == 25
    assert b["partition_max_spent"][0] == pytest.approx(1.0, rel=1e-6)
    assert b["spent"][0] == pytest.approx(1.0, rel=1e-6)  # the worst change touches one nation
    n = len(db.history())
    with pytest.raises(BudgetExceededError):
        db.sql(everyone, epsilon=1.5)
    assert len(db.history()) == n  # refused before it ran: nothing charged
    db.sql(everyone, epsilon=0.9)  # still fits: 1 + 0.9 <= 2 in every nation
    assert db.budget["partition_max_spent"][0] == pytest.approx(1.9, rel=1e-6)


def test_replace_neighbours_cost_the_worst_pair():
    """Cor IV.13: under replace, nations i != j cost ε_i + ε_j."""
    db = _db("replace")
    for k in (1, 2, 3):
        db.sql(CUSTOMER_Q.format(k=k), epsilon=1.0)
    assert db.budget["spent"][0] == pytest.approx(2.0, rel=1e-6)  # a unit of nation 1 replaced by one of 2
    with pytest.raises(BudgetExceededError):  # 1 + (1 + 0.5) for the pair (3, 1)
        db.sql(CUSTOMER_Q.format(k=3), epsilon=0.5)
    with pytest.raises(BudgetExceededError):  # a new nation pairs with a charged one: 0.5 + 1 fits, 1.2 + 1 not
        db.sql(CUSTOMER_Q.format(k=7), epsilon=1.2)
    db.sql(CUSTOMER_Q.format(k=7), epsilon=0.9)


def test_add_remove_admits_what_replace_refuses():
    db = _db("add_remove")
    for k in (1, 2, 3):
        db.sql(CUSTOMER_Q.format(k=k), epsilon=1.0)
    db.sql(CUSTOMER_Q.format(k=3), epsilon=0.9)
    assert db.budget["partition_max_spent"][0] == pytest.approx(1.9, rel=1e-6)


@pytest.fixture(scope="module")
def planned():
    db = _db()

    def parts(sql):
        p = db.plan(sql, epsilon=1.0)
        assert p.events, "the query must release something for the test to mean anything"
        return p.partitions
    return parts


def key(k):
    return partition_key("customer", "c_nationkey", k)


G = "SELECT c_mktsegment, count(*) FROM customer WHERE {} GROUP BY 1"
OG = "SELECT o_orderstatus, count(*) FROM orders JOIN customer ON o_custkey = c_custkey WHERE {} GROUP BY 1"


@pytest.mark.parametrize("sql, want", [
    (G.format("c_nationkey = 4 AND c_acctbal > 0"), {4}),
    (G.format("4 = c_nationkey"), {4}),
    (G.format("c_nationkey IN (1, 2)"), {1, 2}),
    ("SELECT c_nationkey, count(*) FROM customer WHERE c_nationkey IN (1, 2) GROUP BY 1 HAVING count(*) > 1", {1, 2}),
    ("SELECT o_orderstatus, count(*) FROM orders WHERE o_custkey IN "
     "(SELECT c_custkey FROM customer WHERE c_nationkey = 9) GROUP BY 1", {9}),
    ("SELECT n_name, count(*) FROM orders o JOIN customer c ON o.o_custkey = c.c_custkey JOIN nation n "
     "ON c.c_nationkey = n.n_nationkey WHERE c.c_nationkey = 3 GROUP BY 1", {3}),
    ("SELECT l.o_orderstatus, count(*) FROM orders l JOIN (SELECT o.* FROM orders o JOIN customer c "
     "ON o.o_custkey = c.c_custkey WHERE c.c_nationkey = 2) r ON l.o_orderkey = r.o_orderkey GROUP BY 1", {2}),
    # released before the partition predicate applies: orders filtered on its own columns first
    (OG.format("c_nationkey = 5 AND o_totalprice > 1000"), None),
    # ... or grouped on its own first
    ("SELECT count(*) FROM (SELECT o_custkey, count(*) AS n FROM orders WHERE o_totalprice > 1000 "
     "GROUP BY 1) o JOIN customer ON o_custkey = c_custkey WHERE c_nationkey = 5", None),
    (G.format("c_nationkey = 5 OR c_acctbal > 0"), None),
    # a value computed over every customer decides which rows of nation 5 pass
    (G.format("c_nationkey = 5 AND c_acctbal > (SELECT avg(c_acctbal) FROM customer)"), None),
    (G.format("c_nationkey = 5 AND c_acctbal > (SELECT avg(c_acctbal) FROM customer WHERE c_nationkey = 5)"), {5}),
    (G.format("c_nationkey = 5.5"), None),
    (G.format("c_nationkey % 7 = 5"), None),
    (G.format("c_nationkey + 0 = 5"), {5}),  # the optimizer simplifies it to c_nationkey = 5
    (G.format("c_nationkey = 5 AND c_nationkey = 6"), None),
    # a LEFT join keeps every order: its releases depend on all units
    ("SELECT o_orderstatus, count(c_custkey) FROM orders LEFT JOIN "
     "(SELECT * FROM customer WHERE c_nationkey = 5) c ON o_custkey = c_custkey GROUP BY 1", None),
    # a join that is not along the unit path: the other side's rows are anybody's ...
    ("SELECT a.c_mktsegment, count(*) FROM customer a JOIN customer b ON a.c_mktsegment = b.c_mktsegment "
     "WHERE a.c_nationkey = 1 GROUP BY 1", None),
    # ... unless both sides are confined
    ("SELECT a.c_mktsegment, count(*) FROM customer a JOIN customer b ON a.c_mktsegment = b.c_mktsegment "
     "WHERE a.c_nationkey = 1 AND b.c_nationkey IN (1, 2) GROUP BY 1", {1, 2}),
    ("SELECT c_mktsegment, count(*) FROM (SELECT * FROM customer ORDER BY c_acctbal LIMIT 10) "
     "WHERE c_nationkey = 1 GROUP BY 1", None),
    ("SELECT c_nationkey, count(*) FROM customer GROUP BY 1", None),
])
def test_which_partitions_a_query_is_charged_to(planned, sql, want):
    got = planned(sql)
    assert got == (None if want is None else frozenset(key(k) for k in want))


def test_explain_names_the_partitions():
    db = _db()
    text = db.explain(CUSTOMER_Q.format(k=6), epsilon=1.0)
    assert f"charged to: partitions {key(6)}" in text
    assert "charged to: all partitions" in db.explain(ALL_CUSTOMERS, epsilon=1.0)
    assert db.explain(CUSTOMER_Q.format(k=6), epsilon=1.0, as_dict=True)["partitions"] == [key(6)]


def test_a_unit_in_two_partitions_is_refused_and_nothing_stored():
    db = dodb.connect(":memory:", seed=1)
    db.con.execute("CREATE TABLE visits AS SELECT * FROM (VALUES (1, 'a'), (1, 'b'), (2, 'a'), (NULL, 'c'), "
                   "(NULL, 'd')) t(person, region)")
    db.set_budget(epsilon=1.0, delta=1e-6)
    n = len(db.history())
    with pytest.raises(CatalogError, match="more than one partition"):
        db.protect("visits", "person", max_contributions=2, widths={"region": 4}, partition_by="region")
    assert not db.catalog.table("visits").private and len(db.history()) == n
    db.con.execute("UPDATE visits SET region = 'a' WHERE person = 1")
    db.protect("visits", "person", max_contributions=2, widths={"region": 4}, partition_by="region", capacity=8)
    assert db.catalog.table("visits").partition_by == "region"
    with pytest.raises(CatalogError, match="more than one partition"):  # re-verified when data changes
        db.con.execute("CREATE TABLE extra AS SELECT 2 AS person, 'z' AS region")
        db.insert("visits", "extra", capacity=8)


@pytest.mark.parametrize("kwargs, match", [
    ({"partition_by": "nope"}, "no column"),
    ({"partition_by": "person"}, "privacy unit itself"),
    ({"partition_by": "score"}, "integer or VARCHAR"),
])
def test_bad_partition_declarations(kwargs, match):
    db = dodb.connect(":memory:", seed=1)
    db.con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a', 1.5)) v(person, region, score)")
    db.set_budget(epsilon=1.0, delta=1e-6)
    with pytest.raises(CatalogError, match=match):
        db.protect("t", "person", max_contributions=1, widths={"region": 4}, capacity=4, **kwargs)


def test_partition_only_on_the_unit_table():
    db = _db()
    db.con.execute("CREATE TABLE notes AS SELECT 1 AS n_orderkey, 'x' AS n_tag")
    with pytest.raises(CatalogError, match="defines the unit"):
        db.protect("notes", "n_orderkey", parent=("orders", "o_orderkey"), max_contributions=1,
                   widths={"n_tag": 2}, capacity=1, partition_by="n_tag")


def test_replacing_data_cannot_move_a_unit_to_another_partition():
    db = dodb.connect(":memory:", seed=1)
    db.con.execute("CREATE TABLE people AS SELECT range AS id, range % 3 AS region FROM range(30)")
    db.set_budget(epsilon=5.0, delta=1e-6)
    db.protect("people", "id", max_contributions=1, capacity=40, partition_by="region")
    db.con.execute("CREATE TABLE moved AS SELECT range AS id, (range + 1) % 3 AS region FROM range(30)")
    db.con.execute("CREATE TABLE kept AS SELECT range AS id, range % 3 AS region FROM range(35)")
    db.replace_data("people", "moved", capacity=40)  # nothing charged yet: allowed
    db.sql("SELECT region, count(*) FROM people WHERE region = 1 GROUP BY 1", epsilon=0.5)
    n = len(db.history())
    with pytest.raises(CatalogError, match="move 30 privacy units"):
        db.replace_data("people", "kept", capacity=40)
    assert len(db.history()) == n
    db.con.execute("CREATE TABLE more AS SELECT range + 30 AS id, range % 3 AS region FROM range(5)")
    db.con.execute("CREATE TABLE same AS SELECT * FROM moved UNION ALL SELECT * FROM more")
    db.replace_data("people", "same", capacity=40)  # new units, old ones where they were


def test_changing_the_partition_column_after_charges_needs_force():
    db = dodb.connect(":memory:", seed=1)
    db.con.execute("CREATE TABLE people AS SELECT range AS id, range % 3 AS region, range % 2 AS side FROM range(30)")
    db.set_budget(epsilon=5.0, delta=1e-6)
    db.protect("people", "id", max_contributions=1, capacity=40)
    db.sql("SELECT region, count(*) FROM people GROUP BY 1", epsilon=0.5)
    db.protect("people", "id", max_contributions=1, capacity=40, partition_by="region")  # adding one is sound
    with pytest.raises(CatalogError, match="partition_by 'region' -> 'side'"):
        db.protect("people", "id", max_contributions=1, capacity=40, partition_by="side")
    db.protect("people", "id", max_contributions=1, capacity=40, partition_by="side", force=True)
    assert db.catalog.table("people").partition_by == "side"
    db.sql("SELECT region, count(*) FROM people WHERE side = 1 GROUP BY 1", epsilon=0.5)
    db.protect("people", "id", max_contributions=1, capacity=40)  # dropping it is sound
    with pytest.raises(CatalogError, match="confined to partitions of people.side"):
        db.protect("people", "id", max_contributions=1, capacity=40, partition_by="region")


@pytest.mark.parametrize("neighbour", ["add_remove", "replace"])
def test_report_budget_is_the_status_right_after_the_charge(neighbour):
    """The report's spent/remaining are read in the admitting transaction (session._report):
    they equal what ``db.budget`` reads right after, exactly, for partitioned and global charges."""
    db = _db(neighbour=neighbour, epsilon=20.0)
    for q in (CUSTOMER_Q.format(k=1), CUSTOMER_Q.format(k=2), ALL_ORDERS, ORDERS_Q.format(k=1)):
        r = db.sql(q, epsilon=0.7)
        b = db.budget
        assert (r.privacy.spent, r.privacy.remaining) == (b["spent"], b["remaining"])
    assert db.budget["spent"][0] > 0.7  # the worst change touches more than one charge


def test_standing_is_status_spent_and_remaining():
    db = _db(neighbour="replace", epsilon=20.0)
    for q in (CUSTOMER_Q.format(k=3), ALL_CUSTOMERS):
        db.sql(q, epsilon=0.5)
        st = db.ledger.status()
        assert db.ledger.standing() == (st["spent"], st["remaining"])
    res = db.sql("SELECT count(*) FROM nation", epsilon=0.5)  # public: nothing charged
    assert (res.privacy.spent, res.privacy.remaining) == (db.budget["spent"], db.budget["remaining"])
