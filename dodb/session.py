"""The Python API: ``dodb.connect()`` / ``dodb.attach()`` and private SQL with a budget.

Modelled on DuckDB's Python API: a :class:`Database` runs ``.sql()`` and returns a
:class:`Result` with ``.arrow()``, ``.df()``, ``.fetchall()`` and ``.relation`` (a DuckDB
relation on the same connection, for further chaining).  Every query is planned,
admitted by the dataset's ledger *before* it runs (charging nothing if it does not fit),
executed on the DO operators, and returned with its privacy report.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

import duckdb
import pyarrow as pa

from .accountant import BudgetExceededError, BudgetNotSetError, Ledger
from .accountant.ledger import check_neighbour
from .errors import CatalogError, DodbError
from .oblivious.rng import new_rng
from .operators.context import MODES, check_privacy_params
from .planner import Catalog, QueryPlan, plan_query
from .storage import ingest
from .wire import PaddedAnswer, QueryRuntimeError

__all__ = ["connect", "attach", "Database", "Result", "PrivacyReport", "DEFAULT_QUERY_DELTA_SHARE"]

DEFAULT_QUERY_DELTA_SHARE = 0.01  # a query's default delta: 1% of the dataset's delta budget
LOAD_EPSILON_SHARE = 0.05  # an owner action's default epsilon: 5% of the dataset's epsilon


@dataclass
class PrivacyReport:
    """What a query leaked and what it cost: per-operator releases, every composition
    method's total (the one charged marked), and the budget left afterwards."""

    sql: str
    mode: str
    epsilon: float
    delta: float
    operators: list[dict[str, Any]]
    composition: dict[str, dict[str, Any]]
    chosen: str | None
    charged_epsilon: float
    charged_delta: float
    query_id: int | None
    spent: tuple[float, float] | None = None
    remaining: tuple[float, float] | None = None
    tables: list[dict[str, Any]] = field(default_factory=list)  # private tables read: capacity and its origin

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __str__(self) -> str:
        lines = [f"privacy report (mode={self.mode}, requested ε={self.epsilon:g}, δ={self.delta:g})"]
        if not self.operators:
            lines.append("  no new size was released by this query")
        for op in self.operators:
            v = op.get("value")
            shown = f"{sum(v)} in {len(v)} bins" if isinstance(v, list) and len(v) > 1 else \
                (v[0] if isinstance(v, list) and v else v)
            lines.append(f"  {op['operator']}: {op['release']} sensitivity {op['sensitivity']}, "
                         f"ε={op['epsilon']:.4g}, δ={op['delta']:.3g}, released size {shown}")
        for name, b in self.composition.items():
            mark = "*" if name == self.chosen else " "
            eps = b.get("epsilon")
            lines.append(f"  {mark} {name:<10} ε={eps:.4g}" if isinstance(eps, (int, float)) and eps != float("inf")
                         else f"    {name:<10} n/a ({_first_clause(str(b.get('note', '')))})")
        for t in self.tables:
            origin = (f"released under DP when loaded, ledger #{t['ledger_id']}" if t["source"] == "dp"
                      else "declared by the owner")
            lines.append(f"  size of {t['table']}: {t['capacity']} slots ({origin})")
        lines.append(f"  charged: ε={self.charged_epsilon:.4g}, δ={self.charged_delta:.3g}"
                     + (f" (query #{self.query_id})" if self.query_id else ""))
        if self.remaining is not None:
            lines.append(f"  budget spent ε={self.spent[0]:.4g}, δ={self.spent[1]:.3g}; "
                         f"remaining ε={self.remaining[0]:.4g}, δ={self.remaining[1]:.3g}")
        return "\n".join(lines)


def _first_clause(note: str, limit: int = 90) -> str:
    """The reason a method does not apply, up to its first ';' and at most ``limit`` characters."""
    head = note.split(";", 1)[0].strip()
    return head if len(head) <= limit else head[:limit].rsplit(" ", 1)[0] + " …"


class Result:
    """A private query's exact answer plus its privacy report.

    Built from the engine's padded answer (:mod:`dodb.wire`): the dummies are dropped
    here, on the analyst's side of the boundary (docs/threat-model.md).
    """

    def __init__(self, padded: PaddedAnswer, report: PrivacyReport, con: duckdb.DuckDBPyConnection,
                 plan: QueryPlan | None):
        self.padded = padded
        self.privacy = report
        self._con = con
        self.plan = plan
        self._table = QueryPlan.answer(padded)

    def arrow(self) -> pa.Table:
        return self._table

    def df(self):
        """The answer as a pandas DataFrame (needs pandas: ``pip install pandas``)."""
        try:
            import pandas  # noqa: F401
        except ImportError:
            raise DodbError("Result.df() needs pandas: pip install pandas (or use .arrow() / .pl())") from None
        return self._table.to_pandas()

    def pl(self):
        """The answer as a polars DataFrame (needs polars: ``pip install polars``)."""
        try:
            import polars
        except ImportError:
            raise DodbError("Result.pl() needs polars: pip install polars (or use .arrow() / .df())") from None
        return polars.from_arrow(self._table)

    def fetchall(self) -> list[tuple]:
        return [tuple(r.values()) for r in self._table.to_pylist()]

    def show(self) -> None:
        """Print the answer the way DuckDB prints a relation."""
        self.relation.show()

    @property
    def relation(self) -> duckdb.DuckDBPyRelation:
        """The answer as a DuckDB relation on the same connection (join it, write Parquet, …)."""
        return self._con.from_arrow(self._table)

    @property
    def columns(self) -> list[str]:
        return list(self._table.column_names)

    def __len__(self) -> int:
        return self._table.num_rows

    def __repr__(self) -> str:
        return f"<dodb.Result {self._table.num_rows} rows × {self._table.num_columns} columns>\n{self._table}"

    def explain(self) -> str:
        """The plan with the padded sizes measured in this run."""
        return self.plan.explain() if self.plan is not None else ""


class Database:
    """A DuckDB database with dodb's catalog of private tables and its privacy ledger."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, owned: bool, neighbour: str | None = None,
                 allow_insecure: bool = False, seed: int | None = None):
        if neighbour is not None:
            check_neighbour(neighbour)  # before the ledger tables are touched
        self.con = con
        self._owned = owned
        self.allow_insecure = allow_insecure
        self._seed = seed
        self._rng = new_rng(seed)
        self._lock = threading.RLock()
        self.ledger = Ledger(con)
        if neighbour is not None:
            self.ledger.set_neighbour(neighbour)  # a dataset setting: refused once queries were charged
        self.catalog = Catalog(con)
        self._udf_cursor: duckdb.DuckDBPyConnection | None = None
        self._register_functions()

    @property
    def neighbour(self) -> str:
        """The dataset's neighbour relation ('add_remove' or 'replace' one privacy unit), persisted."""
        return self.ledger.neighbour

    # -- DuckDB scalar functions for budget introspection -------------------------------------
    _FUNCTIONS = ("dodb_budget_epsilon", "dodb_budget_spent", "dodb_budget_remaining",
                  "dodb_budget_remaining_delta")

    def _register_functions(self) -> None:
        """``SELECT dodb_budget_remaining()`` etc. work in plain SQL on this connection."""
        # a UDF runs inside a query on ``con``: it reads the ledger through its own cursor
        self._udf_cursor = self.con.cursor()
        udf_ledger = Ledger(self._udf_cursor)

        def status(part: str, i: int) -> float:
            try:
                st = udf_ledger.status()
            except BudgetNotSetError:
                return float("nan")
            return float(tuple(st[part])[i])

        funcs = {
            "dodb_budget_epsilon": lambda: status("budget", 0),
            "dodb_budget_spent": lambda: status("spent", 0),
            "dodb_budget_remaining": lambda: status("remaining", 0),
            "dodb_budget_remaining_delta": lambda: status("remaining", 1),
        }
        for name, fn in funcs.items():
            try:
                self.con.remove_function(name)
            except duckdb.Error:
                pass
            self.con.create_function(name, fn, [], "DOUBLE", side_effects=True)

    def _unregister_functions(self) -> None:
        for name in self._FUNCTIONS:
            try:
                self.con.remove_function(name)
            except duckdb.Error:
                pass
        if self._udf_cursor is not None:
            self._udf_cursor.close()
            self._udf_cursor = None

    # -- declarations -----------------------------------------------------------------------
    def protect(self, table: str, privacy_unit: str, *, parent: tuple[str, str] | None = None,
                max_contributions: int | None = None, keys: Sequence[Sequence[str]] | None = None,
                max_degree: dict[str, int | None] | None = None, widths: dict[str, int] | None = None,
                capacity: int | None = None, epsilon: float | None = None, delta: float | None = None,
                orphans: str = "keep", null_units: str = "keep", force: bool = False) -> ingest.IngestResult:
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
        """
        d = ingest.Declaration(privacy_unit, tuple(parent) if parent else None, max_contributions,
                               [list(k) for k in (keys or [])], dict(max_degree or {}), dict(widths or {}),
                               orphans, null_units)
        with self._lock:
            return ingest.protect(self, table, d, capacity=capacity, epsilon=epsilon, delta=delta, force=force)

    def insert(self, table: str, rows: Any, *, capacity: int | None = None, epsilon: float | None = None,
               delta: float | None = None) -> ingest.IngestResult:
        """Add rows to a private table: bounds re-verified, a new capacity released, slots rewritten.

        ``rows``: an Arrow table, a pandas/polars DataFrame, a DuckDB relation or the name
        of a table in the current schema, with the private table's columns.
        """
        with self._lock:
            return ingest.load(self, table, rows, append=True, capacity=capacity, epsilon=epsilon, delta=delta)

    def replace_data(self, table: str, rows: Any, *, capacity: int | None = None, epsilon: float | None = None,
                     delta: float | None = None) -> ingest.IngestResult:
        """Replace all rows of a private table (same checks and release as :meth:`insert`)."""
        with self._lock:
            return ingest.load(self, table, rows, append=False, capacity=capacity, epsilon=epsilon, delta=delta)

    def _load_budget(self, epsilon: float | None, delta: float | None) -> tuple[float, float]:
        """(ε, δ) for the releases of one owner action (capacity, DP degree bounds)."""
        info = self.ledger.budget
        if info is None:
            raise BudgetNotSetError("set the dataset's budget (db.set_budget) before loading private data: "
                                    "the table's size is released under DP and charged (or declare capacity=)")
        eps = LOAD_EPSILON_SHARE * info.epsilon if epsilon is None else epsilon
        d = self._default_delta() if delta is None else delta
        check_privacy_params(eps, d)
        return float(eps), float(d)

    def set_budget(self, epsilon: float, delta: float, *, filter: str | None = None) -> None:
        """The dataset's total privacy budget (persisted with the data, shared by all sessions)."""
        self.ledger.set_budget(epsilon, delta, filter=filter)

    @property
    def budget(self) -> dict[str, Any]:
        """Budget, spent and remaining (ε, δ) as measured by the ledger's filter."""
        st = self.ledger.status()
        return {"budget": tuple(st["budget"]), "spent": tuple(st["spent"]), "remaining": tuple(st["remaining"]),
                "filter": st["filter"], "queries": st["totals"].get("queries")}

    def history(self) -> list[dict[str, Any]]:
        return self.ledger.history()

    # -- queries ----------------------------------------------------------------------------
    def _default_delta(self) -> float:
        info = self.ledger.budget
        if info is None:
            raise BudgetNotSetError("no privacy budget is set for this dataset: call "
                                    "db.set_budget(epsilon=..., delta=...) first")
        return info.delta * DEFAULT_QUERY_DELTA_SHARE

    def plan(self, query: str, *, epsilon: float, delta: float | None = None, mode: str = "do",
             allocation: str = "cost") -> QueryPlan:
        """Plan without running or charging (what :meth:`explain` shows)."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {MODES}")
        with self._lock:
            self.catalog.refresh()
            d = self._default_delta() if delta is None else delta
            return plan_query(query, self.catalog, epsilon=epsilon, delta=d, mode=mode,
                              neighbour=self.neighbour, allocation=allocation)

    def explain(self, query: str, *, epsilon: float = 1.0, delta: float | None = None, mode: str = "do",
                as_dict: bool = False):
        """The plan as text (or a dict): operators, sizes, stability, ε/δ, composition."""
        p = self.plan(query, epsilon=epsilon, delta=delta if delta is not None else 1e-6, mode=mode)
        return p.to_dict() if as_dict else p.explain()

    def sql(self, query: str, *, epsilon: float, delta: float | None = None, mode: str = "do",
            allocation: str = "cost") -> Result:
        """Run a private query: plan, admit (charge) before execution, execute, report."""
        p = self.plan(query, epsilon=epsilon, delta=delta, mode=mode, allocation=allocation)
        private = any(self.catalog.table(t).private for t in _tables_of(p))
        if mode == "plain" and private and not self.allow_insecure:
            raise DodbError("mode='plain' runs private data without protection; it is only available with "
                            "dodb.connect(..., allow_insecure=True) for benchmarks")
        charge = None
        if p.events:
            charge = self.ledger.admit(p.events, sql=query, operators=[e.operator for e in p.events],
                                       delta=p.delta, neighbour=p.neighbour)
        try:
            padded = p.execute(rng=self._rng)
        except BaseException as e:
            if charge is not None:
                charge.fail(e)
            raise
        if charge is not None:
            charge.complete()
        report = self._report(p, charge)
        try:
            return Result(padded, report, self.con, p)
        except QueryRuntimeError as e:
            spent = f"; ε={report.charged_epsilon:.4g}, δ={report.charged_delta:.3g} was charged (query " \
                    f"#{report.query_id})" if charge is not None else ""
            raise QueryRuntimeError(f"{e}{spent}") from None

    def _report(self, p: QueryPlan, charge) -> PrivacyReport:
        values = {}
        for lk in getattr(p, "leaks", []):
            values.setdefault(lk.operator, []).append(lk.values)
        ops = []
        seen: dict[int, int] = {}
        for node, name, s, eps, delta, mech in p.event_nodes:
            i = seen.get(node.node_id, 0)
            seen[node.node_id] = i + 1
            leaked = p.stats[node.node_id].leaked if node.node_id in p.stats else []
            # releases of one node come in plan order; a binned filter releases one value per bin
            value = leaked if len(leaked) != len([e for e in p.event_nodes if e[0] is node]) else leaked[i]
            ops.append({"operator": f"{node.kind}#{node.node_id}", "release": name, "sensitivity": s,
                        "epsilon": eps, "delta": delta, "scale": float(mech.scale), "shift": mech.shift,
                        "value": value})
        comp = charge.report.as_dict() if charge is not None and charge.report is not None else {}
        spent = remaining = None
        try:
            st = self.ledger.status()
            spent, remaining = tuple(st["spent"]), tuple(st["remaining"])
        except BudgetNotSetError:
            pass
        tables = []
        for name in sorted(_tables_of(p)):
            info = self.catalog.table(name)
            if info.private:
                tables.append({"table": name, "capacity": info.capacity, "source": info.capacity_source,
                               "ledger_id": info.capacity_charge})
        return PrivacyReport(p.sql, p.mode, p.epsilon, p.delta, ops, comp, charge.method if charge else None,
                             charge.epsilon if charge else 0.0, charge.delta if charge else 0.0,
                             charge.query_id if charge else None, spent, remaining, tables)

    def close(self) -> None:
        """Detach dodb (its SQL functions); close the connection if dodb opened it."""
        self._unregister_functions()
        if self._owned:
            self.con.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _tables_of(p: QueryPlan) -> set[str]:
    from .planner.logical import Scan, walk

    return {n.table for n in walk(p.root) if isinstance(n, Scan)}


def connect(database: str = ":memory:", *, neighbour: str | None = None, allow_insecure: bool = False,
            seed: int | None = None, read_only: bool = False) -> Database:
    """Open (or create) a DuckDB database file with dodb on top.  ``seed`` only in test mode.

    ``neighbour`` is a dataset setting, stored with the ledger: ``None`` uses the stored
    relation ('add_remove' for a new dataset); 'add_remove' or 'replace' sets it, which is
    refused (LedgerError) once queries were charged under the other one.
    Protected tables live only in canonical storage (``dodb_private``): plain SQL on
    ``db.con`` does not find them under their names.
    """
    con = duckdb.connect(database, read_only=read_only)
    try:
        return Database(con, owned=True, neighbour=neighbour, allow_insecure=allow_insecure, seed=seed)
    except BaseException:
        con.close()
        raise


def attach(con: duckdb.DuckDBPyConnection, *, neighbour: str | None = None, allow_insecure: bool = False,
           seed: int | None = None) -> Database:
    """Put dodb on an existing DuckDB connection (the script keeps using it).

    Tables the script protects through dodb move into canonical storage: the script's
    own SQL on ``con`` no longer finds them under their names, dodb reads them.
    """
    return Database(con, owned=False, neighbour=neighbour, allow_insecure=allow_insecure, seed=seed)
