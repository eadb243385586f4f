"""How the command line and the shell print things: answers in DuckDB's output modes, the
budget in the words of the filter that admits queries, numbers rounded for reading.

Shared by ``dodb query``/``budget``/``tables`` and ``dodb shell`` so both say the same."""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from ..display import budget_headline, budget_lines, filter_words, num

# the budget's words come from dodb.display, which the Python API's reprs share
__all__ = ["MODES", "budget_headline", "budget_lines", "filter_words", "grid", "num", "render",
           "table_listing_lines"]

MODES = ("box", "table", "csv", "json", "line")


def table_listing_lines(tables: list[dict[str, Any]]) -> list[str]:
    """``dodb tables`` / ``.tables``: one line per table, its protection, unit path and capacity."""
    if not tables:
        return ["no tables"]
    rows = [("name", "protection", "privacy unit (path)", "capacity")]
    for t in tables:
        unit = " -> ".join(t["unit"]) if t.get("unit") else "-"
        if t.get("privacy_unit") and t.get("unit"):
            unit += f" ({t['privacy_unit']})"
        cap = "-" if t.get("capacity") is None else f"{t['capacity']:,} slots" + \
            (" (DP release)" if t.get("capacity_source") == "dp" else " (declared)")
        rows.append((t["name"], t["protection"], unit, cap))
    return grid(rows[0], rows[1:]).splitlines()


def _cell(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return repr(v) if v != v or v in (float("inf"), float("-inf")) else f"{v:.10g}"
    return str(v)


def grid(columns: list[str] | tuple, rows: list[tuple], *, limit: int | None = None) -> str:
    """An ASCII table (``.mode table``): a header, a rule, the rows, ``…`` past ``limit``."""
    shown = rows if limit is None else rows[:limit]
    cells = [[_cell(v) for v in r] for r in shown]
    widths = [max([len(str(c))] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [rule, "| " + " | ".join(str(c).ljust(w) for c, w in zip(columns, widths)) + " |", rule]
    out += ["| " + " | ".join(v.ljust(w) for v, w in zip(row, widths)) + " |" for row in cells]
    out.append(rule)
    if limit is not None and len(rows) > limit:
        out.append(f"… {len(rows) - limit} more rows")
    return "\n".join(out)


def render(result, mode: str, *, limit: int | None = None) -> str:
    """A :class:`dodb.Result` in a DuckDB output mode (``.mode``): ``box`` is DuckDB's own
    rendering of the answer as a relation; ``table``, ``csv``, ``json`` and ``line`` as
    the DuckDB shell prints them."""
    from ..compare import table_rows

    if mode == "box":
        rel = result.relation
        more = len(result) - limit if limit is not None and len(result) > limit else 0
        text = str(rel.limit(limit) if more else rel).rstrip("\n")
        return text + (f"\n… {more} more rows" if more else "")
    cols = result.columns
    rows = table_rows(result.arrow())
    if limit is not None:
        more, rows = max(0, len(rows) - limit), rows[:limit]
    else:
        more = 0
    if mode == "table":
        text = grid(cols, rows)
    elif mode == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        w.writerows([["" if v is None else v for v in r] for r in rows])
        text = buf.getvalue().rstrip("\n")
    elif mode == "json":
        text = json.dumps([dict(zip(cols, r)) for r in rows], default=str)
    elif mode == "line":
        width = max((len(c) for c in cols), default=0)
        text = "\n\n".join("\n".join(f"{c.rjust(width)} = {_cell(v)}" for c, v in zip(cols, r)) for r in rows)
    else:
        raise ValueError(f"unknown output mode {mode!r}; choose one of {', '.join(MODES)}")
    return text + (f"\n… {more} more rows" if more else "")
