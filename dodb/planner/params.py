"""Query parameters: ``db.sql("… WHERE a = ? AND b = $2 …", params=[…])`` bound safely.

Values never become SQL text.  Each sqlglot ``Placeholder`` node of the *parsed* tree is
replaced by a literal node built from the Python value (a typed ``CAST`` where DuckDB's
own parameter binding would give a type a bare literal does not: DOUBLE for a float,
DECIMAL, DATE, TIMESTAMP), so a string parameter is a string constant whatever it
contains.  Positional ``?`` placeholders are numbered in the order they appear in the
text (from the tokenizer's positions, not the tree's order); ``$1``/``$name`` name their
parameter.  Everything else — the guard, binding and planning — then sees an ordinary
query with constants (docs/design.md §Execution path).
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp
from sqlglot.tokens import TokenType
from sqlglot.dialects.duckdb import DuckDB

from ..errors import InvalidParameterError, PlanningError

__all__ = ["bind_parameters", "number_positional", "literal_for"]


def number_positional(sql: str) -> str:
    """``?`` placeholders renamed ``$1, $2, …`` in the order the tokenizer meets them.

    Only placeholder tokens change (never a value), so the text stays the analyst's
    query; mixing ``?`` with ``$n``/``$name`` is refused as DuckDB does.
    """
    try:
        tokens = DuckDB().tokenize(sql)
    except Exception as e:  # noqa: BLE001 - malformed SQL is reported by the parser
        raise PlanningError(f"malformed SQL: {e}") from None
    marks = [t for t in tokens if t.token_type == TokenType.PLACEHOLDER and t.text == "?"]
    if not marks:
        return sql
    if any(t.token_type == TokenType.PARAMETER or (t.token_type == TokenType.PLACEHOLDER and t.text != "?")
           for t in tokens):
        raise InvalidParameterError("the query mixes '?' with numbered or named parameters: use one kind")
    out, last = [], 0
    for i, t in enumerate(marks, 1):
        out.append(sql[last:t.start])
        out.append(f"${i}")
        last = t.end + 1
    out.append(sql[last:])
    return "".join(out)


def literal_for(value: Any) -> exp.Expression:
    """The constant node for one parameter value, typed as DuckDB binds it."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(str(value))
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else
                                                         ("inf" if value > 0 else "-inf"))
        return exp.cast(exp.Literal.string(text), exp.DataType.build("DOUBLE"))
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise InvalidParameterError(f"parameter value {value} is not a finite decimal")
        sign, digits, exponent = value.as_tuple()
        scale = max(0, -exponent)
        precision = max(len(digits), scale + 1)
        if precision > 38:
            raise InvalidParameterError(f"parameter value {value} has more than 38 digits")
        return exp.cast(exp.Literal.string(str(value)), exp.DataType.build(f"DECIMAL({precision}, {scale})"))
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            raise InvalidParameterError("timezone-aware datetime parameters are not supported: pass a naive one")
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), exp.DataType.build("TIMESTAMP"))
    if isinstance(value, dt.date):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.build("DATE"))
    raise InvalidParameterError(f"parameter of type {type(value).__name__} is not supported (give None, bool, int, "
                                "float, Decimal, str, date or datetime)")


def bind_parameters(tree: exp.Expression, params: Sequence[Any] | Mapping[str, Any]) -> exp.Expression:
    """``tree`` with every placeholder replaced by its value's literal (a copy).

    ``params``: a sequence for ``?``/``$1`` placeholders, a mapping for ``$name``.  Every
    placeholder needs a value and every value must be used.
    """
    holders = list(tree.find_all(exp.Placeholder))
    names = [str(p.this) if p.this is not None else None for p in holders]
    if any(n is None for n in names):  # an unnumbered '?' that number_positional did not see
        raise InvalidParameterError("number '?' placeholders first (number_positional)")
    if isinstance(params, Mapping):
        values = {str(k): v for k, v in params.items()}
    elif isinstance(params, Sequence) and not isinstance(params, (str, bytes)):
        values = {str(i): v for i, v in enumerate(params, 1)}
    else:
        raise InvalidParameterError("params must be a list/tuple (for ? or $1) or a dict (for $name)")
    missing = sorted({n for n in names if n not in values})
    if missing:
        raise InvalidParameterError(f"no value for parameter(s) {', '.join('$' + m for m in missing)}; "
                                    f"{len(values)} given")
    unused = sorted(set(values) - set(names))
    if unused:
        raise InvalidParameterError(f"parameter(s) {', '.join('$' + u for u in unused)} are not used by the query")
    literals = {n: literal_for(v) for n, v in values.items()}
    out = tree.copy()
    for p in list(out.find_all(exp.Placeholder)):
        p.replace(literals[str(p.this)].copy())
    return out
