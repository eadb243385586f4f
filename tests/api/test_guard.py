"""Guarding: protected tables are not readable by accident through plain DuckDB."""
from __future__ import annotations

import duckdb
import pytest

import dodb
from dodb.datasets import generate_tpch, tpch_query

from ..operators.util import assert_same_rows
from ..tpch_fixture import protect_tpch


def test_attach_guards_protected_tables():
    con = duckdb.connect()
    con.execute("CREATE TABLE patients (id INTEGER PRIMARY KEY, ward INTEGER NOT NULL, age INTEGER)")
    con.execute("INSERT INTO patients SELECT range, range % 4, 20 + range % 50 FROM range(80)")
    con.execute("CREATE TABLE wards AS SELECT range AS ward, 'w' || range AS name FROM range(4)")
    db = dodb.attach(con)
    db.protect("patients", "id", max_contributions=1, keys=[["id"]])
    db.set_budget(epsilon=2.0, delta=1e-6)
    with pytest.raises(duckdb.CatalogException, match="patients"):
        con.execute("SELECT * FROM patients").fetchall()  # the script cannot read it by accident
    assert con.execute("SELECT count(*) FROM wards").fetchall() == [(4,)]  # public tables untouched
    res = db.sql("SELECT w.name, count(*) AS n FROM patients p JOIN wards w ON p.ward = w.ward "
                 "GROUP BY w.name ORDER BY w.name", epsilon=0.5)
    assert res.fetchall() == [("w0", 20), ("w1", 20), ("w2", 20), ("w3", 20)]
    # the definition survived the move (types, constraints); this is not access control:
    assert con.execute("SELECT count(*) FROM dodb_private.patients").fetchall() == [(80,)]
    ddl = con.execute("SELECT sql FROM duckdb_tables() WHERE table_name = 'patients'").fetchall()[0][0]
    assert "PRIMARY KEY" in ddl and "NOT NULL" in ddl
    assert con.execute("SELECT dodb_budget_remaining() < 2.0").fetchall() == [(True,)]


def test_attaching_later_guards_tables_protected_before(tmp_path):
    path = str(tmp_path / "d.duckdb")
    db = dodb.connect(path)  # connect() does not guard by default
    db.con.execute("CREATE TABLE t AS SELECT range AS id FROM range(10)")
    db.protect("t", "id")
    assert db.con.execute("SELECT count(*) FROM t").fetchall() == [(10,)]
    db.close()
    con = duckdb.connect(path)
    dodb.attach(con)
    with pytest.raises(duckdb.CatalogException):
        con.execute("SELECT * FROM t").fetchall()


def test_tpch_through_a_guarded_database():
    db = dodb.connect(guard=True, seed=3)
    generate_tpch(db.con, 0.002)
    protect_tpch(db)
    db.set_budget(epsilon=100.0, delta=0.5)
    with pytest.raises(duckdb.CatalogException):
        db.con.execute("SELECT count(*) FROM lineitem").fetchall()
    oracle = db.catalog.reader()  # the data owner's explicit view of the private schema
    for q in (3, 4, 13, 22):
        sql = tpch_query(q)
        assert_same_rows(db.sql(sql, epsilon=1.0, delta=1e-6).arrow(), oracle.sql(sql).to_arrow_table(), ordered=True)
