"""``dodb audit --database FILE`` audits the owner's own protected database (issue 28):
a copy of it, with units chosen to stress its bounds (orphans, NULL units, the busiest
unit, units at max_contributions, the heaviest degree value) plus sampled ones."""
from __future__ import annotations

import os

import duckdb
import pytest

import dodb
from dodb.audit.neighbour import Neighbourhood
from dodb.cli import main
from dodb.datasets.flights import generate_flights, protect_flights

from .planted import plant_data_sized_buffer


@pytest.fixture(scope="module")
def flights_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("owner") / "flights.duckdb"
    db = dodb.connect(str(path))
    generate_flights(db.con)
    db.set_budget(epsilon=10.0, delta=1e-5)
    protect_flights(db)
    db.close()
    return path


def _fingerprint(path) -> tuple:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return (con.execute("SELECT count(*) FROM dodb_meta.ledger").fetchall(),
                con.execute("SELECT spec FROM dodb_meta.private_tables ORDER BY table_name").fetchall(),
                con.execute("SELECT * FROM dodb_private.flights ORDER BY 1").fetchall())
    finally:
        con.close()


def test_stress_units_cover_orphans_null_units_and_the_busiest(flights_file):
    db = dodb.connect(str(flights_file), read_only=True)
    try:
        units = dict(Neighbourhood.read(db.con, db.catalog).stress_units())
    finally:
        db.close()
    kinds = {u[0] for u in units}
    assert {"unit", "orphan", "null"} <= kinds, units
    reasons = " | ".join(units.values())
    assert "busiest unit" in reasons and "last real slot" in reasons and "max_contributions" in reasons


def test_cli_audits_a_copy_of_the_owners_file(flights_file, capsys):
    before = _fingerprint(flights_file), os.path.getsize(flights_file)
    rc = main(["audit", "--database", str(flights_file), "--pairs", "1", "--no-allocations",
               "SELECT carrier, count(*) FROM flights GROUP BY carrier",
               "SELECT count(*) FROM flights f JOIN planes p ON f.tailnum = p.tailnum"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "orphan" in out and "NULL-key" in out and "neighbour pairs identical" in out
    assert (_fingerprint(flights_file), os.path.getsize(flights_file)) == before  # the owner's file is untouched


def test_default_queries_cover_every_private_table_and_run(flights_file):
    from dodb.audit.owner_data import default_queries

    db = dodb.connect(str(flights_file), read_only=True)
    try:
        queries = default_queries(db.catalog)
        assert any('FROM "flights"' in q for q in queries) and any('FROM "planes"' in q for q in queries)
        assert any("JOIN" in q for q in queries)  # the hop to the parent
        for q in queries:
            db.plan(q, epsilon=1.0)  # each one is a query dodb plans
    finally:
        db.close()


def test_cli_database_audit_catches_a_planted_leak(flights_file, capsys, monkeypatch):
    plant_data_sized_buffer(monkeypatch)
    rc = main(["audit", "--database", str(flights_file), "--pairs", "1", "SELECT count(*) FROM flights"])
    assert rc == 1, capsys.readouterr().out


def test_cli_database_audit_errors_are_one_line(tmp_path, capsys):
    assert main(["audit", "--database", str(tmp_path / "missing.duckdb")]) == 2
    assert "no database file" in capsys.readouterr().err
