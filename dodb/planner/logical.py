"""Logical plan nodes with the public facts the privacy analysis needs.

Every node knows, before anything runs: its output columns (internal names), its
stability (rows one privacy unit can change), degree bounds per column (rows per value),
unique column sets, and whether it yields exactly one row.  These are derived from the
catalog's declarations only (docs/design.md §Operators and stability), so the query's privacy events are fixed by the
plan, and the accountant can admit the query before execution (invariant 3).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Iterator

from sqlglot import exp

from ..operators.aggregate import Agg

__all__ = [
    "Node", "DuckDBQuery", "OneRow", "Scan", "Filter", "Project", "ScalarRow", "Join", "CrossOne", "CrossJoin", "Aggregate", "Sort", "Distinct", "SetOp", "Exchange",
    "AddRowId", "BuiltQuery", "walk", "consumer_counts", "leaking_nodes", "leaks", "upper_rows",
]

_ids = itertools.count()


@dataclass(eq=False)
class Node:
    columns: list[str] = field(default_factory=list, kw_only=True)
    stability: int = field(default=0, kw_only=True)
    degrees: dict[str, int] = field(default_factory=dict, kw_only=True)
    unique: list[frozenset[str]] = field(default_factory=list, kw_only=True)
    one_row: bool = field(default=False, kw_only=True)
    # columns an equality filter fixed to one value: all rows agree on each (planner/degrees.py)
    constant: frozenset[str] = field(default=frozenset(), kw_only=True)
    # functional dependencies (lhs, rhs): rows that agree on lhs agree on rhs (planner/degrees.py)
    fds: list[tuple[frozenset[str], frozenset[str]]] = field(default_factory=list, kw_only=True)
    # columns whose every row holds one of a known set of literal values (planner/degrees.py)
    literals: dict[str, frozenset] = field(default_factory=dict, kw_only=True)
    max_rows: int = field(default=0, kw_only=True)  # public bound on the padded size (scans; see upper_rows)
    aligned: bool = field(default=False, kw_only=True)  # rows in canonical slots (planner/rules/alignment.py)
    node_id: int = field(default_factory=lambda: next(_ids), kw_only=True)

    @property
    def children(self) -> list["Node"]:
        return []

    @property
    def kind(self) -> str:
        return type(self).__name__

    def degree(self, cols: list[str]) -> int | None:
        """Bound on rows sharing one value of ``cols`` (``None`` = unknown)."""
        if self.one_row:
            return 1
        if any(u <= frozenset(cols) for u in self.unique):
            return 1
        known = [self.degrees[c] for c in cols if c in self.degrees]
        known += [d for k, d in self.degrees.items() if isinstance(k, frozenset) and k <= frozenset(cols)]
        return min(known) if known else None

    def describe(self) -> str:
        return self.kind


@dataclass(eq=False)
class Unary(Node):
    """A node with one input, ``child``."""

    child: Node

    @property
    def children(self) -> list[Node]:
        return [self.child]


@dataclass(eq=False)
class Binary(Node):
    """A node with two inputs, ``left`` and ``right``."""

    left: Node
    right: Node

    @property
    def children(self) -> list[Node]:
        return [self.left, self.right]


@dataclass(eq=False)
class Scan(Node):
    table: str
    alias: str
    source_columns: list[str] = field(default_factory=list)
    predicate: exp.Expression | None = None  # pushed into DuckDB (public tables only)
    private: bool = False
    widths: dict[str, int] = field(default_factory=dict)
    sort_keys: list[str] | None = None  # rows sorted by these columns for a join (planner/presort.py)

    def describe(self) -> str:
        where = f" WHERE {self.predicate.sql(dialect='duckdb')}" if self.predicate is not None else ""
        kind = f"private, {self.max_rows} slots" if self.private else "public"
        order = f", sorted by {', '.join(self.sort_keys)}" if self.sort_keys else ""
        return f"Scan {self.table} AS {self.alias} ({kind}{order}){where}"


@dataclass(eq=False)
class Filter(Unary):
    predicate: exp.Expression
    mark_only: bool = False  # keep every slot, only clear is_real: leaks nothing (see planner/marking.py)
    binned: bool = False     # positional bins on an aligned input (planner/alignment.py)
    release_scale: int = 1   # 2 for bins under replace-neighbours
    keep_marked_above: float | None = None  # skip compacting a large output (planner/marking.py)
    # its input is in the order of these columns, and so must its output be (planner/presort.py)
    ordered_keys: list[str] | None = None

    def describe(self) -> str:
        how = " (mark only: no size released)" if self.mark_only else \
            f" (kept marked if the released size is >= {self.keep_marked_above:g} of the input)" \
            if self.keep_marked_above is not None else ""
        return f"Filter {self.predicate.sql(dialect='duckdb')[:120]}{how}"


@dataclass(eq=False)
class Project(Unary):
    exprs: dict[str, exp.Expression]

    def describe(self) -> str:
        parts = [f"{k}={v.sql(dialect='duckdb')}" for k, v in self.exprs.items()]
        s = ", ".join(parts)
        return f"Project {s[:160]}{'…' if len(s) > 160 else ''}"


@dataclass(eq=False)
class ScalarRow(Project):
    """The row of a scalar subquery: one slot, and DuckDB's error in the query's status when
    its input holds more than one real row (operators/scalar_row.py; docs/design.md §Subqueries)."""

    def describe(self) -> str:
        return "ScalarRow (at most one row: more is DuckDB's runtime error)"


@dataclass(eq=False)
class Join(Binary):
    how: str
    left_keys: list[str]
    right_keys: list[str]
    left_degree: int | None = None
    right_degree: int | None = None
    degree_sources: dict = field(default_factory=dict)
    same_unit: bool = False  # along a privacy-unit path (see planner/ownership.py)
    method: str = "sort"     # or "lookup": small public right side, one pass per public row
    release_scale: int = 1   # a lookup's filter releases bins on an aligned input: 2 under replace
    # the side arrives sorted by its keys (planner/presort.py): True from its scan, or the
    # words saying what sorted it (GROUPED_BELOW)
    left_presorted: bool | str = False
    right_presorted: bool | str = False
    # on a cluster: both sides partitioned alike by the paired keys, by exchanges or already
    # (planner/exchanges.py; docs/distributed.md §Joins, §Partitioned inputs)
    copartitioned: bool = False

    def describe(self) -> str:
        on = " AND ".join(f"{a} = {b}" for a, b in zip(self.left_keys, self.right_keys))
        if self.method == "lookup":
            return f"Join {self.how.upper()} ON {on} (lookup in a small public relation)"
        note = "".join(f"; {side} bound is a {src}" for side, src in self.degree_sources.items())
        note += "; along a privacy-unit path" if self.same_unit else ""
        hows: dict[str, list[str]] = {}
        for side, how in (("left", self.left_presorted), ("right", self.right_presorted)):
            if how:
                hows.setdefault("at the scan" if how is True else how, []).append(side)
        note += "".join(f"; {' and '.join(sides)} sorted {how}" for how, sides in hows.items())
        return f"Join {self.how.upper()} ON {on} (deg L≤{self.left_degree}, R≤{self.right_degree}{note})"


@dataclass(eq=False)
class CrossOne(Binary):
    """Cross join with a one-row relation: its values broadcast to every row."""

    def describe(self) -> str:
        return "CrossJoin (one-row right side)"


@dataclass(eq=False)
class CrossJoin(Binary):
    """Oblivious cross product padded to both public sizes (operators/theta_join.py); the
    join condition, if any, is a Filter above it."""

    def describe(self) -> str:
        return f"CrossJoin (oblivious product, {upper_rows(self.left)} x {upper_rows(self.right)} slots)"


@dataclass(eq=False)
class Aggregate(Unary):
    keys: list[str]
    aggs: list[Agg]
    # the keys rows are sorted and grouped by; they determine the other keys (planner/degrees.py
    # fd_unique), which ride as payload.  None: all keys
    sort_keys: list[str] | None = None
    presorted: bool = False  # the input arrives sorted by the keys from its scan (planner/presort.py)
    ordered_by: int | None = None  # the inner join whose output order groups the keys (planner/presort.py)
    # a join above reads the output in the order of these keys: its unused slots get NULL ones
    ordered_keys: list[str] | None = None

    def describe(self) -> str:
        aggs = ", ".join(f"{a.name}={a.func}({', '.join(x for x in (a.column or '*', a.column2, a.param) if x)})"
                         if a.func not in ("string_agg", "list") else
                         f"{a.name}={a.func}({a.column}" + (f", {a.param!r}" if a.func == "string_agg" else "")
                         + "".join(f"{' ORDER BY' if i == 0 else ','} {c}{' DESC' if d else ''}"
                                   f"{' NULLS FIRST' if nf else ''}" for i, (c, d, nf) in enumerate(a.order))
                         + (f" FILTER {a.column2}" if a.column2 else "") + f"; ≤{a.rows} rows/group of ≤{a.total})"
                         for a in self.aggs)
        # no node id in the text: ids count the plans built so far, and the audit compares texts
        how = " (input sorted at the scan)" if self.presorted else \
            " (input in the order of the join's keys below)" if self.ordered_by is not None else ""
        return f"Aggregate by [{', '.join(self.keys)}] {aggs}{how}"


@dataclass(eq=False)
class Sort(Unary):
    keys: list  # list[SortKey]
    limit: int | None = None
    offset: int = 0
    # > 0: the local top-k of a cluster's ORDER BY … LIMIT (planner/exchanges.py): every one of
    # that many workers keeps the first ``limit`` rows of its own, and the Sort above it runs on
    # the driver over the gathered blocks (docs/distributed.md §Top-k)
    per_worker: int = 0

    def describe(self) -> str:
        ks = ", ".join(f"{k.column}{' DESC' if k.descending else ''}" for k in self.keys)
        lim = f" LIMIT {self.limit}" if self.limit is not None else ""
        off = f" OFFSET {self.offset}" if self.offset else ""
        each = " (each worker's own top rows)" if self.per_worker else ""
        return f"Sort [{ks}]{lim}{off}{each}"


@dataclass(eq=False)
class Exchange(Unary):
    """The child's rows sent to ``parts`` workers by a public hash of ``keys``: each source
    releases its per-destination counts (docs/distributed.md §Exchange).  Planned only for a
    cluster (planner/exchanges.py); run in one process it is the blocks one after another."""

    keys: list[str]
    parts: int
    release_scale: int = 1  # 2 under replace-neighbours: rows leave one destination, arrive at another

    def describe(self) -> str:
        return f"Exchange by [{', '.join(self.keys)}] to {self.parts} workers"


@dataclass(eq=False)
class Distinct(Unary):
    """SELECT DISTINCT over all of the child's columns."""


@dataclass(eq=False)
class DuckDBQuery(Node):
    """A query over public tables only that DuckDB answers and the operators cannot plan
    (docs/design.md §Public queries): no input, nothing private, nothing padded."""

    sql: str = ""

    def describe(self) -> str:
        return "DuckDBQuery (public tables only: DuckDB runs the guarded statement)"


@dataclass(eq=False)
class OneRow(Node):
    """The one-row relation a SELECT without FROM reads (``rules/one_row_source.py``): no
    input, nothing private, one real row of one constant column."""

    def describe(self) -> str:
        return "OneRow (the source of a SELECT without FROM)"


@dataclass(eq=False)
class SetOp(Node):
    op: str  # union_all, union, intersect, except
    left: Node
    right: Node
    # on a cluster: both sides partitioned alike by their columns, by position (planner/exchanges.py;
    # docs/distributed.md §Set operations)
    copartitioned: bool = False

    @property
    def children(self) -> list[Node]:
        return [self.left, self.right]

    def describe(self) -> str:
        return f"SetOp {self.op.upper().replace('_', ' ')}"


def upper_rows(node: Node, known: dict[int, int] | None = None) -> int:
    """A public upper bound on a node's padded output size (worst case, from the plan).

    ``known``: padded sizes already fixed for some nodes (run, hence released; or assumed,
    for the memory guard's expected case): a node in it has that size, and its parents'
    bounds follow from it (docs/design.md §Memory guard)."""
    if known is not None and node.node_id in known:
        return known[node.node_id]

    def up(n: Node) -> int:
        return upper_rows(n, known)

    if isinstance(node, Scan):
        return node.max_rows
    if isinstance(node, Aggregate) and not node.keys or isinstance(node, (ScalarRow, OneRow)):
        return 1
    if isinstance(node, (Filter, Project, Distinct, Aggregate)) or node.kind == "AddRowId":
        return up(node.children[0])
    if isinstance(node, Sort):  # a cluster's local top-k: every worker's first ``limit`` rows
        n = up(node.child)
        return n if node.limit is None else min(n, node.limit * max(1, node.per_worker))
    if isinstance(node, Exchange):  # every destination's block at most the whole input
        return node.parts * up(node.child)
    if isinstance(node, CrossOne):
        return up(node.left)
    if isinstance(node, SetOp):
        return up(node.left) + up(node.right)
    if isinstance(node, CrossJoin):
        return up(node.left) * up(node.right)
    if isinstance(node, Join):
        nl, nr = up(node.left), up(node.right)
        if node.how in ("semi", "anti"):
            return nl
        dl = node.left_degree if node.left_degree is not None else nl
        dr = node.right_degree if node.right_degree is not None else nr
        inner = min(nl * dr, nr * dl)
        return inner + nl if node.how == "left" else inner + nl + nr if node.how == "full" else inner
    return max((up(c) for c in node.children), default=0)


def walk(node: Node) -> Iterator[Node]:
    """Every node once (children before parents; shared sub-plans — CTEs — once)."""
    seen: set[int] = set()

    def go(n: Node) -> Iterator[Node]:
        if n.node_id in seen:
            return
        seen.add(n.node_id)
        for c in n.children:
            yield from go(c)
        yield n

    yield from go(node)


def consumer_counts(root: Node) -> dict[int, int]:
    """How many parent edges read each node's output in the plan under ``root`` (a node
    that reads one CTE twice counts twice)."""
    counts: dict[int, int] = {}
    for n in walk(root):
        counts.setdefault(n.node_id, 0)
        for c in n.children:
            counts[c.node_id] = counts.get(c.node_id, 0) + 1
    return counts


def leaks(node: Node) -> list[tuple[str, int]]:
    """The noisy releases a node makes in ``do`` mode: (name, sensitivity) each."""
    if isinstance(node, Filter):
        s = node.child.stability
        return [("bin_counts", s * node.release_scale)] if s > 0 and not node.mark_only else []
    if isinstance(node, Aggregate):
        return [("groups", node.stability)] if node.keys and node.stability > 0 else []
    if isinstance(node, Exchange):
        s = node.child.stability
        return [("dest_counts", s * node.release_scale)] if s > 0 else []
    if isinstance(node, Distinct) or (isinstance(node, SetOp) and node.op != "union_all"):
        return [("rows", node.stability)] if node.stability > 0 else []
    if isinstance(node, Join) and node.method == "lookup":
        s = node.left.stability
        return [("bin_counts", s * node.release_scale)] if s > 0 and node.how != "left" else []
    if isinstance(node, Join):
        sl, sr = node.left.stability, node.right.stability
        s_match = sl if node.same_unit else sl + sr * (node.left_degree or 0)
        if node.how in ("semi", "anti"):
            return [("bin_counts", s_match)] if s_match > 0 else []
        out = [("output_size", node.stability)] if node.stability > 0 else []
        if node.how in ("left", "full") and s_match > 0:
            out.append(("bin_counts", s_match))
        s_match_r = sr + sl * (node.right_degree or 0)  # which right rows have a partner
        if node.how == "full" and s_match_r > 0:
            out.append(("bin_counts_right", s_match_r))
        return out
    return []


def leaking_nodes(root: Node) -> list[Node]:
    return [n for n in walk(root) if leaks(n)]


@dataclass(eq=False)
class AddRowId(Node):
    """Adds a column holding each slot's position (positions are public)."""

    child: Node = None
    name: str = "__rid"

    @property
    def children(self):
        return [self.child]

    def describe(self) -> str:
        return f"AddRowId {self.name}"


@dataclass
class BuiltQuery:
    """A planned query: its root node and how its columns are named."""

    root: Node
    names: list[str]          # display names of the result columns, in order
    internal: list[str]       # the root's internal column names, same order
    scalar: bool = False      # a CTE made of an unnested scalar subquery (at most one row)
