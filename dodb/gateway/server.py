"""The gateway's Flight SQL server: local tools on one side, a ``dodb serve`` engine on the other.

Each query a tool sends (a ``CommandStatementQuery``, or a prepared statement with its
bound parameters) goes to the engine through :class:`dodb.remote.RemoteDatabase` with
the analyst's token and the gateway's per-query ε (and δ): the engine plans, charges and
runs it, answers padded, and the dummies are stripped here, on the analyst's side
(docs/threat-model.md §Where the answer leaves the engine).  The query runs when the
tool asks for its ``FlightInfo`` — Flight SQL's "execute" — because dodb learns an
answer's exact schema by running it; the answer waits under a one-use ticket until the
tool's ``DoGet``.  Catalog commands are answered from the engine's ``tables`` action;
``dodb_last_report`` is answered here from the last answer's privacy report.
Errors reach the tool as one-line ``FlightServerError`` messages (docs/served.md §The gateway).
"""
from __future__ import annotations

import json
import math
import secrets
import sys
import threading
from collections import OrderedDict
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight

from ..errors import DodbError
from ..remote import RemoteDatabase
from . import metadata
from .errors import GatewayError, unsupported
from .statements import is_report_query, parameter_names
from . import protowire as pw

__all__ = ["GatewayServer", "GatewayError", "open_gateway", "KEEP_ANSWERS", "KEEP_PREPARED"]

KEEP_ANSWERS = 32     # executed answers awaiting their DoGet (the oldest are dropped beyond this)
KEEP_PREPARED = 1024  # open prepared statements (the oldest are closed beyond this)

_METADATA = {"CommandGetSqlInfo", "CommandGetCatalogs", "CommandGetDbSchemas", "CommandGetTables",
             "CommandGetTableTypes"}
_UPDATES = {"CommandStatementUpdate", "CommandPreparedStatementUpdate", "CommandStatementIngest",
            "CommandStatementSubstraitPlan"}


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _flight_error(e: BaseException) -> flight.FlightError:
    """The error a Flight SQL client shows: the one-line dodb message (its class in ``extra_info``)."""
    if isinstance(e, flight.FlightError):
        return e
    from ..accountant import AccountantError

    msg = _one_line(e)
    if not isinstance(e, (DodbError, AccountantError, ValueError)):  # a bug: also logged for whoever runs it
        print(f"dodb gateway: {type(e).__name__}: {msg}", file=sys.stderr, flush=True)
        msg = f"internal error in dodb gateway ({type(e).__name__}): {msg}"
    return flight.FlightServerError(f"dodb: {msg}", extra_info=json.dumps({"type": type(e).__name__,
                                                                         "message": msg}).encode())


class GatewayServer(flight.FlightServerBase):
    """Flight SQL in front of one engine connection (``remote``), closed by :meth:`close`."""

    def __init__(self, remote: RemoteDatabase, *, epsilon: float, delta: float | None = None,
                 host: str = "127.0.0.1", port: int = 0):
        if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0):
            raise DodbError(f"the gateway's per-query epsilon must be a positive number, not {epsilon!r}")
        if delta is not None and not (math.isfinite(delta) and 0 < delta < 1):
            raise DodbError(f"the gateway's per-query delta must be in (0, 1), not {delta!r}")
        self.remote = remote
        self.epsilon = float(epsilon)
        self.delta = delta
        self.host = host
        self._answers: OrderedDict[bytes, pa.Table] = OrderedDict()
        self._prepared: OrderedDict[bytes, dict[str, Any]] = OrderedDict()
        self._report = None  # the PrivacyReport of the last engine answer
        self._lock = threading.Lock()
        self._report_db = None
        super().__init__(f"grpc://{host}:{port}")
        self.location = f"grpc://{host}:{self.port}"

    # -- commands --------------------------------------------------------------------------------
    @staticmethod
    def _command(raw: bytes) -> tuple[str, dict[str, Any]]:
        """``(message name, fields)`` of a Flight SQL command (``Any``-wrapped protobuf)."""
        try:
            url, value = pw.unpack_any(raw)
        except pw.ProtoError:
            raise GatewayError("not a Flight SQL command (expected a protobuf Any); "
                               "use a Flight SQL client such as the ADBC Flight SQL driver") from None
        name = pw.message_name(url)
        if name in _UPDATES:
            raise unsupported(f"{name} (dodb answers queries only: no updates, ingestion or Substrait)")
        if name not in pw.MESSAGES or name.startswith("Action") or name == "google.protobuf.Any":
            raise unsupported(name)
        return name, pw.decode(name, value)

    def get_flight_info(self, context, descriptor):
        try:
            name, cmd = self._command(descriptor.command or b"")
            if name == "CommandStatementQuery":
                return self._executed(descriptor, self._execute(cmd["query"], None))
            if name == "CommandPreparedStatementQuery":
                stmt = self._statement(cmd["prepared_statement_handle"])
                with self._lock:
                    query, params = stmt["query"], stmt["params"]
                return self._executed(descriptor, self._execute(query, params))
            if name in _METADATA:
                # answered at DoGet from the command itself (the ticket): the schema is fixed
                schema = self._metadata_schema(name, cmd)
                return flight.FlightInfo(schema, descriptor, [flight.FlightEndpoint(descriptor.command, [])], -1, -1)
            raise unsupported(name)
        except Exception as e:  # noqa: BLE001 - every error reaches the tool as one line
            raise _flight_error(e) from None

    def _executed(self, descriptor, table: pa.Table) -> flight.FlightInfo:
        handle = secrets.token_bytes(16)
        with self._lock:
            self._answers[handle] = table
            while len(self._answers) > KEEP_ANSWERS:
                self._answers.popitem(last=False)
        ticket = pw.pack_any("TicketStatementQuery", {"statement_handle": handle})
        return flight.FlightInfo(table.schema, descriptor, [flight.FlightEndpoint(ticket, [])], table.num_rows,
                                 table.nbytes)

    def do_get(self, context, ticket):
        try:
            name, cmd = self._command(ticket.ticket)
            if name == "TicketStatementQuery":
                with self._lock:
                    table = self._answers.pop(cmd["statement_handle"], None)
                if table is None:
                    raise GatewayError("this answer was already fetched or has expired (each answer is fetched "
                                       "once; running the query again charges it again)")
                return flight.RecordBatchStream(table)
            if name in _METADATA:
                return flight.RecordBatchStream(self._metadata(name, cmd))
            raise unsupported(f"DoGet of {name}")
        except Exception as e:  # noqa: BLE001
            raise _flight_error(e) from None

    def get_schema(self, context, descriptor):
        # pyarrow sends any exception raised here with the server's traceback (its get_schema
        # callback does not convert FlightError), so the known commands answer without raising
        try:
            name, cmd = self._command(descriptor.command or b"")
            if name in _METADATA:
                return flight.SchemaResult(self._metadata_schema(name, cmd))
            if name == "CommandStatementQuery":
                return flight.SchemaResult(self._planned_schema(cmd["query"]))
            if name == "CommandPreparedStatementQuery":
                return flight.SchemaResult(self._planned_schema(self._statement(cmd["prepared_statement_handle"])["query"]))
            raise unsupported(f"GetSchema of {name}")
        except Exception as e:  # noqa: BLE001
            raise _flight_error(e) from None

    def list_flights(self, context, criteria):
        return iter(())  # no standing flights: every answer is a query's (Flight SQL never lists them)

    def do_exchange(self, context, descriptor, reader, writer):
        raise _flight_error(unsupported("DoExchange"))

    # -- queries ---------------------------------------------------------------------------------
    def _execute(self, query: str, params: list[Any] | dict[str, Any] | None) -> pa.Table:
        """The exact answer of ``query``: from the engine (charged ε per query) or, for
        ``dodb_last_report``, from the last report, here."""
        if is_report_query(query):
            if params:
                raise GatewayError(f"{metadata.REPORT_TABLE} takes no parameters")
            return self._report_query(query)
        res = self.remote.sql(query, epsilon=self.epsilon, delta=self.delta, params=params)
        with self._lock:
            self._report = res.privacy
        return res.arrow()

    def _report_query(self, query: str) -> pa.Table:
        """``query`` over the one-table database holding the last report (an in-memory DuckDB
        on the analyst's side with file access off: the report is all it can read)."""
        import duckdb

        with self._lock:
            report = metadata.report_table(self._report)
            if self._report_db is None:
                self._report_db = duckdb.connect(":memory:", config={"enable_external_access": False})
                self._report_db.execute("SET lock_configuration = true")
            cur = self._report_db.cursor()
        try:
            cur.register(metadata.REPORT_TABLE, report)
            return cur.sql(query).to_arrow_table()
        except duckdb.Error as e:
            raise GatewayError(f"{metadata.REPORT_TABLE}: {_one_line(e)}") from None
        finally:
            cur.close()

    def _planned_schema(self, query: str) -> pa.Schema:
        """The answer's schema from the engine's plan (EXPLAIN: nothing runs, nothing is charged)."""
        if is_report_query(query):
            return self._report_query(query).schema
        plan = self.remote.explain(query, epsilon=self.epsilon, delta=self.delta, as_dict=True)
        cols = plan.get("columns") or []
        if any(c["type"] is None for c in cols):
            raise GatewayError("the engine's plan does not give this answer's types; execute the query")
        types = metadata.arrow_types([c["type"] for c in cols])
        return pa.schema([pa.field(c["name"], t) for c, t in zip(cols, types)])

    # -- metadata --------------------------------------------------------------------------------
    @staticmethod
    def _metadata_schema(name: str, cmd: dict[str, Any]) -> pa.Schema:
        return {"CommandGetSqlInfo": metadata.SQL_INFO_SCHEMA, "CommandGetCatalogs": metadata.CATALOGS_SCHEMA,
                "CommandGetDbSchemas": metadata.DB_SCHEMAS_SCHEMA, "CommandGetTableTypes": metadata.TABLE_TYPES_SCHEMA,
                }.get(name) or metadata.tables_schema(bool(cmd.get("include_schema")))

    def _metadata(self, name: str, cmd: dict[str, Any]) -> pa.Table:
        if name == "CommandGetSqlInfo":
            from .. import __version__

            return metadata.sql_info(cmd["info"], __version__)
        if name == "CommandGetTableTypes":
            return metadata.table_types()
        listing = self.remote.catalog()
        if name == "CommandGetCatalogs":
            return metadata.catalogs(listing)
        if name == "CommandGetDbSchemas":
            return metadata.db_schemas(listing, cmd["catalog"], cmd["db_schema_filter_pattern"])
        return metadata.tables(listing, cmd)

    # -- prepared statements ---------------------------------------------------------------------
    def list_actions(self, context):
        return [("CreatePreparedStatement", "prepare a query (Flight SQL)"),
                ("ClosePreparedStatement", "close a prepared query (Flight SQL)")]

    def do_action(self, context, action):
        try:
            body = action.body.to_pybytes() if action.body is not None else b""
            if action.type == "CreatePreparedStatement":
                return [flight.Result(self._prepare(body))]
            if action.type == "ClosePreparedStatement":
                name, cmd = self._action_body(body, "ActionClosePreparedStatementRequest")
                with self._lock:
                    self._prepared.pop(cmd["prepared_statement_handle"], None)
                return []
            raise unsupported(f"action {action.type}")
        except Exception as e:  # noqa: BLE001
            raise _flight_error(e) from None

    @staticmethod
    def _action_body(body: bytes, expected: str) -> tuple[str, dict[str, Any]]:
        try:
            url, value = pw.unpack_any(body)
        except pw.ProtoError:
            raise GatewayError(f"malformed {expected}") from None
        name = pw.message_name(url)
        if name != expected:
            raise GatewayError(f"expected {expected}, got {name}")
        return name, pw.decode(name, value)

    def _prepare(self, body: bytes) -> bytes:
        _, req = self._action_body(body, "ActionCreatePreparedStatementRequest")
        query = req["query"]
        names, named = parameter_names(query)
        # the answer's schema when the plan gives it without parameter values (a best guess,
        # as Flight SQL allows); planning also reports a bad query here, before anything runs
        dataset = b"" if names else self._planned_schema(query).serialize().to_pybytes()
        params = pa.schema([pa.field(n, pa.null()) for n in names]).serialize().to_pybytes() if names else b""
        handle = secrets.token_bytes(16)
        with self._lock:
            self._prepared[handle] = {"query": query, "names": names, "named": named, "params": None}
            while len(self._prepared) > KEEP_PREPARED:
                self._prepared.popitem(last=False)
        return pw.pack_any("ActionCreatePreparedStatementResult", {
            "prepared_statement_handle": handle, "dataset_schema": dataset, "parameter_schema": params,
            "is_update": False})

    def _statement(self, handle: bytes) -> dict[str, Any]:
        with self._lock:
            stmt = self._prepared.get(handle)
        if stmt is None:
            raise GatewayError("unknown or closed prepared statement (prepare the query again)")
        return stmt

    def do_put(self, context, descriptor, reader, writer):
        try:
            name, cmd = self._command(descriptor.command or b"")
            if name != "CommandPreparedStatementQuery":
                raise unsupported(f"DoPut of {name}")
            handle = cmd["prepared_statement_handle"]
            stmt = self._statement(handle)
            params = self._bind(stmt, reader.read_all())
            with self._lock:
                stmt["params"] = params
            writer.write(pa.py_buffer(pw.encode("DoPutPreparedStatementResult", {"prepared_statement_handle": handle})))
        except Exception as e:  # noqa: BLE001
            raise _flight_error(e) from None

    @staticmethod
    def _bind(stmt: dict[str, Any], table: pa.Table) -> list[Any] | dict[str, Any] | None:
        """One parameter set (one row) as ``RemoteDatabase.sql``'s ``params``: by name for
        ``$name`` placeholders, else by position (the columns in order)."""
        if table.num_rows == 0:
            return None
        if table.num_rows > 1:
            raise GatewayError(f"{table.num_rows} parameter sets: dodb runs one per execution "
                               "(each execution is a query, charged on its own)")
        row = table.slice(0, 1).to_pylist()[0]
        if stmt["named"]:
            return {str(k): v for k, v in row.items()}
        return list(row.values())

    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop serving and close the engine connection."""
        try:
            self.shutdown()
        finally:
            self.remote.close()
            if self._report_db is not None:
                self._report_db.close()


def open_gateway(engine: str, token: str | None, *, epsilon: float, delta: float | None = None,
                 host: str = "127.0.0.1", port: int = 0, tls_root_certs: bytes | None = None,
                 timeout: float | None = None) -> GatewayServer:
    """Connect to the engine at ``engine`` with ``token`` (checked now) and start the gateway;
    :meth:`GatewayServer.serve` blocks."""
    if not engine.startswith(("grpc://", "grpc+tcp://", "grpc+tls://")):
        raise DodbError(f"--engine {engine!r}: give the dodb server's grpc://HOST:PORT (or grpc+tls://)")
    remote = RemoteDatabase(engine, token=token, tls_root_certs=tls_root_certs, timeout=timeout)
    try:
        return GatewayServer(remote, epsilon=epsilon, delta=delta, host=host, port=port)
    except BaseException:
        remote.close()
        raise
