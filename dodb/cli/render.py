"""How the command line and the shell print things: answers in DuckDB's output modes, the
budget in the words of the filter that admits queries, numbers rounded for reading.

Shared by ``dodb query``/``budget``/``tables`` and ``dodb shell`` so both say the same."""
from __future__ import annotations

import csv
import io
import json
from typing import Any

MODES = ("box", "table", "csv", "json", "line")

# the filter names the ledger stores, as a reader says them
_FILTER_WORDS = {"basic": "basic composition", "advanced": "advanced composition", "renyi": "Rényi",
                 "rdp": "Rényi", "best": "the best of basic, advanced and Rényi"}


def num(x: float | None, digits: int = 4) -> str:
    """A float for display: ``digits`` significant digits (0.14999999284338458 -> 0.15)."""
    if x is None:
        return "-"
    return f"{x:.{digits}g}"


def filter_words(name: str | None) -> str:
    """The admitting filter's name in words (``'renyi'`` -> ``'Rényi'``)."""
    return _FILTER_WORDS.get(str(name), str(name))


def budget_headline(info: dict[str, Any]) -> str:
    """``ε 9.94 of 10 under Rényi``: what the admitting filter counts as spent, of the total.

    The filter composes the charges more tightly than their plain sum, so the sum can
    exceed the budget while the filter still admits queries (issue 29); the headline
    shows the filter's view, which is what decides the next admission."""
    total = info["budget"][0]
    seen = info.get("filter_spent") or info["spent"]
    return f"ε {num(seen[0], 3)} of {num(total)} under {filter_words(info.get('filter'))}"


def budget_lines(info: dict[str, Any]) -> list[str]:
    """``dodb budget`` / ``.budget``: the filter's view first, the plain sum labelled as such."""
    delta = info["budget"][1]
    seen = info.get("filter_spent") or info["spent"]
    lines = [f"spent    {budget_headline(info)}, δ {num(seen[1], 3)} of {num(delta, 3)} "
             "(as the admitting filter counts the charges)",
             f"left     ε={num(info['remaining'][0])} δ={num(info['remaining'][1], 3)} "
             "(the most the next query can be charged)",
             f"plain sum of the {info.get('queries', 0) or 0} charges in 'dodb history': ε={num(info['spent'][0])} "
             f"δ={num(info['spent'][1], 3)} (not what admits queries: the filter composes them more tightly, "
             "so this sum may pass the budget)"]
    if info.get("default_delta") is not None:
        lines.append(f"default query δ={num(info['default_delta'], 3)} (sized for {info.get('horizon')} queries)")
    parts = info.get("partitions") or {}
    if parts:  # docs/design.md §Partitions
        top = info["partition_max_spent"]
        lines.append(f"partitions: {len(parts)} charged, the most spent ε={num(top[0])} δ={num(top[1], 3)}")
        for name, p in sorted(parts.items()):
            lines.append(f"  {name}: spent ε={num(p['spent'][0])}, left ε={num(p['remaining'][0])}")
    return lines


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
        return str(result.relation).rstrip("\n")
    cols = result.columns
    rows = table_rows(result.arrow())
    if limit is not None and mode != "box":
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
