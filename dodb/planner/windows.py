"""Window functions and QUALIFY in the plan (docs/design.md §Window functions).

A SELECT's window calls (in its outputs, QUALIFY and ORDER BY) are pulled out and
replaced by placeholder columns (:func:`extract_windows`); their arguments, PARTITION BY
and ORDER BY expressions become columns of a pre-projection; one :class:`Window` node
computes every call (one sorted pass per distinct PARTITION BY / ORDER BY), after the
aggregation and HAVING and before QUALIFY, DISTINCT, ORDER BY and LIMIT — SQL's order.

**Stability.**  A window adds no row and releases nothing, but a row's window value
depends on the other rows of its partition, so one unit can change every row of the
partitions it touches.  A unit changes at most ``s`` rows of the input (its stability),
each in at most two partitions (before and after), so at most ``2s`` partitions are
touched; with a public bound ``d`` on rows per PARTITION BY value (a unique key, or a
declared degree of a NOT NULL column: degrees do not count NULLs) the output changes in
at most ``2·s·d`` rows per pass, and never in more than the input's padded size.  That
needs each value to depend only on its partition's rows: ties in the ORDER BY are broken
by input position, which on an input in canonical slots (a private scan under
projections) is the same for every row the coupled neighbour leaves untouched.  On any
other input, functions whose value on ties depends on that order (ROW_NUMBER, NTILE,
LAG/LEAD, FIRST/LAST/NTH_VALUE, ROWS frames, floating-point sums) get the padded size, as
do windows without PARTITION BY or without a degree bound.  Later releases are charged
with it (docs/neighbours.md §Sensitivity of each release).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..operators.sort_limit import SortKey
from ..operators.window import Frame, WHOLE, WindowFunc, WindowSpec
from .degrees import window_unique
from .group_bounds import rows_per_group
from .projection import column_ref, project_node
from .logical import Node, Scan, Unary, upper_rows
from ..sqlpos import position_of

__all__ = ["Window", "WindowCalls", "extract_windows", "plan_windows", "MAX_FRAME_ROWS"]

MAX_FRAME_ROWS = 256  # a bounded ROWS frame costs one pass per row of the frame
_SIMPLE = {exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank",
           exp.PercentRank: "percent_rank", exp.CumeDist: "cume_dist"}
_AGGS = {exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
_EXACT = ("INT", "TINYINT", "SMALLINT", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINT", "UBIGINT",
          "DECIMAL", "BOOLEAN", "INT128", "UINT128")


@dataclass(eq=False)
class Window(Unary):
    """Adds one column per window function; rows and padded size unchanged."""

    specs: list = field(default_factory=list)  # list[WindowSpec]

    @property
    def outputs(self) -> list[str]:
        return [f.name for s in self.specs for f in s.funcs]

    def needed_from_child(self, want: set[str]) -> set[str]:
        """The child columns this node reads or passes on (column pruning)."""
        used = {c for s in self.specs for c in s.partition} | {k.column for s in self.specs for k in s.order}
        used |= {x for s in self.specs for f in s.funcs for x in (f.column, f.default) if x}
        return (want - set(self.outputs)) | used or {self.child.columns[0]}

    def describe(self) -> str:
        parts = []
        for s in self.specs:
            fs = ", ".join(f"{f.name}={f.func}({f.column or ''})" for f in s.funcs)
            by = f" PARTITION BY {', '.join(s.partition)}" if s.partition else ""
            ob = f" ORDER BY {', '.join(k.column + (' DESC' if k.descending else '') for k in s.order)}" \
                if s.order else ""
            parts.append(f"[{fs}]{by}{ob}")
        return "Window " + "; ".join(parts)[:200]


@dataclass
class WindowCalls:
    """The window calls of one SELECT: placeholder column name -> the OVER expression."""

    calls: dict[str, exp.Window] = field(default_factory=dict)

    def inputs(self) -> list[exp.Expression]:
        """Every expression a call reads (arguments, PARTITION BY, ORDER BY)."""
        out = []
        for w in self.calls.values():
            out += _inputs(w)
        return out

    def map_inputs(self, fn) -> None:
        for name, w in list(self.calls.items()):
            w = w.copy()
            for node in _inputs(w):
                node.replace(fn(node))
            self.calls[name] = w


def _func_of(w: exp.Window) -> exp.Expression:
    f = w.this
    if isinstance(f, (exp.RespectNulls, exp.IgnoreNulls)):
        f = f.this
    return f


def _inputs(w: exp.Window) -> list[exp.Expression]:
    f = _func_of(w)
    out = []
    if isinstance(f, (exp.Lag, exp.Lead)):
        out += [f.this] + ([f.args["default"]] if f.args.get("default") is not None else [])
    elif isinstance(f, (exp.FirstValue, exp.LastValue, exp.NthValue)) or type(f) in _AGGS:
        out.append(f.this)
    elif isinstance(f, exp.Count) and f.this is not None and not isinstance(f.this, exp.Star):
        out.append(f.this)
    out += list(w.args.get("partition_by") or [])
    order = w.args.get("order")
    out += [o.this for o in (order.expressions if order is not None else [])]
    return out


def extract_windows(exprs: list[exp.Expression | None]) -> tuple[list[exp.Expression | None], WindowCalls]:
    """Replace every window call by a placeholder column (the same call once)."""
    calls = WindowCalls()
    by_sql: dict[str, str] = {}

    def rw(node):
        if isinstance(node, exp.Window):
            key = node.sql(dialect="duckdb")
            if key not in by_sql:
                by_sql[key] = f"__w{len(by_sql)}"
                calls.calls[by_sql[key]] = node.copy()
            return column_ref(by_sql[key])
        return node

    out = [None if e is None else (e.copy().transform(rw) if e.find(exp.Window) else e) for e in exprs]
    return out, calls


# -- building the node ---------------------------------------------------------------------------
def _int_arg(node: exp.Expression | None, what: str, default: int, where: exp.Expression) -> int:
    if node is None:
        return default
    v = node.this if isinstance(node, exp.Neg) else node
    if isinstance(v, exp.Literal) and not v.is_string and v.this.isdigit():
        return -int(v.this) if isinstance(node, exp.Neg) else int(v.this)
    raise UnsupportedQueryError(f"{what} must be an integer constant: {node.sql(dialect='duckdb')}",
                                position_of(where))


def _bound(value, side, kind: str, w: exp.Window) -> int | None:
    """A frame bound as an offset (negative = PRECEDING), ``None`` = UNBOUNDED."""
    text = value if isinstance(value, str) else None
    side = (side or "").upper()
    if text is not None and text.upper() == "UNBOUNDED":
        return None
    if text is not None and text.upper() == "CURRENT ROW":
        return 0
    if isinstance(value, exp.Interval):
        months, us = _interval(value, w)
        return (-months, -us) if side == "PRECEDING" else (months, us)
    k = _int_arg(value, f"a {kind.upper()} frame offset", 0, w)
    if k < 0:
        raise UnsupportedQueryError(f"negative frame offset {k}", position_of(w))
    return -k if side == "PRECEDING" else k


_US = {"MICROSECOND": 1, "MILLISECOND": 1000, "SECOND": 10**6, "MINUTE": 60 * 10**6, "HOUR": 3600 * 10**6,
       "DAY": 86400 * 10**6, "WEEK": 7 * 86400 * 10**6}
_MONTHS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}


def _interval(value: exp.Interval, w: exp.Window) -> tuple[int, int]:
    """``INTERVAL n UNIT`` as (months, µs): a non-negative integer count of one unit."""
    n, unit = value.this, (value.args.get("unit").name if value.args.get("unit") is not None else "").upper()
    while isinstance(n, exp.Paren):
        n = n.this
    unit = unit[:-1] if unit.endswith("S") else unit
    if not (isinstance(n, exp.Literal) and n.this.isdigit() and (unit in _US or unit in _MONTHS)):
        raise UnsupportedQueryError("RANGE frame offset other than INTERVAL <integer> <unit> (MICROSECOND … YEAR): "
                                    f"{value.sql(dialect='duckdb')}", position_of(w))
    k = int(n.this)
    return (k * _MONTHS[unit], 0) if unit in _MONTHS else (0, k * _US[unit])


def _interval_frame(kind: str, start, end, w: exp.Window) -> Frame:
    """A frame with an INTERVAL offset: RANGE only, both offsets INTERVALs (or CURRENT ROW /
    UNBOUNDED), and a start that surely does not follow the end."""
    sql = w.sql(dialect="duckdb")[:80]
    if kind != "range":
        raise UnsupportedQueryError(f"{kind.upper()} frame with an INTERVAL offset: {sql}", position_of(w))
    if isinstance(start, int) and start != 0 or isinstance(end, int) and end != 0:
        raise UnsupportedQueryError(f"RANGE frame mixing an INTERVAL and a numeric offset: {sql}", position_of(w))
    start, end = ((0, 0) if b == 0 else b for b in (start, end))
    if start is not None and end is not None:
        sign = [(b[0] > 0 or b[1] > 0) - (b[0] < 0 or b[1] < 0) for b in (start, end)]
        mixed = (start[0] != 0 or end[0] != 0) and (start[1] != 0 or end[1] != 0)
        if sign[0] > sign[1] or sign[0] == sign[1] != 0 and (mixed or start > end):
            raise UnsupportedQueryError(f"RANGE frame whose start offset may follow its end offset: {sql}",
                                        position_of(w))
    return Frame("range", start, end, interval=True)


def _frame(w: exp.Window, ordered: bool) -> Frame:
    spec = w.args.get("spec")
    if spec is None:
        return Frame("range", None, 0) if ordered else WHOLE
    kind = (spec.args.get("kind") or "").lower()
    if kind not in ("rows", "range", "groups") or spec.args.get("exclude"):
        what = "EXCLUDE" if spec.args.get("exclude") else (kind.upper() or "this")
        raise UnsupportedQueryError(f"{what} frame: {w.sql(dialect='duckdb')[:80]}", position_of(w))
    start = _bound(spec.args.get("start"), spec.args.get("start_side"), kind, w)
    end = _bound(spec.args.get("end") or "CURRENT ROW", spec.args.get("end_side"), kind, w)
    if start is None and (spec.args.get("start_side") or "").upper() == "FOLLOWING" or \
            end is None and (spec.args.get("end_side") or "").upper() == "PRECEDING":
        raise UnsupportedQueryError(f"frame bound {w.sql(dialect='duckdb')[:80]}", position_of(w))
    interval = isinstance(start, tuple) or isinstance(end, tuple)
    if kind in ("range", "groups") or interval:
        frame = _interval_frame(kind, start, end, w) if interval else Frame(kind, start, end)
        if not ordered and not frame.probed:  # every row is a peer of every other
            return WHOLE
        order = w.args.get("order")
        if frame.probed and (not ordered or kind == "range" and len(order.expressions) != 1):
            raise UnsupportedQueryError(f"{kind.upper()} frame with an offset needs "
                                        f"{'exactly one ORDER BY key' if kind == 'range' else 'an ORDER BY'}: "
                                        f"{w.sql(dialect='duckdb')[:80]}", position_of(w))
        if not interval and frame.probed and start is not None and end is not None and start > end:
            # DuckDB's answer on such a frame is not an empty frame's: refused, not guessed
            raise UnsupportedQueryError(f"{kind.upper()} frame whose start offset follows its end offset: "
                                        f"{w.sql(dialect='duckdb')[:80]}", position_of(w))
        if frame.probed and kind == "range":
            key = order.expressions[0].this
            typ = getattr(key, "type", None)
            if typ is not None and not typ.is_type(exp.DataType.Type.UNKNOWN) and not typ.is_type(
                    *(_INTERVAL_KEYS if interval else _RANGE_KEYS)):
                raise UnsupportedQueryError(f"RANGE frame with {'an INTERVAL' if interval else 'a numeric'} offset "
                                            f"over an ORDER BY key of type "
                                            f"{typ.sql(dialect='duckdb')}: {w.sql(dialect='duckdb')[:80]}",
                                            position_of(w))
        return frame
    if start is not None and end is not None and end - start + 1 > MAX_FRAME_ROWS:
        raise UnsupportedQueryError(f"ROWS frame of more than {MAX_FRAME_ROWS} rows with both ends bounded: "
                                    f"{w.sql(dialect='duckdb')[:80]}", position_of(w))
    return Frame("rows", start, end)


_RANGE_KEYS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "UTINYINT", "USMALLINT", "UINT", "FLOAT", "DOUBLE", "DATE")
_INTERVAL_KEYS = ("DATE", "TIMESTAMP", "DATETIME")


def _function(w: exp.Window, name: str, cols: dict[str, str]) -> tuple[WindowFunc, bool]:
    """The operator's function and whether its value on ties depends on input order."""
    if w.args.get("alias") is not None:
        raise UnsupportedQueryError(f"named window {w.sql(dialect='duckdb')[:60]} (write the OVER clause out)",
                                    position_of(w))
    ignore_nulls = isinstance(w.this, exp.IgnoreNulls)
    f = _func_of(w)
    if ignore_nulls and not isinstance(f, (exp.FirstValue, exp.LastValue)):
        raise UnsupportedQueryError(f"IGNORE NULLS in {w.sql(dialect='duckdb')[:60]}", position_of(w))
    order = w.args.get("order")
    ordered = order is not None and bool(order.expressions)
    col = (lambda e: cols[e.sql(dialect="duckdb")])  # noqa: E731 - the pre-projection's column of an input
    if type(f) in _SIMPLE:
        if f.args.get("expressions") or f.args.get("this"):
            raise UnsupportedQueryError(f"{f.sql(dialect='duckdb')} with arguments", position_of(w))
        return WindowFunc(_SIMPLE[type(f)], None, name), type(f) is exp.RowNumber
    if isinstance(f, exp.Ntile):
        k = _int_arg(f.this, "NTILE's bucket count", 0, w)
        if k < 1:
            raise UnsupportedQueryError("NTILE's bucket count must be positive", position_of(w))
        return WindowFunc("ntile", None, name, offset=k), True
    if isinstance(f, (exp.Lag, exp.Lead)):
        k = _int_arg(f.args.get("offset"), f"{f.key.upper()}'s offset", 1, w)
        func = "lag" if isinstance(f, exp.Lag) else "lead"
        if k < 0:
            func, k = ("lead" if func == "lag" else "lag"), -k
        default = f.args.get("default")
        return WindowFunc(func, col(f.this), name, offset=k,
                          default=col(default) if default is not None else None), True
    if isinstance(f, exp.NthValue):
        if f.args.get("from_first") is False:
            raise UnsupportedQueryError(f"NTH_VALUE … FROM LAST in {w.sql(dialect='duckdb')[:60]}", position_of(w))
        k = _int_arg(f.args.get("offset"), "NTH_VALUE's position", 1, w)
        if k < 1:
            raise UnsupportedQueryError("NTH_VALUE's position must be positive", position_of(w))
        return WindowFunc("nth_value", col(f.this), name, offset=k, frame=_frame(w, ordered)), True
    if isinstance(f, (exp.FirstValue, exp.LastValue)):
        func = "first_value" if isinstance(f, exp.FirstValue) else "last_value"
        return WindowFunc(func, col(f.this), name, frame=_frame(w, ordered),
                          ignore_nulls=ignore_nulls), True
    if isinstance(f, (exp.Count, *_AGGS)):
        arg = f.this
        if isinstance(arg, exp.Distinct):
            raise UnsupportedQueryError(f"{f.key.upper()}(DISTINCT …) OVER (…)", position_of(w))
        frame = _frame(w, ordered)
        if isinstance(f, exp.Count):
            func, column = ("count_star", None) if arg is None or isinstance(arg, exp.Star) else ("count", col(arg))
        else:
            func, column = _AGGS[type(f)], col(arg)
        exact = func not in ("sum", "avg") or (getattr(arg, "type", None) is not None
                                               and any(arg.type.is_type(t) for t in _EXACT))
        return WindowFunc(func, column, name, frame=frame), frame.kind == "rows" or not exact
    raise UnsupportedQueryError(f"window function {f.sql(dialect='duckdb')[:60]}", position_of(w))


def plan_windows(builder, node: Node, calls: WindowCalls) -> Node:
    """``node`` with a pre-projection of the calls' inputs and a :class:`Window` node on top."""
    if not calls.calls:
        return node

    cols: dict[str, str] = {}
    pre = {c: column_ref(c) for c in node.columns}
    for e in calls.inputs():
        key = e.sql(dialect="duckdb")
        if key in cols:
            continue
        if isinstance(e, exp.Column) and e.name in node.columns:
            cols[key] = e.name
        else:
            cols[key] = f"__wa{len(cols)}"
            pre[cols[key]] = e
    child = project_node(node, pre) if len(pre) > len(node.columns) else node
    groups: dict[tuple, list[WindowFunc]] = {}
    order_free = True
    for name, w in calls.calls.items():
        func, tie_sensitive = _function(w, name, cols)
        order = w.args.get("order")
        keys = tuple(SortKey(cols[o.this.sql(dialect="duckdb")], bool(o.args.get("desc")),
                             bool(o.args.get("nulls_first"))) for o in (order.expressions if order else []))
        part = tuple(cols[p.sql(dialect="duckdb")] for p in (w.args.get("partition_by") or []))
        groups.setdefault((part, keys), []).append(func)
        order_free &= not tie_sensitive
    specs = [WindowSpec(p, k, tuple(fs)) for (p, k), fs in groups.items()]
    return Window(child, specs=specs, columns=list(child.columns) + [f.name for s in specs for f in s.funcs],
                  stability=_stability(builder, child, specs, order_free), degrees=dict(child.degrees),
                  unique=list(child.unique) + [u for s in specs for u in window_unique(
                      child.unique, s.partition, tuple(k.column for k in s.order), [(f.func, f.name) for f in s.funcs])],
                  one_row=child.one_row)


def _in_slots(node: Node) -> bool:
    """Whether ``node``'s rows are surely in their canonical slots (a private scan under
    projections and windows only: planner/alignment.py marks these aligned)."""
    while isinstance(node, Window) or node.kind == "Project":
        node = node.children[0]
    return isinstance(node, Scan) and node.private


def _stability(builder, child: Node, specs: list[WindowSpec], order_free: bool) -> int:
    """Rows of the output one unit can change (module doc): ``min(n, Σ 2·s·d)`` or ``n``."""
    s, n = child.stability, upper_rows(child)
    if s == 0:
        return 0
    if not order_free and not _in_slots(child):
        return n
    total = 0
    for spec in specs:
        d = rows_per_group(builder, child, list(spec.partition))
        if d is None:
            return n
        total += 2 * s * d
    return min(n, total)
