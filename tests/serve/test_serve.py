"""Served mode over loopback (docs/design.md §Served mode): tokens, concurrent clients,
restarts, a client killed mid-query, errors across the wire, the CLI end to end.

Every server listens on 127.0.0.1 with port 0 and is stopped by the fixture (or killed
by the test that started it as a process)."""
from __future__ import annotations

import math
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pytest

import dodb

from ..cli_run import run_cli
from dodb import tokens
from dodb.remote import AuthenticationError, RemoteDatabase
from dodb.serve import DodbServer, open_server

ROOT = pathlib.Path(__file__).resolve().parents[2]
GROUPED = "SELECT g, count(*) AS n, min(s) AS s FROM t GROUP BY g ORDER BY g"
WANT = [(0, 4, "x0"), (1, 3, "x1"), (2, 3, "x2")]


def _make(path: str) -> dict[str, str]:
    db = dodb.connect(path)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g, 'x' || range AS s FROM range(10)")
    db.con.execute("CREATE TABLE pub AS SELECT range AS k FROM range(4)")
    db.set_budget(epsilon=50.0, delta=1e-5)
    db.protect("t", "id", max_contributions=1, widths={"s": 8}, capacity=16)
    toks = {name: tokens.add_token(db, name) for name in ("alice", "bob", "carol")}
    db.close()
    return toks


@pytest.fixture
def served(tmp_path):
    path = str(tmp_path / "served.duckdb")
    toks = _make(path)
    servers: list[DodbServer] = []

    def start() -> DodbServer:
        srv = open_server(path, "127.0.0.1", 0)
        servers.append(srv)
        return srv

    try:
        yield path, toks, start
    finally:
        for srv in servers:
            try:
                srv.close()
            except Exception:  # noqa: BLE001 - already closed by the test
                pass


def _sums(rows):
    return math.fsum(r["epsilon"] for r in rows), math.fsum(r["delta"] for r in rows)


def test_query_explain_budget_history_over_loopback(served):
    path, toks, start = served
    srv = start()
    assert srv.location.startswith("grpc://127.0.0.1:")
    with dodb.connect(srv.location, token=toks["alice"]) as remote:
        assert isinstance(remote, RemoteDatabase)
        res = remote.sql(GROUPED, epsilon=0.5)
        assert res.fetchall() == WANT and res.columns == ["g", "n", "s"]
        assert res.padded.padded_size >= 3 and res.padded.table.column_names[0] == "dodb:real_row"  # padded on the wire
        assert res.arrow().num_rows == 3 and len(res.df()) == 3
        assert res.privacy.charged_epsilon <= 0.5 + 1e-9 and res.privacy.query_id is not None
        assert "Aggregate" in res.explain() and "charged" in str(res.privacy)
        assert res.relation.filter("n > 3").fetchall() == [(0, 4, "x0")]
        assert "Aggregate" in remote.explain(GROUPED, epsilon=0.5)
        assert remote.explain(GROUPED, epsilon=0.5, as_dict=True)["delta"] == pytest.approx(remote.budget["default_delta"])
        public = remote.sql("SELECT count(*) AS n FROM pub", epsilon=0.5)
        assert public.fetchall() == [(4,)] and public.privacy.charged_epsilon == 0
        mine = remote.history()
        assert [h["query_id"] for h in mine] == [res.privacy.query_id]
        b = remote.budget
        assert b["spent"] == pytest.approx(_sums(srv.db.history()), rel=1e-12)
        with pytest.raises(dodb.BudgetExceededError, match="δ ran out") as e:
            remote.sql(GROUPED, epsilon=0.5, delta=5e-6)  # more δ than the filter has for one query
        assert e.value.exhausted == "delta" and e.value.remaining.epsilon > 0
        with pytest.raises(dodb.PlanningError):
            remote.sql("SELEC nonsense", epsilon=0.5)
        with pytest.raises(dodb.DodbError, match="allow_insecure"):
            remote.sql(GROUPED, epsilon=0.5, mode="plain")  # the server never runs private data unprotected
        with pytest.raises(dodb.DodbError):
            remote.sql("CREATE TABLE x AS SELECT 1", epsilon=0.5)  # no raw SQL reaches DuckDB
        assert remote.budget["spent"] == b["spent"]  # refusals charged nothing


def test_bad_missing_and_revoked_tokens_are_refused(served):
    path, toks, start = served
    srv = start()
    for bad in ("dodb_" + "x" * 43, "not-a-token", toks["alice"] + "x"):
        with pytest.raises(AuthenticationError, match="refused the token"):
            dodb.connect(srv.location, token=bad)
    with pytest.raises(AuthenticationError, match="needs token="):
        dodb.connect(srv.location)
    bob = dodb.connect(srv.location, token=toks["bob"])
    assert bob.sql("SELECT count(*) FROM pub", epsilon=0.5).fetchall() == [(4,)]
    tokens.revoke_token(srv.db, "bob")  # the owner, on the server's database
    with pytest.raises(AuthenticationError):
        bob.sql(GROUPED, epsilon=0.5)
    assert srv.db.history() == []  # nothing was charged for refused callers
    acts = [(a["action"], a["target"]) for a in srv.db.ledger.owner_actions() if a["action"].startswith("token")]
    assert acts == [("token_add", "alice"), ("token_add", "bob"), ("token_add", "carol"), ("token_revoke", "bob")]
    assert all(toks["bob"] not in str(a) for a in srv.db.ledger.owner_actions())  # tokens are never recorded


def test_two_concurrent_clients(served):
    path, toks, start = served
    srv = start()
    errors, answers = [], []

    def analyst(name: str) -> None:
        try:
            with dodb.connect(srv.location, token=toks[name]) as remote:
                for _ in range(4):
                    answers.append((name, remote.sql(GROUPED, epsilon=0.25).fetchall()))
                    remote.budget  # noqa: B018
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=analyst, args=(n,)) for n in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert errors == [] and len(answers) == 8 and all(a == WANT for _, a in answers)
    hist = srv.db.history()
    assert sorted(r["session"] for r in hist) == ["analyst:alice"] * 4 + ["analyst:bob"] * 4
    assert srv.db.budget["spent"] == pytest.approx(_sums(hist), rel=1e-12)


def test_a_restart_keeps_the_ledger(served):
    path, toks, start = served
    srv = start()
    with dodb.connect(srv.location, token=toks["alice"]) as remote:
        first = remote.sql(GROUPED, epsilon=0.5).privacy
        spent = remote.budget["spent"]
    srv.close()
    srv2 = start()
    with dodb.connect(srv2.location, token=toks["alice"]) as remote:
        assert remote.budget["spent"] == pytest.approx(spent)
        second = remote.sql(GROUPED, epsilon=0.5).privacy
        assert second.query_id == first.query_id + 1
        assert [h["query_id"] for h in remote.history()] == [first.query_id, second.query_id]


_KILLED_CLIENT = """
import sys, dodb
remote = dodb.connect(sys.argv[1], token=sys.argv[2])
print("asking", flush=True)
remote.sql(sys.argv[3], epsilon=0.5)
print("answered", flush=True)
"""


def test_a_client_killed_mid_query_loses_nothing(served):
    path, toks, start = served
    srv = start()
    running, release = threading.Event(), threading.Event()
    run = srv.db.run

    def slow_run(*a, **kw):  # the query has been admitted and executed: hold the answer back
        out = run(*a, **kw)
        running.set()
        release.wait(30)
        return out

    srv.db.run = slow_run
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    client = subprocess.Popen([sys.executable, "-c", _KILLED_CLIENT, srv.location, toks["carol"], GROUPED],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert running.wait(120), client.stderr.read() if client.poll() is not None else "no query arrived"
        client.send_signal(signal.SIGKILL)
        client.wait(30)
    finally:
        release.set()
        if client.poll() is None:
            client.kill()
    assert "answered" not in client.stdout.read()
    srv.db.run = run
    time.sleep(0.2)
    # the charge stands (documented: the query ran) and the ledger is whole
    hist = srv.db.history()
    assert len(hist) == 1 and hist[0]["session"] == "analyst:carol" and hist[0]["status"] == "completed"
    assert srv.db.budget["spent"] == pytest.approx(_sums(hist), rel=1e-12)
    # the analyst gets the answer again without a new charge, and the server keeps serving
    with dodb.connect(srv.location, token=toks["carol"]) as remote:
        qid = remote.history()[0]["query_id"]
        assert remote.fetch(qid).fetchall() == WANT
        with pytest.raises(dodb.DodbError, match="no recent answer"):
            remote.fetch(qid + 100)
        assert remote.sql(GROUPED, epsilon=0.5).fetchall() == WANT
    with dodb.connect(srv.location, token=toks["alice"]) as other:
        with pytest.raises(dodb.DodbError, match="no recent answer"):
            other.fetch(qid)  # answers are per analyst
    assert len(srv.db.history()) == 2


def test_cli_serve_token_and_remote_query(tmp_path):
    path = str(tmp_path / "cli.duckdb")
    toks = _make(path)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    new = subprocess.run([sys.executable, "-m", "dodb", "token", "add", path, "dave"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert new.returncode == 0 and new.stdout.strip().startswith("dodb_") and "shown once" in new.stderr
    server = subprocess.Popen([sys.executable, "-m", "dodb", "serve", path, "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = server.stdout.readline()
        assert "serving" in line, server.stderr.read() if server.poll() is not None else line
        location = line.split(" at ", 1)[1].split()[0]
        with dodb.connect(location, token=new.stdout.strip()) as remote:
            assert remote.sql(GROUPED, epsilon=0.5).fetchall() == WANT
        q = subprocess.run([sys.executable, "-m", "dodb", "query", location, GROUPED, "--epsilon", "0.5",
                            "--token", toks["alice"]], capture_output=True, text=True, env=env, timeout=120)
        assert q.returncode == 0, q.stderr
        assert "x2" in q.stdout and "ε used: 0.5" in q.stdout
        h = run_cli("history", location, "--token", toks["alice"], cwd=tmp_path)  # it raised a TypeError
        assert h.returncode == 0, h.stderr
        assert len(h.stdout.splitlines()) == 1 and "ε=0.5" in h.stdout and GROUPED[:30] in h.stdout
        b = run_cli("budget", location, "--token", toks["alice"], cwd=tmp_path)
        assert b.returncode == 0 and "spent" in b.stdout, b.stderr
        bad = subprocess.run([sys.executable, "-m", "dodb", "query", location, GROUPED, "--epsilon", "0.5", "--token", "dodb_nope"],
                             capture_output=True, text=True, env=env, timeout=120)
        assert bad.returncode == 2 and "refused the token" in bad.stderr and "Traceback" not in bad.stderr
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    db = dodb.connect(path)  # the server released the file; the ledger has both queries
    assert [r["session"] for r in db.history()] == ["analyst:dave", "analyst:alice"]
    db.close()


def test_an_internal_server_error_is_one_dodb_error(served, capfd):
    path, toks, start = served
    srv = start()

    def broken(*a, **kw):
        raise KeyError("engine bug")

    srv.db.run = broken
    with dodb.connect(srv.location, token=toks["alice"]) as remote:
        with pytest.raises(dodb.DodbError, match="KeyError") as e:
            remote.sql(GROUPED, epsilon=0.5)
        assert "\n" not in str(e.value)
    assert "KeyError in a request of alice" in capfd.readouterr().err  # logged for the operator


def test_tls(served, tmp_path):
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a self-signed certificate")
    path, toks, _ = served
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=120)
    srv = open_server(path, "127.0.0.1", 0, tls_cert=str(cert), tls_key=str(key))
    try:
        assert srv.location.startswith("grpc+tls://127.0.0.1:")
        with dodb.connect(srv.location, token=toks["alice"], tls_root_certs=cert.read_bytes()) as remote:
            assert remote.sql(GROUPED, epsilon=0.5).fetchall() == WANT
        plain = srv.location.replace("grpc+tls://", "grpc://")
        with pytest.raises(dodb.DodbError):  # a client that does not speak TLS gets nothing
            dodb.connect(plain, token=toks["alice"]).sql(GROUPED, epsilon=0.5)
    finally:
        srv.close()


def test_params_are_typed_values_bound_on_the_server(served):
    """``params=`` crosses the wire as typed values and the server binds them as literal nodes,
    as the local path does (planner/params.py); a bad parameter charges nothing."""
    import datetime as dt
    import decimal
    import json

    import pyarrow.flight as flight

    path, toks, start = served
    srv = start()
    sql = "SELECT g, count(*) AS n, min(s) AS s FROM t WHERE id >= ? AND s <> ? GROUP BY g ORDER BY g"
    evil = "x0' OR 1=1; DROP TABLE t; --"
    with dodb.connect(srv.location, token=toks["alice"]) as remote:
        res = remote.sql(sql, epsilon=0.5, params=[1, evil])
        assert res.fetchall() == [(0, 3, "x3"), (1, 3, "x1"), (2, 3, "x2")]
        assert srv.db.sql(sql, epsilon=0.5, params=[1, evil]).fetchall() == res.fetchall()  # as the local path
        named = remote.sql("SELECT count(*) AS n FROM t WHERE id < $k AND CAST(id AS DOUBLE) < $f "
                           "AND DATE '2020-01-01' + CAST(id AS INTEGER) < $d AND s IS DISTINCT FROM $none",
                           epsilon=0.5, params={"k": decimal.Decimal("5.5"), "f": 3.5,
                                                "d": dt.date(2020, 1, 4), "none": None})
        assert named.fetchall() == [(3,)]
        assert remote.history()[0]["sql"].count("?") == 0  # the ledger keeps the query as it ran
        assert "Aggregate" in remote.explain(sql, epsilon=0.5, params=[1, "x"])
        spent = remote.budget["spent"]
        with pytest.raises(dodb.InvalidParameterError, match=r"\$2"):
            remote.sql(sql, epsilon=0.5, params=[1])
        with pytest.raises(dodb.InvalidParameterError, match="set"):
            remote.sql(sql, epsilon=0.5, params=[1, {2}])  # refused in the analyst's process
        raw = flight.FlightClient(srv.location)
        opts = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {toks['alice']}".encode())])
        ticket = {"op": "query", "format": "padded", "sql": sql, "epsilon": 0.5, "params": {"positional": [["int", "1"], ["sql", "1=1"]]}}
        with pytest.raises(flight.FlightServerError, match="unknown parameter type"):
            raw.do_get(flight.Ticket(json.dumps(ticket).encode()), opts).read_all()
        raw.close()
        assert remote.budget["spent"] == spent


def test_a_list_crosses_the_wire_as_fixed_lanes(served):
    """list/array_agg (docs/design.md §list): padded fixed-size lanes on the wire, the client builds the lists."""
    path, toks, start = served
    srv = start()
    with dodb.connect(srv.location, token=toks["alice"]) as remote:
        res = remote.sql("SELECT g, list(s ORDER BY id) AS l FROM t GROUP BY g ORDER BY g", epsilon=0.5)
        assert res.fetchall() == [(0, ["x0", "x3", "x6", "x9"]), (1, ["x1", "x4", "x7"]), (2, ["x2", "x5", "x8"])]
        assert "c1:ev" in res.padded.table.column_names
        assert str(res.arrow().schema.field("l").type) == "list<l: string>"


def test_plain_flight_calls_get_clean_errors_and_no_unlabelled_padded_answer(served):
    """A plain pyarrow.flight client (not dodb's): every call answers with a one-line dodb
    error naming the way in, and a ticket that does not ask for the padded format gets none."""
    import json

    import pyarrow.flight as flight

    path, toks, start = served
    srv = start()
    raw = flight.FlightClient(srv.location)
    opts = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {toks['alice']}".encode())])
    desc = flight.FlightDescriptor.for_command(b"SELECT 1")
    calls = {"ListFlights": lambda: list(raw.list_flights(options=opts)),
             "GetFlightInfo": lambda: raw.get_flight_info(desc, opts),
             "GetSchema": lambda: raw.get_schema(desc, opts)}
    try:
        for name, call in calls.items():
            # GetSchema is refused by the auth middleware (pyarrow's get_schema callback would send a
            # traceback), and pyarrow's client raises that status as a plain OSError
            with pytest.raises(OSError if name == "GetSchema" else flight.FlightServerError) as e:
                call()
            msg = str(e.value)
            assert f"{name} is not supported" in msg and "dodb gateway" in msg and "Traceback" not in msg
            if name != "GetSchema":
                assert json.loads(e.value.extra_info)["type"] == "DodbError"
        for op in ({"op": "query", "sql": GROUPED, "epsilon": 0.5}, {"op": "fetch", "query_id": 1},
                   {"op": "query", "format": "arrow", "sql": GROUPED, "epsilon": 0.5}):
            with pytest.raises(flight.FlightServerError, match="padded with dummy rows") as e:
                raw.do_get(flight.Ticket(json.dumps(op).encode()), opts).read_all()
            assert "\n" not in str(e.value).split(". Detail:")[0]
        assert srv.db.history() == []  # refused before admission: nothing charged
        ok = {"op": "query", "format": "padded", "sql": GROUPED, "epsilon": 0.5}
        table = raw.do_get(flight.Ticket(json.dumps(ok).encode()), opts).read_all()
        assert table.column_names[0] == "dodb:real_row"  # the validity lane is named plainly
        assert sum(table.column("dodb:real_row").to_pylist()) == 3 and table.num_rows >= 3
        with pytest.raises(flight.FlightUnauthenticatedError):
            list(raw.list_flights())  # no token: refused before anything else
    finally:
        raw.close()


def test_tables_action_lists_protection_unit_capacity_and_columns(served):
    path, toks, start = served
    srv = start()
    with dodb.connect(srv.location, token=toks["alice"]) as remote:
        listing = remote.catalog()
        assert (listing["database"], listing["schema"]) == ("served", "main")
        tables = {t["name"]: t for t in remote.tables()}
        assert set(tables) == {"t", "pub"}  # dodb's own bookkeeping is not listed
        t, pub = tables["t"], tables["pub"]
        assert (t["protection"], t["unit"], t["privacy_unit"], t["capacity"]) == ("private", ["t"], "id", 16)
        assert [(c["name"], c["type"]) for c in t["columns"]] == [("id", "BIGINT"), ("g", "BIGINT"), ("s", "VARCHAR")]
        assert (pub["protection"], pub["unit"], pub["capacity"]) == ("public", None, None)
        assert [(c["name"], c["type"]) for c in pub["columns"]] == [("k", "BIGINT")]
        assert remote.history() == []  # listing charges nothing
