"""The analyst's side of served mode: ``dodb.connect("grpc://host:port", token=…)``.

A :class:`RemoteDatabase` has the query API of :class:`dodb.Database` — ``sql`` returning
a :class:`~dodb.result.Result` (``.arrow()``, ``.df()``, ``.pl()``, ``.show()``,
``.privacy``), ``explain``, ``budget``, ``history`` — over Arrow Flight
(:mod:`dodb.serve`).  The server sends the padded answer; the dummies are removed here,
in the analyst's process (docs/threat-model.md §Where the answer leaves the engine).
Server errors come back as the same dodb error classes with their one-line messages.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight

from .accountant import errors as accountant_errors
from .accountant.errors import Budget
from .errors import DodbError
from .planner.params import params_to_wire
from .progress import progress
from .result import PrivacyReport, Result, check_output
from .wire import PaddedAnswer, QueryRuntimeError

__all__ = ["RemoteDatabase", "RemoteSession", "RemoteError", "AuthenticationError", "ServerUnavailableError"]


class RemoteError(DodbError):
    """An error the server reported whose class this client does not know."""


class AuthenticationError(DodbError):
    """The server refused the token (unknown or revoked)."""


class ServerUnavailableError(DodbError):
    """The dodb server cannot be reached."""


def _classes() -> dict[str, type]:
    import dodb

    out: dict[str, type] = {}
    for mod in (dodb, accountant_errors):
        for v in vars(mod).values():
            if isinstance(v, type) and issubclass(v, Exception):
                out[v.__name__] = v
    from . import errors, tokens, wire

    for mod in (errors, tokens, wire):
        for v in vars(mod).values():
            if isinstance(v, type) and issubclass(v, DodbError):
                out[v.__name__] = v
    out.pop("Exception", None)
    return out


def _rebuild(info: dict[str, Any]) -> Exception:
    """The server's error as the same class, with its message (and budget fields)."""
    msg = info.get("message") or "the server reported an error"
    cls = _classes().get(info.get("type", ""))
    if cls is None:
        return RemoteError(f"{info.get('type')} on the server: {msg}")
    err = cls.__new__(cls)
    Exception.__init__(err, msg)
    for k in ("requested", "spent", "remaining"):
        if k in info:
            setattr(err, k, Budget(*info[k]))
    if "exhausted" in info:
        err.exhausted = info["exhausted"]
    if not isinstance(err, (DodbError, accountant_errors.AccountantError, ValueError)):
        return RemoteError(f"{info.get('type')}: {msg}")
    return err


class RemoteDatabase:
    """A dodb server seen from an analyst (module doc)."""

    def __init__(self, location: str, *, token: str | None, timeout: float | None = None,
                 tls_root_certs: bytes | None = None):
        if not token:
            raise AuthenticationError("a dodb server needs token= (the owner issues one: dodb token add FILE NAME)")
        self.location = location
        self.last_result: Result | None = None  # the last answer of sql(), kept (see sql)
        # the query in flight's admission: None before the server said, {} if it charges nothing
        self.admitted: dict[str, Any] | None = None
        self._client = flight.FlightClient(location, tls_root_certs=tls_root_certs)
        self._opts = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())],
                                              timeout=timeout)
        self._call(lambda: list(self._client.list_actions(self._opts)))  # refuse a bad token right away

    def _call(self, fn):
        try:
            return fn()
        except flight.FlightUnauthenticatedError:
            raise AuthenticationError(f"the dodb server at {self.location} refused the token "
                                      "(unknown or revoked)") from None
        except flight.FlightUnavailableError:
            raise ServerUnavailableError(f"cannot reach a dodb server at {self.location}") from None
        except flight.FlightServerError as e:
            info = {}
            if e.extra_info:
                try:
                    info = json.loads(e.extra_info)
                except ValueError:
                    info = {}
            if not info:
                raise RemoteError(str(e).split(". Detail:", 1)[0]) from None
            raise _rebuild(info) from None
        except flight.FlightError as e:  # timeouts, cancellations, internal errors of the transport
            raise RemoteError(f"{type(e).__name__}: {str(e).split('. Detail:', 1)[0]}") from None

    def call_action(self, kind: str, body: dict[str, Any] | None = None) -> Any:
        """One of the server's actions (docs/served.md §Actions) with its JSON result."""
        action = flight.Action(kind, json.dumps(body or {}).encode())
        results = self._call(lambda: list(self._client.do_action(action, self._opts)))
        return json.loads(results[0].body.to_pybytes())

    def _get(self, ticket: dict[str, Any]) -> Result:
        table = self._call(lambda: self._client.do_get(flight.Ticket(json.dumps(ticket).encode()),
                                                       self._opts).read_all())
        return self._result(table)

    def _run(self, request: dict[str, Any]) -> Result:
        """The ``query`` action: the server says when the query is admitted (its charge then
        stands), then sends the padded answer.  A connection lost on the way is reported with
        whether the query was charged (docs/served.md §When the server stops mid-query)."""
        action = flight.Action("query", json.dumps(request).encode())
        self.admitted = None
        chunks: list = []
        with progress("the query runs on the server") as shown:
            stream = self._call(lambda: self._client.do_action(action, self._opts))
            try:
                first = True
                for item in stream:
                    if first:
                        first = False
                        self.admitted = json.loads(item.body.to_pybytes()).get("admitted") or {}
                        if self.admitted:
                            shown.say(f"charged ε={self.admitted['epsilon']:.4g} (query #{self.admitted['query_id']}), "
                                      "running on the server")
                        continue
                    chunks.append(item.body)
            except flight.FlightError as e:
                answered = isinstance(e, flight.FlightServerError) and e.extra_info  # the server's own error
                if answered or isinstance(e, (flight.FlightUnauthenticatedError, flight.FlightUnauthorizedError)):
                    failure = e
                    self._call(lambda: _raise(failure))  # the usual one-line dodb error
                raise self._lost(e) from None
        if self.admitted is None or not chunks:
            raise self._lost(None)
        table = pa.ipc.open_stream(pa.py_buffer(b"".join(c.to_pybytes() for c in chunks))).read_all()
        return self._result(table)

    def _lost(self, e: BaseException | None) -> "ServerUnavailableError":
        why = "" if e is None else f" ({type(e).__name__}: {str(e).split('. Detail:', 1)[0].splitlines()[0]})"
        if self.admitted is None:
            kept = ("before it acknowledged admitting the query: nothing was charged, unless the server stopped "
                    "in the instant between charging and acknowledging; once it is back, your history "
                    f"(dodb history {self.location}) lists every charge")
            err = ServerUnavailableError(f"the dodb server at {self.location} stopped answering{why} {kept}")
            err.charged, err.query_id = None, None
            return err
        if not self.admitted:
            err = ServerUnavailableError(f"the dodb server at {self.location} stopped answering{why} while the query "
                                         "ran: it charges nothing (public tables only), so nothing was charged")
            err.charged, err.query_id = (0.0, 0.0), None
            return err
        a = self.admitted
        err = ServerUnavailableError(
            f"the dodb server at {self.location} stopped answering{why} while query #{a['query_id']} ran: it was "
            f"admitted and charged ε={a['epsilon']:.4g}, δ={a['delta']:.3g} before it started, and that charge "
            f"stands; if the server still runs, fetch({a['query_id']}) sends the answer again without a new charge")
        err.charged, err.query_id = (a["epsilon"], a["delta"]), a["query_id"]
        return err

    def _result(self, table) -> Result:
        meta = dict(table.schema.metadata or {})
        word = int(meta.pop(b"dodb.status"), 16)
        status = np.array([word - (1 << 64) if word >= 1 << 63 else word], dtype=np.int64)
        report = PrivacyReport.from_json(meta.pop(b"dodb.report").decode())
        plan = meta.pop(b"dodb.plan", b"").decode()
        padded = PaddedAnswer(table.replace_schema_metadata(meta), status)
        try:
            return Result(padded, report, None, plan)
        except QueryRuntimeError as e:
            charged = "" if report.query_id is None else \
                f"; ε={report.charged_epsilon:.4g}, δ={report.charged_delta:.3g} was charged (query #{report.query_id})"
            raise QueryRuntimeError(f"{e}{charged}") from None

    # -- the Database API -------------------------------------------------------------------------
    def sql(self, query: str, *, epsilon: float, delta: float | None = None, mode: str = "do",
            params: Sequence[Any] | dict[str, Any] | None = None, output: str | None = None) -> Result:
        """Run a private query on the server; the answer arrives padded and is stripped here.

        ``params`` travel as typed values and the server binds them as constants of the
        parsed query, exactly as :meth:`dodb.Database.sql` does (planner/params.py).  ``output``:
        as for :meth:`dodb.Database.sql`, checked here before the query is sent."""
        check_output(output)
        return self._query({"sql": query, "epsilon": epsilon, "delta": delta, "mode": mode,
                            "params": params_to_wire(params)})

    def _query(self, request: dict[str, Any]) -> Result:
        res = self._run({**request, "format": "padded"})
        self.last_result = res  # a charged answer is not lost to a failing chained .df() (Result._missing)
        return res

    def fetch(self, query_id: int) -> Result:
        """A recent answer of yours again, without a new charge (e.g. after a lost connection)."""
        return self._get({"op": "fetch", "format": "padded", "query_id": int(query_id)})

    def session(self, *, epsilon: float | None = None, delta: float | None = None, name: str | None = None,
                filter: str | None = None) -> "RemoteSession":
        """Open your analyst session on the server (its whole budget charged to the dataset once)
        or resume it by ``name`` (docs/design.md §Analyst sessions).  Your sessions are yours:
        another analyst's session of the same name is another session."""
        if name is None:
            raise DodbError("name the session: db.session(epsilon=..., delta=..., name='alice-1')")
        self.call_action("session", {"name": name, "epsilon": epsilon, "delta": delta, "filter": filter})
        return RemoteSession(self, name)

    def explain(self, query: str, *, epsilon: float = 1.0, delta: float | None = None, mode: str = "do",
                as_dict: bool = False, params: Sequence[Any] | dict[str, Any] | None = None):
        return self.call_action("explain", {"sql": query, "epsilon": epsilon, "delta": delta, "mode": mode,
                                        "as_dict": as_dict, "params": params_to_wire(params)})

    @property
    def budget(self) -> dict[str, Any]:
        from .display import BudgetInfo

        b = self.call_action("budget")
        for k in ("budget", "spent", "remaining", "filter_spent"):
            if b.get(k) is not None:  # a server before filter_spent had none
                b[k] = tuple(b[k])
        return BudgetInfo(b)

    def tables(self) -> list[dict[str, Any]]:
        """The tables you can query: name, kind, protection (``private``/``public``), privacy
        unit path, public capacity and columns with their DuckDB types (``database`` and
        ``schema`` of the listing are in :meth:`catalog`)."""
        return self.catalog()["tables"]

    def catalog(self) -> dict[str, Any]:
        """The engine's table listing: ``{"database", "schema", "tables": [...]}`` (see :meth:`tables`)."""
        return self.call_action("tables")

    def history(self) -> list[dict[str, Any]]:
        """Your charged queries (id, time, SQL, ε, δ, status, and the session that charged it or None)."""
        return self.call_action("history")

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "RemoteDatabase":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RemoteSession:
    """Your analyst session on a dodb server: the query API charged to the session's own budget."""

    def __init__(self, db: RemoteDatabase, name: str):
        self.db = db
        self.name = name

    def sql(self, query: str, *, epsilon: float, delta: float | None = None, mode: str = "do",
            params: Sequence[Any] | dict[str, Any] | None = None, output: str | None = None) -> Result:
        """Run a query admitted by this session's filter (refused once it would exceed it)."""
        check_output(output)
        return self.db._query({"sql": query, "epsilon": epsilon, "delta": delta, "mode": mode,
                               "params": params_to_wire(params), "session": self.name})

    def explain(self, query: str, **kw) -> Any:
        return self.db.explain(query, **kw)

    @property
    def budget(self) -> dict[str, Any]:
        """The session's budget, status, spent and remaining."""
        info = self.db.call_action("session", {"name": self.name})
        for k in ("budget", "spent", "remaining"):
            info[k] = tuple(info[k])
        return info

    def history(self) -> list[dict[str, Any]]:
        """This session's charged queries, oldest first."""
        return self.db.call_action("history", {"session": self.name})

    def close(self) -> None:
        """Close the session (its charge to the dataset stands)."""
        self.db.call_action("session_close", {"name": self.name})

    def __repr__(self) -> str:
        return f"RemoteSession({self.name!r} at {self.db.location})"


def _raise(e: BaseException):
    raise e
