"""What people read: numbers rounded, the budget in the words of the filter that admits
queries, and HTML for notebooks (``_repr_html_`` of Result, PrivacyReport, Database and
the budget).  Shared by the Python API and the command line so both say the same.

Imports nothing heavy: ``dodb.cli`` uses it while ``dodb --help`` stays light."""
from __future__ import annotations

import html
from typing import Any, Iterable

# the filter names the ledger stores, as a reader says them
_FILTER_WORDS = {"basic": "basic composition", "advanced": "advanced composition", "renyi": "Rényi",
                 "best": "the best of basic, advanced and Rényi"}


def num(x: float | None, digits: int = 4) -> str:
    """A float for display: ``digits`` significant digits (0.14999999284338458 -> 0.15)."""
    if x is None:
        return "-"
    return f"{x:.{digits}g}"


def filter_words(name: str | None) -> str:
    """The admitting filter's name in words (``'renyi'`` -> ``'Rényi'``)."""
    return _FILTER_WORDS.get(str(name), str(name))


def _filter_spent(info: dict[str, Any]) -> tuple:
    """(ε, δ) spent as the admitting filter counts them (the plain sum from an older server)."""
    return info.get("filter_spent") or info["spent"]


def budget_headline(info: dict[str, Any]) -> str:
    """``ε 9.94 of 10 under Rényi``: what the admitting filter counts as spent, of the total.

    The filter composes the charges more tightly than their plain sum, so the sum can
    exceed the budget while the filter still admits queries (issue 29); the headline
    shows the filter's view, which is what decides the next admission."""
    total = info["budget"][0]
    seen = _filter_spent(info)
    return f"ε {num(seen[0], 3)} of {num(total)} under {filter_words(info.get('filter'))}"


def budget_lines(info: dict[str, Any]) -> list[str]:
    """``dodb budget`` / ``.budget`` / ``repr(db.budget)``: the filter's view first, then what
    the next query can get, then the plain sum labelled as such."""
    delta = info["budget"][1]
    seen = _filter_spent(info)
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


def html_table(columns: Iterable[Any], rows: Iterable[Iterable[Any]]) -> str:
    """An escaped HTML table (``None`` shown as NULL, as DuckDB shows it)."""
    def cells(row: Iterable[Any], tag: str) -> str:
        return "".join(f"<{tag}>{html.escape('NULL' if v is None else str(v))}</{tag}>" for v in row)

    body = "".join(f"<tr>{cells(r, 'td')}</tr>" for r in rows)
    return f"<table><thead><tr>{cells(columns, 'th')}</tr></thead><tbody>{body}</tbody></table>"


def database_html(db: Any) -> str:
    """``Database._repr_html_``: its tables (protection, unit path, capacity) under the
    budget's headline.  A display never raises: what cannot be read is said instead."""
    from .errors import one_line

    if db._closed:
        return "<p>dodb.Database (closed)</p>"
    try:
        tables = db.tables()
    except Exception as e:
        return f"<p>dodb.Database (cannot list its tables: {html.escape(one_line(e))})</p>"
    rows = [(t["name"], t["protection"], " -> ".join(t["unit"]) if t.get("unit") else "",
             "" if t.get("capacity") is None else f"{t['capacity']:,}") for t in tables]
    try:
        budget = html.escape(budget_headline(db.budget))
    except Exception:  # no budget set yet
        budget = "no budget set"
    flags = "".join([", read-only" if db.read_only else "", ", plain mode allowed" if db.allow_insecure else ""])
    return (f"<p><b>dodb.Database</b>{flags}: {len(rows)} table(s); budget {budget}</p>"
            + html_table(["table", "protection", "privacy unit (path)", "capacity (slots)"], rows))


class BudgetInfo(dict):
    """``db.budget``: the plain dict it always was (``info["remaining"]``, JSON), printed in
    words (``repr``) and as an HTML table in a notebook."""

    def __repr__(self) -> str:
        try:
            return "\n".join(budget_lines(self))
        except (KeyError, TypeError, IndexError):  # a partial dict (an old server's): as a dict
            return dict.__repr__(self)

    def _repr_html_(self) -> str:
        try:
            return budget_html(self)
        except (KeyError, TypeError, IndexError):
            return f"<pre>{html.escape(dict.__repr__(self))}</pre>"


def budget_html(info: dict[str, Any]) -> str:
    """The budget as a notebook shows it: the filter's headline over ε and δ per line."""
    seen = _filter_spent(info)
    rows = [("budget", num(info["budget"][0]), num(info["budget"][1], 3), f"admitted by {filter_words(info.get('filter'))}"),
            ("spent", num(seen[0]), num(seen[1], 3), "as the admitting filter counts the charges"),
            ("left", num(info["remaining"][0]), num(info["remaining"][1], 3), "the most the next query can be charged"),
            ("plain sum", num(info["spent"][0]), num(info["spent"][1], 3),
             f"of the {info.get('queries', 0) or 0} charges (not what admits queries)")]
    return (f"<p><b>privacy budget</b>: {html.escape(budget_headline(info))}</p>"
            + html_table(["", "ε", "δ", ""], rows))
