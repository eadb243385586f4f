"""Issue 29: what a notebook shows (a Result as a table, the privacy report in words, a
Database by what it holds), DuckDB's hints kept in errors, and a locked file named with its
holder's PID."""
from __future__ import annotations

import subprocess
import sys

import pytest

import dodb


@pytest.fixture()
def db():
    d = dodb.connect(seed=3)
    d.con.execute("CREATE TABLE visits AS SELECT range AS id, range % 3 AS ward, 'w<' || (range % 3) AS tag "
                  "FROM range(30)")
    d.con.execute("CREATE TABLE wards AS SELECT range AS ward FROM range(3)")
    d.set_budget(epsilon=3, delta=1e-6)
    d.protect("visits", "id", max_contributions=1, widths={"tag": 4}, capacity=40)
    yield d
    d.close()


def test_a_result_renders_as_a_table_with_its_charge(db):
    res = db.sql("SELECT ward, tag, count(*) AS n FROM visits GROUP BY ALL ORDER BY ward", epsilon=0.5)
    text = repr(res)
    assert text.splitlines()[0].startswith("<dodb.Result 3 rows × 3 columns; charged ε=")
    assert "ward" in text and "pyarrow.Table" not in text  # DuckDB's box, not Arrow's dump
    page = res._repr_html_()
    assert page.count("<tr>") == 4 and "<th>tag</th>" in page and "w&lt;0" in page  # escaped
    assert "3 rows × 3 columns" in page and "charged ε=" in page
    # one line of privacy: the charge, the sizes released, what is left
    assert f"(query #{res.privacy.query_id}); 1 padded size released; ε=" in page and "left for the next query" in page
    assert res._repr_html_(max_rows=2).count("<tr>") == 3 and "first 2 shown" in res._repr_html_(max_rows=2)
    assert repr(res.privacy) == str(res.privacy) and "dataclass" not in repr(res.privacy)


def test_the_privacy_report_renders_its_releases_as_a_table(db):
    rep = db.sql("SELECT ward, count(*) FROM visits GROUP BY ward", epsilon=0.01).privacy
    (op,) = rep.operators
    assert op["padded"] is not None  # ε = 0.01: the draw is cut to the node's bound
    page = rep._repr_html_()
    assert page.startswith("<p><b>privacy report</b> for this differentially oblivious query: charged ε=0.01")
    row = f"<tr><td>{op['operator']}</td><td>groups</td><td>{op['padded']}</td><td>{op['value']}</td>"
    assert row in page and "size of visits:" in page and "left for the next query" in page
    free = db.sql("SELECT count(*) FROM wards", epsilon=0.5).privacy
    assert free.summary() == "charged nothing (public tables only)" and "<table>" not in free._repr_html_()


def test_the_database_and_its_budget_render_for_notebooks(db):
    db.sql("SELECT count(*) FROM visits GROUP BY ward", epsilon=0.5)
    page = db._repr_html_()
    assert page.startswith("<p><b>dodb.Database</b>: 2 table(s); budget ε 0.5 of 3 under the best of")
    assert "<tr><td>visits</td><td>private</td><td>visits</td><td>40</td></tr>" in page
    assert "<tr><td>wards</td><td>public</td><td></td><td></td></tr>" in page
    info = db.budget
    assert isinstance(info, dict) and info["budget"] == (3.0, 1e-6)  # still the dict it was
    assert repr(info).startswith("spent    ε 0.5 of 3 under") and "plain sum of the" in repr(info)
    html = info._repr_html_()
    assert "<tr><td>left</td><td>2.5</td>" in html and "<tr><td>plain sum</td><td>0.5</td>" in html


def test_a_database_says_what_it_holds(db):
    assert repr(db) == "<dodb.Database: 1 protected table(s) ['visits']>"
    db.close()
    assert repr(db) == "<dodb.Database (closed)>"


def test_duckdb_hints_are_kept_and_unknown_tables_get_a_suggestion(db):
    spent = db.budget["spent"]
    with pytest.raises(dodb.DodbError, match='Candidate bindings: "ward"'):
        db.sql("SELECT wardd FROM visits", epsilon=0.1)
    with pytest.raises(dodb.DodbError, match='did you mean "visits"'):
        db.sql("SELECT count(*) FROM vists", epsilon=0.1)
    with pytest.raises(dodb.DodbError) as e:
        db.sql("SELECT count(*) FROM zzzz", epsilon=0.1)
    assert "did you mean" not in str(e.value) and "\n" not in str(e.value)
    assert db.budget["spent"] == spent  # nothing was charged for any of them


def test_a_locked_file_names_its_holder(tmp_path):
    path = str(tmp_path / "held.duckdb")
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, sys, time; c = duckdb.connect({path!r}); "
                               "print('held', flush=True); sys.stdin.readline()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(dodb.DatabaseBusyError, match=rf"in use by another process \(PID {holder.pid}\)"):
            dodb.connect(path, wait=0.2)
    finally:
        holder.communicate("\n", timeout=30)


def test_a_missing_dataframe_library_loses_no_charged_answer(db, monkeypatch):
    """db.sql(...).df() without pandas: the charge was made, so the answer must not be lost.
    The error says where it is kept (db.last_result) and offers only what is installed."""
    monkeypatch.setitem(sys.modules, "pandas", None)  # import fails as if not installed
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(dodb.DodbError) as e:
        db.sql("SELECT ward, count(*) AS n FROM visits GROUP BY ward ORDER BY ward", epsilon=0.5).df()
    msg = str(e.value)
    assert "needs pandas: pip install pandas" in msg and "db.last_result" in msg and "\n" not in msg
    assert ".pl()" not in msg  # polars is missing too: never suggest it
    spent = db.budget["spent"]
    kept = db.last_result
    assert kept.fetchall() == [(0, 10), (1, 10), (2, 10)] and kept.privacy.query_id is not None
    assert db.budget["spent"] == spent  # reading the kept answer charges nothing
    monkeypatch.delitem(sys.modules, "pandas")
    assert kept.df()["n"].tolist() == [10, 10, 10]  # once pandas imports, the same Result converts
