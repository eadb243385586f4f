"""Public byte-width bounds for computed string columns.

A padded table stores strings in fixed-width blocks.  For base columns the width is the
table's public string width; for computed columns it is bounded here from the
expression alone, so the width stays a function of public information.  ``None`` means
no bound is known; the executor then uses the data's width (a documented fallback).

Example:
    >>> import sqlglot
    >>> string_width(sqlglot.parse_one("substring(c, 1, 2)"), {"c": 15})
    8
"""
from __future__ import annotations

from typing import Mapping

from sqlglot import exp

__all__ = ["string_width", "plan_string_widths"]

_CAST_WIDTH = {"INT": 11, "BIGINT": 20, "SMALLINT": 6, "TINYINT": 4, "DATE": 10, "BOOLEAN": 5,
               "DOUBLE": 32, "FLOAT": 32, "TIMESTAMP": 26, "HUGEINT": 40, "DECIMAL": 41}


def string_width(e: exp.Expression, widths: Mapping[str, int]) -> int | None:
    """Upper bound on the UTF-8 byte length of a string expression, if derivable."""
    if isinstance(e, exp.Alias):
        return string_width(e.this, widths)
    if isinstance(e, exp.Paren):
        return string_width(e.this, widths)
    if isinstance(e, exp.Column):
        return widths.get(e.name)
    if isinstance(e, exp.Literal):
        return len(e.this.encode()) if e.is_string else len(e.this)
    if isinstance(e, exp.Null):
        return 0
    if isinstance(e, exp.Substring):
        w = string_width(e.this, widths)
        length = e.args.get("length")
        if isinstance(length, exp.Literal) and not length.is_string:
            cap = 4 * int(length.this)  # at most 4 bytes per character
            return cap if w is None else min(w, cap)
        return w
    if isinstance(e, (exp.Upper, exp.Lower)):
        w = string_width(e.this, widths)
        return None if w is None else 3 * w
    if isinstance(e, (exp.Trim,)):
        return string_width(e.this, widths)
    if isinstance(e, (exp.DPipe, exp.Concat)):
        parts = e.expressions if isinstance(e, exp.Concat) else [e.left, e.right]
        ws = [string_width(p, widths) for p in parts]
        return None if any(w is None for w in ws) else sum(ws)
    if isinstance(e, (exp.Case, exp.If, exp.Coalesce)):
        branches = [v for k, v in e.args.items() if k in ("true", "false", "default", "this") and v is not None]
        branches += [i.args.get("true") for i in e.args.get("ifs") or []]
        branches += list(e.expressions) if isinstance(e, exp.Coalesce) else []
        ws = [string_width(b, widths) for b in branches if isinstance(b, exp.Expression)]
        return None if not ws or any(w is None for w in ws) else max(ws)
    if isinstance(e, exp.Cast):
        to = e.to.this.name if hasattr(e.to.this, "name") else str(e.to.this)
        if to in ("VARCHAR", "TEXT", "CHAR"):
            inner = string_width(e.this, widths)
            if inner is not None:
                return inner
            src = getattr(e.this, "type", None)
            name = src.this.name if src is not None and hasattr(src.this, "name") else None
            return _CAST_WIDTH.get(name)
    return None


def plan_string_widths(root) -> dict[str, int]:
    """Public string widths by column name: the scans' declared widths, carried through
    projections (renames and computed strings, bounded by :func:`string_width`).  A name
    used twice keeps the larger width."""
    from .logical import Project, Scan, walk

    out: dict[str, int] = {}
    for n in walk(root):
        if isinstance(n, Scan):
            for col, w in n.widths.items():  # keyed 'alias.column' already
                name = col if "." in col else f"{n.alias}.{col}"
                out[name] = max(out.get(name, 0), int(w))
        elif isinstance(n, Project):
            for name, e in n.exprs.items():
                w = string_width(e, out)
                if w:
                    out[name] = max(out.get(name, 0), int(w))
    return out
