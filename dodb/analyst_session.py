"""Analyst sessions: a query handle with its own budget, fixed when it opens.

``db.session(epsilon=…, delta=…, name=…)`` charges the session's whole budget to the
dataset once (concurrent composition, paper 001 Thms 1.3, 1.4, 5.1; see
:mod:`dodb.accountant.sessions`) and returns an :class:`AnalystSession` whose queries are
admitted by the session's own filter.  The session lives in the ledger, so another
connection or process resumes it with ``db.session(name=…)``; the owner lists sessions
with ``db.sessions()`` and closes one with ``db.close_session(name)``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import DodbError, InvalidParameterError
from .progress import progress
from .wire import QueryRuntimeError

if TYPE_CHECKING:  # pragma: no cover
    from .result import Result

__all__ = ["AnalystSession", "open_or_resume"]


class AnalystSession:
    """The :class:`~dodb.session.Database` query API, charged to one analyst session (``db``
    is that Database: named, not imported, since the session module imports this one)."""

    def __init__(self, db: "Database", name: str) -> None:
        self.db = db
        self.name = name

    def sql(self, query: str, *, epsilon: float, delta: float | None = None, mode: str = "do",
            allocation: str = "cost", params: Any = None, output: str | None = None) -> "Result":
        """Run a query admitted by this session's filter (refused once it would exceed it);
        ``output`` as for :meth:`dodb.Database.sql`."""
        from .result import Result, charged_note, check_output

        check_output(output)
        with progress("running"):
            padded, report, p = self.db.run(query, epsilon=epsilon, delta=delta, mode=mode, allocation=allocation,
                                            params=params, account=self.name)
        try:
            res = Result(padded, report, self.db.con, p)
        except QueryRuntimeError as e:
            raise QueryRuntimeError(f"{e}{charged_note(report)}") from None
        self.db.last_result = res  # kept, as Database.sql keeps it
        return res

    def explain(self, query: str, *, epsilon: float = 1.0, delta: float | None = None, mode: str = "do",
                as_dict: bool = False, params: Any = None):
        p = self.db.plan(query, epsilon=epsilon, delta=delta, mode=mode, params=params, account=self.name)
        return p.to_dict() if as_dict else p.explain()

    def plan(self, query: str, *, epsilon: float, delta: float | None = None, mode: str = "do", params: Any = None):
        return self.db.plan(query, epsilon=epsilon, delta=delta, mode=mode, params=params, account=self.name)

    @property
    def budget(self) -> dict[str, Any]:
        """The session's budget, status, spent and remaining (per partition too)."""
        return self.db.ledger.session_info(self.name)

    def history(self) -> list[dict[str, Any]]:
        """This session's charged queries, oldest first."""
        return [r for r in self.db.history() if r["session"] == self.name and r.get("kind") == "query"]

    def close(self) -> None:
        """Close the session (its charge to the dataset stands)."""
        self.db.close_session(self.name)

    def __repr__(self) -> str:
        return f"AnalystSession({self.name!r})"


def open_or_resume(db: "Database", epsilon: float | None, delta: float | None, name: str | None,
                   filter: str | None = None) -> AnalystSession:
    """Open a new session (``epsilon`` and ``delta`` given) or resume one by ``name``."""
    if name is None:
        raise InvalidParameterError("name the session: db.session(epsilon=..., delta=..., name='alice-1')")
    existing = {s["name"]: s for s in db.ledger.sessions()}
    if name in existing:
        s = existing[name]
        if (epsilon is not None and epsilon != s["budget"][0]) or (delta is not None and delta != s["budget"][1]):
            raise InvalidParameterError(f"session {name!r} exists with budget ε={s['budget'][0]:g}, "
                                        f"δ={s['budget'][1]:g}; a session's budget is fixed when it opens")
        if s["status"] != "open":
            raise DodbError(f"analyst session {name!r} is closed")
        return AnalystSession(db, name)
    if epsilon is None or delta is None:
        raise InvalidParameterError(f"no analyst session named {name!r}; open one with epsilon= and delta=")
    db.ledger.open_session(name, epsilon, delta, filter=filter)
    return AnalystSession(db, name)
