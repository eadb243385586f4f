"""Progress for long queries (terminal and notebook) and optional libraries checked before a
query is charged (issue 29 items 3 and 4)."""
from __future__ import annotations

import io
import sys
import threading
import time
import types

import pytest

import dodb
from dodb import progress as progress_module
from dodb.progress import progress

QUERY = "SELECT g, count(*) AS n FROM t GROUP BY g ORDER BY g"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def db():
    d = dodb.connect(seed=1)
    d.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(30)")
    d.set_budget(epsilon=10.0, delta=1e-6)
    d.protect("t", "id", max_contributions=1, capacity=40)
    yield d
    d.close()


@pytest.mark.parametrize("output,module", [("df", "pandas"), ("pl", "polars")])
def test_a_missing_library_is_refused_before_anything_is_charged(db, monkeypatch, output, module):
    monkeypatch.setitem(sys.modules, module, None)  # as if it were not installed
    for run in (db.sql, db.session(epsilon=2.0, delta=1e-7, name=f"s-{output}").sql):
        before = db.budget["spent"]
        charged = len(db.history())
        with pytest.raises(dodb.DodbError) as e:
            run(QUERY, epsilon=0.5, output=output)
        msg = str(e.value)
        assert "\n" not in msg and f"needs {module}: pip install {module}" in msg and "nothing was charged" in msg
        assert db.budget["spent"] == before and len(db.history()) == charged
    with pytest.raises(dodb.InvalidParameterError, match="choose one of arrow, df, pl"):
        db.sql(QUERY, epsilon=0.5, output="excel")
    assert db.sql(QUERY, epsilon=0.5, output="arrow").fetchall() == [(0, 10), (1, 10), (2, 10)]


def test_a_missing_library_is_refused_before_a_served_query_is_sent(tmp_path, monkeypatch):
    from dodb import tokens
    from dodb.serve import open_server

    path = str(tmp_path / "s.duckdb")
    d = dodb.connect(path)
    d.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(30)")
    d.set_budget(epsilon=10.0, delta=1e-6)
    d.protect("t", "id", max_contributions=1, capacity=40)
    token = tokens.add_token(d, "ann")
    d.close()
    srv = open_server(path, "127.0.0.1", 0, request_log=None)
    threading.Thread(target=srv.serve, daemon=True).start()
    try:
        with dodb.connect(srv.location, token=token) as remote:
            monkeypatch.setitem(sys.modules, "pandas", None)
            with pytest.raises(dodb.DodbError, match="needs pandas"):
                remote.sql(QUERY, epsilon=0.5, output="df")
            with pytest.raises(dodb.DodbError, match="needs pandas"):
                remote.session(epsilon=1.0, delta=1e-7, name="s").sql(QUERY, epsilon=0.5, output="df")
            assert [r["kind"] for r in remote.history()] == ["session"]  # the session's opening, no query
    finally:
        srv.close()


ERASE_LINE, SHOW_CURSOR = "\x1b[2K", "\x1b[?25h"


def test_terminal_progress_shows_after_its_delay_and_clears(monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with progress("running", after=0.05) as shown:
        time.sleep(0.35)
        shown.say("charged ε=0.5 (query #3)")
        time.sleep(0.35)
    out = term.getvalue()
    assert "running" in out and "charged ε=0.5 (query #3)" in out
    # the last thing written erases the spinner's line (ANSI erase-line), and the cursor is shown again
    assert out.endswith(ERASE_LINE) and out.index(SHOW_CURSOR) > out.rindex("running")
    quick = _Terminal()
    monkeypatch.setattr(sys, "stderr", quick)
    with progress("running", after=0.5):
        pass
    assert quick.getvalue() == ""  # a quick answer is not preceded by a flicker
    piped = io.StringIO()  # not a terminal, and no notebook: nothing at all
    monkeypatch.setattr(sys, "stderr", piped)
    with progress("running", after=0.0):
        time.sleep(0.3)
    assert piped.getvalue() == ""


def test_database_sql_shows_progress_once_a_query_runs_long(db, monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setattr(progress_module, "PROGRESS_AFTER", 0.0)
    real_run = db.run

    def slow_run(*a, **kw):
        time.sleep(0.4)
        return real_run(*a, **kw)

    monkeypatch.setattr(db, "run", slow_run)
    db.sql(QUERY, epsilon=0.5)
    assert "running" in term.getvalue()


def test_notebook_progress_uses_one_display_handle(monkeypatch):
    shown: list = []

    class Handle:
        def update(self, obj):
            shown.append(("update", obj))

    class ZMQInteractiveShell:  # what get_ipython() returns in a Jupyter kernel
        pass

    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: ZMQInteractiveShell()
    display_mod = types.ModuleType("IPython.display")
    display_mod.HTML = lambda text: ("html", text)

    def display(obj, display_id=False):
        assert display_id is True
        shown.append(("display", obj))
        return Handle()

    display_mod.display = display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_mod)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a kernel's stderr is no terminal
    with progress("running", after=0.05):
        time.sleep(0.8)
    assert shown[0][0] == "display" and "running" in shown[0][1][1]
    assert shown[-1] == ("update", ("html", ""))  # cleared at the end
    assert any(kind == "update" and "running" in obj[1] for kind, obj in shown[1:-1])
