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

import json
import sys
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight

from .accountant import AccountantError
from .errors import DodbError
from .planner.params import params_from_wire
from .result import PrivacyReport
from .tokens import verify_token
from .wire import PaddedAnswer

__all__ = ["DodbServer", "encode_answer", "MAX_SQL", "KEEP_ANSWERS", "ANSWER_FORMAT"]

MAX_SQL = 1 << 20      # bytes of SQL text accepted in one request
KEEP_ANSWERS = 8       # recent answers kept per analyst for 'fetch' (in memory only)
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
ANSWER_FORMAT = "padded"  # the only answer format; a ticket must name it (module doc)
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
        name = verify_token(server.db.con, token) if server is not None else None
        if name is None:
            raise flight.FlightUnauthenticatedError("dodb: invalid or revoked token")
        if info.method == flight.FlightMethod.GET_SCHEMA:
            # refused here: pyarrow's get_schema callback does not turn a FlightError into a
            # status (it sends the server's traceback), a middleware's start_call does
            raise _error(DodbError(f"GetSchema is not supported: {_USE_A_CLIENT}"), name)
        return _Analyst(name)


class DodbServer(flight.FlightServerBase):
    """Serve one dodb :class:`~dodb.session.Database` (opened by the caller, closed by :meth:`close`)."""

    def __init__(self, db, host: str = "127.0.0.1", port: int = 0, *, tls: tuple[bytes, bytes] | None = None):
        scheme = "grpc+tls" if tls else "grpc"
        self.db = db
        self.host = host
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

    def do_get(self, context, ticket):
        name = self._analyst(context)
        try:
            req = self._request(ticket.ticket)
            op = req.get("op")
            if op in ("query", "fetch") and req.get("format") != ANSWER_FORMAT:
                # the answer holds dummy rows with plausible values: only a client that strips them gets it
                raise DodbError(f"a dodb answer is padded with dummy rows: ask for it with \"format\": "
                                f"\"{ANSWER_FORMAT}\" and strip them ({_USE_A_CLIENT})")
            if op == "query":
                return flight.RecordBatchStream(self._query(name, req))
            if op == "fetch":
                return flight.RecordBatchStream(self._fetch(name, req.get("query_id")))
            raise DodbError(f"unknown request {op!r}: 'query' or 'fetch'")
        except Exception as e:  # noqa: BLE001 - every error goes back as a dodb error, one line
            raise _error(e, name) from None

    def _query(self, name: str, req: dict[str, Any]) -> pa.Table:
        args = self._query_args(req)
        if args["epsilon"] is None:
            raise DodbError("epsilon is required")
        padded, report, plan = self.db.run(req["sql"], session=f"analyst:{name}", **args)
        table = encode_answer(padded, report, plan.explain())
        if report.query_id is not None:
            with self._lock:
                kept = self._answers.setdefault(name, OrderedDict())
                kept[report.query_id] = table
                while len(kept) > KEEP_ANSWERS:
                    kept.popitem(last=False)
        return table

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
        return [("explain", "the plan of a query, charging nothing"), ("budget", "the dataset's budget"),
                ("history", "your charged queries"), ("tables", "the tables you can query, private or public")]

    def do_action(self, context, action):
        name = self._analyst(context)
        try:
            out = self._action(name, action.type, action.body.to_pybytes() if action.body else b"{}")
        except Exception as e:  # noqa: BLE001 - every error goes back as a dodb error, one line
            raise _error(e, name) from None
        return [flight.Result(json.dumps(out, default=str).encode())]

    def _action(self, name: str, kind: str, body: bytes) -> Any:
        if kind == "explain":
            req = self._request(body)
            args = self._query_args(req)
            eps = 1.0 if args["epsilon"] is None else args["epsilon"]
            return self.db.explain(req["sql"], epsilon=eps, delta=args["delta"], mode=args["mode"],
                                   as_dict=bool(req.get("as_dict")), params=args["params"])
        if kind == "budget":
            return self.db.budget
        if kind == "history":
            mine = f"analyst:{name}"
            return [{k: r[k] for k in ("query_id", "charged_at", "sql", "epsilon", "delta", "status", "error")}
                    for r in self.db.history() if r.get("session") == mine]
        if kind == "tables":
            return self.db.catalog_listing()
        raise DodbError(f"unknown action {kind!r}: explain, budget, history or tables")

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop serving and close the database."""
        try:
            self.shutdown()
        finally:
            self.db.close()
            self._answers.clear()
            self._auth.server = None


def open_server(path: str, host: str = "127.0.0.1", port: int = 0, *, tls_cert: str | None = None,
                tls_key: str | None = None) -> DodbServer:
    """Open ``path`` (it must exist) and start serving it; :meth:`DodbServer.serve` blocks."""
    from .session import connect

    if (tls_cert is None) != (tls_key is None):
        raise DodbError("give both --tls-cert and --tls-key, or neither")
    tls = None
    if tls_cert is not None:
        with open(tls_cert, "rb") as c, open(tls_key, "rb") as k:
            tls = (c.read(), k.read())
    db = connect(path, create=False)
    try:
        return DodbServer(db, host, port, tls=tls)
    except BaseException:
        db.close()
        raise


def is_loopback(host: str) -> bool:
    return host in _LOOPBACK
