"""The privacy ledger: one per dataset, persisted next to the data in DuckDB.

All sessions on a dataset share one ledger.  That is sound by concurrent composition
(001, Vadhan & Zhang: interleaved interactive sessions compose like the
non-interactive mechanisms for (eps, delta), optimal/f-DP and Rényi DP), provided the
shared filter sees every query — which a single table does.  Queries of different
sessions may *run* concurrently; each query's parameters are fixed when it is
admitted, and the filter treats the admission order as the adaptive sequence.

Tables (schema ``dodb_meta`` by default, in the connection's database, so an
in-memory database gets an in-memory ledger):

``budget``       one row: epsilon, delta, filter name and configuration, a version
                 counter that every charge increments.
``ledger``       one row per admitted query: time, session, SQL text, operators,
                 composition method and its (epsilon, delta), every method's bound
                 (JSON), the event description, status (charged/completed/failed).
``ledger_cost``  the filter's additive coordinates per query (``filters.py``).
``settings``     dataset settings by name; ``neighbour`` = the neighbour relation
                 every charge is a guarantee for (fixed once a query was charged);
                 ``query_horizon`` = how many queries the default delta is sized for.
``owner_actions`` the owner's history: budget, horizon and neighbour changes,
                 protect / insert / replace / unprotect, analyst tokens (time, old and
                 new value, what was forced).
``ledger_scoped_cost`` coordinates of charges confined to partitions (``part``) and of
                 charges made inside an analyst session (``account`` = its name; '' for
                 the dataset); ``ledger_cost`` keeps the dataset's global charges, so a
                 ledger written before partitions existed reads the same (``scopes.py``).
``analyst_sessions`` analyst sessions with a fixed budget (``sessions.py``).

What users see (docs/design.md §Budget defaults): ``spent`` is the sum of the charges
listed in the history (queries and owner releases), ``remaining`` what the next query
can still be charged (the filter's headroom), and a query's default delta is the
filter's delta for queries divided by the horizon, so epsilon, not delta, ends the
budget.

Atomic charging.  ``admit`` runs in one DuckDB transaction: bump ``budget.version``,
take the summed coordinates, test the filter, insert the rows, commit.  DuckDB uses
snapshot isolation with first-writer-wins on updated rows, so two overlapping admits
both updating the single budget row cannot both commit — the loser gets a conflict,
rolls back and retries with the new state.  A Python lock serialises admits of one
Ledger object.  The sums are those of the rows in the transaction's snapshot: read from
them, or kept from this Ledger's own last charge when the version shows that nobody
else wrote since (``ledger_sums.py``; both give the same floats).  A process killed at
any point leaves either the whole charge or none of it (DuckDB's WAL), never a total
that disagrees with the rows.

Charges happen *before* execution.  ``admit`` returns a :class:`Charge`; mark it
``complete()`` or ``fail()`` afterwards (or use it as a context manager).  The
charge stays either way — once execution started the leak may have happened.
"""
from __future__ import annotations

import json
import math
import random
import re
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import duckdb

from ._math import check_delta
from .best import METHODS, CompositionReport, compose_all
from .errors import Budget, BudgetExceededError, BudgetNotSetError, LedgerError, NotApplicableError
from ..errors import InvalidParameterError
from .events import PrivacyEvent
from .filters import PrivacyFilter, QueryCharge, UnionFilter, make_filter
from .sessions import SessionLedger, create_session_table
from .ledger_sums import CAP, LedgerSums, read_sums
from .standing import Standing, defer_standing
from .records import DEFAULT_HORIZON, DEFAULT_NEIGHBOUR, LedgerRecords, _json, _now, _run, check_horizon
from .scopes import ScopedState, admits, partition_status, worst_filter_spent, worst_headroom, worst_spent

__all__ = ["Ledger", "Charge", "BudgetInfo", "NEIGHBOURS", "DEFAULT_NEIGHBOUR", "check_neighbour",
           "DEFAULT_HORIZON", "check_horizon"]

NEIGHBOURS = ("add_remove", "replace")  # add/remove one privacy unit, or replace one
_PRICE_CACHE_SIZE = 1024
_PRICES: OrderedDict[tuple, Any] = OrderedDict()  # composition reports by their leaves' values (_price)
_PRICES_LOCK = threading.Lock()


def _by_value(privacy_key: tuple) -> bool:
    """Whether a leaf's key is all values: a custom loss curve is keyed by ``id()``, which a
    later object may reuse, so such a leaf is priced afresh every time."""
    return not isinstance(privacy_key[7], int)


def check_neighbour(neighbour: str) -> None:
    if neighbour not in NEIGHBOURS:
        raise InvalidParameterError(f"neighbour must be one of {NEIGHBOURS}, got {neighbour!r}")


def _exhausted_scoped(filt: PrivacyFilter, state: ScopedState, cost: dict[str, float],
                      scope: frozenset[str] | None, neighbour: str) -> str:
    """Which of epsilon or delta a refused charge ran out of (delta coordinates end in 'delta')."""
    fits_eps = admits(filt, state, {k: v for k, v in cost.items() if not k.endswith("delta")}, scope, neighbour)
    fits_delta = admits(filt, state, {k: v for k, v in cost.items() if k.endswith("delta")}, scope, neighbour)
    if fits_eps and not fits_delta:
        return "delta"
    if fits_delta and not fits_eps:
        return "epsilon"
    return "epsilon and delta"


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_STATUSES = ("charged", "completed", "failed")


def _standing_after(sums: LedgerSums, filt: PrivacyFilter, relation: str) -> tuple[Budget, Budget]:
    """The dataset's (spent, remaining) as ``status()`` reads them at these sums."""
    now = sums.state()
    return worst_spent(now, relation), worst_headroom(filt, now, relation)


@dataclass(frozen=True)
class BudgetInfo:
    epsilon: float
    delta: float
    filter: str
    config: dict[str, Any]
    version: int

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> "BudgetInfo":
        """From a ``budget`` row read as ``epsilon, delta, filter, config, version``."""
        return cls(row[0], row[1], row[2], json.loads(row[3]), row[4])

    def make_filter(self) -> PrivacyFilter:
        return make_filter(self.filter, self.epsilon, self.delta, **self.config)


@dataclass
class Charge:
    """A committed charge.  ``complete()`` / ``fail()`` record the outcome only."""

    query_id: int
    epsilon: float
    delta: float
    method: str
    filter: str
    report: CompositionReport | None = field(repr=False, default=None)
    ledger: "Ledger | None" = field(repr=False, default=None)
    status: str = "charged"
    partitions: frozenset[str] | None = None  # None: charged to every partition
    account: str | None = None                # an analyst session's name, or None (the dataset)
    # the dataset's spent and remaining right after this charge, from the state its
    # transaction left, computed on first read (standing.py; None for a session's charge:
    # ``Ledger.session_info`` has those)
    spent: Budget | None = Standing()
    remaining: Budget | None = Standing()

    def complete(self) -> None:
        self._mark("completed", None)

    def fail(self, error: BaseException | str | None = None) -> None:
        self._mark("failed", None if error is None else str(error))

    def _mark(self, status: str, error: str | None) -> None:
        if self.ledger is not None:
            self.ledger.mark(self.query_id, status, error)
        self.status = status

    def __enter__(self) -> "Charge":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.complete()
        else:
            try:
                self.fail(exc if exc is not None else exc_type.__name__)
            except Exception:  # noqa: BLE001 - the charge stands; keep the original error
                self.status = "failed"
        return False  # never swallow the exception


class Ledger(SessionLedger, LedgerRecords):
    """The privacy ledger of the database behind ``con`` (module doc)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, schema: str = "dodb_meta",
                 session: str | None = None, max_retries: int = 200, create: bool = True) -> None:
        """``create=False``: the tables exist already (another Ledger of this database made
        them), so they are not made again."""
        if not isinstance(con, duckdb.DuckDBPyConnection):
            raise ValueError(f"con must be a duckdb.DuckDBPyConnection, got {type(con).__name__}")
        if not _IDENT.match(schema):
            raise ValueError(f"schema must be a plain SQL identifier, got {schema!r}")
        self._con = con
        self._s = schema
        self.session = session or uuid.uuid4().hex[:12]
        self.max_retries = int(max_retries)
        self._lock = threading.RLock()
        self.read_only = False
        self._scoped: bool | None = None
        self._standing: tuple[tuple, tuple[Budget, Budget]] | None = None  # (budget row, value): standing()
        self._delta_caps: dict[tuple, float] = {}  # query_defaults(): filter parameters -> query delta cap
        # the dataset's sums and neighbour relation at a budget version (ledger_sums.py)
        self._sums: tuple[int, LedgerSums, str] | None = None
        if not create:
            return
        try:
            self._transact(self._create_tables)
        except duckdb.Error as exc:
            if "read-only" not in str(exc) and "read only" not in str(exc):
                raise
            self.read_only = True  # a read-only connection: the tables must exist already
            if not self._transact(self._tables_exist):
                raise LedgerError("this read-only database has no dodb ledger yet; open it read-write once") from None

    def _tables_exist(self, cur: duckdb.DuckDBPyConnection) -> bool:
        names = {"budget", "ledger", "owner_actions", "settings", "ledger_cost"}
        got = {r[0] for r in _run(cur, "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                                  [self._s])}
        return names <= got

    # -- plumbing -------------------------------------------------------------------------

    def _create_tables(self, cur: duckdb.DuckDBPyConnection) -> None:
        s = self._s
        _run(cur, ";\n".join([  # one script: a new in-memory database makes these on every connect
            f"CREATE SCHEMA IF NOT EXISTS {s}",
            f"""CREATE TABLE IF NOT EXISTS {s}.budget (
            id INTEGER PRIMARY KEY, epsilon DOUBLE NOT NULL, delta DOUBLE NOT NULL,
            filter VARCHAR NOT NULL, config VARCHAR NOT NULL, version BIGINT NOT NULL,
            updated_at TIMESTAMP NOT NULL)""",
            f"""CREATE TABLE IF NOT EXISTS {s}.ledger (
            query_id BIGINT PRIMARY KEY, charged_at TIMESTAMP NOT NULL, session VARCHAR,
            sql VARCHAR, operators VARCHAR, method VARCHAR NOT NULL, epsilon DOUBLE NOT NULL,
            delta DOUBLE NOT NULL, filter VARCHAR NOT NULL, bounds VARCHAR, event VARCHAR,
            status VARCHAR NOT NULL, status_at TIMESTAMP, error VARCHAR, kind VARCHAR DEFAULT 'query')""",
            f"""CREATE TABLE IF NOT EXISTS {s}.owner_actions (
            action_id BIGINT PRIMARY KEY, acted_at TIMESTAMP NOT NULL, action VARCHAR NOT NULL, target VARCHAR,
            old_value VARCHAR, new_value VARCHAR, forced VARCHAR, charge_id BIGINT)""",
            f"""CREATE TABLE IF NOT EXISTS {s}.settings (
            name VARCHAR PRIMARY KEY, value VARCHAR NOT NULL, updated_at TIMESTAMP NOT NULL)""",
            f"""CREATE TABLE IF NOT EXISTS {s}.ledger_cost (
            query_id BIGINT NOT NULL, coord VARCHAR NOT NULL, value DOUBLE NOT NULL,
            PRIMARY KEY (query_id, coord))""",
            f"""CREATE TABLE IF NOT EXISTS {s}.ledger_scoped_cost (
            query_id BIGINT NOT NULL, account VARCHAR NOT NULL, part VARCHAR NOT NULL, coord VARCHAR NOT NULL,
            value DOUBLE NOT NULL, PRIMARY KEY (query_id, account, part, coord))"""]))
        if not _run(cur, "SELECT 1 FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = ? "
                    "AND table_name = 'ledger' AND column_name = 'kind'", [s]):  # a ledger written by dodb 0.1
            _run(cur, f"ALTER TABLE {s}.ledger ADD COLUMN kind VARCHAR DEFAULT 'query'")
        create_session_table(cur, s)

    def _transact(self, body, *args: Any, single: bool = False) -> Any:
        """Run ``body(cursor, *args)`` in a transaction, retrying on write conflicts.

        ``single``: ``body`` runs one statement, which DuckDB commits as its own transaction
        (atomic, one snapshot), so no BEGIN/COMMIT round trips are made."""
        delay = 0.0005
        for attempt in range(self.max_retries):
            with self._lock:
                cur = self._con.cursor()
                try:
                    if single:
                        return body(cur, *args)
                    _run(cur, "BEGIN TRANSACTION")
                    result = body(cur, *args)
                    _run(cur, "COMMIT")
                    return result
                except duckdb.TransactionException as exc:
                    self._rollback(cur)
                    if "onflict" not in str(exc):
                        raise LedgerError(f"ledger transaction failed: {exc}") from exc
                except BaseException:
                    self._rollback(cur)
                    raise
                finally:
                    cur.close()
            time.sleep(delay * (1 + random.random()))  # another session won: back off, retry
            delay = min(delay * 2, 0.05)
        raise LedgerError(f"ledger transaction did not commit after {self.max_retries} conflicting attempts")

    @staticmethod
    def _rollback(cur: duckdb.DuckDBPyConnection) -> None:
        try:
            _run(cur, "ROLLBACK")
        except duckdb.Error:
            pass  # DuckDB already aborted the transaction

    def _read_budget(self, cur: duckdb.DuckDBPyConnection) -> BudgetInfo | None:
        rows = _run(cur, f"SELECT epsilon, delta, filter, config, version FROM {self._s}.budget WHERE id = 1")
        if not rows:
            return None
        row = rows[0]
        return BudgetInfo.from_row(row)

    def _read_totals(self, cur: duckdb.DuckDBPyConnection) -> dict[str, float]:
        return self._dataset_sums(cur).totals()

    def _budget_version(self, cur: duckdb.DuckDBPyConnection) -> int | None:
        rows = _run(cur, f"SELECT version FROM {self._s}.budget WHERE id = 1")
        return rows[0][0] if rows else None

    def _dataset_sums(self, cur: duckdb.DuckDBPyConnection, version: int | None = None) -> LedgerSums:
        """The dataset's summed charges in ``cur``'s snapshot, whose budget version is ``version``
        (read when ``None``): kept from the last read or charge at that version, else read from
        the rows (module doc of ``ledger_sums.py``)."""
        return self._kept(cur, version)[0]

    def _kept(self, cur: duckdb.DuckDBPyConnection, version: int | None = None) -> tuple[LedgerSums, str]:
        """The dataset's sums and neighbour relation at ``version`` (kept, or read and kept)."""
        if version is None:
            version = self._budget_version(cur)
        kept = self._sums
        if version is not None and kept is not None and kept[0] == version:
            return kept[1], kept[2]
        sums, relation = read_sums(cur, self._s, "", self._has_scoped(cur), _run), self._read_neighbour(cur)
        if version is not None:
            self._sums = (version, sums, relation)
        return sums, relation

    def _has_scoped(self, cur: duckdb.DuckDBPyConnection) -> bool:
        """A read-only ledger written before partitions and sessions has no scoped table."""
        if self._scoped is None:
            self._scoped = bool(_run(cur, "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
                                          "AND schema_name = ? AND table_name = 'ledger_scoped_cost'", [self._s])[0][0])
        return self._scoped

    def charged_partitions(self) -> set[str]:
        """Every partition any charge (dataset or session) was confined to."""
        return self._transact(lambda cur: {r[0] for r in _run(
            cur, f"SELECT DISTINCT part FROM {self._s}.ledger_scoped_cost WHERE part <> ''")}
            if self._has_scoped(cur) else set())

    def _read_state(self, cur: duckdb.DuckDBPyConnection, account: str = "") -> ScopedState:
        """One account's charges (module doc of ``scopes.py``): '' is the dataset."""
        if account == "":
            return self._dataset_sums(cur).state()
        return read_sums(cur, self._s, account, self._has_scoped(cur), _run).state()

    # -- budget ---------------------------------------------------------------------------

    def set_budget(self, epsilon: float, delta: float, *, filter: str | None = None,
                   orders: Sequence[float] | None = None, approx_share: float | None = None,
                   force: bool = False) -> BudgetInfo:
        """Set (or raise/lower) the dataset's budget and choose the adaptive filter.

        ``filter``: 'basic', 'advanced', 'renyi' or 'best' (their union; module doc
        of ``filters.py``); ``None`` keeps the current filter and its configuration
        ('best' for a new ledger).  The filter and its configuration cannot change
        once queries were charged (their costs are stored in that filter's coordinates).
        Lowering the budget below what was already spent needs ``force=True``.  Every
        change is an owner action in the history (old and new value, what was forced).
        """
        make_filter(filter or "best", epsilon, delta)  # validate before touching the database

        def body(cur: duckdb.DuckDBPyConnection) -> BudgetInfo:
            old = self._read_budget(cur)
            name = filter or (old.filter if old is not None else "best")
            config: dict[str, Any] = dict(old.config) if old is not None and old.filter == name else {}
            if orders is not None:
                config["orders"] = [float(a) for a in orders]
            if approx_share is not None:
                config["approx_share"] = approx_share
            filt = make_filter(name, epsilon, delta, **config)  # validates everything
            config = filt.config()
            n = _run(cur, f"SELECT count(*) FROM {self._s}.ledger")[0][0]
            if old is not None and n > 0 and (old.filter != name or old.config != config):
                raise LedgerError(
                    f"cannot change the filter from {old.filter!r} {old.config} to {name!r} {config} "
                    f"after {n} queries were charged")
            forced = []
            lowered = old is not None and (filt.epsilon < old.epsilon or filt.delta < old.delta)
            neighbour = self._read_neighbour(cur)
            if lowered and n > 0 and not admits(filt, self._read_state(cur), {}, None, neighbour):
                spent = worst_spent(self._read_state(cur), neighbour)
                why = f"the new budget (ε={filt.epsilon:g}, δ={filt.delta:g}) is below what was already spent {spent}"
                if not force:
                    raise LedgerError(f"{why}; pass force=True to set it anyway (recorded)")
                forced.append(why)
            if old is None:
                _run(cur, f"INSERT INTO {self._s}.budget VALUES (1, ?, ?, ?, ?, 1, ?)",
                     [filt.epsilon, filt.delta, name, json.dumps(config), _now()])
                version = 1
            else:
                _run(cur, f"UPDATE {self._s}.budget SET epsilon = ?, delta = ?, filter = ?, config = ?, "
                     f"version = version + 1, updated_at = ? WHERE id = 1",
                     [filt.epsilon, filt.delta, name, json.dumps(config), _now()])
                version = old.version + 1
            was = None if old is None else {"epsilon": old.epsilon, "delta": old.delta, "filter": old.filter}
            now = {"epsilon": filt.epsilon, "delta": filt.delta, "filter": name}
            if was != now or forced:
                self.record_owner_action(cur, "set_budget", None, old=was, new=now, forced=forced)
            # nothing charged yet: the sums at this version are empty (the first admit reads nothing)
            empty = (version, LedgerSums(), neighbour) if n == 0 else None
            return BudgetInfo(filt.epsilon, filt.delta, name, config, version), empty

        info, empty = self._transact(body)
        if empty is not None:
            self._sums = empty
        return info

    @property
    def budget(self) -> BudgetInfo | None:
        return self._transact(self._read_budget)

    # -- neighbour relation ---------------------------------------------------------------

    def _read_neighbour(self, cur: duckdb.DuckDBPyConnection) -> str:
        return self._setting(cur, "neighbour") or DEFAULT_NEIGHBOUR

    @property
    def neighbour(self) -> str:
        """The dataset's neighbour relation: 'add_remove' (default) or 'replace' one privacy unit."""
        return self._transact(self._read_neighbour)

    def set_neighbour(self, neighbour: str) -> None:
        """Fix the dataset's neighbour relation; it cannot change once queries were charged.

        Every charge in the ledger is a guarantee for one neighbour relation, and
        guarantees for different relations do not compose into one budget.
        """
        check_neighbour(neighbour)

        def body(cur: duckdb.DuckDBPyConnection) -> None:
            old = self._read_neighbour(cur)
            if old == neighbour:
                return
            n = _run(cur, f"SELECT count(*) FROM {self._s}.ledger")[0][0]
            if n > 0:
                raise LedgerError(f"this dataset's neighbour relation is {old!r}; it cannot change to "
                                  f"{neighbour!r} after {n} queries were charged")
            self._put_setting(cur, "neighbour", neighbour)
            _run(cur, f"UPDATE {self._s}.budget SET version = version + 1 WHERE id = 1")  # ledger_sums.py
            self.record_owner_action(cur, "set_neighbour", None, old=old, new=neighbour)

        self._transact(body)

    # -- charging -------------------------------------------------------------------------

    def admit(self, query_event: PrivacyEvent | Iterable[PrivacyEvent], *, sql: str | None = None,
              operators: Sequence[Any] | None = None, method: str = "best", delta: float | None = None,
              session: str | None = None, neighbour: str | None = None, kind: str = "query",
              partitions: frozenset[str] | None = None, account: str | None = None,
              after: Callable[[duckdb.DuckDBPyConnection, int], None] | None = None,
              standing: bool = False) -> Charge:
        """Check the filter and charge the query, atomically, before it runs.

        The query's own cost is its tightest fixed-sequence bound with ``method``
        ('best' = minimum over all applicable) at target ``delta`` (default: the sum
        of its leaks' deltas).  Raises :class:`BudgetExceededError` (nothing charged)
        if the filter would be exceeded; any error before the commit charges nothing.
        ``neighbour``: the relation the query was planned for; it must be the dataset's.
        ``kind``: 'query' (an analyst's query) or 'owner' (a release made when the owner
        loaded data: capacities and degree bounds, :mod:`dodb.storage.ingest`) or
        'session' (an analyst session's fixed budget, ``sessions.py``).
        ``partitions``: the partitions the query's releases depend on (``None``: all;
        ``planner/partitions.py``); admitted by the loss bound of ``scopes.py``.
        ``account``: an open analyst session whose own filter admits the query instead
        of the dataset's (its budget was charged to the dataset when it opened).
        ``after(cur, query_id)`` runs in the same transaction once the charge is written.
        ``standing``: also read the dataset's spent and remaining after this charge, in the
        same transaction (``Charge.spent``/``remaining``; what a query's report shows).
        """
        if kind not in ("query", "owner", "session"):
            raise ValueError(f"kind must be 'query', 'owner' or 'session', got {kind!r}")
        if partitions is not None and (not partitions or not all(isinstance(p, str) and p for p in partitions)):
            raise ValueError("partitions must be None (all) or a non-empty set of partition names")
        event, report, chosen, charge_in = self._price(query_event, method, delta)
        ops = [str(o) if not isinstance(o, (dict, list, str, int, float)) else o for o in (operators or [])]

        def body(cur: duckdb.DuckDBPyConnection) -> Charge:
            # Write first: any concurrent admit that also updates this row conflicts.
            # (the row count, then the row: RETURNING costs DuckDB 2.0's Python layer more than a SELECT)
            if _run(cur, f"UPDATE {self._s}.budget SET version = version + 1 WHERE id = 1")[0][0] != 1:
                raise BudgetNotSetError("no privacy budget set for this dataset; call set_budget() first")
            info = self._read_budget(cur)
            # as of the version before this transaction's bump (set_neighbour bumps it too)
            before, relation = self._kept(cur, info.version - 1)
            current = relation if neighbour is not None else None
            if current != neighbour:
                raise LedgerError(f"the query was planned for {neighbour!r} neighbours but the dataset's "
                                  f"relation is now {current!r}: plan it again")
            qid = before.next_query_id
            filt = info.make_filter() if account is None else self._session_filter(cur, account)
            cost = filt.cost(charge_in)
            state = before.state() if account is None else self._read_state(cur, account)
            if not admits(filt, state, cost, partitions, relation):
                room = worst_headroom(filt, state, relation)
                spent = worst_spent(state, relation)
                name = info.filter if account is None else f"session {account!r}"
                raise BudgetExceededError(Budget(chosen.epsilon, chosen.delta), spent, room, name,
                                          _exhausted_scoped(filt, state, cost, partitions,
                                                            relation))
            _run(
                cur, f"INSERT INTO {self._s}.ledger VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'charged', NULL, NULL, ?)",
                [qid, _now(), session or account or self.session, sql, _json(ops), chosen.method, chosen.epsilon,
                 chosen.delta, info.filter, _json(report.as_dict()), _json(event.describe()), kind])
            coords = sorted(cost.items())  # one statement (executemany runs one per row)
            keys, values = [k for k, _ in coords], [min(float(v), CAP) for _, v in coords]
            if partitions is None and account is None:
                _run(cur, f"INSERT INTO {self._s}.ledger_cost SELECT ?, unnest(?::VARCHAR[]), unnest(?::DOUBLE[])",
                     [qid, keys, values])
            else:
                if not self._has_scoped(cur):
                    raise LedgerError("this ledger has no table for scoped charges; open the database read-write once")
                for part in sorted(partitions) if partitions is not None else [""]:
                    _run(cur, f"INSERT INTO {self._s}.ledger_scoped_cost SELECT ?, ?, ?, unnest(?::VARCHAR[]), "
                              "unnest(?::DOUBLE[])", [qid, account or "", part, keys, values])
            if after is not None:
                after(cur, qid)
            # a session's charge leaves the dataset's sums as they are (scopes.py), but takes an id
            after_sums = before.charged(cost, partitions, chosen.epsilon, chosen.delta) if account is None \
                else before.next_query()
            charge = Charge(qid, chosen.epsilon, chosen.delta, chosen.method, info.filter, report, self,
                            partitions=partitions, account=account)
            if standing and account is None:  # what status() would read now, without reading it again
                defer_standing(charge, lambda: _standing_after(after_sums, filt, relation))
            return charge, (info.version, after_sums, relation)

        charge, sums = self._transact(body)
        self._sums = sums  # committed: the sums at the new version (the cache, ledger_sums.py)
        return charge

    def preview(self, query_event: PrivacyEvent | Iterable[PrivacyEvent], *, method: str = "best",
                delta: float | None = None, partitions: frozenset[str] | None = None,
                account: str | None = None) -> dict[str, Any]:
        """What ``admit`` would do, without charging: the composition report, whether
        the filter admits the query now, and the budget spent / remaining (for EXPLAIN)."""
        _, report, chosen, charge_in = self._price(query_event, method, delta)

        def body(cur: duckdb.DuckDBPyConnection) -> dict[str, Any]:
            info, filt, cost, _ = self._check(cur, charge_in)
            if account is not None:
                filt = self._session_filter(cur, account)
                cost = filt.cost(charge_in)
            state, nb = self._read_state(cur, account or ""), self._read_neighbour(cur)
            return {"report": report, "requested": Budget(chosen.epsilon, chosen.delta),
                    "admissible": admits(filt, state, cost, partitions, nb), "filter": info.filter,
                    "spent": worst_spent(state, nb), "remaining": worst_headroom(filt, state, nb),
                    "partitions": partitions}

        return self._transact(body)

    def _check(self, cur: duckdb.DuckDBPyConnection, charge_in: QueryCharge):
        info = self._read_budget(cur)
        if info is None:
            raise BudgetNotSetError("no privacy budget set for this dataset; call set_budget() first")
        filt = info.make_filter()
        return info, filt, filt.cost(charge_in), self._read_totals(cur)

    def _price(self, query_event: PrivacyEvent | Iterable[PrivacyEvent], method: str, delta: float | None):
        """The query's fixed-sequence bound (planning step: errors here charge nothing)."""
        event = query_event if isinstance(query_event, PrivacyEvent) else PrivacyEvent.compose(query_event)
        if method != "best" and method not in METHODS:
            raise ValueError(f"unknown composition method {method!r}; choose from {sorted(METHODS) + ['best']}")
        if not event.leaves():
            raise ValueError("the query has no privacy events; nothing to admit")
        if delta is None:
            noms = [leaf.nominal for leaf, _ in event.leaves()]
            if any(n is None for n in noms):
                raise ValueError("delta= is required: some leaks have no nominal (epsilon, delta)")
            delta = min(math.fsum(d * n for (_, d), (_, n) in zip(noms, event.leaves())), 1.0 - 1e-12)
        else:
            delta = check_delta(delta, "query delta")
        # identical leaves at the same delta compose identically: reuse the (label-free) report,
        # across every ledger of the process (a pure function of the leaves' values)
        leaves = event.leaves()
        key = None
        if all(leaf.kind in ("padding", "generic") and _by_value(leaf.privacy_key) for leaf, _ in leaves):
            key = (tuple((leaf.privacy_key, n) for leaf, n in leaves), delta, method)
        with _PRICES_LOCK:
            cached = _PRICES.get(key) if key is not None else None
        if cached is not None:
            report = cached
        else:
            report = compose_all(event, delta, None if method == "best" else [method])
            if key is not None:
                with _PRICES_LOCK:
                    _PRICES[key] = report
                    while len(_PRICES) > _PRICE_CACHE_SIZE:
                        _PRICES.popitem(last=False)
        chosen = report.best
        if not chosen.applicable:
            why = "; ".join(f"{k}: {b.note}" for k, b in report.items())
            raise NotApplicableError(f"no composition method certifies this query at δ={delta:.3g} ({why})")
        return event, report, chosen, QueryCharge(chosen.epsilon, chosen.delta, event)

    def mark(self, query_id: int, status: str, error: str | None = None) -> None:
        """Record a query's outcome.  The charge itself never changes."""
        if status not in _STATUSES:
            raise ValueError(f"status must be one of {_STATUSES}, got {status!r}")

        def body(cur: duckdb.DuckDBPyConnection) -> None:
            # an UPDATE's result is its row count (RETURNING costs DuckDB 2.0's Python layer ~3 ms)
            hit = _run(cur, f"UPDATE {self._s}.ledger SET status = ?, status_at = ?, error = ? WHERE query_id = ?",
                       [status, _now(), error, query_id])
            if hit[0][0] != 1:
                raise LedgerError(f"no charged query with id {query_id}")

        self._transact(body, single=True)

    def status(self) -> dict[str, Any]:
        """Budget, spent and remaining (as measured by the filter), plus totals."""
        def body(cur: duckdb.DuckDBPyConnection) -> dict[str, Any]:
            info = self._read_budget(cur)
            if info is None:
                raise BudgetNotSetError("no privacy budget set for this dataset")
            filt = info.make_filter()
            totals = self._read_totals(cur)
            state, nb = self._read_state(cur), self._read_neighbour(cur)
            out: dict[str, Any] = {"budget": Budget(info.epsilon, info.delta), "filter": info.filter,
                                   "spent": worst_spent(state, nb), "remaining": worst_headroom(filt, state, nb),
                                   "filter_spent": worst_filter_spent(filt, state, nb),
                                   "horizon": self._read_horizon(cur),
                                   "default_delta": filt.query_delta_cap / self._read_horizon(cur),
                                   "partitions": partition_status(filt, state, nb)}
            if isinstance(filt, UnionFilter):
                out["parts"] = {name: {"spent": f.spent(filt._sub(totals, name)),
                                       "open": name in filt.admitting_parts(totals, {})}
                                for name, f in filt.parts.items()}
            return out
        out = self._transact(body)
        out["totals"] = self.totals()
        return out

    def standing(self) -> tuple[Budget, Budget]:
        """``(spent, remaining)`` as :meth:`status` gives them, for display (a query that
        charged nothing).  Every charge and budget change bumps the budget row's version
        (:meth:`admit`, :meth:`set_budget`), so while that row and the neighbour relation read
        the same, the charges are the same and the last answer is reused.  Admission never
        uses this: it reads the charges in its own transaction."""
        return self.standing_later()()

    def standing_later(self) -> Callable[[], tuple[Budget, Budget]]:
        """:meth:`standing` read now and computed when called: the charges are read in this
        transaction, the filter's headroom (a bisection) only when the pair is wanted
        (``standing.py``)."""
        def body(cur: duckdb.DuckDBPyConnection) -> Callable[[], tuple[Budget, Budget]]:
            rows = _run(cur, f"SELECT epsilon, delta, filter, config, version, (SELECT value FROM {self._s}.settings "
                             f"WHERE name = 'neighbour') FROM {self._s}.budget WHERE id = 1")
            if not rows:
                raise BudgetNotSetError("no privacy budget set for this dataset")
            key = tuple(rows[0])
            if self._standing is not None and self._standing[0] == key:
                value = self._standing[1]
                return lambda: value
            info, nb = BudgetInfo.from_row(key), key[5] or DEFAULT_NEIGHBOUR
            sums = self._dataset_sums(cur, info.version)

            def compute() -> tuple[Budget, Budget]:
                value = _standing_after(sums, info.make_filter(), nb)
                self._standing = (key, value)
                return value
            return compute
        return self._transact(body)

    def spent(self) -> Budget:
        return self.status()["spent"]

    def remaining(self) -> Budget:
        return self.status()["remaining"]
