"""Running a server (issue 29 item 2, docs/served.md): the owner's commands while ``dodb
serve`` holds the file, token revocation at the next request, ``dodb history grpc://…``,
the request log, analyst sessions over the wire, and a server killed mid-query.

Server processes listen on 127.0.0.1 with port 0 and run under ``timeout``, so they stop
by themselves even if a test dies before it stops them."""
from __future__ import annotations

import json
import os
import pathlib
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest

import dodb
from dodb import tokens
from dodb.owner_admin import credential_path
from dodb.remote import AuthenticationError, RemoteDatabase, ServerUnavailableError
from dodb.request_log import LOGGED_FIELDS
from dodb.serve import open_server

from ..cli_run import run_cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
GROUPED = "SELECT g, count(*) AS n FROM t GROUP BY g ORDER BY g"
SECRETS = [f"zebra-{i}" for i in range(10)]  # the private table's string values: none may reach the log


def _make(path: str, rows: int = 10) -> dict[str, str]:
    db = dodb.connect(path)
    db.con.execute(f"CREATE TABLE t AS SELECT range AS id, range % 3 AS g, 'zebra-' || range AS s FROM range({rows})")
    db.set_budget(epsilon=50.0, delta=1e-5)
    db.protect("t", "id", max_contributions=1, widths={"s": 12}, capacity=max(16, rows))
    toks = {name: tokens.add_token(db, name) for name in ("alice", "bob")}
    db.close()
    return toks


class _Server:
    """``dodb serve PATH`` in a process of its own that stops by itself after ``life`` seconds."""

    def __init__(self, path: str, life: int = 240):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "DODB_PROGRESS": "0"}
        self.proc = subprocess.Popen(["timeout", str(life), sys.executable, "-m", "dodb", "serve", path, "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        assert "serving" in line, (line, self.proc.stderr.read() if self.proc.poll() is not None else "")
        self.location = line.split(" at ", 1)[1].split(" ", 1)[0]

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)  # timeout passes it on to the server
        self.proc.wait(timeout=60)

    def kill_engine(self) -> None:
        """SIGKILL the server itself (``timeout``'s child), as a crash would."""
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout.split()
        for pid in out:
            os.kill(int(pid), signal.SIGKILL)
        self.proc.wait(timeout=60)


@pytest.fixture
def server_process(tmp_path):
    started: list[_Server] = []

    def start(path: str) -> _Server:
        s = _Server(path)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.stop()


def test_owner_reads_budget_history_and_manages_tokens_while_the_server_runs(tmp_path, server_process):
    path = str(tmp_path / "held.duckdb")
    toks = _make(path)
    srv = server_process(path)
    cred = credential_path(path)
    assert stat.S_IMODE(os.stat(cred).st_mode) == 0o600  # as private as the database file

    alice = RemoteDatabase(srv.location, token=toks["alice"])
    charged = alice.sql(GROUPED, epsilon=0.5).privacy

    start = time.monotonic()
    budget = run_cli("budget", path, "--json", cwd=tmp_path)
    assert budget.returncode == 0, budget.stderr
    info = json.loads(budget.stdout)
    assert info["budget"] == [50.0, 1e-5] and info["queries"] == 1
    assert info["spent"][0] == pytest.approx(charged.charged_epsilon)
    history = run_cli("history", path, cwd=tmp_path)
    assert history.returncode == 0 and f"query  #{charged.query_id}" in history.stdout
    assert "token_add alice" in history.stdout  # the owner's view: owner actions included
    assert time.monotonic() - start < 20  # answered by the server, not after the 60 s wait for the file lock

    added = run_cli("token", "add", path, "erin", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    erin = RemoteDatabase(srv.location, token=added.stdout.strip().splitlines()[-1])
    assert erin.sql(GROUPED, epsilon=0.25).fetchall() == [(0, 4), (1, 3), (2, 3)]
    listed = run_cli("token", "list", path, cwd=tmp_path)
    assert "erin" in listed.stdout and "active" in listed.stdout

    revoked = run_cli("token", "revoke", path, "erin", cwd=tmp_path)
    assert revoked.returncode == 0 and "next request" in revoked.stdout
    with pytest.raises(AuthenticationError):  # the very next request of the open client
        erin.budget
    assert alice.budget["queries"] == 2  # the others go on

    # the analyst's own history through the server (it crashed with a TypeError before)
    remote = run_cli("history", srv.location, "--token", toks["alice"], cwd=tmp_path)
    assert remote.returncode == 0, remote.stderr
    assert f"#{charged.query_id} ε=0.5" in remote.stdout and "erin" not in remote.stdout
    assert len(json.loads(run_cli("history", srv.location, "--token", toks["bob"], "--json", cwd=tmp_path).stdout)) == 0

    # the owner's calls are the owner's, and the owner credential runs no query
    with pytest.raises(dodb.DodbError, match="owner credential"):
        alice.call_action("admin:budget")
    owner = RemoteDatabase(srv.location, token=json.load(open(cred))["owner_token"])
    with pytest.raises(dodb.DodbError, match="admin actions only"):
        owner.sql(GROUPED, epsilon=0.5)
    refused = run_cli("budget", path, "--set", "60", "1e-5", cwd=tmp_path)
    assert refused.returncode == 2 and "stop it to set the budget" in refused.stderr
    for c in (alice, erin, owner):
        c.close()

    srv.stop()
    assert not os.path.exists(cred)  # removed when the server stops
    after = run_cli("budget", path, "--json", cwd=tmp_path)  # the file itself again
    assert after.returncode == 0 and json.loads(after.stdout)["queries"] == 2
    assert "erin" in run_cli("token", "list", path, cwd=tmp_path).stdout  # the revocation was written to the file


def _no_private_content(text: str, secrets: list[str]) -> list[str]:
    """What a log text holds that it must not: a private value, a token, a query's text."""
    return [s for s in secrets if s in text]


def test_the_request_log_holds_no_data_dependent_content(tmp_path, monkeypatch):
    path = str(tmp_path / "logged.duckdb")
    toks = _make(path)
    srv = open_server(path, "127.0.0.1", 0)
    threading.Thread(target=srv.serve, daemon=True).start()
    log_path = srv.request_log.path
    picky = f"SELECT count(*) AS n FROM t WHERE s = '{SECRETS[3]}'"
    try:
        alice = RemoteDatabase(srv.location, token=toks["alice"])
        first = alice.sql(GROUPED, epsilon=0.5).privacy
        alice.sql(picky, epsilon=0.5)
        alice.sql("SELECT count(*) AS n FROM t WHERE s = ?", epsilon=0.5, params=[SECRETS[4]])
        alice.sql(GROUPED, epsilon=30.0)
        with pytest.raises(dodb.BudgetExceededError):
            alice.sql(GROUPED, epsilon=30.0)  # of a budget of 50
        alice.explain(GROUPED)
        alice.budget
        with pytest.raises(AuthenticationError):
            RemoteDatabase(srv.location, token="dodb_nope")
        alice.close()
    finally:
        srv.close()
    text = open(log_path).read()
    lines = [json.loads(x) for x in text.splitlines()]
    assert stat.S_IMODE(os.stat(log_path).st_mode) == 0o600
    assert all(list(x) == list(LOGGED_FIELDS) for x in lines)
    calls = [(x["call"], x["outcome"]) for x in lines]
    assert calls == [("query", "ok")] * 4 + [("query", "BudgetExceededError"), ("explain", "ok"), ("budget", "ok"),
                                             ("list_actions", "invalid token")]
    q = lines[0]
    assert q["analyst"] == "alice" and q["query_id"] == first.query_id
    assert q["epsilon"] == pytest.approx(first.charged_epsilon) and q["padded_rows"] >= 3 and q["ms"] >= 0
    assert lines[4]["epsilon"] is None and lines[4]["query_id"] is None  # refused: nothing charged
    assert lines[0]["sql_fingerprint"] != lines[1]["sql_fingerprint"]
    secrets = SECRETS + list(toks.values()) + [GROUPED, picky, "zebra"]
    assert _no_private_content(text, secrets) == []

    # the check catches a log that writes the query text (here holding a private value)
    from dodb import serve

    monkeypatch.setattr(serve, "sql_fingerprint", lambda sql: sql)
    os.unlink(log_path)
    srv = open_server(path, "127.0.0.1", 0)
    threading.Thread(target=srv.serve, daemon=True).start()
    try:
        with RemoteDatabase(srv.location, token=toks["alice"]) as alice:
            alice.sql(picky, epsilon=0.5)
    finally:
        srv.close()
    assert SECRETS[3] in _no_private_content(open(log_path).read(), secrets)


def test_analyst_sessions_over_served_mode(tmp_path):
    path = str(tmp_path / "sessions.duckdb")
    toks = _make(path)
    srv = open_server(path, "127.0.0.1", 0, request_log=None)
    threading.Thread(target=srv.serve, daemon=True).start()
    try:
        alice = RemoteDatabase(srv.location, token=toks["alice"])
        bob = RemoteDatabase(srv.location, token=toks["bob"])
        s = alice.session(epsilon=2.0, delta=1e-6, name="s1")
        before = alice.budget["spent"][0]
        res = s.sql(GROUPED, epsilon=0.5)
        assert res.fetchall() == [(0, 4), (1, 3), (2, 3)] and res.privacy.session == "alice::s1"
        assert alice.budget["spent"][0] == before  # charged to the session, which was charged once when opened
        b = s.budget
        assert b["name"] == "s1" and b["budget"] == (2.0, 1e-6) and 0 < b["spent"][0] < 2.0 and b["queries"] == 1
        with pytest.raises(dodb.BudgetExceededError):
            s.sql(GROUPED, epsilon=5.0)  # above what the session has left
        assert [r["query_id"] for r in s.history()] == [res.privacy.query_id]
        assert [(r["session"], r["kind"]) for r in alice.history()] == [("s1", "session"), ("s1", "query")]
        again = RemoteDatabase(srv.location, token=toks["alice"]).session(name="s1")  # resumed elsewhere
        assert again.budget["queries"] == 1
        with pytest.raises(dodb.DodbError, match="no analyst session named 'bob::s1'"):
            bob.session(name="s1")  # a name is the analyst's own: bob does not reach alice's session
        with pytest.raises(dodb.DodbError, match="session name"):
            alice.session(epsilon=1.0, delta=1e-6, name="bob::s1")
        s.close()
        with pytest.raises(dodb.DodbError, match="closed"):
            s.sql(GROUPED, epsilon=0.1)
    finally:
        srv.close()


def test_a_server_killed_mid_query_says_the_query_was_charged(tmp_path, server_process):
    path = str(tmp_path / "killed.duckdb")
    toks = _make(path, rows=1_000_000)  # a query of about a second: killed while it runs
    srv = server_process(path)
    client = RemoteDatabase(srv.location, token=toks["alice"])
    client.sql("SELECT count(*) AS n FROM t", epsilon=0.1)  # the kernels are loaded: the next query only runs
    outcome: list = []

    def ask() -> None:
        try:
            outcome.append(client.sql("SELECT s, count(*) AS n FROM t GROUP BY s", epsilon=0.5))
        except Exception as e:  # noqa: BLE001 - the test reads it
            outcome.append(e)

    worker = threading.Thread(target=ask)
    worker.start()
    deadline = time.monotonic() + 60
    while not client.admitted and time.monotonic() < deadline:
        time.sleep(0.002)
    assert client.admitted, "the server never acknowledged the admission"
    srv.kill_engine()
    worker.join(60)
    (err,) = outcome
    assert isinstance(err, ServerUnavailableError), err
    qid = client.admitted["query_id"]
    msg = str(err)
    eps = client.admitted["epsilon"]
    assert "\n" not in msg and f"query #{qid} ran: it was admitted and charged ε={eps:.4g}" in msg and "stands" in msg
    assert err.charged == (eps, client.admitted["delta"]) and err.query_id == qid

    # the message was true: the ledger holds that charge
    os.unlink(credential_path(path))  # left by the killed server
    with dodb.connect(path, read_only=True) as db:
        row = [r for r in db.history() if r["query_id"] == qid]
    assert row and row[0]["epsilon"] == pytest.approx(eps)
