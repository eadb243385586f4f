"""Projection: scalar SQL expressions evaluated over whole columns (docs/design.md §Expressions).

Every row — real or dummy — is evaluated, so the access pattern is a linear scan of
the padded table.  Over private rows (any mode but ``plain``) expressions go through
dodb's oblivious evaluator (:mod:`dodb.operators.expressions`): every branch on every
row, public string widths, runtime failures as per-row error codes folded into
``ctx.error_code``.  In ``plain`` mode and for public-only sub-plans (stability 0),
evaluation is delegated to DuckDB over an Arrow batch, *projection only* (``SELECT expr,
… FROM batch``); dummy rows are handed over as all-NULL so that no expression can fail
on their placeholder contents.  The SQL is built and rendered by sqlglot; no value is
ever pasted into SQL text.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import sqlglot
from sqlglot import exp

from .. import duckcalls
from .context import ExecContext, OpResult
from .list_agg import ListColumn
from .table import Column, PaddedTable, column_from_arrow

__all__ = ["evaluate", "project", "predicate_mask", "BATCH_NAME"]

BATCH_NAME = "__dodb_batch"
def _as_arrow(table: PaddedTable, needed: Sequence[str] | None) -> pa.Table:
    names = list(table.names) if needed is None else [n for n in table.names if n in set(needed)]
    arrays = []
    for nm in names:
        c = table.column(nm)
        masked = Column(c.type, c.values, c.valid & table.is_real, c.lengths, huge=c.huge)
        arrays.append(masked.to_arrow())
    if not arrays:
        return pa.table({"__dodb_rows": pa.array(np.zeros(table.padded_size, np.int8))})
    return pa.table(arrays, names=names)


def _parse(expr: exp.Expression | str) -> exp.Expression:
    return sqlglot.parse_one(expr, read="duckdb") if isinstance(expr, str) else expr


def evaluate(table: PaddedTable, exprs: Mapping[str, exp.Expression | str]) -> pa.Table:
    """Evaluate named scalar expressions over all padded rows; returns an Arrow table."""
    parsed = {name: _parse(e) for name, e in exprs.items()}
    needed = {c.name for e in parsed.values() for c in e.find_all(exp.Column)}
    batch = _as_arrow(table, needed)
    if not parsed:
        return pa.table({})
    select = exp.select(*[e.copy().as_(name, quoted=True) for name, e in parsed.items()]).from_(
        exp.to_identifier(BATCH_NAME, quoted=True))
    sql = select.sql(dialect="duckdb")
    con = duckcalls.scratch()
    duckcalls.register(con, BATCH_NAME, batch)
    try:
        out = duckcalls.fetch_arrow(con, sql)
    finally:
        con.unregister(BATCH_NAME)
    if out.num_rows != table.padded_size:
        raise RuntimeError("projection changed the number of rows")  # cannot happen for scalar SELECTs
    return out


def _oblivious(table: PaddedTable, ctx: ExecContext | None) -> bool:
    """Private rows go through the oblivious evaluator; DuckDB sees plain mode and public
    (stability 0) batches only (docs/design.md §Expressions)."""
    return ctx.mode != "plain" if ctx is not None else table.stability > 0


def project(
    table: PaddedTable,
    exprs: Mapping[str, exp.Expression | str],
    *,
    widths: Mapping[str, int] | None = None,
    mode: str = "do",
    ctx: ExecContext | None = None,
) -> OpResult:
    """New columns ``name = expr`` (in order).  Sizes, stability and alignment are unchanged.

    ``widths``: public byte widths for string results (the evaluator's own bound is used
    when it is larger, so no string is ever cut).
    """
    ctx = ctx or ExecContext(mode=mode)
    widths = dict(widths or {})
    # a list column (docs/design.md §list) is only ever passed through, by reference
    lists = {name: table.column(e.name) for name, e in exprs.items()
             if isinstance(e, exp.Column) and e.name in table.names and isinstance(table.column(e.name), ListColumn)}
    if lists:
        rest = project(table.select([n for n in table.names if not isinstance(table.column(n), ListColumn)]),
                       {k: v for k, v in exprs.items() if k not in lists}, widths=widths, mode=mode, ctx=ctx)
        cols = [lists[name] if name in lists else rest.table.column(name) for name in exprs]
        res = PaddedTable(list(exprs), cols, table.is_real.copy(), table.stability, dict(table.meta), table.aligned)
        return OpResult(res, [], ctx.trace)
    if _oblivious(table, ctx):
        from . import expressions

        columns, codes = expressions.evaluate(table, exprs, widths, ctx.error_messages)
        ctx.fold_errors(codes)
        cols = [columns[name] for name in exprs]  # lint: public the output columns by expression name
    else:
        out = evaluate(table, exprs)
        cols = []
        for name in exprs:
            w = widths.get(name)
            if w is None and name in table.names and table.column(name).is_string:
                w = table.column(name).width
            cols.append(column_from_arrow(out.column(name), w))
    ctx.trace.record("project:scan", -1, table.padded_size, len(cols))
    res = PaddedTable(list(exprs), cols, table.is_real.copy(), table.stability, dict(table.meta), table.aligned)
    return OpResult(res, [], ctx.trace)


def predicate_mask(table: PaddedTable, predicate: exp.Expression | str,
                   ctx: ExecContext | None = None) -> np.ndarray:
    """Boolean mask of a WHERE/HAVING predicate over all rows (NULL counts as false).

    Over private rows (``ctx`` not in ``plain`` mode, or no ``ctx`` and a table of
    stability > 0) the oblivious evaluator is used; its error codes are folded into
    ``ctx.error_code`` (without a ``ctx``, a real row's error is raised at once).
    """
    if _oblivious(table, ctx):
        from . import expressions

        columns, codes = expressions.evaluate(table, {"__pred": predicate}, None,
                                              ctx.error_messages if ctx is not None else None)
        if ctx is not None:
            ctx.fold_errors(codes)
        else:
            expressions.raise_for_code(int(np.max(codes, initial=0)))
        c = columns["__pred"]
    else:
        c = column_from_arrow(evaluate(table, {"__pred": predicate}).column("__pred"))
    if not pa.types.is_boolean(c.type) and not pa.types.is_null(c.type):
        raise TypeError(f"predicate is not boolean: {predicate}")
    return np.asarray(c.values, dtype=bool) & c.valid & table.is_real
