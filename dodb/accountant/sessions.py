"""Analyst sessions with a budget fixed when they open (paper 001, Vadhan & Zhang).

A session is an interactive mechanism whose guarantee ``(ε_s, δ_s)`` is fixed before it
starts: inside it, its own privacy filter (same kind as the dataset's, with the
session's budget) admits its queries, so the whole session — however its analyst adapts
— is ``(ε_s, δ_s)``-DP (the filter theorems of ``filters.py``).  Sessions run
*interleaved*, from any number of connections or processes; concurrent composition
(001 Thm 1.3 for (ε, δ)-DP with optimal composition, Thm 1.4 for f-DP, Thm 5.1 for
Rényi DP) says interleaved sessions compose exactly like the non-interactive
mechanisms with the same guarantees.  So opening a session is one charge of a generic
``(ε_s, δ_s)`` event to the dataset's filter, which composes it with the dataset's other
charges and sessions by the tightest of its methods (basic, advanced, Rényi — an
``(ε, δ)`` mechanism is dominated by ``(ε, δ)`` randomized response, so its Rényi curve
is valid, Thm 5.1).  The dataset admits the session only if that fits, and the charge
stands once the session opened: closing a session early does not refund its budget
(the analyst may have seen answers that depend on any of it, and the parameters of
later sessions were chosen after that).

Table ``analyst_sessions`` (schema ``dodb_meta``): name, budget, filter and its
configuration, status ('open'/'closed'), when it opened/closed, the ledger id of its
charge.  A session's queries are ledger rows whose coordinates are in
``ledger_scoped_cost`` with ``account`` = the session's name.
"""
from __future__ import annotations

import json
import re
from typing import Any

import duckdb

from ..errors import InvalidParameterError
from .errors import BudgetNotSetError, LedgerError
from .events import PrivacyEvent
from .filters import PrivacyFilter, make_filter
from .records import _now, _run
from .scopes import partition_status, worst_headroom, worst_spent

__all__ = ["SessionLedger", "create_session_table", "check_session_name"]

_NAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")


def check_session_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidParameterError(f"a session name is 1-64 letters, digits or _.:@- ; got {name!r}")
    return name


def create_session_table(cur: duckdb.DuckDBPyConnection, schema: str) -> None:
    _run(cur, f"""CREATE TABLE IF NOT EXISTS {schema}.analyst_sessions (
        name VARCHAR PRIMARY KEY, epsilon DOUBLE NOT NULL, delta DOUBLE NOT NULL, filter VARCHAR NOT NULL,
        config VARCHAR NOT NULL, status VARCHAR NOT NULL, opened_at TIMESTAMP NOT NULL, closed_at TIMESTAMP,
        charge_id BIGINT)""")


class SessionLedger:
    """Session bookkeeping, mixed into :class:`~dodb.accountant.ledger.Ledger`."""

    _s: str

    def _session_row(self, cur: duckdb.DuckDBPyConnection, name: str) -> dict[str, Any] | None:
        if not self._has_scoped(cur):
            return None
        res = cur.execute(f"SELECT * FROM {self._s}.analyst_sessions WHERE name = ?", [name])
        cols = [d[0] for d in res.description]
        rows = res.fetchall()
        if not rows:
            return None
        rec = dict(zip(cols, rows[0]))
        rec["config"] = json.loads(rec["config"])
        return rec

    def _session_filter(self, cur: duckdb.DuckDBPyConnection, name: str) -> PrivacyFilter:
        row = self._session_row(cur, name)
        if row is None:
            raise LedgerError(f"no analyst session named {name!r}")
        if row["status"] != "open":
            raise LedgerError(f"analyst session {name!r} is closed")
        return make_filter(row["filter"], row["epsilon"], row["delta"], **row["config"])

    def open_session(self, name: str, epsilon: float, delta: float, *, filter: str | None = None) -> dict[str, Any]:
        """Charge the session's fixed budget to the dataset and record it (module doc).

        Refused with :class:`BudgetExceededError` (nothing recorded) if the dataset's
        filter does not admit a generic ``(epsilon, delta)`` charge now.
        """
        check_session_name(name)
        info = self.budget
        if info is None:
            raise BudgetNotSetError("no privacy budget set for this dataset; call set_budget() first")
        name_f = filter or info.filter
        cfg = dict(info.config) if name_f == info.filter else {}
        filt = make_filter(name_f, epsilon, delta, **cfg)  # validates ε, δ and the filter
        if self._transact(lambda cur: self._session_row(cur, name)) is not None:
            raise InvalidParameterError(f"an analyst session named {name!r} already exists; resume it by name")
        event = PrivacyEvent.generic(filt.epsilon, filt.delta, operator=f"session:{name}")

        def record(cur: duckdb.DuckDBPyConnection, qid: int) -> None:
            if self._session_row(cur, name) is not None:  # opened concurrently by another connection
                raise InvalidParameterError(f"an analyst session named {name!r} already exists")
            _run(cur, f"INSERT INTO {self._s}.analyst_sessions VALUES (?, ?, ?, ?, ?, 'open', ?, NULL, ?)",
                 [name, filt.epsilon, filt.delta, name_f, json.dumps(filt.config()), _now(), qid])
            self.record_owner_action(cur, "open_session", name, new={"epsilon": filt.epsilon, "delta": filt.delta,
                                                                     "filter": name_f}, charge_id=qid)

        charge = self.admit(event, sql=f"OPEN SESSION {name}", operators=[event.operator], delta=filt.delta,
                            session=name, neighbour=None, kind="session", after=record)
        charge.complete()
        return self.session_info(name)

    def close_session(self, name: str) -> None:
        """Close an open session (an owner action); its charge to the dataset stands."""
        def body(cur: duckdb.DuckDBPyConnection) -> None:
            row = self._session_row(cur, name)
            if row is None:
                raise LedgerError(f"no analyst session named {name!r}")
            if row["status"] != "open":
                raise LedgerError(f"analyst session {name!r} is already closed")
            _run(cur, f"UPDATE {self._s}.analyst_sessions SET status = 'closed', closed_at = ? WHERE name = ?",
                 [_now(), name])
            self.record_owner_action(cur, "close_session", name, old="open", new="closed")
        self._transact(body)

    def session_info(self, name: str) -> dict[str, Any]:
        """A session's budget, status, spent and remaining (per partition too)."""
        def body(cur: duckdb.DuckDBPyConnection) -> dict[str, Any]:
            row = self._session_row(cur, name)
            if row is None:
                raise LedgerError(f"no analyst session named {name!r}")
            filt = make_filter(row["filter"], row["epsilon"], row["delta"], **row["config"])
            state, nb = self._read_state(cur, name), self._read_neighbour(cur)
            queries = _run(cur, f"SELECT count(DISTINCT query_id) FROM {self._s}.ledger_scoped_cost "
                                "WHERE account = ?", [name])[0][0]
            return {"name": name, "budget": (row["epsilon"], row["delta"]), "filter": row["filter"],
                    "status": row["status"], "opened_at": row["opened_at"], "closed_at": row["closed_at"],
                    "charge_id": row["charge_id"], "queries": queries,
                    "spent": tuple(worst_spent(state, nb)),
                    "remaining": tuple(worst_headroom(filt, state, nb)) if row["status"] == "open" else (0.0, 0.0),
                    "default_delta": filt.query_delta_cap / self._read_horizon(cur),
                    "partitions": {p: {k: tuple(v) for k, v in d.items()}
                                   for p, d in partition_status(filt, state, nb).items()}}
        return self._transact(body)

    def sessions(self) -> list[dict[str, Any]]:
        """Every analyst session, oldest first."""
        names = self._transact(lambda cur: [r[0] for r in _run(
            cur, f"SELECT name FROM {self._s}.analyst_sessions ORDER BY opened_at, name")]
            if self._has_scoped(cur) else [])
        return [self.session_info(n) for n in names]
