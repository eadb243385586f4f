"""A predicate tree lowered to one compiled program (docs/design.md §Expressions, fused
predicates; issue 26 item 5).

:func:`fused_predicate` takes a boolean node — a comparison, AND/OR/NOT, IS NULL, IN or
BETWEEN — and lowers as much of the tree below it as runs on 64-bit lanes into a program
for :func:`dodb.oblivious.compiled_program.run_program`: one pass over blocks of rows
instead of one whole-column pass per node.  What it lowers, and how, depends on the node
classes, the declared types and the public constants only, never on the rows:

* comparisons whose operands :func:`.fused.lane_factors` puts on 64-bit lanes; a string
  column ``=``/``<>`` a string constant;
* IN and BETWEEN, in the one type of :func:`.numeric.in_list_type` when that is a DECIMAL of
  at most 18 digits (then the implicit casts are exact and cannot fail);
* operands that are columns (their lanes are read in place), clean constants (immediates)
  or any other expression, which the evaluator computes first (a *leaf*, with its own
  error codes); a boolean node it does not lower is such a leaf too.

Everything else, and every node when the ``numpy`` backend is selected, is the evaluator's
own code, the reference: both give identical values, validity and error codes
(``tests/oblivious/test_compiled_program.py``).
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from ...oblivious.backend import use_compiled
from ...oblivious.program_ops import BLOCK, CMP_CODES, OPS, SLOTS32, SLOTS64, SLOTS_STR, WIDTH
from .fused import lane_factors
from .numeric import in_list_type
from .types import SqlType, parse_type
from .value import Val, constant

__all__ = ["fused_predicate", "ROOTS"]

ROOTS = (exp.And, exp.Or, exp.Not, exp.Is, exp.In, exp.Between,
         exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)
_CMP = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_LANE_KINDS = ("int", "dec", "date", "ts", "tstz", "time")


class _Abort(Exception):
    """More leaves of one kind than the kernel's slots, or a truth value of another type: the
    tree runs node by node, as the evaluator's own code."""


def _lane_type(t: SqlType | None) -> bool:
    """A type whose values are one exact signed 64-bit lane (DECIMALs of at most 18 digits)."""
    return t is not None and t.kind in _LANE_KINDS and not (t.kind == "dec" and (t.huge or t.precision > 18))


def _scale(t: SqlType) -> int:
    return t.scale if t.kind == "dec" else 0


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view: every leaf slot has one array type, so the kernel compiles once."""
    v = a.view()
    v.flags.writeable = False
    return v


def _slots(arrays: list[np.ndarray], count: int, filler: np.ndarray) -> tuple[np.ndarray, ...]:
    """``count`` leaf slots: ``arrays`` as contiguous read-only views of ``filler``'s dtype, then
    ``filler`` (an array the program never names) in the unused ones."""
    used = tuple(_readonly(np.ascontiguousarray(a, dtype=filler.dtype)) for a in arrays)
    return used + (_readonly(filler),) * (count - len(used))


class _Builder:
    """Emits the program of one tree; registers are reused once their value is consumed."""

    def __init__(self, ev):
        self.ev, self.n = ev, ev.n
        self.rows: list[list[int]] = []
        self.free: list[int] = []
        self.nreg = 0
        self.l64: list[tuple] = []
        self.l32: list[tuple] = []
        self.strs: list[tuple] = []
        self.consts: list[bytes] = []
        self.slot_of: dict[tuple, tuple[str, int]] = {}  # a column's slot, by (name, type)
        self.computed: dict[int, Val] = {}  # leaves the evaluator computed, by node: kept if the program aborts
        self.lowered = 0  # instructions other than leaves and constants

    # -- registers and instructions ----------------------------------------------------------
    def _reg(self) -> int:
        if self.free:
            return self.free.pop()
        self.nreg += 1
        return self.nreg - 1

    def _row(self, op: str, dst: int, *fields: int) -> None:
        """One instruction writing register ``dst``."""
        row = [OPS[op], dst, *fields]
        self.rows.append(row + [0] * (WIDTH - len(row)))

    def _emit(self, op: str, *fields: int, uses: tuple[int, ...] = ()) -> int:
        """One instruction into a new register; the registers it consumes are freed after it
        has its own."""
        dst = self._reg()
        self._row(op, dst, *fields)
        self.free.extend(uses)
        if op not in ("LEAF64", "LEAF32", "CONST", "STR_VALID"):
            self.lowered += 1
        return dst

    def _slot(self, kind: str, key, arrays: tuple) -> int:
        slots, limit = {"64": (self.l64, SLOTS64), "32": (self.l32, SLOTS32),
                        "str": (self.strs, SLOTS_STR)}[kind]
        if key is not None and key in self.slot_of:
            return self.slot_of[key][1]  # lint: public a column's slot, by its name and type
        if len(slots) == limit:
            raise _Abort
        slots.append(arrays)
        if key is not None:
            self.slot_of[key] = (kind, len(slots) - 1)  # lint: public by the column's name and type
        return len(slots) - 1

    # -- values ---------------------------------------------------------------------------------
    def _type(self, node: exp.Expression) -> SqlType | None:
        return self.ev.p.types.get(id(node))

    def _clean_const(self, node: exp.Expression):
        """The folded constant of ``node`` when it has one and DuckDB accepted it, else None."""
        entry = self.ev.p.consts.get(id(node))
        return entry if entry is not None and entry.error is None else None

    def value(self, node: exp.Expression) -> int:
        """The register of a 64-bit-lane operand (``_lane_type`` of its type, checked by the caller)."""
        while isinstance(node, (exp.Paren, exp.Alias)) and id(node) not in self.ev.p.consts:
            node = node.this
        t = self._type(node)
        entry = self._clean_const(node)
        if entry is not None and t.kind != "tstz":  # a TIMESTAMPTZ constant checks the zone: the evaluator's
            if entry.value is None:
                return self._emit("CONST", 0, 0)
            c = constant(t, entry.value, 1)
            lane = c.data.lo.view(np.int64)[0] if t.kind == "dec" else c.data[0]
            return self._emit("CONST", int(lane), 1)
        column = self.ev.columns.get(node.name) if isinstance(node, exp.Column) and id(node) not in self.ev.p.consts else None
        if column is not None:
            values = column.values
            if t.kind == "dec" and values.ndim == 2:
                values = np.ascontiguousarray(values[:, 0]).view(np.int64)  # the low words: no copy when column-major
            key = (node.name, t)
            if values.ndim == 1 and values.dtype == np.int64:
                slot = self._slot("64", key, (values, column.valid, None))
                return self._emit("LEAF64", slot, 0)
            if values.ndim == 1 and values.dtype == np.int32:
                return self._emit("LEAF32", self._slot("32", key, (values, column.valid)))
        v = self.ev.ev(node)  # any other expression: the evaluator's lanes and error codes
        self.computed[id(node)] = v  # lint: public keyed by the expression node
        lane = np.ascontiguousarray(v.data.lo).view(np.int64) if t.kind == "dec" else np.ascontiguousarray(v.data, np.int64)
        return self._emit("LEAF64", self._slot("64", None, (lane, v.valid, v.err)), 1)

    def _string_column(self, node: exp.Expression):
        while isinstance(node, (exp.Paren, exp.Alias)) and id(node) not in self.ev.p.consts:
            node = node.this
        if not isinstance(node, exp.Column) or id(node) in self.ev.p.consts:
            return None
        column = self.ev.columns.get(node.name)
        t = self._type(node)
        if column is None or t is None or t.kind != "str" or column.values.ndim != 2:
            return None
        return node.name, t, column

    def _string_const(self, node: exp.Expression) -> bytes | None:
        entry = self._clean_const(node)
        t = self._type(node)
        if entry is None or entry.value is None or t is None or t.kind != "str":
            return None
        return str(entry.value).encode()

    def _string_slot(self, found) -> int:
        name, t, column = found
        return self._slot("str", (name, t), (column.values, column.lengths, column.valid))

    def _string_eq(self, slot: int, raw: bytes) -> int:
        self.consts.append(raw)
        return self._emit("STR_EQ", slot, len(self.consts) - 1, len(raw))

    # -- truth values -----------------------------------------------------------------------------
    def boolean(self, node: exp.Expression) -> int:
        """The register of a boolean node: lowered where this module can, else a leaf."""
        if id(node) not in self.ev.p.consts:
            if isinstance(node, exp.Paren):
                return self.boolean(node.this)
            lowered = self._lower(node)
            if lowered is not None:
                return lowered
        entry = self._clean_const(node)
        t = self._type(node)
        if entry is not None and t is not None and t.kind in ("bool", "null"):
            known = entry.value is not None and t.kind == "bool"
            return self._emit("CONST", int(bool(entry.value)) if known else 0, int(known))
        if t is None or t.kind not in ("bool", "null"):
            raise _Abort
        v = self.ev.ev(node, fuse=False)
        self.computed[id(node)] = v  # lint: public keyed by the expression node
        data = np.ascontiguousarray(v.data, dtype=np.int64)
        return self._emit("LEAF64", self._slot("64", None, (data, v.valid, v.err)), 1)

    def _lower(self, node: exp.Expression) -> int | None:
        if isinstance(node, (exp.And, exp.Or)):
            a, b = self.boolean(node.left), self.boolean(node.right)
            return self._emit("LOGIC", int(isinstance(node, exp.And)), a, b, uses=(a, b))
        if isinstance(node, exp.Not):
            t = self._type(node.this)
            if t is None or t.kind not in ("bool", "null"):
                return None
            a = self.boolean(node.this)
            return self._emit("NOT", a, uses=(a,))
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null) and _lane_type(self._type(node.this)):
            a = self.value(node.this)
            return self._emit("ISNULL", a, uses=(a,))
        if type(node) in _CMP:
            return self._comparison(node)
        if isinstance(node, exp.In):
            return self._in(node)
        if isinstance(node, exp.Between):
            return self._between(node)
        return None

    def _compare(self, code: int, left: exp.Expression, kl: int, right: exp.Expression, kr: int) -> int:
        a, b = self.value(left), self.value(right)
        return self._emit("CMP", code, a, kl, b, kr, uses=(a, b))

    def _comparison(self, node: exp.Binary) -> int | None:
        op = _CMP[type(node)]  # lint: public the node's operator
        code = CMP_CODES[op]  # lint: public the node's operator
        tl, tr = self._type(node.left), self._type(node.right)
        if tl is not None and tr is not None and tl.kind == tr.kind == "str" and op in ("=", "<>"):  # lint: public types
            for col, const in ((node.left, node.right), (node.right, node.left)):
                found, raw = self._string_column(col), self._string_const(const)
                if found is not None and raw is not None:
                    eq = self._string_eq(self._string_slot(found), raw)
                    return eq if op == "=" else self._emit("NOT", eq, uses=(eq,))  # lint: public the operator
            return None
        if not (_lane_type(tl) and _lane_type(tr)):
            return None
        factors = lane_factors(tl, tr)
        if factors is None:
            return None
        return self._compare(code, node.left, factors[0], node.right, factors[1])

    def _one_scale(self, operands: list[exp.Expression]) -> list[int] | None:
        """Factors bringing IN/BETWEEN operands to the one type DuckDB compares them in, when
        that is a DECIMAL of at most 18 digits; ``[]`` when the comparisons are pairwise."""
        types = [self._type(o) for o in operands]
        if not all(_lane_type(t) for t in types):  # lint: public declared types
            return None
        common = in_list_type(types)
        if common is None:
            return []
        if not _lane_type(common) or common.kind != "dec":
            return None
        return [10 ** (common.scale - _scale(t)) for t in types]

    def _pair(self, x: exp.Expression, y: exp.Expression, scaled: list[int], i: int, j: int) -> tuple[int, int] | None:
        if scaled:
            return scaled[i], scaled[j]  # lint: public factors of declared types, by operand
        return lane_factors(self._type(x), self._type(y))

    def _in(self, node: exp.In) -> int | None:
        if node.args.get("query") is not None or node.args.get("unnest") is not None or node.args.get("field"):
            return None
        items = list(node.expressions)
        found = self._string_column(node.this)
        if found is not None:
            raws = [self._string_const(item) for item in items]
            if any(r is None for r in raws):  # lint: public constants
                return None
            slot = self._string_slot(found)
            known = self._emit("STR_VALID", slot)
            hit = self._emit("IN_START", known, uses=(known,))
            for raw in raws:
                eq = self._string_eq(slot, raw)
                self._row("IN_ITEM", hit, eq)
                self.free.append(eq)
            self._row("IN_END", hit)
            return hit
        operands = [node.this] + items
        scaled = self._one_scale(operands)
        if scaled is None:
            return None
        pairs = [self._pair(node.this, item, scaled, 0, k + 1) for k, item in enumerate(items)]
        if any(p is None for p in pairs):  # lint: public factors of declared types
            return None
        a = self.value(node.this)
        hit = self._emit("IN_START", a)
        for item, (ka, kb) in zip(items, pairs):
            b = self.value(item)
            eq = self._emit("CMP", CMP_CODES["="], a, ka, b, kb, uses=(b,))
            self._row("IN_ITEM", hit, eq)
            self.free.append(eq)
        self._row("IN_END", hit)
        self.free.append(a)
        return hit

    def _between(self, node: exp.Between) -> int | None:
        this, low, high = node.this, node.args["low"], node.args["high"]
        scaled = self._one_scale([this, low, high])
        if scaled is None:
            return None
        below, above = self._pair(low, this, scaled, 1, 0), self._pair(this, high, scaled, 0, 2)
        if below is None or above is None:
            return None
        lo, a, hi = self.value(low), self.value(this), self.value(high)
        ge = self._emit("CMP", CMP_CODES["<="], lo, below[0], a, below[1], uses=(lo,))
        le = self._emit("CMP", CMP_CODES["<="], a, above[0], hi, above[1], uses=(a, hi))
        return self._emit("BOTH", ge, le, uses=(ge, le))

    # -- running ----------------------------------------------------------------------------------
    def run(self, root: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        from ...oblivious.compiled_program import run_program
        from ...oblivious.threads import run_parts, threads
        n = self.n
        od, ov, oe = np.empty(n, np.bool_), np.empty(n, np.bool_), np.empty(n, np.int32)
        if n == 0:
            return od, ov, oe
        program = np.asarray(self.rows, dtype=np.int64).reshape(-1, WIDTH)
        z64, zb, z32 = np.zeros(1, np.int64), np.zeros(1, np.bool_), np.zeros(1, np.int32)
        errs = [z32 if s[2] is None else s[2] for s in self.l64]  # lint: public leaf kinds
        l64 = _slots([s[0] for s in self.l64], SLOTS64, z64)
        v64 = _slots([s[1] for s in self.l64], SLOTS64, zb)
        e64 = _slots(errs, SLOTS64, z32)
        l32 = _slots([s[0] for s in self.l32], SLOTS32, z32)
        v32 = _slots([s[1] for s in self.l32], SLOTS32, zb)
        s8 = _slots([s[0] for s in self.strs], SLOTS_STR, np.zeros((1, 1), np.uint8))
        slen = _slots([s[1] for s in self.strs], SLOTS_STR, z32)
        sval = _slots([s[2] for s in self.strs], SLOTS_STR, zb)
        width = max([1] + [len(c) for c in self.consts])
        sconst = np.zeros((max(1, len(self.consts)), width), np.uint8)
        for row, raw in enumerate(self.consts):
            sconst[row, :len(raw)] = np.frombuffer(raw, np.uint8)
        blocks = -(-n // BLOCK)
        parts = max(1, min(threads(), blocks // 16))  # public: from n and the thread count
        bounds = [n * p // parts // BLOCK * BLOCK for p in range(parts)] + [n]
        regs = max(1, self.nreg)
        calls = [(run_program, (program, l64, v64, e64, l32, v32, s8, slen, sval, sconst, od, ov, oe,
                                  np.zeros((regs, BLOCK), np.int64), np.zeros((regs, BLOCK), np.uint8),
                                  np.zeros((regs, BLOCK), np.int32), root, bounds[p], bounds[p + 1]))
                 for p in range(parts)]
        run_parts(calls)
        return od, ov, oe


def fused_predicate(ev, node: exp.Expression) -> Val | None:
    """``node`` (one of :data:`ROOTS`) evaluated as one compiled program, or ``None`` when the
    ``numpy`` backend is selected, nothing below it lowers, or it needs more leaf slots than
    the kernel has: then the evaluator's own code runs."""
    if not use_compiled():
        return None
    builder = _Builder(ev)
    try:
        root = builder._lower(node)
    except _Abort:
        # the node-by-node path (and the programs of its subtrees) take the leaves computed so
        # far instead of computing them again: a long OR of LIKEs would otherwise compute its
        # leaves once per level it is retried at
        ev.computed.update(builder.computed)
        return None
    if root is None or builder.lowered == 0:
        return None
    return Val(parse_type("BOOLEAN"), *builder.run(root))
