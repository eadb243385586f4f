"""Execute a logical plan with the DO operators.

Private data flows only through the operators of :mod:`dodb.operators`, scalar
expressions through the oblivious evaluator (docs/design.md §Expressions); DuckDB reads
tables.  Sub-plans whose inputs are all public run the same operators in ``plain`` mode
(DuckDB evaluates their expressions): nothing private is involved.  Every
noisy release is checked against the events the plan announced before execution; a
mismatch is a bug and stops the query (the charge stays, as the leak may have happened).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, fields, replace

import duckdb
import numpy as np
import pyarrow as pa
import sqlglot
from sqlglot import exp

from .. import duckcalls
from ..duckcalls import scratch_registered, union_types
from ..operators import (
    ExecContext, PaddedTable, distinct, filter_table, from_arrow, group_by, join, order_by,
    predicate_mask, project, set_operation,
)
from ..operators.exchange import exchange_by_keys, lane_row_bytes
from ..operators.join import sorted_side
from ..operators.lookup import lookup_join
from ..operators.scalar_row import SCALAR_ROWS, scalar_row
from ..operators.theta_join import cross_product
from ..operators.window import window
from ..operators.table import Column, column_from_arrow, concat_tables, read_only
from .catalog import Catalog
from .guard import pushable
from .logical import (AddRowId, Aggregate, CrossJoin, CrossOne, Distinct, Exchange, Filter, Join, Node, OneRow, Project, ScalarRow, Scan, SetOp,
                      Sort, consumer_counts, leaks)
from .windows import Window
from ..errors import MemoryLimitError
from ..storage.canonical import read_slots
from .memory import bytes_at, format_bytes
from .widths import string_width
from ..operators.expressions.types import parse_type

__all__ = ["Executor", "NodeStats", "cast_result"]


@dataclass
class NodeStats:
    padded_in: list[int] = field(default_factory=list)
    padded_out: int = 0
    seconds: float = 0.0
    leaked: list[int] = field(default_factory=list)


PIN_FACTOR = 2  # a kept lane may hold at most this many times its own bytes (plus PIN_SLACK)
PIN_SLACK = 1 << 16


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def unpinned(t: PaddedTable) -> PaddedTable:
    """``t`` with the lanes that are views pinning a much larger buffer (the sorted block
    under a LIMIT's rows, a full-size scratch array under one aggregate row) copied out, so
    the buffer is freed with the node that made it (docs/design.md §Memory guard).  Lanes
    sharing one buffer count together (a scan's columns decoded into one block keep it
    whole).  Whether a lane is a view depends on the operator and the padded sizes only."""
    lanes = [a for c in t.columns if type(c) is Column for a in (c.values, c.valid, c.lengths) if a is not None]
    lanes.append(t.is_real)
    used: dict[int, int] = {}
    roots: dict[int, np.ndarray] = {}
    for a in lanes:
        r = _root(a)
        roots[id(r)] = r
        used[id(r)] = used.get(id(r), 0) + a.nbytes
    pinned = {k for k, r in roots.items() if r.nbytes > PIN_FACTOR * used[k] + PIN_SLACK}
    if not pinned:
        return t

    def own(a):
        return a.copy() if a is not None and id(_root(a)) in pinned else a

    columns = [replace(c, values=own(c.values), valid=own(c.valid), lengths=own(c.lengths))
               if type(c) is Column else c for c in t.columns]  # list columns keep their own layout
    return replace(t, columns=columns, is_real=own(t.is_real))


DRY_RUN_SLOTS = 2  # dummy slots per private scan when a plan is bound before admission


class Executor:
    """Runs a plan.  ``dry_run``: private scans are ``DRY_RUN_SLOTS`` dummy slots and public
    scans return no row, so the run reads no data and depends on the plan alone
    (docs/design.md §Bind before charge)."""

    def __init__(self, catalog: Catalog, ctx: ExecContext, allocation: dict[int, tuple[float, float]],
                 bin_size: int | None = None, dry_run: bool = False, given: dict[int, PaddedTable] | None = None,
                 slot_reader=None, memory_limit: int | None = None, expected_rows: dict[int, int] | None = None):
        """``given``: outputs of plan nodes computed elsewhere (a cluster's gathered shards, a
        broadcast public input), used instead of running those nodes.  ``slot_reader(info,
        columns) -> (is_real, {name: Column})`` reads a private table's slots instead of the
        canonical storage (a worker's shard, docs/distributed.md §Sharded storage).
        ``memory_limit``: re-check, before each node, the memory it needs with the padded sizes
        of the nodes that ran in place of their bounds (and its own, if it releases one, at
        ``expected_rows``), and stop with :class:`~dodb.errors.MemoryLimitError` above it (the
        adaptive guard, docs/design.md §Memory guard; a decision on released values only)."""
        self.dry_run = dry_run
        self.memory_limit = memory_limit
        self.expected_rows = dict(expected_rows or {})
        self._roots: list[Node] = []
        self.given = dict(given or {})
        self.slot_reader = slot_reader
        self.catalog = catalog
        self.ctx = ctx
        self.public_ctx = ExecContext(mode="plain", neighbour=ctx.neighbour)
        self.allocation = allocation
        self.bin_size = bin_size
        self.results: dict[int, PaddedTable] = {}
        self.stats: dict[int, NodeStats] = {}
        self._consumers: dict[int, int] = {}
        self._scan_sources: dict[int, tuple] = {}  # private scans' slot-cache keys, by node id
        # joins and set operations whose paired columns were cast to a common type
        self.cast_pairs: set[int] = set()
        self.row_bytes: dict[int, int] = {}  # public bytes of a row each Exchange sends (exchange_cost.py)

    def run(self, node: Node) -> PaddedTable:
        """The output of ``node``: its sub-plan runs children first, in order (as
        :func:`~dodb.planner.logical.walk` lists it).  A node's output is dropped once every
        node that reads it has run, so only live outputs hold memory (§Memory guard)."""
        return self.run_all([node])[0]

    def run_all(self, roots: list[Node]) -> list[PaddedTable]:
        """The outputs of several plan nodes in one run: a node under two of them runs once."""
        self._consumers = {}
        for r in roots:
            for k, v in consumer_counts(r).items():
                self._consumers[k] = self._consumers.get(k, 0) + v
        for r in roots:  # kept until the end: a root's output is handed out
            self._consumers[r.node_id] = self._consumers.get(r.node_id, 0) + 1
        self.results = dict(self.given)
        self._roots = list(roots)
        # Floating-point events on private values (an overflow in a variance, 0/0 in an
        # average of dummies) stay silent: a numpy warning would put a bit that depends on the
        # data on stderr, outside the view (docs/threat-model.md §Messages).  Errors the
        # analyst must see travel in the status word (dodb.wire).
        with np.errstate(all="ignore"):
            return [self._run(r) for r in roots]

    def _run(self, node: Node) -> PaddedTable:
        if node.node_id in self.results:
            return self.results[node.node_id]
        inputs = [self._run(c) for c in node.children]
        if self.memory_limit is not None and len(self._roots) == 1:
            self._check_memory(node)
        public = node.stability == 0 and all(c.stability == 0 for c in node.children)
        ctx = self.public_ctx if public else self.ctx
        eps, delta = self.allocation.get(node.node_id, (1.0, 0.5))
        before = len(ctx.leaks)
        observer = self.ctx.observer  # the audit's view recorder (docs/design.md §Audit)
        if observer is not None:
            observer.enter(node)
        t0 = time.perf_counter()
        out = self._dispatch(node, inputs, ctx, eps, delta)
        if observer is not None:
            observer.leave(node, out)
        made = ctx.leaks[before:] if ctx is self.ctx else []
        planned = leaks(node) if self.ctx.mode == "do" else []
        share = eps / max(1, len(planned))
        if [lk.sensitivity for lk in made] != [s for _, s in planned] or \
                any(abs(lk.epsilon - share) > 1e-12 * max(1.0, share) for lk in made):
            raise RuntimeError(f"internal error: {node.describe()} released {[lk.sensitivity for lk in made]} "
                               f"but the plan announced {[s for _, s in planned]}")
        if not public and self.ctx.mode == "do" and out.aligned != node.aligned:
            raise RuntimeError(f"internal error: {node.describe()} produced an aligned={out.aligned} layout "
                               f"but the plan announced aligned={node.aligned}")
        self.stats[node.node_id] = NodeStats([t.padded_size for t in inputs], out.padded_size,
                                             time.perf_counter() - t0, [v for lk in made for v in lk.values])
        self.results[node.node_id] = out = unpinned(out)
        del inputs
        for c in node.children:  # an edge per child: a CTE read twice by one node counts twice
            self._consumers[c.node_id] -= 1
            if self._consumers[c.node_id] == 0:
                self.results.pop(c.node_id, None)
        return out

    def _check_memory(self, node: Node) -> None:
        """The adaptive memory guard: what running ``node`` holds, from the padded sizes of the
        nodes that ran (public: released or fixed by the plan) and its own expected size."""
        known = {**self.expected_rows, **{i: st.padded_out for i, st in self.stats.items()}}
        need = bytes_at(self._roots[0], node, known)
        if need > self.memory_limit:
            raise MemoryLimitError(
                f"{node.describe()}: with the sizes released so far it needs "
                f"{format_bytes(need)}, above the limit of {format_bytes(self.memory_limit)} (declare tighter "
                "bounds, filter earlier, or raise db.memory_limit / DODB_MEMORY_LIMIT)")

    # -- per node kind ---------------------------------------------------------------------
    def _dispatch(self, node: Node, inputs: list[PaddedTable], ctx, eps, delta) -> PaddedTable:
        if isinstance(node, Scan):
            t = self._scan(node)
            return t if not node.sort_keys else self._sorted_scan(node, t)
        if isinstance(node, OneRow):  # public: one real row (a SELECT without FROM)
            return from_arrow(pa.table({node.columns[0]: pa.array([1], pa.int32())}), stability=0)
        if isinstance(node, Filter):
            t = inputs[0]
            mask = predicate_mask(t, node.predicate, ctx)
            if node.columns != t.names:  # columns only the predicate reads are not moved (planner/prune.py)
                t = t.select(node.columns)
            if node.mark_only:  # one linear pass; the padded size stays the public input size
                ctx.trace.record("filter:mark", -1, t.padded_size)
                return t.with_arrays(t.arrays()[:-1] + [t.is_real & mask], aligned=t.aligned)
            out = filter_table(t, mask, epsilon=eps, delta=delta, ctx=ctx, bin_size=self.bin_size,
                               keep_marked_above=node.keep_marked_above).table
            if node.ordered_keys and out.padded_size < t.padded_size:
                out = _dummy_keys_last(out, node.ordered_keys)
            return out
        if isinstance(node, ScalarRow):
            one, too_many = scalar_row(inputs[0], ctx)
            # the query's status, also when the subquery is public (run under public_ctx)
            self.ctx.fold_errors(np.asarray(too_many, dtype=np.int64) * SCALAR_ROWS)
            return self._project(node, one, ctx)
        if isinstance(node, Project):
            return self._project(node, inputs[0], ctx)
        if isinstance(node, Join):
            left, right, lk, rk = _unify_keys(inputs[0], inputs[1], node.left_keys, node.right_keys, ctx)
            if lk != node.left_keys or rk != node.right_keys:  # joined on cast keys: not in its keys' order
                self.cast_pairs.add(node.node_id)
            if node.method == "lookup":
                out = lookup_join(left, right, lk, rk, how=node.how, epsilon=eps, delta=delta, ctx=ctx,
                                  keep=node.columns).table
            else:
                dl, dr = node.left_degree, node.right_degree
                if self.dry_run:  # dummy rows only: the oblivious dry run must not pad to the plan's
                    # worst case (the memory guard judges that after planning), and rows per value
                    # never exceed the padded input
                    dl = None if dl is None else min(dl, max(1, left.padded_size))
                    dr = None if dr is None else min(dr, max(1, right.padded_size))
                # a side that is a private scan, unchanged, may keep its sorted lanes in the slot
                # cache for later joins (operators/join.py sorted_side; §Slot cache)
                sources = [self._scan_sources.get(c.node_id) if t is inp else None
                           for c, t, inp in zip(node.children, (left, right), inputs)]
                # a side sorted at its scan (planner/presort.py) is in the join's order unless
                # its keys were cast to a common type here
                presorted = [flag and t is inp for flag, t, inp in
                             zip((node.left_presorted, node.right_presorted), (left, right), inputs)]
                out = join(left, right, lk, rk, how=node.how, epsilon=eps, delta=delta, ctx=ctx,
                           left_degree=dl, right_degree=dr, same_unit=node.same_unit,
                           sorted_cache=getattr(self.catalog, "slot_cache", None), left_source=sources[0],
                           right_source=sources[1], left_sorted=presorted[0], right_sorted=presorted[1],
                           keep=node.columns).table
            # the columns the plan hands on (planner/prune.py narrows a join to what is used above)
            return _columns_of(out, node)
        if isinstance(node, CrossJoin):
            return _columns_of(cross_product(inputs[0], inputs[1], stability=node.stability, ctx=ctx), node)
        if isinstance(node, CrossOne):
            one = inputs[1]
            if one.stability == 0:  # public: its real row moves to slot 0, where the broadcast reads
                first = np.argsort(~one.is_real, kind="stable")
                one = one.with_arrays([a[first] for a in one.arrays()])
            return _columns_of(_broadcast(inputs[0], one, node.stability), node)
        if isinstance(node, Aggregate):
            ordered = node.ordered_by is not None and node.ordered_by not in self.cast_pairs
            out = group_by(inputs[0], node.keys, node.aggs, epsilon=eps, delta=delta, ctx=ctx,
                           sort_keys=node.sort_keys, presorted=node.presorted, ordered=ordered).table
            # a join above reads it in its keys' order (planner/presort.py): the unused slots
            # after the compacted groups get NULL keys
            return _dummy_keys_last(out, node.ordered_keys) if node.ordered_keys else out
        if isinstance(node, Sort):
            out = order_by(inputs[0], node.keys, limit=node.limit, offset=node.offset, ctx=ctx).table
            if isinstance(node.child, Sort) and node.child.per_worker:
                # over the workers' top-k blocks the window is the one over the whole input, so
                # its stability is the single-process plan's (docs/distributed.md §Top-k)
                out = out.with_stability(node.stability)
            return out
        if isinstance(node, Exchange):  # in one process: the destination blocks one after another
            t = inputs[0]
            self.row_bytes[node.node_id] = lane_row_bytes(t)
            ex = exchange_by_keys(t, node.keys, node.parts, epsilon=eps, delta=delta, ctx=ctx)
            return concat_tables(ex.blocks, stability=t.stability)
        if isinstance(node, Distinct):
            return distinct(inputs[0], epsilon=eps, delta=delta, ctx=ctx).table
        if isinstance(node, SetOp):
            if any(_key_family(a.type) != _key_family(b.type) for a, b in zip(inputs[0].columns, inputs[1].columns)):
                self.cast_pairs.add(node.node_id)  # their hashes of equal values may differ (planner/bind.py)
            left, right = _unify_types(inputs[0], inputs[1], ctx)
            return set_operation(node.op, left, right, epsilon=eps, delta=delta, ctx=ctx).table
        if isinstance(node, Window):
            return window(inputs[0], node.specs, restore=node.aligned, stability=node.stability, ctx=ctx).table
        if isinstance(node, AddRowId):
            t = inputs[0]
            n = t.padded_size
            col = Column(pa.int64(), np.arange(n, dtype=np.int64), np.ones(n, dtype=bool))
            return PaddedTable(t.names + [node.name], t.columns + [col], t.is_real, t.stability, dict(t.meta),
                               t.aligned)
        raise NotImplementedError(node.kind)

    def _scan(self, node: Scan) -> PaddedTable:
        if self.dry_run:
            # a dry-run scan reads no row: its result is a function of the catalog alone
            key = ("dry scan", node.table, node.alias, tuple(node.source_columns), node.stability,
                   None if node.predicate is None else node.predicate.sql(dialect="duckdb"))
            cached = self.catalog.schema_cache.get_or_compute(key, lambda: self._scan_uncached(node))
            return cached.with_arrays([a.copy() for a in cached.arrays()], aligned=cached.aligned)
        return self._scan_uncached(node)

    def _sorted_scan(self, node: Scan, t: PaddedTable) -> PaddedTable:
        """The scan's rows sorted by ``node.sort_keys`` as a join sorts its side, kept in the
        slot cache when the scan came from it (planner/presort.py)."""
        source = self._scan_sources.get(node.node_id)
        out = sorted_side(self.ctx if node.stability else self.public_ctx, t, node.sort_keys,
                          getattr(self.catalog, "slot_cache", None), source)
        return out.with_stability(t.stability)

    def _scan_uncached(self, node: Scan) -> PaddedTable:
        t = self._scan_read(node)
        info = self.catalog.table(node.table)
        for name, col in zip(t.names, t.columns):  # Arrow holds HUGEINT as DECIMAL(38, 0): say which it is
            if parse_type(str(info.columns.get(name.split(".", 1)[-1], ""))).huge:
                col.huge = True
        return t

    def _scan_read(self, node: Scan) -> PaddedTable:
        info = self.catalog.table(node.table)
        if info.private:
            return self._dummy_slots(node, info) if self.dry_run else self._scan_private(node, info)
        if node.predicate is not None and not pushable(node.predicate, node.alias, self.catalog.macros):
            raise RuntimeError(f"internal error: {node.describe()} has a predicate off the pushdown allow-list")
        # built here from the plan, on a fresh cursor (no temporary objects of the session's
        # connection) and fully qualified (no search path): docs/design.md §Pushdown allow-list
        q = exp.select(*[exp.column(c, table=node.alias, quoted=True).as_(f"{node.alias}.{c}", quoted=True)
                         for c in node.source_columns]).from_(
            self.catalog.relation(node.table).as_(node.alias, quoted=True))
        if node.predicate is not None:
            q = q.where(node.predicate.copy())
        if self.dry_run:
            q = q.limit(0)
        cur = self.catalog.cursor()
        try:
            data = duckcalls.fetch_arrow(cur, q.sql(dialect="duckdb"))
        finally:
            cur.close()
        return from_arrow(data, stability=node.stability)

    def _dummy_slots(self, node: Scan, info) -> PaddedTable:
        """``DRY_RUN_SLOTS`` dummy slots with the columns' logical types, from the zero-row shadow."""
        q = exp.select(*[exp.column(c, quoted=True) for c in node.source_columns]).from_(
            self.catalog.shadow(node.table)).limit(0)
        cur = self.catalog.cursor()
        try:
            schema = cur.sql(q.sql(dialect="duckdb")).to_arrow_table().schema
        finally:
            cur.close()
        k = DRY_RUN_SLOTS
        cols = [column_from_arrow(pa.nulls(k, type=f.type), info.widths.get(c))
                for c, f in zip(node.source_columns, schema)]
        return PaddedTable([f"{node.alias}.{c}" for c in node.source_columns], cols, np.zeros(k, dtype=bool),
                           node.stability, aligned=True)

    def _scan_private(self, node: Scan, info) -> PaddedTable:
        """All ``capacity`` slots of the canonical table (docs/design.md §Storage)."""
        if node.predicate is not None:
            raise RuntimeError("internal error: a predicate was pushed into a private scan")
        wanted = set(node.source_columns)
        cols = [c for c in info.logical_columns if c.name in wanted]

        if self.slot_reader is not None:  # a worker's shard: read (and verified) by the reader
            is_real, columns = self.slot_reader(info, cols)
            self.ctx.trace.record(f"scan:{info.name}", -1, int(is_real.shape[0]), len(cols))
            names = [f"{node.alias}.{c}" for c in node.source_columns]
            return PaddedTable(names, [columns[c] for c in node.source_columns], is_real, node.stability,
                               aligned=True)

        def read() -> tuple[np.ndarray, dict[str, Column]]:
            cur = self.catalog.con.cursor()
            try:
                return read_slots(cur, info.name, cols, int(info.capacity), info.checksums)
            finally:
                cur.close()

        # every slot of these columns, as the storage version the catalog just read holds them
        # (docs/design.md §Slot cache): the key is public, the arrays handed out are read-only views
        key = ("slots", info.name, tuple(c.name for c in cols), int(info.capacity), info.version,
               tuple(sorted(info.checksums.items())))
        is_real, columns = self.catalog.slot_cache.get_or_compute(
            key, read, weight=lambda got: got[0].nbytes + sum(_nbytes(c) for c in got[1].values()))
        is_real, columns = read_only(is_real), {k: _read_only_column(c) for k, c in columns.items()}
        self._scan_sources[node.node_id] = key
        self.ctx.trace.record(f"scan:{info.name}", -1, int(info.capacity), len(cols))
        names = [f"{node.alias}.{c}" for c in node.source_columns]
        return PaddedTable(names, [columns[c] for c in node.source_columns], is_real, node.stability,
                           aligned=True)

    def _project(self, node: Project, t: PaddedTable, ctx) -> PaddedTable:
        if all(isinstance(e, exp.Column) for e in node.exprs.values()):
            out = t.select([e.name for e in node.exprs.values()], rename=list(node.exprs))
            return out.with_stability(node.stability)
        col_widths = {n: c.width for n, c in zip(t.names, t.columns) if c.is_string}
        widths = {}
        for name, e in node.exprs.items():
            w = string_width(e, col_widths)
            if w is not None:
                widths[name] = max(1, w)
        out = project(t, node.exprs, widths=widths, ctx=ctx).table.with_stability(node.stability)
        out.aligned = t.aligned  # row-wise: every row stays in its slot
        return out


def _dummy_keys_last(t: PaddedTable, keys: list[str]) -> PaddedTable:
    """A compacted filter's output in key order again (planner/presort.py): its real rows
    kept their key order at the front, and the slots after them get NULL keys, which sort
    last and tie with one another (and the real NULL keys) in position order."""
    cols = [replace(c, valid=c.valid & t.is_real) if name in keys else c for name, c in zip(t.names, t.columns)]
    return PaddedTable(t.names, cols, t.is_real, t.stability, dict(t.meta), t.aligned)


def _arrays_of(c) -> dict[str, np.ndarray]:
    return {f.name: getattr(c, f.name) for f in fields(c) if isinstance(getattr(c, f.name), np.ndarray)}


def _nbytes(c) -> int:
    return sum(a.nbytes for a in _arrays_of(c).values())


def _read_only_column(c):
    return replace(c, **{k: read_only(a) for k, a in _arrays_of(c).items()})


def _broadcast(big: PaddedTable, one: PaddedTable, stability: int) -> PaddedTable:
    """Append the single row of ``one`` to every row of ``big`` (reads only slot 0).

    ``one`` holds at most one row (a global aggregate, perhaps filtered by HAVING): when
    it has none, no row comes out (every slot of ``big`` becomes a dummy, in one scan).
    """
    n = big.padded_size
    if one.padded_size == 0:  # public: the padded size
        one = one.with_arrays([np.zeros((1,) + a.shape[1:], dtype=a.dtype) for a in one.arrays()])
    alive = one.is_real[:1].repeat(n)
    cols = []
    for c in one.columns:
        arrays = [np.repeat(a[:1], n, axis=0) for a in c.arrays()]
        arrays[1] = arrays[1] & alive
        cols.append(c.with_arrays(arrays))
    return PaddedTable(big.names + one.names, big.columns + cols, big.is_real & alive, stability, dict(big.meta),
                       big.aligned)


def _cast_ctx(t: PaddedTable, ctx: ExecContext) -> ExecContext:
    """Casts over private rows go through the oblivious evaluator (docs/design.md §Expressions)."""
    return ctx if t.stability > 0 and ctx.mode != "plain" else ExecContext(mode="plain")


def _unify_types(a: PaddedTable, b: PaddedTable, ctx: ExecContext) -> tuple[PaddedTable, PaddedTable]:
    """Cast both inputs of a set operation to DuckDB's common column types."""
    if [str(c.type) for c in a.columns] == [str(c.type) for c in b.columns]:
        return a, PaddedTable(list(a.names), b.columns, b.is_real, b.stability, dict(b.meta))
    target = union_types(tuple(c.type for c in a.columns), tuple(c.type for c in b.columns))
    out = []
    for t in (a, b):
        # a column already of the common type is passed through, not cast to itself
        exprs = {n: exp.column(src, quoted=True) if c.type == f else
                 exp.cast(exp.column(src, quoted=True), exp.DataType.build(str(_duck_type(f))))
                 for n, src, c, f in zip(a.names, t.names, t.columns, target)}
        widths = {n: c.width for n, c in zip(a.names, t.columns) if c.is_string}
        out.append(project(t, exprs, widths=widths, ctx=_cast_ctx(t, ctx)).table.with_stability(t.stability))
    return out[0], out[1]


def _key_family(t: pa.DataType) -> str:
    """Types whose equal values compare (and hash, operators/exchange.py ``partition_of``) equal
    without a cast: integers of any width, strings of any kind, else the type itself."""
    if pa.types.is_integer(t):
        return "int"
    return "str" if pa.types.is_string(t) or pa.types.is_large_string(t) else str(t)


def _columns_of(t: PaddedTable, node: Node) -> PaddedTable:
    """``t`` with exactly the columns ``node`` hands on, in the plan's order."""
    return t if t.names == node.columns else t.select(node.columns)


def _unify_keys(left: PaddedTable, right: PaddedTable, lk: list[str], rk: list[str], ctx: ExecContext):
    """Join keys of different types (``INTEGER = HUGEINT``, ``DECIMAL = DOUBLE``) compare in
    DuckDB's common type: such a pair is joined on extra columns cast to it (a linear scan)."""
    pairs = [i for i, (a, b) in enumerate(zip(lk, rk))
             if _key_family(left.column(a).type) != _key_family(right.column(b).type)]
    if not pairs:
        return left, right, lk, rk
    target = union_types(tuple(left.column(lk[i]).type for i in pairs), tuple(right.column(rk[i]).type for i in pairs))
    lk, rk = list(lk), list(rk)
    sides = []
    for t, keys, tag in ((left, lk, "l"), (right, rk, "r")):
        exprs = {n: exp.column(n, quoted=True) for n in t.names}
        for i, f in zip(pairs, target):
            name = f"__key_{tag}{i}"
            exprs[name] = exp.cast(exp.column(keys[i], quoted=True), exp.DataType.build(_duck_type(f)))
            keys[i] = name
        widths = {n: c.width for n, c in zip(t.names, t.columns) if c.is_string}
        out = project(t, exprs, widths=widths, ctx=_cast_ctx(t, ctx)).table.with_stability(t.stability)
        sides.append(out)
    return sides[0], sides[1], lk, rk


def cast_result(table: pa.Table, types: list[str] | None) -> pa.Table:
    """Cast the answer to DuckDB's result types (from ``DESCRIBE`` of the original query).

    sqlglot's rewrites can change a type without changing values (``CAST(0.5 AS DOUBLE)``
    loses its cast as sqlglot reads ``0.5`` as a DOUBLE where DuckDB reads a DECIMAL;
    ``DATE '…' + INTERVAL 2 DAY`` folds to a DATE where DuckDB yields a TIMESTAMP).
    The answer is the analyst's in the clear, so casting it reveals nothing.  A value the
    cast cannot hold is DuckDB's error, never a value of the wrong type.
    """
    if not types or len(types) != table.num_columns:
        return table
    want = _arrow_types_of(tuple(types))
    if want is not None and [str(t) for t in table.schema.types] == want:
        return table  # already DuckDB's types: a cast to the same type changes nothing and cannot fail
    tmp = table.rename_columns([f"c{i}" for i in range(table.num_columns)])
    try:
        sql = exp.select(*[exp.cast(exp.column(f"c{i}", quoted=True), exp.DataType.build(t, dialect="duckdb"))
                           .as_(f"c{i}", quoted=True) for i, t in enumerate(types)]).from_("answer")
        with scratch_registered(answer=tmp) as con:
            out = con.sql(sql.sql(dialect="duckdb")).to_arrow_table()
    except (duckdb.ConversionException, duckdb.OutOfRangeException) as e:
        from ..wire import QueryRuntimeError
        raise QueryRuntimeError(str(e).splitlines()[0]) from None
    except (duckdb.Error, sqlglot.errors.SqlglotError):
        return table  # a type DuckDB cannot name in a CAST: keep dodb's own
    return pa.Table.from_arrays(out.columns, names=table.column_names)


_ARROW_TYPES: dict[tuple[str, ...], list[str] | None] = {}


def _arrow_types_of(types: tuple[str, ...]) -> list[str] | None:
    """The Arrow types DuckDB gives columns of these DuckDB types, spelled out (None if it
    cannot name one), asked once per list of types: a zero-row query of typed NULLs.
    Spelled out because Arrow's type equality ignores a list's field name, which DuckDB
    sets (``list<l: …>``)."""
    if types not in _ARROW_TYPES:
        if len(_ARROW_TYPES) > 4096:
            _ARROW_TYPES.clear()
        try:
            sql = exp.select(*[exp.cast(exp.Null(), exp.DataType.build(t, dialect="duckdb")).as_(f"c{i}", quoted=True)
                               for i, t in enumerate(types)]).limit(0)
            with scratch_registered() as con:
                _ARROW_TYPES[types] = [str(t) for t in con.sql(sql.sql(dialect="duckdb")).to_arrow_table().schema.types]
        except (duckdb.Error, sqlglot.errors.SqlglotError):
            _ARROW_TYPES[types] = None
    return _ARROW_TYPES[types]


def _duck_type(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    return {pa.int32(): "INTEGER", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "VARCHAR",
            pa.date32(): "DATE", pa.bool_(): "BOOLEAN", pa.int16(): "SMALLINT", pa.int8(): "TINYINT"}.get(t, "VARCHAR")
