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

__all__ = ["bind_parameters", "number_positional", "literal_for", "params_to_wire", "params_from_wire"]


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


# -- served mode: parameters cross the wire as typed values, never as SQL text ---------------------
def _value_to_wire(value: Any) -> list:
    """One value as ``[type tag, text]`` (exact: repr of a float, str of a Decimal)."""
    if value is None:
        return ["null", None]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, decimal.Decimal):
        return ["decimal", str(value)]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, dt.datetime):
        literal_for(value)  # a timezone-aware value is refused here, in the analyst's process
        return ["timestamp", value.isoformat()]
    if isinstance(value, dt.date):
        return ["date", value.isoformat()]
    literal_for(value)  # raises the same InvalidParameterError as the local path
    raise AssertionError("unreachable")


_FROM_WIRE = {"int": int, "float": float, "decimal": decimal.Decimal, "str": str,
              "timestamp": dt.datetime.fromisoformat, "date": dt.date.fromisoformat}


def _value_from_wire(item: Any) -> Any:
    if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
        raise InvalidParameterError("malformed request: each parameter must be [type, value]")
    tag, text = item
    if tag == "null" and text is None:
        return None
    if tag == "bool" and isinstance(text, bool):
        return text
    if tag in _FROM_WIRE and isinstance(text, str):
        try:
            return _FROM_WIRE[tag](text)
        except (ValueError, decimal.InvalidOperation):
            raise InvalidParameterError(f"malformed request: parameter {text[:40]!r} is not a {tag}") from None
    raise InvalidParameterError(f"malformed request: unknown parameter type {str(tag)[:20]!r}")


def params_to_wire(params: Sequence[Any] | Mapping[str, Any] | None) -> dict | None:
    """``params`` as JSON-able typed values for served mode (docs/design.md §Served mode)."""
    if params is None:
        return None
    if isinstance(params, Mapping):
        return {"named": {str(k): _value_to_wire(v) for k, v in params.items()}}
    if isinstance(params, Sequence) and not isinstance(params, (str, bytes)):
        return {"positional": [_value_to_wire(v) for v in params]}
    raise InvalidParameterError("params must be a list/tuple (for ? or $1) or a dict (for $name)")


def params_from_wire(obj: Any) -> list[Any] | dict[str, Any] | None:
    """The server's side of :func:`params_to_wire`: the same Python values, checked."""
    if obj is None:
        return None
    if isinstance(obj, dict) and set(obj) == {"positional"} and isinstance(obj["positional"], list):
        return [_value_from_wire(v) for v in obj["positional"]]
    if isinstance(obj, dict) and set(obj) == {"named"} and isinstance(obj["named"], dict):
        return {str(k): _value_from_wire(v) for k, v in obj["named"].items()}
    raise InvalidParameterError("malformed request: 'params' must be {'positional': [...]} or {'named': {...}}")
