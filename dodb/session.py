"""The Python API: ``dodb.connect()`` / ``dodb.attach()`` and private SQL with a budget.

Modelled on DuckDB's Python API: a :class:`Database` runs ``.sql()`` and returns a
:class:`Result` with ``.arrow()``, ``.df()``, ``.fetchall()`` and ``.relation`` (a DuckDB
relation on the same connection, for further chaining).  Every query is planned,
admitted by the dataset's ledger *before* it runs (charging nothing if it does not fit),
executed on the DO operators, and returned with its privacy report.

Sharing (docs/design.md §Concurrency): one Database serialises its use of the engine
with a lock, so any number of threads may share it; several Databases on one file in
a process share DuckDB's instance (and its SQL functions, :mod:`dodb.functions`);
DuckDB lets one process write a file, so another process waits for it (``wait=``) or
talks to a server (``dodb serve``, ``dodb.connect("grpc://…")``).  ``read_only=True``
sessions plan, explain, read the budget and the history and run public-only queries;
a query that would charge the ledger is refused before anything happens, because the
ledger lives in the (read-only) file.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import wait
from pathlib import Path
from typing import Any, Callable, Sequence

import duckdb

from . import functions
from .accountant import BudgetExceededError, BudgetNotSetError, Ledger
from .accountant.ledger import check_horizon, check_neighbour
from .accountant.standing import defer_standing, has_standing
from .errors import (CatalogError, DatabaseBusyError, DodbError, InvalidParameterError, MemoryLimitError,
                     QueryExecutionError, ReadOnlyError, one_line)
from .heap import keep_freed_memory
from .planner.memory import default_memory_limit, format_bytes
from .oblivious.noise import MAX_RELEASE_EPSILON
from .oblivious.rng import new_rng
from .operators.context import MODES, check_privacy_params
from .planner import Catalog, QueryPlan, plan_query
from .progress import progress
from .result import PrivacyReport, Result, charged_note, check_output
from .storage import ingest
from .wire import PaddedAnswer, QueryRuntimeError

__all__ = ["connect", "attach", "Database", "Result", "PrivacyReport", "ReadOnlyError", "DatabaseBusyError",
           "DEFAULT_WAIT"]

DEFAULT_WAIT = 10.0  # seconds connect() waits for another process to release the file
REMOTE_SCHEMES = ("grpc://", "grpc+tcp://", "grpc+tls://")



_OUTPUT_SIZE_RELEASES = ("output_size", "groups", "rows")  # releases that size a node's output
LOAD_EPSILON_SHARE = 0.05  # an owner action's default epsilon: 5% of the dataset's epsilon
NO_BUDGET_EXPLAIN_DELTA = 1e-6  # EXPLAIN before any budget is set (sql would refuse to run)


class Database:
    """A DuckDB database with dodb's catalog of private tables and its privacy ledger."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, owned: bool, neighbour: str | None = None,
                 allow_insecure: bool = False, seed: int | None = None, cluster: str | None = None):
        if neighbour is not None:
            check_neighbour(neighbour)  # before the ledger tables are touched
        self.con = con
        self._owned = owned
        self.allow_insecure = allow_insecure
        # refuse plans whose public memory estimate is above this (bytes; docs/design.md §Memory guard)
        self.memory_limit: int = default_memory_limit()
        keep_freed_memory()  # large arrays reuse freed pages, query after query (§Freed memory kept)
        self._seed = seed
        self._rng = new_rng(seed)
        self._lock = threading.RLock()  # one query / owner action at a time on this connection
        self._tmp_shards: str | None = None  # an in-memory database's shard folder (removed at close)
        self._closed = False
        self.last_result: Result | None = None  # the last answer of sql(), kept (see sql)
        self.ledger = Ledger(con)
        self.read_only = self.ledger.read_only
        if neighbour is not None:
            if self.read_only and neighbour != self.ledger.neighbour:
                raise ReadOnlyError(f"cannot set the neighbour relation to {neighbour!r} in a read_only session")
            if not self.read_only:
                self.ledger.set_neighbour(neighbour)  # a dataset setting: refused once queries were charged
        self.catalog = Catalog(con)
        from .executors.cluster import executor_for

        self.cluster = cluster
        self.executor = executor_for(cluster, self._shard_set)  # None: plans run in this process
        self._fkey = functions.instance_key(con, self.ledger)
        functions.register(con, self._fkey, self)  # SELECT dodb_budget_remaining() on this instance

    @property
    def neighbour(self) -> str:
        """The dataset's neighbour relation ('add_remove' or 'replace' one privacy unit), persisted."""
        return self.ledger.neighbour

    def __repr__(self) -> str:
        if self._closed:
            return "<dodb.Database (closed)>"
        private = sorted(t for t, i in self.catalog.tables.items() if i.private and not t.startswith("dodb_"))
        flags = "".join([", read-only" if self.read_only else "", ", plain mode allowed" if self.allow_insecure else ""])
        return f"<dodb.Database: {len(private)} protected table(s) {private}{flags}>"

    def _repr_html_(self) -> str:
        """A notebook's view: the tables (protection, unit, capacity) and the budget's headline."""
        from .display import database_html

        return database_html(self)

    def _writable(self, action: str) -> None:
        if self._closed:
            raise DodbError("this dodb Database is closed")
        if self.read_only:
            raise ReadOnlyError(f"cannot {action}: this session was opened read_only=True and the privacy ledger "
                                "lives in the database file; open it read-write (or query a dodb server)")

    # -- declarations -----------------------------------------------------------------------
    def protect(self, table: str, privacy_unit: str, *, parent: tuple[str, str] | None = None,
                max_contributions: int | None = None, keys: Sequence[Sequence[str]] | None = None,
                max_degree: dict[str, int | None] | None = None, widths: dict[str, int] | None = None,
                capacity: int | None = None, epsilon: float | None = None, delta: float | None = None,
                orphans: str = "keep", null_units: str = "keep", partition_by: str | None = None,
                force: bool = False) -> ingest.IngestResult:
        """Make ``table`` private: verify the declaration, release its capacity, store it canonically.

        ``privacy_unit``: the column identifying the unit, or — with ``parent=(table, key)``
        — the foreign key into a protected table (the unit is inherited).
        ``max_contributions``: rows per unit (per parent row for a hop); required.
        ``keys``: unique column sets; ``max_degree``: rows per value of a column (an
        integer, or ``None`` for a bound released under DP); ``widths``: public byte
        widths of the string columns (required for every string column).
        The table's size is released as ``capacity`` = true size + one-sided noise, charged
        to the budget with ``epsilon``/``delta`` (defaults: :meth:`load_budget`) — or
        pass a public ``capacity`` (≥ the row count) and nothing is charged.
        ``orphans``/``null_units``: ``'keep'`` (a child row whose key names no parent row
        belongs to the unit its key names; a NULL unit key is a unit of its own) or
        ``'refuse'``.  Re-protecting a private table with a looser declaration after
        charges needs ``force=True`` and is recorded.  The raw table leaves the current
        schema; see docs/design.md §Storage.
        ``partition_by``: on the table that defines the unit, a column whose value is a public
        function of the unit (e.g. a customer's nation); queries confined to some partitions
        are charged to those only (docs/design.md §Partitions).
        """
        d = ingest.Declaration(privacy_unit, tuple(parent) if parent else None, max_contributions,
                               [list(k) for k in (keys or [])], dict(max_degree or {}), dict(widths or {}),
                               orphans, null_units, partition_by)
        with self._lock:
            self._writable("protect a table")
            return ingest.protect(self, table, d, capacity=capacity, epsilon=epsilon, delta=delta, force=force)

    def unprotect(self, table: str, *, force: bool = False) -> None:
        """Make a private table public again (its rows back in the current schema).

        Refused once anything was charged unless ``force=True`` (the charges were
        computed under its declaration); recorded in the owner history either way.
        """
        with self._lock:
            self._writable("unprotect a table")
            ingest.unprotect(self, table, force=force)

    def insert(self, table: str, rows: Any, *, capacity: int | None = None, epsilon: float | None = None,
               delta: float | None = None) -> ingest.IngestResult:
        """Add rows to a private table: bounds re-verified, a new capacity released, slots rewritten.

        ``rows``: an Arrow table, a pandas/polars DataFrame, a DuckDB relation or the name
        of a table in the current schema, with the private table's columns.
        """
        with self._lock:
            self._writable("insert rows")
            return ingest.load(self, table, rows, append=True, capacity=capacity, epsilon=epsilon, delta=delta)

    def replace_data(self, table: str, rows: Any, *, capacity: int | None = None, epsilon: float | None = None,
                     delta: float | None = None) -> ingest.IngestResult:
        """Replace all rows of a private table (same checks and release as :meth:`insert`)."""
        with self._lock:
            self._writable("replace data")
            return ingest.load(self, table, rows, append=False, capacity=capacity, epsilon=epsilon, delta=delta)

    def _load_budget(self, epsilon: float | None, delta: float | None) -> tuple[float, float]:
        """(ε, δ) for the releases of one owner action (capacity, DP degree bounds)."""
        info = self.ledger.budget
        if info is None:
            raise BudgetNotSetError("set the dataset's budget (db.set_budget) before loading private data: "
                                    "the table's size is released under DP and charged (or declare capacity=)")
        # the default is at most the sampler's cap (a budget of 1e9 asks nothing absurd); an ε given is checked
        eps = min(LOAD_EPSILON_SHARE * info.epsilon, MAX_RELEASE_EPSILON) if epsilon is None else epsilon
        d = self._default_delta() if delta is None else delta
        check_privacy_params(eps, d)
        return float(eps), float(d)

    def shard(self, workers: int, *, epsilon: float | None = None, delta: float | None = None) -> list[dict[str, Any]]:
        """Cut every private table into ``workers`` shards by privacy unit, for a cluster
        (docs/distributed.md §Sharded storage).  The shard sizes are released under DP and
        charged as one owner action (``epsilon``/``delta`` as for loading); run it again after
        the data changes.  Returns one report per table."""
        self._writable("shard the private tables")
        from .storage.shards import write_shards

        with self._lock:
            eps, d = self._load_budget(epsilon, delta)
            return write_shards(self, workers, epsilon=eps, delta=d, directory=self.shard_directory())

    def shard_directory(self) -> Path:
        """Where this database's shards live: beside its file, or a temporary folder in memory."""
        from .storage.shards import shard_directory

        if self._tmp_shards is None and self._memory():
            self._tmp_shards = tempfile.mkdtemp(prefix="dodb-shards-")
        return shard_directory(self.con, self._tmp_shards)

    def _shard_set(self):
        """The shard set recorded in the database (None if never sharded)."""
        from .storage.shards import read_manifest

        return read_manifest(self.con, self.shard_directory())

    def _memory(self) -> bool:
        rows = self.con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
        return not (rows and rows[0][0])

    def set_budget(self, epsilon: float, delta: float, *, filter: str | None = None, horizon: int | None = None,
                   force: bool = False) -> None:
        """The dataset's total privacy budget (persisted with the data, shared by all sessions).

        ``horizon``: how many queries the default per-query δ is sized for (default
        10,000; docs/design.md §Budget defaults).  Lowering the budget below what was
        spent needs ``force=True``; every change is recorded in the owner history.
        """
        self._writable("set the budget")
        if horizon is not None:
            check_horizon(horizon)
        with self._lock:
            self.ledger.set_budget(epsilon, delta, filter=filter, force=force)
            if horizon is not None:
                self.ledger.set_horizon(horizon)

    @property
    def budget(self) -> dict[str, Any]:
        """Budget; spent = the sum of the charges in :meth:`history` that the worst
        neighbouring change affects (all of them without partitions), a plain sum;
        ``filter_spent`` = what the admitting filter counts as spent (it composes the charges
        more tightly, so the plain sum may exceed the budget while the filter admits queries); remaining = what the
        next query over all partitions can still be charged; the default query δ
        (docs/design.md §Budget defaults); ``partitions``: per charged partition, its spent
        and remaining, and ``partition_max_spent`` the largest (docs/design.md §Partitions)."""
        st = self.ledger.status()
        parts = {p: {k: tuple(v) for k, v in d.items()} for p, d in st["partitions"].items()}
        top = max((d["spent"] for d in parts.values()), default=None, key=lambda b: (b[0], b[1]))
        from .display import BudgetInfo  # a dict that prints in words and as HTML in a notebook

        return BudgetInfo({"budget": tuple(st["budget"]), "spent": tuple(st["spent"]), "remaining": tuple(st["remaining"]),
                "filter_spent": tuple(st["filter_spent"]), "filter": st["filter"], "queries": st["totals"].get("queries"), "horizon": st["horizon"],
                "default_delta": st["default_delta"], "partitions": parts, "partition_max_spent": top})

    def tables(self) -> list[dict[str, Any]]:
        """The tables an analyst can query: name, kind, protection (``private``/``public``),
        privacy unit path, public capacity and typed columns (as ``RemoteDatabase.tables``)."""
        return self.catalog_listing()["tables"]

    def catalog_listing(self) -> dict[str, Any]:
        """:meth:`tables` with the database and schema they are in (``dodb serve``'s ``tables``
        action), read under the connection's lock as a query's planning reads the catalog."""
        with self._lock:
            self.catalog.refresh(functions=False)
            return self.catalog.listing()

    def history(self, *, owner_actions: bool = False) -> list[dict[str, Any]]:
        """Charged queries and owner releases, oldest first; with ``owner_actions=True`` the
        merged timeline of charges and owner actions (``dodb history``)."""
        return self.ledger.timeline() if owner_actions else self.ledger.history()

    # -- queries ----------------------------------------------------------------------------
    def _default_delta(self) -> float:
        """The dataset's default query δ (docs/design.md §Budget defaults)."""
        return self.ledger.default_delta()

    def plan(self, query: str, *, epsilon: float, delta: float | None = None, mode: str = "do",
             allocation: str = "cost", params: Sequence[Any] | dict[str, Any] | None = None,
             account: str | None = None, public_fast: bool = False) -> QueryPlan:
        """Plan without running or charging (what :meth:`explain` shows).  ``public_fast``: a
        query over public tables only is left to DuckDB (``planner.plan.plan_query``)."""
        if mode not in MODES:
            raise InvalidParameterError(f"unknown mode {mode!r}; choose one of {MODES}")
        with self._lock:
            try:
                listing = self.catalog.begin_refresh()  # the slow part runs while the ledger is read
            except duckdb.Error as e:
                raise DodbError(f"cannot read the catalog: {one_line(e)}") from None
            try:
                try:
                    default, relation = self.ledger.query_defaults()  # one statement
                    if delta is not None:
                        d = delta
                    elif account is None:
                        d = default if default is not None else self._default_delta()  # (raises: no budget)
                    else:
                        d = self.ledger.session_info(account)["default_delta"]
                finally:
                    try:  # the user functions of the last listing for now: planning overlaps the new one
                        self.catalog.end_refresh(None)
                    except duckdb.Error as e:
                        raise DodbError(f"cannot read the catalog: {one_line(e)}") from None

                def make() -> QueryPlan:
                    return plan_query(query, self.catalog, epsilon=epsilon, delta=d, mode=mode,
                                      neighbour=relation, allocation=allocation, params=params,
                                      public_fast=public_fast,
                                      workers=1 if self.executor is None else self.executor.workers)

                try:
                    p = make()
                except DodbError:
                    if self._settle(listing):
                        raise
                    p = make()  # the user functions changed under the plan: plan again with the new ones
                else:
                    if not self._settle(listing):
                        p = make()
            finally:
                wait([listing])  # never left running (settled already on the usual path)
            p.memory_limit = self.memory_limit
            if p.build_later is not None:  # built later (EXPLAIN of a result): under this lock too
                build = p.build_later

                def locked() -> QueryPlan:
                    with self._lock:
                        return build()

                p.build_later = locked
            return p

    def _settle(self, listing) -> bool:
        """Whether a plan made while the user functions were listed stands (``Catalog.settle``)."""
        try:
            return self.catalog.settle(listing)
        except duckdb.Error as e:
            raise DodbError(f"cannot read the catalog: {one_line(e)}") from None

    def explain(self, query: str, *, epsilon: float = 1.0, delta: float | None = None, mode: str = "do",
                as_dict: bool = False, params: Sequence[Any] | dict[str, Any] | None = None):
        """The plan as text (or a dict): operators, sizes, stability, ε/δ, composition."""
        if delta is None and self.ledger.budget is None:
            delta = NO_BUDGET_EXPLAIN_DELTA  # nothing can run yet; show the plan at a nominal δ
        p = self.plan(query, epsilon=epsilon, delta=delta, mode=mode, params=params)
        if self.executor is not None and p.public_sql is None:
            p.placement = self.executor.placement(p)
        return p.to_dict() if as_dict else p.explain()

    def sql(self, query: str, *, epsilon: float, delta: float | None = None, mode: str = "do",
            allocation: str = "cost", params: Sequence[Any] | dict[str, Any] | None = None,
            output: str | None = None) -> Result:
        """Run a private query: plan, admit (charge) before execution, execute, report.

        ``params`` binds ``?`` / ``$1`` (a list) or ``$name`` (a dict) placeholders to
        values as constants of the parsed query, never as text (planner/params.py).
        ``output="df"``/``"pl"`` checks that pandas/polars is installed before anything is
        charged, for the ``.df()``/``.pl()`` to come (the answer is computed here, not lazily)."""
        check_output(output)
        with progress("running"):
            padded, report, p = self.run(query, epsilon=epsilon, delta=delta, mode=mode, allocation=allocation,
                                         params=params)
        try:
            res = Result(padded, report, self.con, p)
        except QueryRuntimeError as e:
            raise QueryRuntimeError(f"{e}{charged_note(report)}") from None
        # kept so that a charged answer is never lost to a failing chained call (db.sql(...).df()
        # without pandas): the error names db.last_result
        self.last_result = res
        return res

    def run(self, query: str, *, epsilon: float, delta: float | None = None, mode: str = "do",
            allocation: str = "cost", session: str | None = None,
            params: Sequence[Any] | dict[str, Any] | None = None,
            account: str | None = None,
            on_admit: Callable[[Any], None] | None = None) -> tuple[PaddedAnswer, PrivacyReport, QueryPlan]:
        """The engine's side of :meth:`sql`: the padded answer (dummies still in it) and the
        report.  ``session`` names who asked in the ledger (served mode: the analyst's token);
        ``account`` an analyst session whose own budget admits the query (:meth:`session`).
        ``on_admit`` is called with the ledger's charge (``None`` for a query that charges
        nothing) once the query is admitted and before it runs: a server tells its client
        then that the charge stands (docs/served.md §Queries)."""
        with self._lock:
            if self._closed:
                raise DodbError("this dodb Database is closed")
            p = self.plan(query, epsilon=epsilon, delta=delta, mode=mode, allocation=allocation, params=params,
                          account=account, public_fast=True)
            # the expected case must fit; a worst case above the limit is re-checked as the plan
            # releases its sizes (a cluster runs no such check: there the worst case must fit)
            expected = p.memory_bytes if self.executor is not None else (p.memory_expected or p.memory_bytes)
            if expected > self.memory_limit:
                how = "estimated from public sizes" if expected == p.memory_bytes else \
                    "even in the expected case, each released size at most its largest input plus its noise's mean"
                raise MemoryLimitError(
                    f"the plan may need {format_bytes(expected)} ({how}), above the "
                    f"limit of {format_bytes(self.memory_limit)}: nothing was charged (declare tighter bounds, "
                    "filter earlier, or raise db.memory_limit / DODB_MEMORY_LIMIT)")
            adaptive = self.memory_limit if p.memory_bytes > self.memory_limit else None
            private = any(self.catalog.table(t).private for t in _tables_of(p))
            if mode == "plain" and private and not self.allow_insecure:
                raise DodbError("mode='plain' runs private data without protection; it is only available with "
                                "dodb.connect(..., allow_insecure=True) for benchmarks")
            if self.executor is not None and p.public_sql is None:
                # missing or stale shards are refused before anything is charged
                p.placement = self.executor.check(p)[0]
            charge = None
            if p.events:
                self._writable("run a query that charges the privacy budget")
                charge = self.ledger.admit(p.events, sql=p.sql, operators=[e.operator for e in p.events],
                                           delta=p.delta, neighbour=p.neighbour, session=session,
                                           partitions=p.partitions, account=account, standing=True)
            try:
                if on_admit is not None:
                    on_admit(charge)
                padded = p.execute(rng=self._rng, executor=self.executor, memory_limit=adaptive)
            except BaseException as e:
                if charge is not None:
                    charge.fail(e)
                if not isinstance(e, Exception):  # KeyboardInterrupt and the like pass through
                    raise
                err = _failed_after_admission(e, charge)
                if err is e:
                    raise
                raise err from e
            if charge is not None:
                charge.complete()
            return padded, self._report(p, charge), p

    def _report(self, p: QueryPlan, charge) -> PrivacyReport:
        ops = []
        seen: dict[int, int] = {}
        for node, name, s, eps, delta, mech in p.event_nodes:
            i = seen.get(node.node_id, 0)
            seen[node.node_id] = i + 1
            stats = p.stats.get(node.node_id)
            leaked = stats.leaked if stats is not None else []
            events = sum(1 for e in p.event_nodes if e[0] is node)
            # releases of one node come in plan order; a binned filter releases one value per bin
            value = leaked if len(leaked) != events else leaked[i]
            # what the observer sees is the padded size: a draw above the node's public bound is cut to
            # it.  The node's output size is its only release, or the one named for it (a LEFT join also
            # releases bin counts, which are not its output size)
            sized = isinstance(value, int) and stats is not None and (events == 1 or name in _OUTPUT_SIZE_RELEASES)
            padded = stats.padded_out if sized and stats.padded_out < value else None
            ops.append({"operator": f"{node.kind}#{node.node_id}", "release": name, "sensitivity": s,
                        "epsilon": eps, "delta": delta, "scale": float(mech.scale), "shift": mech.shift,
                        "value": value, "padded": padded})
        comp = charge.report.as_dict() if charge is not None and charge.report is not None else {}
        spent = remaining = None
        later = None  # (spent, remaining) as they stand now, computed when first read (standing.py)
        if charge is not None and has_standing(charge):  # as the charge left it
            later = lambda: (tuple(charge.spent), tuple(charge.remaining))  # noqa: E731
        else:
            try:
                if charge is None or charge.account is None:
                    now = self.ledger.standing_later()
                    later = lambda: tuple(map(tuple, now()))  # noqa: E731
                else:
                    st = self.ledger.session_info(charge.account)
                    spent, remaining = tuple(st["spent"]), tuple(st["remaining"])
            except BudgetNotSetError:
                pass
        tables = []
        for name in sorted(_tables_of(p)):
            info = self.catalog.table(name)
            if info.private:
                tables.append({"table": name, "capacity": info.capacity, "source": info.capacity_source,
                               "ledger_id": info.capacity_charge})
        report = PrivacyReport(p.sql, p.mode, p.epsilon, p.delta, ops, comp, charge.method if charge else None,
                               charge.epsilon if charge else 0.0, charge.delta if charge else 0.0,
                               charge.query_id if charge else None, spent, remaining, tables,
                               sorted(charge.partitions) if charge is not None and charge.partitions else None,
                               charge.account if charge is not None else None)
        if later is not None:
            defer_standing(report, later)
        return report

    # -- analyst sessions (docs/design.md §Analyst sessions) ---------------------------------
    def session(self, *, epsilon: float | None = None, delta: float | None = None, name: str | None = None,
                filter: str | None = None) -> "AnalystSession":
        """Open an analyst session with a budget fixed now, charged to the dataset once
        (refused with ``BudgetExceededError`` if it does not fit), or resume one by ``name``."""
        from .analyst_session import open_or_resume

        with self._lock:
            if epsilon is not None or delta is not None:
                self._writable("open an analyst session")
            return open_or_resume(self, epsilon, delta, name, filter)

    def sessions(self) -> list[dict[str, Any]]:
        """Every analyst session (open and closed) with its budget, spent and remaining."""
        return self.ledger.sessions()

    def close_session(self, name: str) -> None:
        """Close an analyst session (an owner action); its charge to the dataset stands."""
        with self._lock:
            self._writable("close an analyst session")
            self.ledger.close_session(name)

    def close(self) -> None:
        """Detach dodb (its SQL functions); close the connection if dodb opened it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            functions.unregister(self.con, self._fkey, self)
            if self._owned:
                self.con.close()
            if self.executor is not None:
                self.executor.close()
            if self._tmp_shards is not None:
                shutil.rmtree(self._tmp_shards, ignore_errors=True)

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _failed_after_admission(e: Exception, charge) -> DodbError:
    """The error to raise for a query that failed while it ran: one line saying what failed and
    what the ledger kept for it (docs/design.md §Bind before charge).  A DodbError keeps its
    class (e.g. CatalogError for storage changed outside dodb) with that said in its message."""
    kept = "nothing was charged" if charge is None else (
        f"it was admitted and ran on private data before failing, so its charge ε={charge.epsilon:.4g}, "
        f"δ={charge.delta:.3g} stands (query #{charge.query_id}, marked failed)")
    charged = None if charge is None else (charge.epsilon, charge.delta)
    query_id = None if charge is None else charge.query_id
    if isinstance(e, DodbError):
        e.args = (f"{one_line(e)}; {kept}",)
        e.charged, e.query_id = charged, query_id
        return e
    return QueryExecutionError(f"query failed while running: {type(e).__name__}: {one_line(e)}; {kept}",
                               charged=charged, query_id=query_id)


def _tables_of(p: QueryPlan) -> set[str]:
    from .planner.logical import Scan, walk

    if p.build_later is not None:  # DuckDB alone answers it: the tables the front end resolved
        return set(p.tables)
    return {n.table for n in walk(p.root) if isinstance(n, Scan)}


def connect(database: str = ":memory:", *, neighbour: str | None = None, allow_insecure: bool = False,
            seed: int | None = None, read_only: bool = False, create: bool = True, wait: float = DEFAULT_WAIT,
            token: str | None = None, tls_root_certs: bytes | None = None, cluster: str | None = None):
    """Open (or create) a DuckDB database file with dodb on top.  ``seed`` only in test mode.

    ``neighbour`` is a dataset setting, stored with the ledger: ``None`` uses the stored
    relation ('add_remove' for a new dataset); 'add_remove' or 'replace' sets it, which is
    refused (LedgerError) once queries were charged under the other one.
    Protected tables live only in canonical storage (``dodb_private``): plain SQL on
    ``db.con`` does not find them under their names.
    ``create=False``: a file that does not exist is an error.  ``wait``: seconds to wait
    while another process holds the file.  ``read_only``: see the module doc.
    ``"grpc://host:port"`` with ``token=`` connects to a dodb server (``dodb serve``)
    and returns a :class:`dodb.remote.RemoteDatabase` with the same query API
    (``grpc+tls://`` with ``tls_root_certs=`` the PEM that signed the server's certificate).
    ``cluster``: run the plans on several workers over the database's shards
    (``db.shard(workers=P)``): ``"local:P"`` starts a Ray cluster of ``P`` workers on this
    machine, ``"ray://host:port"`` joins one, ``"inline:P"`` runs the ``P`` workers in this
    process (docs/distributed.md).
    """
    if isinstance(database, str) and database.startswith(REMOTE_SCHEMES):
        if neighbour is not None or allow_insecure or seed is not None or read_only:
            raise DodbError("neighbour=, allow_insecure=, seed= and read_only= are the server's settings, "
                            "not a client's")
        from .remote import RemoteDatabase

        return RemoteDatabase(database, token=token, tls_root_certs=tls_root_certs)
    if token is not None or tls_root_certs is not None:
        raise DodbError("token= is for a dodb server (dodb.connect('grpc://host:port', token=...))")
    if not create and database != ":memory:" and not os.path.exists(database):
        raise DodbError(f"no database file {database!r} (create it with --create / create=True)")
    con = _open(database, read_only, wait)
    try:
        return Database(con, owned=True, neighbour=neighbour, allow_insecure=allow_insecure, seed=seed,
                        cluster=cluster)
    except BaseException:
        con.close()
        raise


def _open(database: str, read_only: bool, wait: float) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect``, waiting up to ``wait`` seconds for another process's file lock."""
    deadline = time.monotonic() + max(0.0, float(wait))
    delay = 0.05
    while True:
        try:
            return duckdb.connect(database, read_only=read_only)
        except duckdb.IOException as e:
            if "lock" not in str(e):
                raise DodbError(f"cannot open {database!r}: {str(e).splitlines()[0]}") from None
            holder = re.search(r"PID (\d+)", str(e))
            pid = f" (PID {holder.group(1)})" if holder else ""
            if delay == 0.05 and wait >= 5:  # the first refusal of a long wait: say so, once
                print(f"dodb: {database!r} is locked by another process{pid}; waiting up to {wait:g} s for it",
                      file=sys.stderr, flush=True)
            if time.monotonic() >= deadline:
                raise DatabaseBusyError(
                    f"{database!r} is in use by another process{pid} (DuckDB lets one process write a file): close it, "
                    "wait longer (wait=), or serve the file with 'dodb serve' and connect with grpc://") from None
        except duckdb.ConnectionException as e:
            raise DodbError(f"{database!r} is already open in this process with another read_only setting "
                            f"({str(e).splitlines()[0]})") from None
        except duckdb.Error as e:
            raise DodbError(f"cannot open database {database!r}: {one_line(e)}") from None
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def attach(con: duckdb.DuckDBPyConnection, *, neighbour: str | None = None, allow_insecure: bool = False,
           seed: int | None = None) -> Database:
    """Put dodb on an existing DuckDB connection (the script keeps using it).

    Tables the script protects through dodb move into canonical storage: the script's
    own SQL on ``con`` no longer finds them under their names, dodb reads them.
    """
    return Database(con, owned=False, neighbour=neighbour, allow_insecure=allow_insecure, seed=seed)
