"""The memory guard: a plan's peak memory estimated from public sizes (docs/design.md §Memory guard).

Every padded size in a plan is bounded by public numbers (capacities, declared degrees,
LIMIT; :func:`~dodb.planner.logical.upper_rows`), so the memory a query can need is known
before it runs and before anything is charged.  The estimate is deliberately simple and
pessimistic:

* a row of a node's output costs 16 bytes per column (value words and validity) plus the
  declared width of every string column it carries (from a private scan, through renames
  and bounded string expressions), plus the ``is_real`` flag;
* the executor drops an output once its last reader ran (planner/execute.py), so when a
  node runs the outputs still live add up (:func:`timeline` follows the executor's order);
* on top of that the node holds its own output and its working copies: sorts, joins,
  aggregates and compaction ``WORK_FACTOR - 1`` more copies of their inputs and output
  (keys, payload and temporaries); filters and projections the evaluator's temporaries
  (:func:`_evaluation_bytes`); plain column references and mark-only filters share lanes;
* the peak is the largest of these sums, plus a fixed ``BASE_BYTES`` for the interpreter.

Measured against tracemalloc's peak of the 22 TPC-H queries at sf 0.05, the real peak is
12–72% of the estimate; tests/api/test_memory_guard.py checks that it bounds a set of them.

>>> from dodb.planner.logical import Scan
>>> estimate_peak_bytes(Scan(table="t", alias="t", columns=["t.a", "t.b"], max_rows=1000)) - BASE_BYTES
99000
"""
from __future__ import annotations

import math
import os

from sqlglot import exp

from .logical import Aggregate, Filter, Node, Project, consumer_counts, upper_rows, walk
from .widths import plan_string_widths

__all__ = ["estimate_peak_bytes", "timeline", "expected_sizes", "bytes_at", "default_memory_limit", "format_bytes",
           "parse_bytes", "WORK_FACTOR"]

BYTES_PER_COLUMN = 16
WORK_FACTOR = 3
EXPR_FACTOR = 12
BASE_BYTES = 32 << 20  # the interpreter's own working set during a run (traces, Arrow conversions)
DEFAULT_SHARE = 0.5  # of the machine's physical memory, unless DODB_MEMORY_LIMIT says otherwise


STRING_AGG_FACTOR = 32  # working bytes per candidate byte of string_agg's compaction (operators/string_agg.py)


def _string_agg_bytes(node: Node, widths: dict[str, int], known: dict[int, int] | None = None) -> int:
    """string_agg's candidate buffer: ``n·R·(w + s)`` bytes (one row without GROUP BY), each
    compacted with int64 displacements and masks, plus its results."""
    if not isinstance(node, Aggregate):
        return 0
    from ..operators.string_agg import string_agg_width
    n = upper_rows(node.child, known)
    out = 0
    for a in node.aggs:
        if a.func != "string_agg":
            continue
        w = widths.get(a.column, 0)
        s = len((a.param or "").encode())
        rows = a.rows if a.rows is not None else n
        width = string_agg_width(rows, w, s)
        out += (STRING_AGG_FACTOR + 1) * (width * n if node.keys else width + n * (w + s))
    for a in node.aggs:  # list (operators/list_agg.py): n·R slots of the element's bytes + mask + length
        if a.func == "list":
            b = BYTES_PER_COLUMN + widths.get(a.column, 0) + 5
            rows = a.rows if a.rows is not None else n
            out += (STRING_AGG_FACTOR + 1) * b * (rows * n if node.keys else n)
    return out


_NOT_EVALUATED = (exp.Column, exp.Literal, exp.Identifier, exp.Paren, exp.Boolean, exp.Null, exp.DataType)


def _evaluation_bytes(node: Node, widths: dict[str, int], known: dict[int, int] | None = None) -> int:
    """The oblivious evaluator's temporaries for a filter's predicate or a projection's
    computed expressions: every operator in them may hold ``WORK_FACTOR`` 16-byte words per
    row (values, validity, error codes, 128-bit decimals and their temporaries), plus
    ``EXPR_FACTOR`` copies of the string bytes they read (whole fixed-width string matrices: LIKE, substring, casts)."""
    if isinstance(node, Filter):
        exprs = [node.predicate]
    elif isinstance(node, Project):
        exprs = [e for e in node.exprs.values() if not isinstance(e, exp.Column)]
    else:
        return 0
    rows = max((upper_rows(c, known) for c in node.children), default=0)
    ops = sum(1 for e in exprs for x in e.walk() if not isinstance(x, _NOT_EVALUATED))
    read = {c.name for e in exprs for c in e.find_all(exp.Column)}
    strings = sum(widths.get(col, 0) for c in node.children for col in c.columns if col in read)
    return rows * (WORK_FACTOR * BYTES_PER_COLUMN * ops + EXPR_FACTOR * strings)


def _row_bytes(node: Node, widths: dict[str, int]) -> int:
    return BYTES_PER_COLUMN * len(node.columns) + sum(widths.get(c, 0) for c in node.columns) + 1


def estimate_peak_bytes(root: Node, known: dict[int, int] | None = None) -> int:
    """Upper estimate of the bytes a plan holds at its peak (module doc); ``known`` fixes some
    nodes' padded sizes (:func:`~dodb.planner.logical.upper_rows`)."""
    return BASE_BYTES + max((live + out + work for _, live, out, work in timeline(root, known)), default=0)


def bytes_at(root: Node, node: Node, known: dict[int, int]) -> int:
    """What running ``node`` holds — the outputs still live, its own output and its working
    copies — with ``known`` sizes in place of bounds: the executor's runtime check before each
    node (docs/design.md §Memory guard, the adaptive guard)."""
    for n, live, out, work in timeline(root, known):
        if n.node_id == node.node_id:
            return BASE_BYTES + live + out + work
    return BASE_BYTES


def expected_sizes(root: Node, shifts: dict[int, float]) -> dict[int, int]:
    """Padded sizes of the released nodes in the expected case: each at most its largest input
    plus its noise's mean (``shifts``: node id → the mean of its padding), never above its
    bound.  The sizes a plan usually pads to when an operator does not multiply rows; the
    guard admits a plan whose expected case fits, and the executor re-checks memory against
    the sizes actually released (post-processing of released values)."""
    known: dict[int, int] = {}
    for n in walk(root):
        if n.node_id in shifts:
            widest = max((upper_rows(c, known) for c in n.children), default=0)
            known[n.node_id] = min(upper_rows(n, known), widest + int(math.ceil(shifts[n.node_id])))
    return known


def timeline(root: Node, known: dict[int, int] | None = None) -> list[tuple[Node, int, int, int]]:
    """``(node, live, output, work)`` bytes for each node in the executor's order: ``live`` is
    what earlier outputs still hold when it runs (an output is dropped once its last reader
    ran, planner/execute.py), ``output`` its own output, ``work`` its working copies."""
    widths = plan_string_widths(root)
    nodes = list(walk(root))
    outputs = {n.node_id: upper_rows(n, known) * _row_bytes(n, widths) for n in nodes}

    def work(n: Node) -> int:
        held = _evaluation_bytes(n, widths, known) + _string_agg_bytes(n, widths, known)
        if isinstance(n, Project) or (isinstance(n, Filter) and n.mark_only):
            return held  # no sort, no compaction; passed-through columns are shared, not copied
        return held + (WORK_FACTOR - 1) * (sum(outputs[c.node_id] for c in n.children) + outputs[n.node_id])

    remaining = consumer_counts(root)
    live, out = 0, []
    for n in nodes:
        out.append((n, live, outputs[n.node_id], work(n)))
        live += outputs[n.node_id]
        for c in n.children:
            remaining[c.node_id] -= 1
            if remaining[c.node_id] == 0:
                live -= outputs[c.node_id]
    return out


def physical_memory() -> int | None:
    """The machine's physical memory in bytes, or ``None`` where ``sysconf`` cannot say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def default_memory_limit() -> int:
    """``DODB_MEMORY_LIMIT`` (bytes, or with a K/M/G suffix), else half of physical memory."""
    env = os.environ.get("DODB_MEMORY_LIMIT", "").strip()
    if env:
        return parse_bytes(env)
    total = physical_memory()
    return 4 << 30 if total is None else int(total * DEFAULT_SHARE)  # no sysconf: a conservative 4 GiB


def parse_bytes(text: str) -> int:
    """``'512M'`` -> 536870912; plain integers are bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    mult = units.get(t[-1:], 1)
    number = t[:-1] if t[-1:] in units else t
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"cannot read {text!r} as a memory size (e.g. 512M, 8G)") from None
    if not value > 0:
        raise ValueError(f"a memory limit must be positive, got {text!r}")
    return int(value * mult)


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover
