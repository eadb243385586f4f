"""Logic nodes in one compiled pass, and the lanes comparisons run on (docs/design.md §Expressions).

:func:`lane_factors` says, from the declared types, when a comparison runs on 64-bit lanes
(in a predicate program, :mod:`.program`).  :func:`fused_logic` returns an AND/OR node's
``(data, valid, err)`` from the kernels of :mod:`dodb.oblivious.compiled_expr`, or ``None``
when the ``numpy`` backend is selected or the operands are not of a form the kernels take —
then the evaluator's numpy code (the reference) runs.  Which path runs depends on the node,
the declared types and the backend only, never on the rows; both give identical values,
validity and error codes (``tests/oblivious/test_compiled_expr.py``).
"""
from __future__ import annotations

import numpy as np

from ...oblivious.backend import use_compiled
from .numeric import narrow_factors
from .types import SqlType
from .value import Val

__all__ = ["fused_logic", "lane_factors"]

_US_PER_DAY = 86_400_000_000


def _flags(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.bool_)


def lane_factors(ta: SqlType, tb: SqlType) -> tuple[int, int] | None:
    """Public factors whose products with the two operands' 64-bit lanes order the values as
    DuckDB's comparison does (the evaluator's ``compare``), from the declared types alone;
    ``None`` where the lanes are not 64-bit or a side needs a cast (the reference runs).

    >>> from .types import parse_type
    >>> lane_factors(parse_type("DATE"), parse_type("TIMESTAMP")), lane_factors(parse_type("INTEGER"), parse_type("DECIMAL(4,2)"))
    ((86400000000, 1), (100, 1))
    """
    ka, kb = ta.kind, tb.kind
    if ka == kb == "time" or ka == kb == "tstz":  # µs of the day, or instants
        return 1, 1
    if "tstz" in (ka, kb):  # a side cast to TIMESTAMPTZ in the session's zone: the reference
        return None
    if ka in ("date", "ts") and kb in ("date", "ts"):
        # a DATE against a TIMESTAMP is compared in microseconds, as the reference does
        return _US_PER_DAY if (ka, kb) == ("date", "ts") else 1, _US_PER_DAY if (ka, kb) == ("ts", "date") else 1
    return narrow_factors(ta, tb)


def fused_logic(is_and: bool, a: Val, b: Val) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """SQL AND / OR of two truth values with validity and error codes, in one pass."""
    if not use_compiled() or np.ndim(a.valid) != 1:
        return None
    from ...oblivious import compiled_expr as k

    n = a.n
    out, valid, err = np.empty(n, np.bool_), np.empty(n, np.bool_), np.empty(n, np.int32)
    k.logic_rows(1 if is_and else 0, _flags(a.data), _flags(a.valid), np.ascontiguousarray(a.err, np.int32),
                 _flags(b.data), _flags(b.valid), np.ascontiguousarray(b.err, np.int32), out, valid, err, n)
    return out, valid, err
