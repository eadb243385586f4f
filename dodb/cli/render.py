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

MODES = ("box", "table", "markdown", "csv", "json", "line")


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


def _numeric(values: list[Any]) -> bool:
    """Whether a column holds numbers only (then it is right-aligned, as DuckDB aligns them)."""
    seen = [v for v in values if v is not None]
    return bool(seen) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen)


def _terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def grid(columns: list[str] | tuple, rows: list[tuple], *, limit: int | None = None, frame: str = "ascii",
         numeric: list[bool] | None = None) -> str:
    """The rows as a table drawn by rich: ``frame="ascii"`` is DuckDB's ``.mode table``
    (``+---+`` rules), ``"square"`` DuckDB's box lines, ``"markdown"`` a Markdown (GitHub)
    table; ``… N more rows`` past ``limit``.  Numeric columns (``numeric``, else those whose
    values are all numbers) are right-aligned, as DuckDB aligns them.

    On a terminal the header is bold and the table fits the window; otherwise (a pipe, a
    file, a test) the text is plain, without ANSI codes, at its full width."""
    import shutil
    import sys

    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    shown = rows if limit is None else rows[:limit]
    tty = _terminal(sys.stdout)
    frames = {"ascii": box.ASCII2, "square": box.SQUARE, "markdown": box.MARKDOWN}
    table = Table(box=frames[frame], header_style="bold" if tty else "",
                  show_edge=True, highlight=False)
    for i, c in enumerate(columns):
        right = numeric[i] if numeric is not None else _numeric([r[i] for r in shown])
        table.add_column(Text(str(c)), justify="right" if right else "left",
                         overflow="fold")
    for r in shown:
        table.add_row(*(Text(_cell(v)) for v in r))  # Text: a value is never read as rich markup
    width = shutil.get_terminal_size().columns if tty else 1 << 20  # a pipe gets every character
    console = Console(file=io.StringIO(), width=width, force_terminal=tty, force_jupyter=False, no_color=not tty,
                      legacy_windows=False, emoji=False, highlight=False)
    console.print(table)
    text = "\n".join(line.rstrip() for line in console.file.getvalue().splitlines()).strip("\n")
    if limit is not None and len(rows) > limit:
        text += f"\n… {len(rows) - limit} more rows"
    return text


def _numeric_types(result) -> list[bool]:
    """Which of the answer's columns have a numeric type (integer, floating, decimal)."""
    import pyarrow.types as pt

    return [pt.is_integer(f.type) or pt.is_floating(f.type) or pt.is_decimal(f.type) for f in result.arrow().schema]


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
    if mode in ("table", "markdown"):
        text = grid(cols, rows, frame="ascii" if mode == "table" else "markdown", numeric=_numeric_types(result))
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
