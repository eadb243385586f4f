"""What the gateway reads in a query's text: its parameters, and whether it asks for the report table.

Both read the parsed query (sqlglot, DuckDB dialect — the parser the engine's planner
uses), never a regex over the text: a string literal that spells ``dodb_last_report`` or
``?`` is a literal.
"""
from __future__ import annotations

from sqlglot import exp, parse
from sqlglot.errors import ParseError, TokenError

from ..errors import PlanningError
from ..planner.params import number_positional
from .errors import GatewayError
from .metadata import REPORT_TABLE

__all__ = ["is_report_query", "parameter_names"]


def _trees(query: str) -> list[exp.Expression] | None:
    try:
        return [t for t in parse(query, read="duckdb") if t is not None]
    except (ParseError, TokenError):
        return None  # the engine reports a malformed query with its own message


def is_report_query(query: str) -> bool:
    """Whether ``query`` reads ``dodb_last_report`` (answered by the gateway).  Mixing it with
    engine tables is refused: the report lives here, the data on the engine."""
    if REPORT_TABLE not in query.lower():
        return False  # the common case, without parsing
    trees = _trees(query)
    if trees is None:
        return False
    names = {t.name.lower() for tree in trees for t in tree.find_all(exp.Table)}
    if REPORT_TABLE not in names:
        return False
    ctes = {c.alias_or_name.lower() for tree in trees for c in tree.find_all(exp.CTE)}
    others = names - {REPORT_TABLE} - ctes
    if others:
        raise GatewayError(f"{REPORT_TABLE} is the gateway's own table: query it alone, not with "
                           f"{', '.join(sorted(others))}")
    return True


def parameter_names(query: str) -> tuple[list[str], bool]:
    """``(names, named)``: the query's parameters in order of first use — ``["1", "2", …]``
    for ``?``/``$n``, the names for ``$name`` (``named``) — as the engine binds them."""
    try:
        numbered = number_positional(query)  # refuses '?' mixed with $n/$name (InvalidParameterError)
    except PlanningError:
        return [], False  # malformed: the engine's planner says what is wrong
    trees = _trees(numbered)
    if not trees:
        return [], False
    seen: dict[str, None] = {}
    for tree in trees:
        for p in tree.find_all(exp.Placeholder):
            if p.this is not None:
                seen.setdefault(str(p.this), None)
    names = list(seen)
    named = any(not n.isdigit() for n in names)
    if not named:
        names.sort(key=int)
    return names, named
