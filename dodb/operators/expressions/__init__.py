"""dodb's oblivious scalar expression evaluator (projections, WHERE/HAVING predicates).
See docs/design.md §Expressions.

Scalar SQL over private rows is evaluated here instead of by DuckDB: DuckDB's own
evaluation uses selection vectors (CASE, AND/OR), branches on NULLs and sizes string
buffers by the data — all visible in the memory access pattern.  Here every row and
every branch is evaluated with element-wise numpy over fixed-width lanes, strings have
public widths, and runtime failures are per-row error codes (:mod:`.errors`).

* :func:`check` — the bind-time check: output types and widths, or
  :class:`~dodb.errors.UnsupportedQueryError` naming what is not evaluated exactly.
* :func:`evaluate` — named expressions over a :class:`~dodb.operators.table.PaddedTable`:
  the output columns and per-row error codes (0 on dummy rows).

Types come from DuckDB (:mod:`.types`), so results carry DuckDB's result types.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ..table import Column, PaddedTable
from . import ages, bits, blobs, digests, functions, maths, more_functions, regexps, strptime, text, times  # noqa: F401  (register the function handlers)
from .bind import Output, prepare
from .errors import ExpressionError, code_for, message_for, raise_for_code
from .types import HUGEINT
from .value import to_column

__all__ = ["check", "evaluate", "Output", "ExpressionError", "message_for", "raise_for_code", "code_for"]


def _schema(table: PaddedTable) -> tuple[dict[str, pa.DataType | str], dict[str, int]]:
    """Column types for binding: Arrow types, and ``HUGEINT`` for a HUGEINT lane (its Arrow
    type, DECIMAL(38, 0), would bind with decimal semantics)."""
    return ({n: HUGEINT if c.huge else c.type for n, c in zip(table.names, table.columns)},
            {n: c.width for n, c in zip(table.names, table.columns) if c.is_string})


def check(exprs: Mapping[str, exp.Expression | str], schema: Mapping[str, pa.DataType],
          widths: Mapping[str, int] | None = None) -> dict[str, Output]:
    """Output type, Arrow type and public string width of each expression over ``schema``.

    ``widths``: public byte widths of the string columns.  Raises
    :class:`~dodb.errors.UnsupportedQueryError` for anything not evaluated exactly.
    """
    return dict(prepare(exprs, schema, widths or {}).outputs)


def evaluate(table: PaddedTable, exprs: Mapping[str, exp.Expression | str],
             widths: Mapping[str, int] | None = None,
             messages: dict[int, str] | None = None) -> tuple[dict[str, Column], np.ndarray]:
    """Evaluate named expressions over every padded row.

    Returns the output columns (strings padded to ``widths[name]`` when given, which must
    be a public bound) and the per-row error codes, zero on dummy rows.  ``messages``, if
    given, receives the message of every code the expressions can set (fixed by the
    expressions and types: the analyst's side names the error from it).
    """
    from .evaluator import Evaluator

    schema, col_widths = _schema(table)
    p = prepare(exprs, schema, col_widths)
    if messages is not None:
        messages.update(p.messages)
    ev = Evaluator(p, dict(zip(table.names, table.columns)), table.padded_size)
    out: dict[str, Column] = {}
    codes = None
    for name, tree in p.trees.items():
        v = ev.ev(tree)
        out[name] = to_column(v, (widths or {}).get(name))
        err = np.broadcast_to(np.asarray(v.err, dtype=np.int32), (table.padded_size,))
        codes = err if codes is None else np.maximum(codes, err)
    if codes is None:
        codes = np.zeros(table.padded_size, dtype=np.int32)
    return out, np.multiply(codes, table.is_real, dtype=np.int32)  # zero on dummy rows: a 0/1 factor
