"""Canonical storage through the public API: protected tables leave the schema, are stored
as a slot array of their public capacity, and answer exactly (docs/design.md §Storage)."""
from __future__ import annotations

import duckdb
import pytest

import dodb
from dodb.compare import snapshot
from dodb.datasets import generate_tpch, tpch_query

from ..operators.util import assert_same_rows
from ..tpch_fixture import protect_tpch


def _patients(con):
    con.execute("CREATE TABLE patients (id INTEGER PRIMARY KEY, ward INTEGER NOT NULL, age INTEGER, note VARCHAR)")
    con.execute("INSERT INTO patients SELECT range, range % 4, CASE WHEN range % 9 = 0 THEN NULL ELSE 20 + range % 50 "
                "END, 'n' || range FROM range(80)")
    con.execute("CREATE TABLE wards AS SELECT range AS ward, 'w' || range AS name FROM range(4)")


def test_protect_stores_a_slot_array_of_the_released_capacity():
    con = duckdb.connect()
    _patients(con)
    db = dodb.attach(con, seed=1)
    db.set_budget(epsilon=2.0, delta=1e-6)
    out = db.protect("patients", "id", max_contributions=1, keys=[["id"]], widths={"note": 8}, epsilon=0.5)
    with pytest.raises(duckdb.CatalogException, match="patients"):
        con.execute("SELECT * FROM patients").fetchall()  # the raw table left the script's schema
    assert con.execute("SELECT count(*) FROM wards").fetchall() == [(4,)]  # public tables untouched
    info = db.catalog.table("patients")
    cap = info.capacity
    assert out.capacity == cap and cap >= 80 and info.capacity_source == "dp"
    # every slot is stored: the capacity, never the row count, is what a scan reads
    assert con.execute("SELECT count(*) FROM dodb_private.patients").fetchall() == [(cap,)]
    assert con.execute("SELECT count(*) FROM dodb_private.patients WHERE __dodb_real").fetchall() == [(80,)]
    # fixed width: every stored string has the declared width; NULL never reaches storage
    assert con.execute("SELECT DISTINCT octet_length(note) FROM dodb_private.patients").fetchall() == [(8,)]
    assert con.execute("SELECT count(*) FROM dodb_private.patients WHERE age IS NULL").fetchall() == [(0,)]
    # the shadow used for binding has the logical schema and no rows
    assert con.execute("SELECT count(*) FROM dodb_shadow.patients").fetchall() == [(0,)]
    ddl = con.execute("SELECT sql FROM duckdb_tables() WHERE schema_name = 'dodb_shadow'").fetchall()[0][0]
    assert "ward INTEGER NOT NULL" in ddl and "note VARCHAR" in ddl
    # the capacity release was charged as an owner action, before anything was written
    hist = db.history()
    assert len(hist) == 1 and hist[0]["kind"] == "owner" and hist[0]["sql"] == "PROTECT patients"
    assert db.budget["spent"][0] == pytest.approx(out.charged_epsilon) and 0 < out.charged_epsilon <= 0.5 + 1e-9
    actions = db.ledger.owner_actions()
    assert actions[-1]["action"] == "protect" and actions[-1]["new_value"]["capacity"] == cap
    res = db.sql("SELECT w.name, count(*) AS n, count(p.age) AS aged FROM patients p JOIN wards w "
                 "ON p.ward = w.ward GROUP BY w.name ORDER BY w.name", epsilon=0.5)
    assert res.fetchall() == [("w0", 20, 17), ("w1", 20, 18), ("w2", 20, 18), ("w3", 20, 18)]


def test_count_of_a_private_table_reveals_only_its_capacity():
    con = duckdb.connect()
    _patients(con)
    db = dodb.attach(con, seed=2)
    db.set_budget(epsilon=2.0, delta=1e-6)
    db.protect("patients", "id", max_contributions=1, widths={"note": 8})
    res = db.sql("SELECT count(*) AS n FROM patients", epsilon=0.1)
    assert res.fetchall() == [(80,)]
    assert res.privacy.charged_epsilon == 0  # nothing new is released ...
    assert res.padded.padded_size == 1
    text = str(res.privacy)  # ... and the report says where the table's size was released
    cap = db.catalog.table("patients").capacity
    assert f"patients: {cap} slots" in text and "ledger #1" in text
    plan = db.plan("SELECT count(*) FROM patients", epsilon=0.1)
    assert str(cap) in plan.explain() and "80" not in plan.explain().replace(str(cap), "")


def test_declared_capacity_charges_nothing_and_is_checked():
    con = duckdb.connect()
    _patients(con)
    db = dodb.attach(con)
    with pytest.raises(dodb.CatalogError, match="smaller than the 80 rows"):
        db.protect("patients", "id", max_contributions=1, widths={"note": 8}, capacity=50)
    out = db.protect("patients", "id", max_contributions=1, widths={"note": 8}, capacity=128)
    assert out.capacity == 128 and out.charge_id is None and db.history() == []
    assert db.catalog.table("patients").capacity_source == "declared"


def test_insert_and_replace_rewrite_the_slots_and_reverify(tmp_path):
    path = str(tmp_path / "p.duckdb")
    db = dodb.connect(path, seed=4)
    _patients(db.con)
    db.set_budget(epsilon=5.0, delta=1e-6)
    db.protect("patients", "id", max_contributions=1, keys=[["id"]], widths={"note": 8})
    first = db.catalog.table("patients").capacity
    more = db.con.sql("SELECT 100 + range AS id, 1 AS ward, 30 AS age, 'x' AS note FROM range(10)").to_arrow_table()
    out = db.insert("patients", more)
    assert out.rows == 90 and db.catalog.table("patients").version == 2 and out.capacity >= 90
    assert db.sql("SELECT count(*) FROM patients WHERE ward = 1", epsilon=0.1).fetchall() == [(30,)]
    dup = db.con.sql("SELECT 100 AS id, 1 AS ward, 30 AS age, 'x' AS note").to_arrow_table()
    with pytest.raises(dodb.CatalogError, match="more than max_contributions=1"):
        db.insert("patients", dup)  # the declared bound would break: refused, nothing changes
    with pytest.raises(dodb.CatalogError, match="longer than its declared width"):
        db.insert("patients", db.con.sql("SELECT 500 AS id, 1 AS ward, 1 AS age, '123456789' AS note").to_arrow_table())
    assert db.catalog.table("patients").version == 2
    db.replace_data("patients", more)
    db.close()
    db = dodb.connect(path)
    assert db.sql("SELECT count(*), sum(id) FROM patients", epsilon=0.1).fetchall() == [(10, sum(range(100, 110)))]
    assert [a["action"] for a in db.ledger.owner_actions()] == ["set_budget", "protect", "insert", "replace"]
    assert first > 0


def test_storage_changed_behind_dodbs_back_is_detected():
    con = duckdb.connect()
    _patients(con)
    db = dodb.attach(con)
    db.set_budget(epsilon=2.0, delta=1e-6)
    db.protect("patients", "id", max_contributions=1, widths={"note": 8})
    con.execute("UPDATE dodb_private.patients SET ward = 0 WHERE __dodb_real AND ward = 1")
    with pytest.raises(dodb.CatalogError, match="changed outside dodb"):
        db.sql("SELECT ward, count(*) FROM patients GROUP BY ward", epsilon=0.5)


def test_tpch_answers_equal_duckdb_on_canonical_storage():
    db = dodb.connect(seed=3)
    generate_tpch(db.con, 0.002)
    oracle = snapshot(db.con)
    db.set_budget(epsilon=100.0, delta=0.5)
    protect_tpch(db)
    with pytest.raises(duckdb.CatalogException):
        db.con.execute("SELECT count(*) FROM lineitem").fetchall()
    for q in (3, 4, 13, 22):
        sql = tpch_query(q)
        assert_same_rows(db.sql(sql, epsilon=1.0, delta=1e-6).arrow(), oracle.sql(sql).to_arrow_table(), ordered=True)


def test_count_star_reveals_only_the_released_capacity_and_says_where_it_was_charged():
    con = duckdb.connect()
    _patients(con)
    db = dodb.attach(con, seed=4)
    db.set_budget(epsilon=2.0, delta=1e-6)
    out = db.protect("patients", "id", max_contributions=1, keys=[["id"]], widths={"note": 8}, epsilon=0.5)
    spent = db.budget["spent"]
    res = db.sql("SELECT count(*) FROM patients", epsilon=0.5)
    assert res.arrow().to_pylist() == [{"count_star()": 80}]
    assert res.privacy.charged_epsilon == 0 and db.budget["spent"] == spent  # no new release, no charge
    report = str(res.privacy)
    assert f"size of patients: {out.capacity} slots (released under DP when loaded, ledger #{out.charge_id})" in report
    text = db.explain("SELECT count(*) FROM patients")
    assert f"patients: {out.capacity} slots, released under DP when loaded, ledger #{out.charge_id}" in text
    # the engine's view holds the capacity, never the row count
    plan_text = text.split("privacy:")[0]
    assert f"{out.capacity} slots" in plan_text and "80" not in plan_text.replace(str(out.capacity), "")
