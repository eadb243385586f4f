"""Protect says what it kept (issue 30): the rows with a NULL privacy unit and the orphan
rows (naming no parent row), counted under either policy, in its return value and its
printed lines; a refusing policy still refuses with nothing charged."""
from __future__ import annotations

import pytest

import dodb
from dodb.errors import CatalogError

CHILD = "(1, 10), (2, 11), (7, 12), (NULL, 13), (9, 14), (NULL, 15), (7, 16)"


def _db():
    db = dodb.connect()
    db.set_budget(epsilon=50, delta=1e-4)
    db.con.sql("CREATE TABLE p AS SELECT range AS id FROM range(5)")
    db.con.sql(f"CREATE TABLE c AS SELECT * FROM (VALUES {CHILD}) v(pid, x)")
    db.protect("p", "id", max_contributions=1, keys=[["id"]])
    return db


def test_kept_orphans_and_null_units_are_counted_and_printed():
    db = _db()
    out = db.protect("c", "pid", parent=("p", "id"), max_contributions=3)
    assert (out.null_unit_rows, out.orphan_rows) == (2, 3)  # pid 7 (twice) and 9 name no row of p
    text = str(out)
    assert "kept 2 rows with a NULL privacy unit" in text and "kept 3 orphan rows" in text
    top = _db()
    assert top.protect("c", "x", max_contributions=1).orphan_rows is None  # no parent: nothing to orphan


@pytest.mark.parametrize("policy", ["orphans", "null_units"])
def test_refusing_policies_still_refuse_and_charge_nothing(policy):
    db = _db()
    spent = db.budget["spent"]
    with pytest.raises(CatalogError, match="refuse"):
        db.protect("c", "pid", parent=("p", "id"), max_contributions=3, **{policy: "refuse"})
    assert db.budget["spent"] == spent


def test_the_command_line_says_what_it_kept(tmp_path):
    import duckdb

    from ..cli_run import run_cli

    path = str(tmp_path / "k.duckdb")
    con = duckdb.connect(path)
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 10), (NULL, 11), (NULL, 12)) v(id, x)")
    con.close()
    assert run_cli("budget", path, "--set", "5", "1e-6", cwd=tmp_path).returncode == 0
    r = run_cli("protect", path, "t", "--privacy-unit", "id", "--max-contributions", "1", "--capacity", "20",
                cwd=tmp_path)
    assert r.returncode == 0 and "rows with a NULL unit: keep (2 kept)" in r.stdout, r.stdout + r.stderr
