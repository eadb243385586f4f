"""``dodb serve``: the engine as an Arrow Flight server (docs/design.md §Served mode).

The server runs where the observer watches; analysts stay elsewhere and connect with
``dodb.connect("grpc://host:port", token=…)`` (:mod:`dodb.remote`).  It accepts only
what :meth:`Database.sql` and :meth:`Database.explain` accept — a query goes through the
planner, the ledger and the DO operators, never to DuckDB as text — and answers with the
**padded** Arrow answer (:mod:`dodb.wire`) plus the privacy report; the client strips
the dummies, so the watched host never learns the answer's size
(docs/threat-model.md §Where the answer leaves the engine).

Protocol (docs/served.md): ``DoGet`` with a JSON ticket ``{"op": "query", "format":
"padded", "sql", "epsilon", "delta", "mode", "params"}`` streams the padded table; its
schema metadata carries the report (``dodb.report``), the fixed-width status word
(``dodb.status``) and the executed plan (``dodb.plan``).  ``{"op": "fetch", "format":
"padded", "query_id": n}`` sends a recent answer of the same analyst again without a new
charge (a client that died after the charge loses nothing while the server runs).  The
``"format": "padded"`` field is required: a padded answer holds dummy rows with plausible
values, so it goes only to a client that says it will strip them.  Actions: ``explain``,
``budget``, ``history`` (the analyst's own queries), ``tables`` (the catalog an analyst
may query).  Every call carries ``authorization: Bearer <token>`` (:mod:`dodb.tokens`);
errors go back as ``FlightServerError`` with the dodb error class and its one-line
message in ``extra_info``.  The other Flight calls (``list_flights``,
``get_flight_info``, ``get_schema``, ``do_put``, ``do_exchange``) answer with such an
error too.
"""
from __future__ import annotations

import hmac
import json
import queue
import sys
import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight

from .accountant import AccountantError
from .errors import DodbError
from .planner.params import params_from_wire
from .request_log import RequestLog, sql_fingerprint
from .result import PrivacyReport
from .tokens import add_token, list_tokens, revoke_token, verify_token
from .wire import PaddedAnswer

__all__ = ["DodbServer", "encode_answer", "MAX_SQL", "KEEP_ANSWERS", "ANSWER_FORMAT", "OWNER", "ANSWER_CHUNK"]

MAX_SQL = 1 << 20      # bytes of SQL text accepted in one request
KEEP_ANSWERS = 8       # recent answers kept per analyst for 'fetch' (in memory only)
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
ANSWER_FORMAT = "padded"  # the only answer format; a ticket must name it (module doc)
OWNER = "(owner)"  # the caller holding the owner credential (no token name has parentheses)
ANSWER_CHUNK = 1 << 22  # bytes of the answer's Arrow IPC stream in one result of the 'query' action
SESSION_SEPARATOR = "::"  # an analyst's session is named 'analyst::session' in the ledger (token names have no ':')
_USE_A_CLIENT = ("this is a dodb engine: connect with dodb.connect(\"grpc://host:port\", token=...) "
                 "or run 'dodb gateway' for Flight SQL tools (docs/served.md)")


def encode_answer(padded: PaddedAnswer, report: PrivacyReport, plan_text: str) -> pa.Table:
    """The padded table with the report, status word and plan in its schema metadata."""
    meta = dict(padded.table.schema.metadata or {})
    code = int(np.asarray(padded.status).reshape(-1)[0]) & 0xFFFFFFFFFFFFFFFF
    meta[b"dodb.status"] = f"{code:016x}".encode()  # fixed width: the status word's size never varies
    meta[b"dodb.report"] = report.to_json().encode()
    meta[b"dodb.plan"] = plan_text.encode()
    return padded.table.replace_schema_metadata(meta)


def _error(e: BaseException, analyst: str) -> flight.FlightServerError:
    """The error for the client: its dodb class and one-line message (``extra_info``).
    Errors that are not the user's (a bug, a DuckDB failure) are also logged for the operator."""
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    if not isinstance(e, (DodbError, AccountantError, ValueError, TypeError)):
        print(f"dodb serve: {type(e).__name__} in a request of {analyst}: {msg}", file=sys.stderr, flush=True)
    info: dict[str, Any] = {"type": type(e).__name__, "message": msg}
    for k in ("requested", "spent", "remaining"):
        if hasattr(e, k):
            info[k] = list(getattr(e, k))
    if hasattr(e, "exhausted"):
        info["exhausted"] = e.exhausted
    return flight.FlightServerError(msg, extra_info=json.dumps(info).encode())


_METHODS = {flight.FlightMethod.DO_GET: "get", flight.FlightMethod.DO_ACTION: "action",
            flight.FlightMethod.LIST_ACTIONS: "list_actions"}  # the calls a client makes, for the log


class _Analyst(flight.ServerMiddleware):
    def __init__(self, name: str):
        self.name = name


class _Auth(flight.ServerMiddlewareFactory):
    """Checks ``authorization: Bearer <token>`` on every call against the stored hashes."""

    def __init__(self, server: "DodbServer"):
        self.server: DodbServer | None = server  # dropped on close (the factory outlives the server in C++)

    def start_call(self, info, headers):
        values = headers.get("authorization") or []
        token = values[0][7:] if values and values[0].startswith("Bearer ") else None
        server = self.server
        name = None
        if server is not None and token:
            owner = server.owner_token
            name = OWNER if owner and hmac.compare_digest(owner, token) else verify_token(server.db.con, token)
        if name is None:
            if server is not None and server.request_log is not None:
                server.request_log.record(call=_METHODS.get(info.method, "?"), outcome="invalid token")
            raise flight.FlightUnauthenticatedError("dodb: invalid or revoked token")
        if info.method == flight.FlightMethod.GET_SCHEMA:
            # refused here: pyarrow's get_schema callback does not turn a FlightError into a
            # status (it sends the server's traceback), a middleware's start_call does
            raise _error(DodbError(f"GetSchema is not supported: {_USE_A_CLIENT}"), name)
        return _Analyst(name)


class _Logged:
    """One request's line of the request log (:mod:`dodb.request_log`): only the fields named there."""

    def __init__(self, server: "DodbServer", analyst: str, call: str):
        self.server = server
        self.fields: dict[str, Any] = {"analyst": analyst, "call": call}
        self.start = time.monotonic()

    def query(self, req: dict[str, Any]) -> None:
        self.fields["sql_fingerprint"] = sql_fingerprint(req.get("sql"))
        if isinstance(req.get("session"), str):
            self.fields["session"] = req["session"]

    def charged(self, report: PrivacyReport) -> None:
        self.fields.update(query_id=report.query_id, epsilon=report.charged_epsilon, delta=report.charged_delta)

    def finish(self, outcome: str, padded_rows: int | None = None) -> None:
        log = self.server.request_log
        if log is None:
            return
        # the duration is rounded to a millisecond: a DO plan's time depends on its padded sizes only
        log.record(**self.fields, padded_rows=padded_rows, outcome=outcome,
                   ms=round((time.monotonic() - self.start) * 1000))


class DodbServer(flight.FlightServerBase):
    """Serve one dodb :class:`~dodb.session.Database` (opened by the caller, closed by :meth:`close`).

    ``owner_token`` opens the ``admin:*`` actions (:mod:`dodb.owner_admin`); ``request_log``
    gets one line per request (:mod:`dodb.request_log`); the server closes both."""

    def __init__(self, db, host: str = "127.0.0.1", port: int = 0, *, tls: tuple[bytes, bytes] | None = None,
                 owner_token: str | None = None, request_log: RequestLog | None = None):
        scheme = "grpc+tls" if tls else "grpc"
        self.db = db
        self.host = host
        self.owner_token = owner_token
        self.request_log = request_log
        self.on_close: list = []  # called by close(), e.g. to remove the owner credential file
        self._answers: dict[str, OrderedDict[int, pa.Table]] = {}
        self._lock = threading.Lock()
        self._auth = _Auth(self)
        super().__init__(f"{scheme}://{host}:{port}", middleware={"auth": self._auth},
                         tls_certificates=[flight.CertKeyPair(*tls)] if tls else None)
        self.location = f"{scheme}://{host}:{self.port}"

    # -- requests -------------------------------------------------------------------------------
    @staticmethod
    def _analyst(context) -> str:
        return context.get_middleware("auth").name

    @staticmethod
    def _request(raw: bytes) -> dict[str, Any]:
        if len(raw) > MAX_SQL:
            raise DodbError(f"request larger than {MAX_SQL} bytes")
        try:
            req = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise DodbError("malformed request: expected JSON") from None
        if not isinstance(req, dict):
            raise DodbError("malformed request: expected a JSON object")
        return req

    @staticmethod
    def _query_args(req: dict[str, Any]) -> dict[str, Any]:
        sql = req.get("sql")
        if not isinstance(sql, str):
            raise DodbError("malformed request: 'sql' must be a string")
        mode = req.get("mode", "do")
        if not isinstance(mode, str):
            raise DodbError("malformed request: 'mode' must be a string")
        return {"epsilon": req.get("epsilon"), "delta": req.get("delta"), "mode": mode,
                "params": params_from_wire(req.get("params"))}

    @staticmethod
    def _session_name(name: str, session: Any) -> str:
        """The ledger's name of the analyst's session ``session``: no analyst reaches another's."""
        if not isinstance(session, str) or not session or ":" in session:
            raise DodbError(f"a session name is 1-64 letters, digits or _.@- ; got {session!r}")
        return f"{name}{SESSION_SEPARATOR}{session}"

    def _refuse_owner(self, name: str, call: str) -> None:
        if name == OWNER:
            raise DodbError(f"the owner credential opens the admin actions only, not {call}: query with an "
                            "analyst token (dodb token add FILE NAME)")

    def do_get(self, context, ticket):
        name = self._analyst(context)
        entry = _Logged(self, name, "get")
        try:
            self._refuse_owner(name, "DoGet")
            req = self._request(ticket.ticket)
            op = req.get("op")
            entry.fields["call"] = f"get:{op}" if op in ("query", "fetch") else "get"
            if op in ("query", "fetch") and req.get("format") != ANSWER_FORMAT:
                # the answer holds dummy rows with plausible values: only a client that strips them gets it
                raise DodbError(f"a dodb answer is padded with dummy rows: ask for it with \"format\": "
                                f"\"{ANSWER_FORMAT}\" and strip them ({_USE_A_CLIENT})")
            if op == "query":
                entry.query(req)
                table = self._query(name, req, entry)
            elif op == "fetch":
                table = self._fetch(name, req.get("query_id"))
            else:
                raise DodbError(f"unknown request {op!r}: 'query' or 'fetch'")
        except Exception as e:  # noqa: BLE001 - every error goes back as a dodb error, one line
            entry.finish(type(e).__name__)
            raise _error(e, name) from None
        entry.finish("ok", table.num_rows)
        return flight.RecordBatchStream(table)

    def _query(self, name: str, req: dict[str, Any], entry: _Logged | None = None, on_admit=None) -> pa.Table:
        args = self._query_args(req)
        if args["epsilon"] is None:
            raise DodbError("epsilon is required")
        session, account = f"analyst:{name}", None
        if req.get("session") is not None:
            session = account = self._session_name(name, req["session"])
        padded, report, plan = self.db.run(req["sql"], session=session, account=account, on_admit=on_admit, **args)
        if entry is not None:
            entry.charged(report)
        table = encode_answer(padded, report, plan.explain())
        if report.query_id is not None:
            with self._lock:
                kept = self._answers.setdefault(name, OrderedDict())
                kept[report.query_id] = table
                while len(kept) > KEEP_ANSWERS:
                    kept.popitem(last=False)
        return table

    def _query_stream(self, name: str, req: dict[str, Any], entry: _Logged):
        """The ``query`` action: first the admission (the charge that now stands, or ``null``
        for a query that charges nothing), then the padded answer as an Arrow IPC stream in
        chunks.  A client whose server dies after the first result knows it was charged."""
        events: queue.Queue = queue.Queue()

        def admitted(charge) -> None:
            events.put(("admitted", None if charge is None else
                        {"query_id": charge.query_id, "epsilon": charge.epsilon, "delta": charge.delta}))

        def work() -> None:  # the query runs on: a client that left can still fetch the answer
            try:
                events.put(("answer", self._query(name, req, entry, on_admit=admitted)))
            except BaseException as e:  # noqa: BLE001 - handed to the stream, raised there
                events.put(("error", e))

        outcome, rows = "client gone", None
        try:
            entry.query(req)
            threading.Thread(target=work, name="dodb-query", daemon=True).start()
            kind, value = events.get()
            if kind == "admitted":
                yield flight.Result(json.dumps({"admitted": value}).encode())
                kind, value = events.get()
            if kind == "error":
                outcome = type(value).__name__
                raise _error(value, name)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, value.schema) as writer:
                writer.write_table(value)
            data = sink.getvalue()
            for at in range(0, data.size, ANSWER_CHUNK):
                yield flight.Result(data.slice(at, min(ANSWER_CHUNK, data.size - at)))
            outcome, rows = "ok", value.num_rows
        finally:
            entry.finish(outcome, rows)

    def _fetch(self, name: str, query_id: Any) -> pa.Table:
        with self._lock:
            table = self._answers.get(name, {}).get(query_id)
        if table is None:
            raise DodbError(f"no recent answer of yours with query id {query_id!r} on this server "
                            f"(the last {KEEP_ANSWERS} are kept until the server stops)")
        return table

    # -- plain Flight calls: clean errors, never a traceback ------------------------------------------
    def _unsupported(self, context, call: str) -> flight.FlightServerError:
        return _error(DodbError(f"{call} is not supported: {_USE_A_CLIENT}"), self._analyst(context))

    def list_flights(self, context, criteria):
        raise self._unsupported(context, "ListFlights")

    def get_flight_info(self, context, descriptor):
        raise self._unsupported(context, "GetFlightInfo")

    def get_schema(self, context, descriptor):
        raise self._unsupported(context, "GetSchema")

    def do_put(self, context, descriptor, reader, writer):
        raise self._unsupported(context, "DoPut")

    def do_exchange(self, context, descriptor, reader, writer):
        raise self._unsupported(context, "DoExchange")

    def list_actions(self, context):
        return [("query", "run a query: its admission first, then the padded answer"),
                ("explain", "the plan of a query, charging nothing"), ("budget", "the dataset's budget"),
                ("history", "your charged queries"), ("tables", "the tables you can query, private or public"),
                ("session", "open or resume your analyst session"), ("session_close", "close your analyst session")]

    def do_action(self, context, action):
        name = self._analyst(context)
        entry = _Logged(self, name, action.type if isinstance(action.type, str) else "?")
        try:
            body = action.body.to_pybytes() if action.body else b"{}"
            if action.type == "query":
                self._refuse_owner(name, "queries")
                return self._query_stream(name, self._request(body), entry)
            out = self._action(name, action.type, body)
        except Exception as e:  # noqa: BLE001 - every error goes back as a dodb error, one line
            entry.finish(type(e).__name__)
            raise _error(e, name) from None
        entry.finish("ok")
        return [flight.Result(json.dumps(out, default=str).encode())]

    def _action(self, name: str, kind: str, body: bytes) -> Any:
        if kind.startswith("admin:") or name == OWNER:
            if name != OWNER:
                raise DodbError(f"{kind} is the owner's: it needs the owner credential of the server's machine")
            return self._admin(kind, self._request(body))
        if kind == "explain":
            req = self._request(body)
            args = self._query_args(req)
            eps = 1.0 if args["epsilon"] is None else args["epsilon"]
            return self.db.explain(req["sql"], epsilon=eps, delta=args["delta"], mode=args["mode"],
                                   as_dict=bool(req.get("as_dict")), params=args["params"])
        if kind == "budget":
            return self.db.budget
        if kind == "history":
            req = self._request(body)
            if req.get("session") is not None:
                self._session_name(name, req["session"])  # a well-formed name, or refused
            return [row for row in self._history_of(name) if req.get("session") is None
                    or (row["session"] == req["session"] and row["kind"] == "query")]
        if kind == "tables":
            return self.db.catalog_listing()
        if kind == "session":
            req = self._request(body)
            ledger_name = self._session_name(name, req.get("name"))
            self.db.session(epsilon=req.get("epsilon"), delta=req.get("delta"), name=ledger_name,
                            filter=req.get("filter"))
            return {**self.db.ledger.session_info(ledger_name), "name": req["name"]}
        if kind == "session_close":
            req = self._request(body)
            ledger_name = self._session_name(name, req.get("name"))
            self.db.session(name=ledger_name)  # refused unless it is open and the analyst's
            self.db.close_session(ledger_name)
            return {"closed": req["name"]}
        raise DodbError(f"unknown action {kind!r}: query, explain, budget, history, tables, session or session_close")

    def _history_of(self, name: str) -> list[dict[str, Any]]:
        """The analyst's charged queries, their sessions' included (``session``: its name, or null)."""
        mine, prefix = f"analyst:{name}", f"{name}{SESSION_SEPARATOR}"
        out = []
        for r in self.db.history():
            who = r.get("session") or ""
            if who == mine or who.startswith(prefix):
                row = {k: r.get(k) for k in ("query_id", "charged_at", "sql", "epsilon", "delta", "status", "error")}
                row["kind"] = r.get("kind") or "query"  # 'session': the charge that opened a session
                row["session"] = who[len(prefix):] if who.startswith(prefix) else None
                out.append(row)
        return out

    def _admin(self, kind: str, req: dict[str, Any]) -> Any:
        """The owner's calls while the server holds the file (docs/served.md §The owner while the server runs)."""
        if kind == "admin:budget":
            return self.db.budget
        if kind == "admin:history":
            return self.db.history(owner_actions=bool(req.get("owner_actions", True)))
        if kind == "admin:tokens":
            return list_tokens(self.db)
        if kind == "admin:token_add":
            return {"token": add_token(self.db, req.get("name"))}
        if kind == "admin:token_revoke":
            revoke_token(self.db, req.get("name"))  # the next request with it is refused (_Auth reads the table)
            return {"revoked": req.get("name")}
        raise DodbError(f"unknown owner action {kind!r}: admin:budget, admin:history, admin:tokens, "
                        "admin:token_add or admin:token_revoke")

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop serving; close the database and the request log; remove the owner credential."""
        try:
            self.shutdown()
        finally:
            self.db.close()
            self._answers.clear()
            self._auth.server = None
            if self.request_log is not None:
                self.request_log.close()
            for fn in self.on_close:
                fn()


def open_server(path: str, host: str = "127.0.0.1", port: int = 0, *, tls_cert: str | None = None,
                tls_key: str | None = None, request_log: str | None = "") -> DodbServer:
    """Open ``path`` (it must exist) and start serving it; :meth:`DodbServer.serve` blocks.

    ``request_log``: the log's path (``""``: ``PATH.requests.jsonl`` beside the database,
    ``None``: no log).  The owner credential is written to ``PATH.serve`` (:mod:`dodb.owner_admin`)."""
    from .owner_admin import remove_credential, write_credential
    from .request_log import default_log_path
    from .session import connect

    if (tls_cert is None) != (tls_key is None):
        raise DodbError("give both --tls-cert and --tls-key, or neither")
    tls = None
    if tls_cert is not None:
        with open(tls_cert, "rb") as c, open(tls_key, "rb") as k:
            tls = (c.read(), k.read())
    db = connect(path, create=False)
    log = None
    try:
        log = RequestLog(default_log_path(path) if request_log == "" else request_log) if request_log is not None \
            else None
        server = DodbServer(db, host, port, tls=tls, request_log=log)
    except BaseException:
        db.close()
        if log is not None:
            log.close()
        raise
    # the owner reaches the server from this machine: a wildcard address is reached on loopback
    near = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    scheme = "grpc+tls" if tls else "grpc"
    where = f"[{near}]" if ":" in near else near
    server.owner_token, cred = write_credential(path, f"{scheme}://{where}:{server.port}", tls_cert)
    server.on_close.append(lambda: remove_credential(cred, server.owner_token))
    return server


def is_loopback(host: str) -> bool:
    return host in _LOOPBACK
