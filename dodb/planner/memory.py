"""The memory guard: a plan's peak memory estimated from public sizes (docs/design.md §Memory guard).

Every padded size in a plan is bounded by public numbers (capacities, declared degrees,
LIMIT; :func:`~dodb.planner.logical.upper_rows`), so the memory a query can need is known
before it runs and before anything is charged.  The estimate is deliberately simple and
pessimistic:

* a row of a node's output costs 16 bytes per column (value words and validity) plus the
  declared width of every string column it carries from a private scan, plus the
  ``is_real`` flag;
* the executor keeps every node's output until the query ends (shared sub-plans), so the
  outputs add up;
* a fixed ``BASE_BYTES`` for the interpreter's own working set;
* on top of that, the node that works hardest holds ``WORK_FACTOR`` copies of its inputs
  and output (sorting networks and compaction keep keys, payload and temporaries), and a
  filter or projection also ``EXPR_FACTOR`` copies of the string bytes it reads (the
  oblivious evaluator works on whole fixed-width string matrices: LIKE, substring, casts).

Measured against tracemalloc's peak of the 22 TPC-H queries at sf 0.005, the real peak is
3–51% of the estimate (the fixed base dominates at that size);
tests/api/test_memory_guard.py checks that it bounds a few of them.

>>> from dodb.planner.logical import Scan
>>> estimate_peak_bytes(Scan(table="t", alias="t", columns=["t.a", "t.b"], max_rows=1000)) - BASE_BYTES
99000
"""
from __future__ import annotations

import os

from .logical import Aggregate, Filter, Node, Project, Scan, upper_rows, walk

__all__ = ["estimate_peak_bytes", "default_memory_limit", "format_bytes", "parse_bytes", "WORK_FACTOR"]

BYTES_PER_COLUMN = 16
WORK_FACTOR = 3
EXPR_FACTOR = 12
BASE_BYTES = 32 << 20  # the interpreter's own working set during a run (traces, Arrow conversions)
DEFAULT_SHARE = 0.5  # of the machine's physical memory, unless DODB_MEMORY_LIMIT says otherwise


def _string_widths(root: Node) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in walk(root):
        if isinstance(n, Scan):
            for col, w in n.widths.items():  # keyed 'alias.column' already
                out[col if "." in col else f"{n.alias}.{col}"] = int(w)
    return out


STRING_AGG_FACTOR = 32  # working bytes per candidate byte of string_agg's compaction (operators/string_agg.py)


def _string_agg_bytes(node: Node, widths: dict[str, int]) -> int:
    """string_agg's candidate buffer: ``n·R·(w + s)`` bytes (one row without GROUP BY), each
    compacted with int64 displacements and masks, plus its results."""
    if not isinstance(node, Aggregate):
        return 0
    from ..operators.string_agg import string_agg_width
    n = upper_rows(node.child)
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


def _row_bytes(node: Node, widths: dict[str, int]) -> int:
    return BYTES_PER_COLUMN * len(node.columns) + sum(widths.get(c, 0) for c in node.columns) + 1


def estimate_peak_bytes(root: Node) -> int:
    """Upper estimate of the bytes a plan holds at its peak (module doc)."""
    widths = _string_widths(root)
    nodes = list(walk(root))
    outputs = {n.node_id: upper_rows(n) * _row_bytes(n, widths) for n in nodes}

    def work(n: Node) -> int:
        held = (WORK_FACTOR - 1) * (sum(outputs[c.node_id] for c in n.children) + outputs[n.node_id])
        if isinstance(n, (Filter, Project)):
            held += EXPR_FACTOR * sum(upper_rows(c) * sum(widths.get(col, 0) for col in c.columns)
                                      for c in n.children)
        return held + _string_agg_bytes(n, widths)

    return BASE_BYTES + sum(outputs.values()) + max((work(n) for n in nodes), default=0)


def default_memory_limit() -> int:
    """``DODB_MEMORY_LIMIT`` (bytes, or with a K/M/G suffix), else half of physical memory."""
    env = os.environ.get("DODB_MEMORY_LIMIT", "").strip()
    if env:
        return parse_bytes(env)
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * DEFAULT_SHARE)
    except (ValueError, OSError, AttributeError):  # no sysconf: a conservative 4 GiB
        return 4 << 30


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
