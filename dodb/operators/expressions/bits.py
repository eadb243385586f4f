"""Bitwise operators on integers: ``&``, ``|``, ``xor``, ``~``, ``<<``, ``>>`` and ``bit_count``
(docs/design.md §Expressions), as DuckDB computes them in the result type's width.

Each is whole-column integer arithmetic over every slot.  Shifts follow DuckDB's checks,
read off DuckDB: a left shift of a negative number or by a negative amount raises, a shift
by the width or more is 0 for a zero input and raises otherwise, and a result that does not
fit raises; a right shift by a negative amount or by the width or more is 0.

>>> _popcount(np.array([-1, 5], dtype=np.int64), 64).tolist()
[64, 2]
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from .functions import ANON, handles
from .numeric import Unsupported
from .value import Val
from ...oblivious.select import all_along, select

__all__: list[str] = []


def _ints(ev, node, args) -> tuple:
    rt = ev.type_of(node)
    vals = [ev.ev(a) for a in args]
    if rt.kind != "int" or {v.type.kind for v in vals} != {"int"}:  # lint: public types only
        raise Unsupported(f"{type(node).__name__.upper()} of {', '.join(str(v.type) for v in vals)}")
    valid = all_along(np.stack([v.valid for v in vals]), 0)
    err = np.maximum.reduce([v.err for v in vals])
    return rt, [np.asarray(v.data, dtype=np.int64) for v in vals], valid, err


def _in_width(x: np.ndarray, bits: int) -> np.ndarray:
    """``x`` wrapped to a signed integer of ``bits`` bits (two's complement), held as int64."""
    if bits == 64:
        return x
    m = np.int64(1 << bits)
    half = np.int64(1 << (bits - 1))
    return (x + half) % m - half


_LOGIC = {exp.BitwiseAnd: np.bitwise_and, exp.BitwiseOr: np.bitwise_or, exp.BitwiseXor: np.bitwise_xor}


@handles(*_LOGIC)
def _ev_logic(ev, node):
    rt, (a, b), valid, err = _ints(ev, node, [node.this, node.expression])
    return Val(rt, _in_width(_LOGIC.get(type(node))(a, b), rt.bits), valid, err)


@handles(exp.BitwiseNot)
def _ev_not(ev, node):
    rt, (a,), valid, err = _ints(ev, node, [node.this])
    return Val(rt, _in_width(~a, rt.bits), valid, err)


@handles(exp.BitwiseLeftShift)
def _ev_left_shift(ev, node):
    rt, (x, k), valid, err = _ints(ev, node, [node.this, node.expression])
    bits = rt.bits
    negative, by_negative = x < 0, (k < 0) & (x >= 0)
    wide = (k >= bits) & (x >= 0) & (k >= 0)
    kk = np.clip(k, 0, bits - 1)
    limit = np.left_shift(np.int64(1), np.maximum(bits - kk - 1, 0))  # the first input that overflows
    over = (kk > 0) & ~negative & ~by_negative & ~wide & (x >= limit)
    res = select(negative | by_negative | wide | over, 0, np.left_shift(x, kk))
    err = np.maximum(err, ev.fail(negative & valid, "Out of Range Error: Cannot left-shift negative number"))
    err = np.maximum(err, ev.fail(by_negative & valid, "Out of Range Error: Cannot left-shift by negative number"))
    err = np.maximum(err, ev.fail(wide & (x != 0) & valid, "Out of Range Error: Left-shift value is out of range"))
    err = np.maximum(err, ev.fail(over & valid, "Out of Range Error: Overflow in left shift"))
    return Val(rt, res, valid, err)


@handles(exp.BitwiseRightShift)
def _ev_right_shift(ev, node):
    rt, (x, k), valid, err = _ints(ev, node, [node.this, node.expression])
    out = (k < 0) | (k >= rt.bits)
    return Val(rt, select(out, 0, np.right_shift(x, np.clip(k, 0, 63))), valid, err)


def _popcount(x: np.ndarray, bits: int) -> np.ndarray:
    """Set bits of ``x``'s two's complement in ``bits`` bits (SWAR: the same steps for every value)."""
    v = x.view(np.uint64) if bits == 64 else (x & np.int64((1 << bits) - 1)).view(np.uint64)
    v = v - ((v >> np.uint64(1)) & np.uint64(0x5555555555555555))
    v = (v & np.uint64(0x3333333333333333)) + ((v >> np.uint64(2)) & np.uint64(0x3333333333333333))
    v = (v + (v >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((v * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


def _bit_count(ev, node):
    args = node.expressions
    if len(args) != 1:
        raise Unsupported("BIT_COUNT with these arguments")
    v = ev.ev(args[0])
    rt = ev.type_of(node)
    if v.type.kind != "int" or rt.kind != "int":
        raise Unsupported(f"BIT_COUNT of {v.type}")
    with np.errstate(over="ignore"):
        return Val(rt, _popcount(np.asarray(v.data, dtype=np.int64), v.type.bits), v.valid, v.err)


ANON["BIT_COUNT"] = _bit_count
