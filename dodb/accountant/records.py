"""The ledger's records: SQL helpers, settings, the owner history and inspection.

A mixin of :class:`~dodb.accountant.ledger.Ledger` (module doc there): everything here
reads or appends rows inside the ledger's transactions.  ``timeline`` merges charged
queries and owner actions in time order (``dodb history``; docs/design.md §Owner actions).
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from typing import Any, Sequence

import duckdb

from .errors import BudgetNotSetError
from .events import PrivacyEvent
from .filters import make_filter

__all__ = ["LedgerRecords", "DEFAULT_HORIZON", "DEFAULT_NEIGHBOUR", "check_horizon"]

DEFAULT_HORIZON = 10_000  # queries the default per-query delta is sized for
DEFAULT_NEIGHBOUR = "add_remove"


def check_horizon(horizon: Any) -> int:
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ValueError(f"the query horizon must be a positive integer, got {horizon!r}")
    return int(horizon)


def _run(cur: duckdb.DuckDBPyConnection, sql: str, params: Any = None, *, many: bool = False) -> list[tuple]:
    """Execute one statement and consume its whole result.

    DuckDB 2.0 refuses a new statement on a connection/cursor that still has an
    unfinished result ("connection has an unfinished result from execute()"), and
    ``fetchone()`` can leave one open — so every statement here is drained with
    ``fetchall()``, including DDL/DML whose result (a row count) nobody reads."""
    if many:
        res = cur.executemany(sql, params)
    elif params is None:
        res = cur.execute(sql)
    else:
        res = cur.execute(sql, params)
    return res.fetchall()


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _json(obj: Any) -> str:
    def default(o: Any) -> Any:
        if isinstance(o, PrivacyEvent):
            return o.describe()
        return str(o)
    return json.dumps(obj, default=default, allow_nan=True)


class LedgerRecords:
    """Settings, owner actions and inspection (mixed into ``Ledger``)."""

    _s: str  # the ledger's schema; Ledger provides _transact and _read_budget
    read_only: bool
    _delta_caps: dict  # filter parameters -> the filter's query delta cap (Ledger sets it up)

    # -- settings ---------------------------------------------------------------------------

    def _setting(self, cur: duckdb.DuckDBPyConnection, name: str) -> str | None:
        rows = _run(cur, f"SELECT value FROM {self._s}.settings WHERE name = ?", [name])
        return rows[0][0] if rows else None

    def _put_setting(self, cur: duckdb.DuckDBPyConnection, name: str, value: str) -> None:
        _run(cur, f"DELETE FROM {self._s}.settings WHERE name = ?", [name])
        _run(cur, f"INSERT INTO {self._s}.settings VALUES (?, ?, ?)", [name, value, _now()])

    def instance_id(self) -> str:
        """An id kept in the database (identifies an in-memory instance within a process)."""
        def body(cur: duckdb.DuckDBPyConnection) -> str:
            got = self._setting(cur, "instance")
            if got is None:
                if self.read_only:
                    return "read-only"
                got = uuid.uuid4().hex
                self._put_setting(cur, "instance", got)
            return got
        return self._transact(body)

    # -- the query horizon (default delta) --------------------------------------------------

    def _read_horizon(self, cur: duckdb.DuckDBPyConnection) -> int:
        got = self._setting(cur, "query_horizon")
        return int(got) if got is not None else DEFAULT_HORIZON

    @property
    def horizon(self) -> int:
        """How many queries the default per-query delta is sized for (default 10,000)."""
        return self._transact(self._read_horizon)

    def set_horizon(self, horizon: int) -> None:
        """Set the query horizon (an owner action, recorded)."""
        horizon = check_horizon(horizon)

        def body(cur: duckdb.DuckDBPyConnection) -> None:
            old = self._read_horizon(cur)
            if old == horizon:
                return
            self._put_setting(cur, "query_horizon", str(horizon))
            self.record_owner_action(cur, "set_horizon", None, old=old, new=horizon)

        self._transact(body)

    def query_defaults(self) -> tuple[float | None, str]:
        """What planning a query reads from the ledger, in one statement (one snapshot): the
        default query delta (None before a budget is set) and the neighbour relation.

        The default delta is the filter's delta for queries over the horizon, so that
        ``horizon`` queries at the default fit and epsilon ends the budget (module doc)."""
        s = self._s
        sql = (f"SELECT b.epsilon, b.delta, b.filter, b.config, "
               f"(SELECT value FROM {s}.settings WHERE name = 'query_horizon'), "
               f"(SELECT value FROM {s}.settings WHERE name = 'neighbour') "
               f"FROM (SELECT 1) AS one LEFT JOIN {s}.budget AS b ON b.id = 1")
        epsilon, delta, kind, config, horizon, neighbour = self._transact(lambda cur: _run(cur, sql)[0], single=True)
        neighbour = neighbour or DEFAULT_NEIGHBOUR
        if epsilon is None:
            return None, neighbour
        key = (epsilon, delta, kind, config)
        cap = self._delta_caps.get(key)
        if cap is None:  # building a filter is pure in these four values
            cap = self._delta_caps[key] = make_filter(kind, epsilon, delta, **json.loads(config)).query_delta_cap
        return cap / (int(horizon) if horizon is not None else DEFAULT_HORIZON), neighbour

    def default_delta(self) -> float:
        """A query's default delta (:meth:`query_defaults`)."""
        delta, _ = self.query_defaults()
        if delta is None:
            raise BudgetNotSetError("no privacy budget is set for this dataset: call "
                                    "db.set_budget(epsilon=..., delta=...) first")
        return delta

    # -- owner actions ----------------------------------------------------------------------

    def record_owner_action(self, cur: duckdb.DuckDBPyConnection, action: str, target: str | None, *,
                            old: Any = None, new: Any = None, forced: Sequence[str] = (),
                            charge_id: int | None = None) -> None:
        """Append an owner action to the history, inside the caller's transaction ``cur``."""
        aid = _run(cur, f"SELECT coalesce(max(action_id), 0) + 1 FROM {self._s}.owner_actions")[0][0]
        _run(cur, f"INSERT INTO {self._s}.owner_actions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
             [aid, _now(), action, target, _json(old), _json(new), _json(list(forced)) if forced else None,
              charge_id])

    def owner_actions(self) -> list[dict[str, Any]]:
        """Every recorded owner action, oldest first (JSON columns decoded)."""
        return self._records("owner_actions", "action_id", ("old_value", "new_value", "forced"))

    def _records(self, table: str, order: str, json_columns: tuple[str, ...]) -> list[dict[str, Any]]:
        """Rows of one of the ledger's tables as dicts, ``json_columns`` decoded."""
        def body(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
            res = cur.execute(f"SELECT * FROM {self._s}.{table} ORDER BY {order}")
            cols = [d[0] for d in res.description]
            out = []
            for row in res.fetchall():
                rec = dict(zip(cols, row))
                for k in json_columns:
                    if rec.get(k) is not None:
                        rec[k] = json.loads(rec[k])
                out.append(rec)
            return out
        return self._transact(body)

    def has_charges(self) -> bool:
        """Whether any query or owner release was charged (declarations are then fixed)."""
        return self._transact(lambda cur: _run(cur, f"SELECT count(*) FROM {self._s}.ledger")[0][0] > 0)

    # -- inspection -----------------------------------------------------------------------

    def history(self) -> list[dict[str, Any]]:
        """All charged queries, oldest first (JSON columns decoded)."""
        return self._records("ledger", "query_id", ("operators", "bounds", "event"))

    def totals(self) -> dict[str, Any]:
        """Number of queries, plain sums of their (epsilon, delta), filter coordinates."""
        def body(cur: duckdb.DuckDBPyConnection) -> dict[str, Any]:
            n, e, d = _run(
                cur, f"SELECT count(*), coalesce(fsum(epsilon), 0), coalesce(fsum(delta), 0) FROM {self._s}.ledger"
            )[0]
            return {"queries": n, "epsilon": e, "delta": d, "coordinates": self._read_totals(cur)}
        return self._transact(body)

    def timeline(self) -> list[dict[str, Any]]:
        """Charged queries (and owner releases) and owner actions, oldest first."""
        kinds = {"owner": "owner release", "session": "session opened"}
        out = [{"at": r["charged_at"], "type": kinds.get(r.get("kind"), "query"),
                "id": r["query_id"], "what": r["sql"], "epsilon": r["epsilon"], "delta": r["delta"],
                "status": r["status"], "session": r["session"]} for r in self.history()]
        out += [{"at": a["acted_at"], "type": "owner action", "id": a["action_id"],
                 "what": a["action"] + (f" {a['target']}" if a["target"] else ""), "old": a["old_value"],
                 "new": a["new_value"], "forced": a["forced"], "charge_id": a["charge_id"]}
                for a in self.owner_actions()]
        return sorted(out, key=lambda r: (r["at"], r["type"] != "owner action", r["id"]))
