"""Comparison and logic nodes in one compiled pass each (docs/design.md §Expressions).

Each function returns the node's ``(data, valid, err)`` from the kernels of
:mod:`dodb.oblivious.compiled_expr`, or ``None`` when the ``numpy`` backend is selected or
the operands are not of a form the kernels take — then the evaluator's numpy code (the
reference) runs.  Which path runs depends on the node, the declared types and the
backend only, never on the rows; both give identical values, validity and error codes
(``tests/oblivious/test_compiled_expr.py``).
"""
from __future__ import annotations

import numpy as np

from ...oblivious.backend import use_compiled
from .numeric import narrow_lanes
from .value import Val

__all__ = ["fused_compare", "fused_logic"]

_US_PER_DAY = 86_400_000_000


def _i64(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.int64)


def _flags(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.bool_)


def _lanes(a: Val, b: Val) -> tuple[np.ndarray, int, np.ndarray, int] | None:
    """64-bit lanes and public factors whose products order the values as DuckDB's comparison
    does (the evaluator's ``compare``), or ``None``."""
    ka, kb = a.type.kind, b.type.kind
    if ka == kb == "time" or ka == kb == "tstz":  # µs of the day, or instants
        return a.data, 1, b.data, 1
    if "tstz" in (ka, kb):  # a side cast to TIMESTAMPTZ in the session's zone: the reference
        return None
    if ka in ("date", "ts") and kb in ("date", "ts"):
        # a DATE against a TIMESTAMP is compared in microseconds, as the reference does
        return (a.data, _US_PER_DAY if (ka, kb) == ("date", "ts") else 1,
                b.data, _US_PER_DAY if (ka, kb) == ("ts", "date") else 1)
    return narrow_lanes(a, b)


def fused_compare(op: str, a: Val, b: Val) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``a <op> b`` (``op`` one of ``= <> < <= > >=``) over 64-bit lanes, in one pass."""
    if not use_compiled() or a.data is None or np.ndim(a.valid) != 1:
        return None
    lanes = _lanes(a, b)
    if lanes is None:
        return None
    from ...oblivious import compiled_expr as k

    x, kx, y, ky = lanes
    n = a.n
    code = k.CMP_CODES[op]  # lint: public the node's operator
    out, valid, err = np.empty(n, np.bool_), np.empty(n, np.bool_), np.empty(n, np.int32)
    k.compare_i64_rows(code, _i64(x), np.int64(kx), _flags(a.valid), np.ascontiguousarray(a.err, np.int32),
                       _i64(y), np.int64(ky), _flags(b.valid), np.ascontiguousarray(b.err, np.int32),
                       out, valid, err, n)
    return out, valid, err


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
