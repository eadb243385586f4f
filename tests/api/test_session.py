"""End to end through the public API: protect → query → report → budget → refusal → reopen."""
from __future__ import annotations

import duckdb
import pytest

import dodb
from dodb.compare import snapshot


def _make(db):
    db.con.execute("CREATE TABLE visits AS SELECT range AS id, range % 10 AS patient, "
                   "(range * 7) % 5 AS ward, (range % 3)::DECIMAL(10,2) * 1.5 AS cost FROM range(200)")
    db.con.execute("CREATE TABLE wards AS SELECT range AS ward, 'ward ' || range AS name FROM range(5)")
    db.oracle = snapshot(db.con)
    # a declared public capacity: nothing is charged when the table is stored
    db.protect("visits", "patient", max_contributions=20, capacity=256)


def test_session_roundtrip_and_persistence(tmp_path):
    path = str(tmp_path / "clinic.duckdb")
    db = dodb.connect(path)
    _make(db)
    db.set_budget(epsilon=2.0, delta=1e-6)
    sql = "SELECT w.name, count(*) AS n, sum(v.cost) AS total FROM visits v JOIN wards w ON v.ward = w.ward " \
          "GROUP BY w.name ORDER BY w.name"
    res = db.sql(sql, epsilon=0.5)
    want = db.oracle.sql(sql).fetchall()
    assert res.fetchall() == want
    assert res.arrow().num_rows == 5
    rep = res.privacy
    assert rep.charged_epsilon <= 0.5 + 1e-12 and rep.query_id == 1
    assert rep.operators and all(op["sensitivity"] > 0 for op in rep.operators)
    assert "charged" in str(rep)
    spent1 = db.budget["spent"][0]
    assert spent1 == pytest.approx(rep.charged_epsilon)
    with pytest.raises(dodb.BudgetExceededError):
        db.sql(sql, epsilon=5.0)
    assert db.budget["spent"][0] == spent1  # refused: nothing charged
    db.close()

    again = dodb.connect(path)  # the ledger lives in the database file
    assert again.budget["spent"][0] == pytest.approx(spent1)
    assert again.catalog.table("visits").private
    hist = again.history()
    assert len(hist) == 1 and hist[0]["sql"] == sql
    again.close()


def test_attach_and_chain_relation():
    con = duckdb.connect()
    db = dodb.attach(con)
    _make(db)
    db.set_budget(epsilon=1.0, delta=1e-6)
    res = db.sql("SELECT ward, count(*) AS n FROM visits GROUP BY ward", epsilon=0.3)
    rel = res.relation  # a DuckDB relation on the same connection
    joined = rel.join(con.table("wards"), "ward").order("ward").fetchall()
    assert [r[0] for r in joined] == [0, 1, 2, 3, 4]
    assert sum(r[1] for r in joined) == 200
    # the script keeps using its connection
    assert con.execute("SELECT count(*) FROM wards").fetchall() == [(5,)]
    df = res.df()
    assert len(df) == 5


def test_explain_does_not_charge():
    db = dodb.connect()
    _make(db)
    db.set_budget(epsilon=1.0, delta=1e-6)
    text = db.explain("SELECT ward, count(*) FROM visits GROUP BY ward", epsilon=0.5)
    assert "Aggregate" in text and "stability 20" in text and "basic" in text
    d = db.explain("SELECT ward, count(*) FROM visits GROUP BY ward", epsilon=0.5, as_dict=True)
    assert d["plan"]["operator"].startswith("Project") and d["chosen"]
    assert db.budget["spent"][0] == 0


def test_public_only_query_is_free():
    db = dodb.connect()
    _make(db)
    db.set_budget(epsilon=1.0, delta=1e-6)
    res = db.sql("SELECT count(*) FROM wards", epsilon=0.5)
    assert res.fetchall() == [(5,)]
    assert res.privacy.charged_epsilon == 0 and db.budget["spent"][0] == 0


def test_query_without_budget_fails_cleanly():
    db = dodb.connect()
    _make(db)
    with pytest.raises(dodb.BudgetNotSetError, match="set_budget"):
        db.sql("SELECT count(*) FROM visits", epsilon=0.5)


def test_replace_neighbours_double_group_noise():
    db = dodb.connect(neighbour="replace")
    _make(db)
    p = db.plan("SELECT ward, count(*) FROM visits GROUP BY ward", epsilon=0.5, delta=1e-6)
    assert [e.sensitivity for e in p.events] == [40]


def test_neighbour_relation_is_a_persisted_dataset_setting(tmp_path):
    path = str(tmp_path / "n.duckdb")
    db = dodb.connect(path, neighbour="replace")
    _make(db)
    db.set_budget(epsilon=2.0, delta=1e-6)
    db.close()
    db = dodb.connect(path)  # a later session inherits the dataset's relation
    assert db.neighbour == "replace"
    group = "SELECT ward, count(*) FROM visits GROUP BY ward"
    assert [e.sensitivity for e in db.plan(group, epsilon=0.5, delta=1e-6).events] == [40]
    db.sql(group, epsilon=0.5)
    history = db.history()
    db.close()
    # once a query was charged under 'replace', the relation cannot change
    with pytest.raises(dodb.LedgerError, match="cannot change to 'add_remove' after 1 queries"):
        dodb.connect(path, neighbour="add_remove")
    db = dodb.connect(path, neighbour="replace")  # the same relation is fine
    assert db.neighbour == "replace" and db.history() == history
    with pytest.raises(ValueError, match="neighbour must be one of"):
        dodb.connect(path, neighbour="swap")
    db.close()


def test_neighbour_relation_can_change_before_any_charge_and_is_checked_at_admission():
    con = duckdb.connect()
    a = dodb.attach(con)
    _make(a)
    a.set_budget(epsilon=2.0, delta=1e-6)
    assert a.neighbour == "add_remove"
    b = dodb.attach(con, neighbour="replace")  # nothing charged yet: allowed
    assert a.neighbour == b.neighbour == "replace"
    # a plan made for the other relation is refused at admission and charges nothing
    p = a.plan("SELECT ward, count(*) FROM visits GROUP BY ward", epsilon=0.5, delta=1e-6)
    a.ledger.set_neighbour("add_remove")
    with pytest.raises(dodb.LedgerError, match="plan it again"):
        a.ledger.admit(p.events, delta=p.delta, neighbour=p.neighbour)
    assert a.history() == []


def test_budget_functions_in_plain_sql():
    con = duckdb.connect()
    db = dodb.attach(con)
    _make(db)
    assert con.sql("SELECT dodb_budget_remaining()").fetchall() == [(None,)]  # no budget yet
    db.set_budget(epsilon=2.0, delta=1e-6)
    db.sql("SELECT ward, count(*) FROM visits GROUP BY ward", epsilon=0.5)
    total, spent, left = con.sql(
        "SELECT dodb_budget_epsilon(), dodb_budget_spent(), dodb_budget_remaining()").fetchall()[0]
    assert total == 2.0 and spent == pytest.approx(db.budget["spent"][0]) and left == pytest.approx(2.0 - spent)
    db.close()  # detaching removes the functions; the script's connection stays usable
    with pytest.raises(duckdb.Error):
        con.sql("SELECT dodb_budget_remaining()").fetchall()
    assert con.execute("SELECT count(*) FROM wards").fetchall() == [(5,)]
