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
import pyarrow.flight as flight

from .accountant import errors as accountant_errors
from .accountant.errors import Budget
from .errors import DodbError
from .planner.params import params_to_wire
from .result import PrivacyReport, Result
from .wire import PaddedAnswer, QueryRuntimeError

__all__ = ["RemoteDatabase", "RemoteError", "AuthenticationError", "ServerUnavailableError"]


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

    def _action(self, kind: str, body: dict[str, Any] | None = None) -> Any:
        action = flight.Action(kind, json.dumps(body or {}).encode())
        results = self._call(lambda: list(self._client.do_action(action, self._opts)))
        return json.loads(results[0].body.to_pybytes())

    def _get(self, ticket: dict[str, Any]) -> Result:
        table = self._call(lambda: self._client.do_get(flight.Ticket(json.dumps(ticket).encode()),
                                                       self._opts).read_all())
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
            params: Sequence[Any] | dict[str, Any] | None = None) -> Result:
        """Run a private query on the server; the answer arrives padded and is stripped here.

        ``params`` travel as typed values and the server binds them as constants of the
        parsed query, exactly as :meth:`dodb.Database.sql` does (planner/params.py)."""
        res = self._get({"op": "query", "format": "padded", "sql": query, "epsilon": epsilon, "delta": delta,
                         "mode": mode, "params": params_to_wire(params)})
        self.last_result = res  # a charged answer is not lost to a failing chained .df() (Result._missing)
        return res

    def fetch(self, query_id: int) -> Result:
        """A recent answer of yours again, without a new charge (e.g. after a lost connection)."""
        return self._get({"op": "fetch", "format": "padded", "query_id": int(query_id)})

    def explain(self, query: str, *, epsilon: float = 1.0, delta: float | None = None, mode: str = "do",
                as_dict: bool = False, params: Sequence[Any] | dict[str, Any] | None = None):
        return self._action("explain", {"sql": query, "epsilon": epsilon, "delta": delta, "mode": mode,
                                        "as_dict": as_dict, "params": params_to_wire(params)})

    @property
    def budget(self) -> dict[str, Any]:
        from .display import BudgetInfo

        b = self._action("budget")
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
        return self._action("tables")

    def history(self) -> list[dict[str, Any]]:
        """Your charged queries (id, time, SQL, ε, δ, status)."""
        return self._action("history")

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "RemoteDatabase":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
