"""Query plans: build, allocate the privacy budget, announce events, explain, execute.

``plan_query`` does everything that happens before a query may run — parse, optimise,
build the DO plan, split ``(epsilon, delta)`` over the leaking operators and describe
every release as a :class:`~dodb.accountant.PrivacyEvent` — and charges nothing.
The caller (the session) asks the ledger to admit ``plan.events`` and only then calls
:meth:`QueryPlan.execute`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import duckdb
import numpy as np
import pyarrow as pa
from sqlglot import exp

from ..accountant import PrivacyEvent, compose_all
from ..errors import DodbError, InvalidParameterError, PlanningError, UnsupportedQueryError, one_line
from ..oblivious.noise import ShiftedTruncatedDiscreteLaplace
from ..oblivious.rng import RandomSource, new_rng
from ..operators import ExecContext
from ..operators.context import MODES, check_privacy_params
from ..operators.expressions.now import Now, mentions_now, pin, read_now
from ..operators.expressions.zoned import using_zone
from .build import PlanBuilder, scans_of
from .catalog import Catalog
from ..oblivious.trace import Trace
from ..operators.table import PaddedTable, from_arrow
from ..wire import PaddedAnswer, decode, encode
from .execute import Executor, NodeStats, cast_result
from .overhead import padding_line, padding_overhead
from .params import bind_parameters, number_positional
from .sourcetext import quote_source
from .logical import DuckDBQuery, Exchange, Join, Node, Scan, leaks, upper_rows, walk
from .bind import check_window_defaults, dry_run, duckdb_names, public_query_sql, result_schema
from .guard import guard
from .optimize import optimize, parse
from .rules import reject_unsupported, rewrite_grouping
from .alignment import mark_alignment
from .exchange_cost import stage_bytes
from .exchanges import insert_exchanges
from .marking import mark_only_filters
from .memory import BASE_BYTES, estimate_peak_bytes, expected_sizes, format_bytes
from .presort import presort_sides
from .prune import prune_columns
from .public_cache import content_fingerprints, structural_key
from .plan_cache import params_key, reuse_or_build
from .partitions import describe_partitions, query_partitions

__all__ = ["QueryPlan", "plan_query", "ALLOCATIONS"]

ALLOCATIONS = ("even", "cost")


def _downstream_cost(root: Node) -> dict[int, float]:
    """Per node: oblivious work per extra padded row it hands downstream (log-sort units)."""
    parents: dict[int, list[Node]] = {}
    for n in walk(root):
        for c in n.children:
            parents.setdefault(c.node_id, []).append(n)

    def own(n: Node) -> float:
        size = max(2, upper_rows(n))
        lg = math.log2(size)
        return {"Aggregate": lg * lg / 2, "Join": lg * lg, "Sort": lg * lg / 2, "Distinct": lg * lg / 2,
                "Window": lg * lg,  # a sort per PARTITION BY / ORDER BY, and one back to the slots
                "SetOp": lg * lg / 2, "Filter": math.log2(max(2, min(size, 1024)))}.get(n.kind, 1.0)

    memo: dict[int, float] = {}

    def cost(n: Node) -> float:
        if n.node_id not in memo:
            memo[n.node_id] = sum(own(p) + cost(p) for p in parents.get(n.node_id, []))
        return memo[n.node_id]

    return {n.node_id: cost(n) for n in walk(root)}


def allocate(root: Node, epsilon: float, delta: float, strategy: str = "even") -> dict[int, tuple[float, float]]:
    """Split ``(epsilon, delta)`` over the leaking nodes so that they sum to the totals.

    ``even``: equal shares.  ``cost``: ``epsilon_i ∝ sqrt(c_i * s_i)`` with ``c_i`` the
    downstream work per padded row and ``s_i`` the release's sensitivity — the minimiser
    of the expected padding cost ``sum_i c_i * s_i / epsilon_i`` at fixed total epsilon
    (Lagrange), in the spirit of Shrinkwrap's cost-aware budget split.  Releases whose
    noise would exceed their public size bound anyway (padding to the worst case) get a
    small floor share and the rest is re-split among the others.
    """
    if strategy not in ALLOCATIONS:
        raise InvalidParameterError(f"unknown allocation {strategy!r}; choose one of {ALLOCATIONS}")
    nodes = [n for n in walk(root) if leaks(n)]
    if not nodes:
        return {}
    k = len(nodes)
    if strategy == "even":
        return {n.node_id: (epsilon / k, delta / k) for n in nodes}
    c = _downstream_cost(root)
    log_term = math.log(k / delta)
    sens = {n.node_id: max(s for _, s in leaks(n)) for n in nodes}
    bound = {n.node_id: max(1, upper_rows(n)) for n in nodes}
    floor = 0.02 * epsilon / k
    hopeless: set[int] = set()
    while True:
        active = [n for n in nodes if n.node_id not in hopeless]
        left = epsilon - floor * len(hopeless)
        w = {n.node_id: math.sqrt((1.0 + c[n.node_id]) * sens[n.node_id]) for n in active}
        total = sum(w.values())
        share = {i: left * wi / total for i, wi in w.items()}
        # a release whose noise would exceed its public size bound even with this share
        # pads to the worst case anyway: budget spent on it is wasted, move it elsewhere
        worse = {i for i, e in share.items() if sens[i] * log_term / e >= bound[i]}
        if not worse or len(worse) == len(active):
            break
        hopeless |= worse
    out = {i: (e, delta / k) for i, e in share.items()}
    out.update({i: (floor, delta / k) for i in hopeless})
    return out


@dataclass
class QueryPlan:
    sql: str
    root: Node
    names: list[str]
    internal: list[str]
    mode: str
    epsilon: float
    delta: float
    neighbour: str
    allocation: dict[int, tuple[float, float]]
    events: list[PrivacyEvent]
    event_nodes: list[tuple[Node, str, int, float, float, ShiftedTruncatedDiscreteLaplace]]
    catalog: Catalog
    stats: dict[int, NodeStats] = field(default_factory=dict)
    types: list[str] | None = None  # DuckDB's result types (the answer is cast to them)
    memory_bytes: int = 0  # public estimate of the peak memory (planner/memory.py)
    memory_expected: int = 0  # the same with each released size at its expected case (memory.expected_sizes)
    expected_rows: dict[int, int] = field(default_factory=dict)  # those sizes, by node id
    memory_limit: int | None = None  # the session's limit, set by Database.plan
    partitions: frozenset[str] | None = None  # what the releases depend on (planner/partitions.py); None: all
    public_sql: str | None = None  # a query over public tables only: DuckDB runs it (docs/design.md §Public queries)
    tables: frozenset[str] = frozenset()  # the base tables the query reads (views expanded)
    # where each node runs on a cluster (dodb.planner.placement.Placement), set by the session
    # that runs the plan on one; None: in this process
    placement: Any = None
    # public bytes of a row each Exchange sends, by node id (the dry run's lanes: exchange_cost.py)
    row_bytes: dict[int, int] = field(default_factory=dict)
    # the blocks the last run moved between processes (docs/distributed.md §Exchange log)
    moves: list = field(default_factory=list)
    # a public query planned for DuckDB alone: builds the operator plan when one is needed
    build_later: Callable[[], "QueryPlan"] | None = field(default=None, repr=False)

    def operators(self, *, strict: bool = True) -> "QueryPlan":
        """This plan with its operator tree: a public query planned for DuckDB alone
        (``plan_query(..., public_fast=True)``) builds it now, as ``plan_query`` would have.
        If the operators cannot plan it, ``strict`` raises that error; otherwise the tree is
        the one :class:`~dodb.planner.logical.DuckDBQuery` node that answered it."""
        if self.build_later is not None:
            try:
                full = self.build_later()
            except DodbError:
                if strict:
                    raise
                self.build_later = None
                self.root = DuckDBQuery(sql=self.public_sql or "", columns=list(self.internal))
                return self
            full.memory_limit = self.memory_limit  # set by the session after planning
            self.__dict__.update(full.__dict__)  # now exactly the full plan (build_later is None there)
        return self

    # -- privacy -------------------------------------------------------------------------
    def composition(self):
        """Every composition method's total for this query at its delta (best marked)."""
        return compose_all(self.events, self.delta) if self.events else None

    # -- execution -------------------------------------------------------------------------
    def execute(self, rng: RandomSource | None = None, bin_size: int | None = None,
                ctx: ExecContext | None = None, executor=None, memory_limit: int | None = None) -> PaddedAnswer:
        """Run the plan (the caller has admitted ``events``).

        Returns the answer padded to its charged size (:mod:`dodb.wire`): the engine never
        strips dummies; :meth:`answer` / the ``Result`` does, on the analyst's side.
        ``executor``: an object whose ``run(plan, ctx, bin_size)`` returns the root's output
        and per-node statistics (a cluster's, :mod:`dodb.executors`); by default the plan runs
        here, in this process.  ``memory_limit``: the executor re-checks memory against the
        sizes the plan releases (the adaptive guard, docs/design.md §Memory guard).
        """
        if self.public_sql is not None and ctx is None:
            answer = self._run_public()
            if answer is not None:
                return answer
        self.operators()
        ctx = ctx or ExecContext(mode=self.mode, rng=rng or new_rng(), neighbour=self.neighbour)
        with using_zone(self.catalog.time_zone):  # TIMESTAMPTZ results name the session's zone
            if executor is None:
                ex = Executor(self.catalog, ctx, self.allocation, bin_size=bin_size, memory_limit=memory_limit,
                              expected_rows=self.expected_rows)
                out = ex.run(self.root)
                self.stats = ex.stats
            else:
                out, self.stats = executor.run(self, ctx, bin_size)
        self.trace = ctx.trace
        self.moves = list(ctx.moves)
        self.leaks = ctx.leaks
        # the status word stays an array into the answer (an int of it would branch on its value)
        return encode(out, self.internal, self.names, self.types, getattr(ctx, "errors", 0),
                      getattr(ctx, "error_messages", None))

    def _run_public(self) -> PaddedAnswer | None:
        """DuckDB's answer to a query over public tables only (nothing private is read, nothing
        is released): the guarded statement on a fresh cursor.  A DuckDB runtime error becomes
        the answer's status, as an expression error does on the operator path; a result the
        padded representation cannot hold returns None (the operators run instead)."""
        from ..operators.expressions.errors import code_for

        self.stats, self.trace, self.leaks = {}, Trace(), []
        cur = self.catalog.cursor()
        try:
            try:
                table = cur.sql(self.public_sql).to_arrow_table()
            except duckdb.Error as e:
                code = code_for(one_line(e))
                nothing = PaddedTable([], [], np.zeros(0, dtype=bool), 0)
                return encode(nothing, [], self.names, self.types, code, {code: one_line(e)})
        finally:
            cur.close()
        try:
            out = from_arrow(table.rename_columns(list(self.internal)))
        except Exception:  # noqa: BLE001 - a type the lanes do not hold: the operator path answers
            return None
        return encode(out, self.internal, self.names, self.types)

    @staticmethod
    def answer(padded: PaddedAnswer) -> pa.Table:
        """The exact answer from a padded one (analyst side: strips dummies, casts types)."""
        from ..operators.expressions import message_for

        return decode(padded, error_message=message_for, cast=cast_result)

    # -- EXPLAIN ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        self.operators(strict=False)
        by_node: dict[int, list] = {}
        for node, name, s, eps, delta, mech in self.event_nodes:
            by_node.setdefault(node.node_id, []).append(
                {"release": name, "sensitivity": s, "epsilon": eps, "delta": delta,
                 "mechanism": f"shifted truncated discrete Laplace(scale={float(mech.scale):.4g}, shift={mech.shift})"})

        def node_dict(n: Node, seen: set) -> dict[str, Any]:
            st = self.stats.get(n.node_id)
            d = {"id": n.node_id, "operator": n.describe(), "mode": self._mode_of(n), "stability": n.stability,
                 "padded_out_bound": None if isinstance(n, DuckDBQuery) else upper_rows(n),
                 "padded_out": st.padded_out if st else None, "padded_in": st.padded_in if st else None,
                 "seconds": round(st.seconds, 4) if st else None, "leaks": by_node.get(n.node_id, []),
                 "placement": self.placement.describe(n) if self.placement is not None else None,
                 "moves": self._stage_cost(n)}
            if n.node_id in seen:
                d["shared"] = True
                return d
            seen.add(n.node_id)
            d["children"] = [node_dict(c, seen) for c in n.children]
            return d

        comp = self.composition()
        return {"sql": self.sql, "mode": self.mode, "epsilon": self.epsilon, "delta": self.delta,
                "neighbour": self.neighbour, "plan": node_dict(self.root, set()),
                # the answer's columns (public: the plan's); the Flight SQL gateway gives them as a schema
                "columns": [{"name": n, "type": t} for n, t in zip(self.names, self.types or [None] * len(self.names))],
                "composition": comp.as_dict() if comp else {},
                "chosen": comp.best.method if comp else None,
                "partitions": sorted(self.partitions) if self.partitions is not None else None,
                "memory": {"estimated_peak_bytes": self.memory_bytes, "expected_peak_bytes": self.memory_expected,
                           "limit_bytes": self.memory_limit},
                "padding": [vars(o) for o in padding_overhead(self.event_nodes)]}

    def _stage_cost(self, n: Node) -> dict[str, Any] | None:
        """An exchange stage's cost model and, after a run, its measured bytes
        (docs/distributed.md §Exchange cost); None for other nodes."""
        if self.placement is None or not isinstance(n, Exchange) or n.node_id not in self.row_bytes:
            return None
        ids = [x.node_id for x in self.placement.exchanges]
        if n.node_id not in ids:
            return None
        stage, width, blocks = f"exchange {ids.index(n.node_id)}", self.row_bytes[n.node_id], n.parts * n.parts
        noise = sum(float(mech.shift) for node, *_, mech in self.event_nodes if node.node_id == n.node_id)
        bound = upper_rows(n.child)
        out = {"stage": stage, "rounds": 1, "blocks": blocks, "row_bytes": width, "bound_rows": bound,
               "noise_mean": noise, "bound_bytes": int((bound + blocks * noise) * width)}
        sent = [m for m in self.moves if m.stage == stage]
        if sent:
            out["rows"] = sum(m.rows for m in sent)
            out["measured_bytes"] = sum(m.bytes for m in sent)
            out["run_row_bytes"] = max(m.row_bytes for m in sent)  # the run's lanes (public strings' widths)
            out["model_bytes"] = stage_bytes([m.rows for m in sent], out["run_row_bytes"],
                                             max(m.header_bytes for m in sent))
        return out

    def _mode_of(self, n: Node) -> str:
        public = n.stability == 0 and all(c.stability == 0 for c in n.children)
        return "plain (public inputs)" if public else self.mode

    def explain(self) -> str:
        d = self.to_dict()  # builds the operators of a public query planned for DuckDB alone
        lines = [f"dodb plan  mode={self.mode}  ε={self.epsilon:g}  δ={self.delta:g}  neighbours={self.neighbour}"]

        def fmt(nd: dict, depth: int) -> None:
            pad = "  " * depth
            size = f"padded ≤{nd['padded_out_bound']}" if nd["padded_out"] is None else \
                f"padded {nd['padded_in']}→{nd['padded_out']}"
            if nd["padded_out_bound"] is None:
                size = "not padded: a public result"
            where = f", {nd['placement']}" if nd.get("placement") else ""
            lines.append(f"{pad}- {nd['operator']}  [{nd['mode']}, stability {nd['stability']}, {size}{where}]")
            for lk in nd["leaks"]:
                lines.append(f"{pad}    leaks {lk['release']}: sensitivity {lk['sensitivity']}, "
                             f"ε={lk['epsilon']:.4g}, δ={lk['delta']:.3g}, {lk['mechanism']}")
            mv = nd.get("moves")
            if mv:
                lines.append(f"{pad}    moves ({mv['stage']}, {mv['rounds']} round): {mv['blocks']} blocks of the "
                             f"released sizes × {mv['row_bytes']} B a row (cost model; the dry run's lanes); at the input's bound "
                             f"≤ {mv['bound_rows']} rows + {mv['blocks']}·{mv['noise_mean']:g} noise ≈ "
                             f"{format_bytes(mv['bound_bytes'])}")
                if mv.get("measured_bytes") is not None:
                    lines.append(f"{pad}    moved: {mv['rows']} rows × {mv['run_row_bytes']} B, "
                                 f"{mv['measured_bytes']} B measured, {mv['model_bytes']} B by the cost model")
            if nd.get("shared"):
                lines.append(f"{pad}    (shared sub-plan, shown above)")
            for c in nd.get("children", []):
                fmt(c, depth + 1)

        if self.placement is not None and self.placement.sharded:
            lines.append(f"cluster: {self.placement.workers} workers, each over its shard of the private tables; "
                         "the rest runs on the driver (docs/distributed.md)")
        fmt(d["plan"], 1)
        comp = self.composition()
        lines.append(comp.explain() if comp else self._no_release_line())
        if self.mode == "do":
            lines.append(padding_line(self.event_nodes))
        if comp and any(t.partition_by for t in self.catalog.tables.values() if t.private):
            lines.append(f"charged to: {describe_partitions(self.partitions)} (docs/design.md §Partitions)")
        if not isinstance(self.root, DuckDBQuery):  # DuckDB's own memory otherwise
            lines.append(self._memory_line())
        return "\n".join(lines)

    def _memory_line(self) -> str:
        worst, expected, limit = self.memory_bytes, self.memory_expected or self.memory_bytes, self.memory_limit
        line = f"memory: estimated peak ≤ {format_bytes(worst)} (from public sizes"
        if expected < worst:
            line = (f"memory: estimated peak ≤ {format_bytes(worst)} in the worst case, ≈ {format_bytes(expected)} "
                    "expected (each released size at most its largest input plus its noise's mean")
        if limit is None:
            return line + ")"
        line += f"; limit {format_bytes(limit)})"
        if expected > limit:
            return line + " — above the limit: running it is refused"
        if worst > limit:
            return line + (" — the worst case is above the limit: it runs, re-checked against each size it "
                           "releases, and stops (its charge kept) if they need more")
        return line

    def _no_release_line(self) -> str:
        """What a query without releases reveals: only public sizes (docs/threat-model.md)."""
        sizes = []
        for name in sorted({n.table for n in walk(self.root) if isinstance(n, Scan) and n.private}):
            info = self.catalog.table(name)
            origin = (f"released under DP when loaded, ledger #{info.capacity_charge}"
                      if info.capacity_source == "dp" else "declared by the owner")
            sizes.append(f"{name}: {info.capacity} slots, {origin}")
        if not sizes:
            return "privacy: this query releases nothing (public inputs only)"
        return "privacy: this query releases no new size; it sees private tables at their capacities (" \
            + "; ".join(sizes) + ")"


class DuckDBPlan(QueryPlan):
    """A query over public tables only, planned for DuckDB to answer (docs/design.md §Public
    queries): its operator tree is built the first time anything asks for it."""

    @property
    def root(self) -> Node:
        self.operators(strict=False)
        return self.__dict__["root"]

    @root.setter
    def root(self, value: Node | None) -> None:
        self.__dict__["root"] = value


def _scalar_type(t: str) -> bool:
    """A DuckDB result type held in one lane (the public path does not build list answers)."""
    u = t.upper()
    return "[" not in u and not u.startswith(("LIST", "STRUCT", "MAP", "UNION"))


def lookup_hints(root: Node, builder: PlanBuilder) -> dict[tuple, float]:
    """Pruned per-pass costs of public join sides that a lookup join would now beat a sort on.

    The builder chooses lookup-vs-sort before column pruning, so a public side can look
    wider than the join needs (e.g. a ``LIKE`` column used only by its own filter).  The
    sides it weighed were run at plan time; a pruned side is matched to the weighed one with
    the same scans whose columns include its own, and those columns are selected from its
    result.  Every input here is public (public tables, public size bounds).
    """
    from ..operators.lookup import lookup_pays, pass_cost

    hints: dict[tuple, float] = {}
    for n in walk(root):
        if not isinstance(n, Join) or n.method != "sort":
            continue
        sides = [(n.right, n.left)] + ([(n.left, n.right)] if n.how == "inner" else [])
        for pub, other in sides:
            if other.stability == 0:
                continue
            for (scans, columns), full in builder.lookup_candidates.items():
                if scans != scans_of(pub) or not set(pub.columns) <= set(full.names):
                    continue
                table = full.select(pub.columns)
                cost = pass_cost(table)
                if lookup_pays(table.real_count, upper_rows(other), cost):
                    hints[(scans, columns)] = cost
                break
    return hints


def plan_query(sql: str, catalog: Catalog, *, epsilon: float, delta: float, mode: str = "do",
               neighbour: str = "add_remove", allocation: str = "cost", params=None,
               public_fast: bool = False, workers: int = 1) -> QueryPlan:
    """Everything before execution; raises a :class:`~dodb.errors.DodbError` on any problem and
    charges nothing.  The query is guarded (planner/guard.py) and bound (planner/bind.py) first.

    ``public_fast``: a query over public tables only that DuckDB can answer is not built
    into operators until something needs them (docs/design.md §Public queries).
    ``workers``: plan for a cluster of that many workers (grouped aggregates over sharded rows
    get an exchange by key, with its release: planner/exchanges.py)."""
    if mode not in MODES:
        raise InvalidParameterError(f"unknown mode {mode!r}; choose one of {MODES}")
    check_privacy_params(epsilon, delta)
    try:
        with using_zone(catalog.time_zone):  # zone-dependent TIMESTAMPTZ expressions: UTC only
            return _plan(sql, catalog, epsilon, delta, mode, neighbour, allocation, params, public_fast, workers)
    except UnsupportedQueryError as e:
        raise quote_source(e, sql) from None
    except DodbError:
        raise
    except RecursionError:
        raise UnsupportedQueryError("expressions nested too deeply to plan") from None
    except duckdb.Error as e:
        raise PlanningError(one_line(e)) from None
    except Exception as e:  # noqa: BLE001 - planning charges nothing; name the failure
        raise PlanningError(f"dodb cannot plan this query: {type(e).__name__}: {one_line(e)}") from e


def _front_end(sql: str, catalog: Catalog, params, now: Now | None = None) -> tuple[exp.Expression, list[tuple[str, str]], exp.Expression,
                                                             frozenset[str], str | None]:
    """Parse, guard, bind and optimise: ``(parsed, DuckDB's result schema, optimised AST, base tables,
    the SQL of a query over public tables only)``.

    Reads only the query text, ``params`` and the catalog (docs/design.md §Planning caches);
    callers must not modify the returned trees (they copy before building).
    """
    # parameters become literal nodes of the parsed tree, never text (planner/params.py)
    parsed = parse(sql) if params is None else bind_parameters(parse(number_positional(sql)), params)
    parsed = parsed if now is None else pin(parsed, now)  # current_date as this query's constant
    reject_unsupported(rewrite_grouping(parsed.copy()))
    guarded = guard(parsed, catalog)
    schema = result_schema(guarded, catalog)  # DuckDB names and types the query as written
    as_written = duckdb_names(sql)  # DuckDB's own names for the text as written (parsed, never run)
    if as_written is not None and len(as_written) == len(schema):
        schema = [(name, t) for name, (_, t) in zip(as_written, schema)]
    check_window_defaults(guarded, catalog)   # lag(x::TINYINT, 1, 300) fails here, not after admission
    guarded.ast = rewrite_grouping(guarded.ast)  # grouping sets, FILTER, GROUP BY ALL (§Grouping)
    return parsed, schema, optimize(guarded.ast.copy(), catalog), frozenset(guarded.tables), \
        public_query_sql(guarded, catalog)


def _plan(sql: str, catalog: Catalog, epsilon: float, delta: float, mode: str, neighbour: str,
          allocation: str, params=None, public_fast: bool = False, workers: int = 1,
          copartition: bool = True) -> QueryPlan:
    bound = params_key(params)
    now = read_now(catalog.time_zone) if mentions_now(sql) else None  # DuckDB's, read once a query
    moment = None if now is None else now.key(sql)
    # a pure function of the text, the parameters, the moment and the catalog: kept per catalog fingerprint
    parsed, schema, optimized, tables, public_sql = catalog.schema_cache.get_or_compute(
        ("front end", sql, bound, moment, catalog.fingerprint), lambda: _front_end(sql, catalog, params, now))
    names = [n for n, _ in schema]
    if public_fast and public_sql is not None and all(_scalar_type(t) for _, t in schema):
        # nothing private is read: DuckDB answers, the operators are built only if needed
        later = lambda: plan_query(sql, catalog, epsilon=epsilon, delta=delta, mode=mode,  # noqa: E731
                                   neighbour=neighbour, allocation=allocation, params=params, workers=workers)
        return DuckDBPlan(sql if params is None else parsed.sql(dialect="duckdb"), None, names,
                         [f"__public_{i}" for i in range(len(names))], mode, float(epsilon), float(delta),
                         neighbour, {}, [], [], catalog, types=[t for _, t in schema], public_sql=public_sql,
                         tables=tables, build_later=later)
    key = ("plan", sql, bound, moment, catalog.fingerprint, float(epsilon), float(delta), mode, neighbour, allocation,
           workers, copartition)
    return reuse_or_build(catalog, key, tables, lambda contents: _build(
        sql, catalog, epsilon, delta, mode, neighbour, allocation, params, public_fast, workers, copartition,
        (parsed, schema, names, optimized, tables, public_sql), contents),
        lambda wanted: content_fingerprints(catalog, wanted))


def _build(sql: str, catalog: Catalog, epsilon: float, delta: float, mode: str, neighbour: str, allocation: str,
           params, public_fast: bool, workers: int, copartition: bool, front: tuple,
           contents: dict[str, tuple]) -> QueryPlan:
    """The operator plan of a query the front end has bound (``_plan``), its releases priced."""
    parsed, schema, names, optimized, tables, public_sql = front
    builder = PlanBuilder(catalog, neighbour, tables=tables, contents=contents)
    built = builder.build(optimized.copy())
    prune_columns(built.root)
    hints = lookup_hints(built.root, builder)
    if hints:  # a public side is cheaper to look up once its unused columns are pruned: plan again
        again = PlanBuilder(catalog, neighbour, lookup_costs=hints, tables=tables)
        again.share_public_reads(builder)
        built = again.build(optimized.copy())
        prune_columns(built.root)
    insert_exchanges(built.root, catalog, workers, neighbour, joins=copartition)  # a cluster's (planner/exchanges.py)
    presort_sides(built.root, mode, workers, catalog)
    mark_only_filters(built.root)
    mark_alignment(built.root, neighbour)
    if len(names) == len(built.names):
        built.names = names
    alloc = allocate(built.root, epsilon, delta, allocation) if mode == "do" else {}
    events, event_nodes = [], []
    for n in walk(built.root):
        if mode != "do":
            break
        releases = leaks(n)
        if not releases:
            continue
        eps_n, delta_n = alloc[n.node_id]
        if len(releases) > 1:  # a left join splits its share between its two releases
            eps_n, delta_n = eps_n / len(releases), delta_n / len(releases)
        for name, s in releases:
            try:
                mech = ShiftedTruncatedDiscreteLaplace.for_privacy(eps_n, delta_n, s)
            except ValueError:
                # a sensitivity this large means no padding would fit in memory either: refuse
                # before admission, naming the operator and what would give it a small bound
                raise PlanningError(
                    f"{n.describe()}: cannot calibrate noise: its {name} has sensitivity {s}, too large to pad "
                    f"at ε={eps_n:.3g}, δ={delta_n:.3g} (declare keys or max_degree for its join columns in "
                    "protect(), or join on a key that is unique after grouping)") from None
            op = f"{n.kind}#{n.node_id}:{name}"
            events.append(PrivacyEvent.padding(mechanism=mech, sensitivity=s, operator=op, query=sql))
            event_nodes.append((n, name, s, eps_n, delta_n, mech))
    if params is not None:  # the ledger and the report show the query as it ran
        sql = parsed.sql(dialect="duckdb")
    plan = QueryPlan(sql, built.root, built.names, built.internal, mode, float(epsilon), float(delta), neighbour,
                     alloc, events, event_nodes, catalog,
                     types=[t for _, t in schema] if len(schema) == len(built.names) else None, tables=tables)
    if public_sql is not None and plan.types is not None and all(_scalar_type(t) for t in plan.types):
        plan.public_sql = public_sql
    plan.memory_bytes = estimate_peak_bytes(built.root)
    plan.memory_expected = plan.memory_bytes
    if event_nodes and plan.memory_bytes > BASE_BYTES:
        shifts: dict[int, float] = {}
        for n, _, _, _, _, mech in event_nodes:
            shifts[n.node_id] = shifts.get(n.node_id, 0.0) + float(mech.shift)
        plan.expected_rows = expected_sizes(built.root, shifts)
        plan.memory_expected = estimate_peak_bytes(built.root, plan.expected_rows)
    plan.partitions = query_partitions(built.root, catalog) if events else None
    # every data-independent failure happens here, before admission; the dry run reads no
    # data, so an identical plan over an identical catalog passed it already (§Planning caches)
    shape = structural_key(built.root)
    key = None if shape is None else ("dry run", shape, tuple(plan.names), tuple(plan.internal),
                                      tuple(plan.types or ()), mode, neighbour, catalog.fingerprint)
    widths, cast_keys = catalog.schema_cache.get_or_compute(key, lambda: dry_run(plan))
    if cast_keys and copartition:  # a join's sides would hash equal values of two types apart
        return _plan(sql, catalog, epsilon, delta, mode, neighbour, allocation, params, public_fast, workers,
                     copartition=False)
    plan.row_bytes = {x.node_id: w for x, w in zip((n for n in walk(built.root) if isinstance(n, Exchange)), widths)
                      if w is not None}
    return plan
