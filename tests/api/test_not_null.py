"""NOT NULL holds at every data change (docs/design.md §Storage, *NOT NULL*; issue 28).

A NOT NULL column is stored without a validity lane, and the planner trusts it (a degree
bound caps a window partition only on a NOT NULL column).  Before this check a NULL in
such a column was stored as 0: 30 rows with a NULL unit merged into unit 0 and every
later release over the table was undercharged.  Every entry point — protect, insert,
replace_data — now refuses the rows, naming the column and the count, before anything is
charged or stored.  NULLs in nullable columns keep their validity lane and group as
SQL groups them: as one group, which a declared degree bound does not cap.
"""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import dodb
from dodb.storage import ingest

from ..operators.util import assert_same_rows

N = 40


def _people(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE people (pid INTEGER NOT NULL, ward INTEGER NOT NULL, v INTEGER, "
                "grp INTEGER, name VARCHAR)")
    con.execute(f"INSERT INTO people SELECT i, i % 20, i, CASE WHEN i < 10 THEN NULL ELSE i % 20 END, 'n' || i "
                f"FROM range({N}) t(i)")


def _protected():
    con = duckdb.connect()
    _people(con)
    db = dodb.attach(con, seed=3)
    db.set_budget(epsilon=100.0, delta=1e-3)
    db.protect("people", privacy_unit="pid", max_contributions=2, max_degree={"ward": 2, "grp": 2},
               capacity=200, widths={"name": 4})
    return db


def _rows(pid, ward, n=30) -> pa.Table:
    return pa.table({"pid": pa.array([pid] * n, pa.int32()),
                     "ward": pa.array([ward] * n if ward is None else [1000 + i for i in range(n)], pa.int32()),
                     "v": pa.array(range(n), pa.int32()), "grp": pa.array([None] * n, pa.int32()),
                     "name": pa.array(["x"] * n)})


def _state(db) -> tuple:
    info = db.catalog.table("people")
    return info.version, info.capacity, info.checksums, len(db.history()), db.budget["spent"]


# the two shapes the review found: a NULL unit column, a NULL degree column
SHAPES = {"unit column": dict(pid=None, ward=1), "degree column": dict(pid=7, ward=None)}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("action", ["insert", "replace_data"])
def test_null_in_a_not_null_column_is_refused_and_nothing_changes(action, shape):
    db = _protected()
    before = _state(db)
    col = "pid" if shape == "unit column" else "ward"
    rows = _rows(**SHAPES[shape])
    if shape == "degree column":   # distinct units, so only the NULL is wrong
        rows = rows.set_column(0, "pid", pa.array(range(500, 530), pa.int32()))
    with pytest.raises(dodb.CatalogError, match=rf"30 rows have a NULL in column '{col}', which is NOT NULL"):
        getattr(db, action)("people", rows, capacity=300)
    assert _state(db) == before          # nothing stored, nothing charged
    # the owner's data reads back as it was: no row of unit 0 gained rows
    assert db.sql("SELECT count(*) FROM people WHERE pid = 0", epsilon=1.0).fetchall() == [(1,)]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_protect_refuses_a_source_that_holds_null_in_a_not_null_column(monkeypatch, shape):
    """DuckDB keeps its own NOT NULL columns free of NULLs; protect does not rely on that
    (a source read by another path may not): the rows are refused before any charge."""
    con = duckdb.connect()
    _people(con)
    db = dodb.attach(con, seed=3)
    db.set_budget(epsilon=100.0, delta=1e-3)
    raw = con.sql("SELECT * FROM people").to_arrow_table()
    bad = pa.concat_tables([raw, _rows(**SHAPES[shape]).cast(raw.schema)])
    monkeypatch.setattr(ingest, "_raw_table", lambda con, name: bad)
    spent = db.budget["spent"]
    col = "pid" if shape == "unit column" else "ward"
    with pytest.raises(dodb.CatalogError, match=f"in column '{col}', which is NOT NULL"):
        db.protect("people", privacy_unit="pid", max_contributions=40, max_degree={"ward": 40}, widths={"name": 4})
    assert not db.catalog.table("people").private and db.budget["spent"] == spent


def test_storage_layer_never_writes_a_null_into_a_not_null_column():
    from dodb.operators.table import from_arrow
    from dodb.storage.layout import LogicalColumn, to_physical

    t = from_arrow(pa.table({"a": pa.array([1, None], pa.int64())}))
    with pytest.raises(ValueError, match="NOT NULL"):
        to_physical(t, [LogicalColumn("a", "BIGINT", False, 0)])
    assert to_physical(t, [LogicalColumn("a", "BIGINT", True, 0)]).num_rows == 2


def test_nulls_of_nullable_columns_are_kept_and_answer_like_duckdb():
    db = _protected()
    raw = duckdb.connect()
    _people(raw)
    extra = _rows(pid=7, ward=1, n=1).set_column(2, "v", pa.array([None], pa.int32()))
    db.insert("people", extra, capacity=300)
    raw.register("extra", extra)
    raw.execute("INSERT INTO people SELECT * FROM extra")
    for sql in ["SELECT count(*), count(v), count(grp) FROM people",
                "SELECT grp, count(*) AS n FROM people GROUP BY grp",
                # GROUP BY and PARTITION BY put every NULL in one group: the declared degree of
                # grp (non-NULL values) does not bound it
                "SELECT grp, string_agg(name, ',' ORDER BY name) AS s FROM people GROUP BY grp",
                "SELECT pid, count(*) OVER (PARTITION BY grp) AS n FROM people",
                "SELECT pid, row_number() OVER (PARTITION BY grp ORDER BY pid) AS r FROM people"]:
        assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), raw.sql(sql).to_arrow_table())
