"""The oblivious evaluator: a sqlglot expression over every padded row, with DuckDB's
semantics and per-row error codes (docs/design.md §Expressions).

Each node is evaluated on every row — dummy or real, every CASE/IF/COALESCE branch, both
sides of AND/OR — with element-wise numpy and ``where`` selects.  What differs per row is
only which *value* is selected, never which memory is touched.  Errors a node would raise
in DuckDB become per-row codes, kept only where DuckDB evaluates the node (valid inputs,
the taken branch); dispatch depends on node classes and types only, so running the same
evaluator over zero rows is the bind-time check (:mod:`.bind`).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from sqlglot import exp

from . import int128 as i128
from . import interval_lanes, numeric, strings, zoned
from .errors import code_for
from .fused import fused_logic
from .numeric import Unsupported
from .program import ROOTS, fused_predicate
from .types import SqlType, parse_type
from .value import Val, constant, from_column
from ...oblivious.select import select

__all__ = ["Evaluator", "logic_reference"]

_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.IntDiv: "//", exp.Mod: "%"}
_CMP = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ)
# a comparison's truth from (less, equal): only the one the node needs is computed
_TRUTH = {exp.EQ: lambda lt, eq: eq, exp.NEQ: lambda lt, eq: ~eq, exp.LT: lambda lt, eq: lt,
          exp.LTE: lambda lt, eq: lt | eq, exp.GT: lambda lt, eq: ~(lt | eq), exp.GTE: lambda lt, eq: ~lt}


class Evaluator:
    """Evaluates prepared expressions (types and folded constants from :mod:`.bind`)."""

    def __init__(self, prepared, columns: dict, n: int):
        self.p = prepared
        self.columns = columns
        self.n = n
        self.codes: set[int] = set()  # every error code this evaluation can set (public: by node)
        self._read: dict[tuple[str, SqlType], Val] = {}  # column lanes read so far (ev_Column)
        self.computed: dict[int, Val] = {}  # values a predicate program that did not fit computed (.program)

    # -- helpers -----------------------------------------------------------------------------
    def type_of(self, node: exp.Expression) -> SqlType:
        t = self.p.types.get(id(node))
        if t is None:
            raise Unsupported(f"{_name(node)} (DuckDB cannot type it on its own)")
        if t.kind == "other" or (t.kind == "float" and t.bits != 64):
            raise Unsupported(f"values of type {t}")
        return t

    def fail(self, mask: np.ndarray, message: str) -> np.ndarray:
        """Error codes where ``mask`` (call only with masks already limited to valid inputs)."""
        code = code_for(message)
        self.codes.add(code)
        return np.multiply(mask, np.int32(code), dtype=np.int32)  # the code times 0/1: one pass, no branch

    def ev(self, node: exp.Expression, fuse: bool = True) -> Val:
        """``node``'s value; a predicate tree runs as one compiled program where it lowers
        (:mod:`.program`; ``fuse=False``: this node by its own handler, as a program's leaf)."""
        if id(node) in self.p.consts:
            return self.const(node)
        if self.computed and id(node) in self.computed:  # each node is one value: taken once
            return dataclasses.replace(self.computed.pop(id(node)))
        if fuse and isinstance(node, ROOTS):
            v = fused_predicate(self, node)
            if v is not None:
                return v
        handler = getattr(self, "ev_" + type(node).__name__, None)
        if handler is None:
            from . import functions
            handler = functions.HANDLERS.get(type(node))
            if handler is None:
                raise Unsupported(_name(node))
            return handler(self, node)
        return handler(node)

    def const(self, node: exp.Expression) -> Val:
        entry = self.p.consts.get(id(node))
        value, error = entry.value, entry.error
        t = self.type_of(node)
        if error is not None:  # DuckDB rejects this constant: an error wherever it is evaluated
            v = constant(t, None, self.n)
            self.codes.add(code_for(error))
            v.err = np.full(self.n, code_for(error), dtype=np.int32)
            return v
        if t.kind in ("interval", "other"):
            raise Unsupported(f"constant of type {t}")
        if any(getattr(self.p.types.get(id(n)), "kind", None) == "tstz" for n in node.walk()):  # lint: public types
            zoned.require_utc("a TIMESTAMP WITH TIME ZONE constant")  # folded by DuckDB in UTC
        return constant(t, value, self.n)

    # -- leaves and structure --------------------------------------------------------------------
    def ev_Column(self, node: exp.Column) -> Val:
        """A column's lanes, read once per evaluation however often the expressions name it (a
        scan's read-only lanes are copied on the read; TPC-H Q6 names l_discount twice, Q19
        each column three times).  Each reference gets its own :class:`Val` over the shared
        arrays: the evaluator never writes into a value's arrays, it only rebinds a result's."""
        t = self.type_of(node)
        key = (node.name, t)
        v = self._read.get(key)
        if v is None:
            v = self._read[key] = from_column(self.columns.get(node.name), t)  # lint: public a column name and type
        return dataclasses.replace(v)

    def ev_Interval(self, node: exp.Interval) -> Val:
        """A constant INTERVAL as a value: (months, days, µs) on every row."""
        from .functions import interval_parts
        parts = np.array(interval_parts(node), dtype=np.int64)
        return Val(parse_type("INTERVAL"), np.broadcast_to(parts, (self.n, 3)).copy(), np.ones(self.n, bool),
                   np.zeros(self.n, np.int32))

    def ev_Paren(self, node: exp.Paren) -> Val:
        return self.ev(node.this)

    def ev_Alias(self, node: exp.Alias) -> Val:
        return self.ev(node.this)

    def coerce(self, v: Val, t: SqlType) -> Val:
        """Implicit cast of a branch/argument to the node's type (DuckDB inserts the same)."""
        from .casts import cast
        return cast(self, v, t, try_=False)

    # -- arithmetic ----------------------------------------------------------------------------------
    def _binary(self, node: exp.Binary) -> Val:
        from . import functions
        op = _ARITH[type(node)]
        rt = self.type_of(node)
        if functions.is_interval(node.left) or functions.is_interval(node.right):
            return functions.interval_arith(self, node, op, rt)
        a, b = self.ev(node.left), self.ev(node.right)
        valid = a.valid & b.valid
        err = np.maximum(a.err, b.err)
        if "null" in (a.type.kind, b.type.kind):  # an untyped NULL operand (an all-NULL aggregate)
            return self.null_of(rt, err)
        if {a.type.kind, b.type.kind} & {"date", "ts", "interval"} or rt.kind in ("date", "ts"):
            return functions.date_arith(self, node, op, a, b, rt)
        if op == "//" and rt.kind == "float":  # DuckDB's // on non-integers divides, failing on 0
            op = "/"
            zero = numeric.as_f64(b) == 0
            err = np.maximum(err, self.fail(zero & valid, "Invalid Input Error: Division by zero in expression"))
        if op == "%" and rt.kind == "float":
            x, y = numeric.as_f64(a), numeric.as_f64(b)
            with np.errstate(all="ignore"):
                return Val(rt, np.fmod(x, y), valid, err)
        res, fails = numeric.arith(op, a, b, rt)
        for mask, msg in fails:
            err = np.maximum(err, self.fail(mask & valid, msg))
        return Val(rt, res, valid, err)

    ev_Add = ev_Sub = ev_Mul = ev_Div = ev_IntDiv = ev_Mod = _binary

    def null_of(self, t: SqlType, err: np.ndarray) -> Val:
        """All-NULL values of type ``t`` (an operator over an untyped NULL), keeping ``err``."""
        out = constant(t, None, self.n)
        out.err = err
        return out

    def ev_Neg(self, node: exp.Neg) -> Val:
        a = self.ev(node.this)
        rt = self.type_of(node)
        if a.type.kind == "null":
            return self.null_of(rt, a.err)
        if rt.kind == "float":
            return Val(rt, -a.data, a.valid, a.err)
        if rt.kind == "dec":
            err = a.err
            if rt.huge:
                lo = i128.equal(a.data, i128.const(i128.MIN, self.n))
                err = np.maximum(err, self.fail(lo & a.valid, "Out of Range Error: Overflow in negation of INT128"))
            return Val(rt, i128.neg(a.data), a.valid, err)
        if rt.kind == "int" and a.type.kind == "int":
            lo, _ = numeric.int_range(rt.bits)
            err = np.maximum(a.err, self.fail((a.data == lo) & a.valid,
                                              "Out of Range Error: Overflow in negation of integer"))
            return Val(rt, -a.data, a.valid, err)
        raise Unsupported(f"negation of {a.type}")

    # -- comparisons and logic ---------------------------------------------------------------------------
    def compare(self, a: Val, b: Val) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(less, equal, error codes) in DuckDB's common type of ``a`` and ``b``; the codes
        are those of the implicit casts (only where the cast operand is valid)."""
        ka, kb = a.type.kind, b.type.kind
        none = np.zeros(self.n, dtype=np.int32)
        if ka == "str" and kb == "str":
            if b.const is not None:  # against a public constant (IN lists, = 'literal'): a specialised kernel
                lt, eq = strings.compare_const(a.data, a.lengths, b.const)
            elif a.const is not None:
                b_lt, eq = strings.compare_const(b.data, b.lengths, a.const)
                lt = ~(b_lt | eq)
            else:
                lt, eq = strings.compare(a.data, a.lengths, b.data, b.lengths)
            return lt, eq, none
        if ka == kb == "time":  # microseconds since midnight
            return a.data < b.data, a.data == b.data, none
        if ka == kb == "interval":  # DuckDB's normalised (months, days, µs)
            return (*interval_lanes.compare(a.data, b.data), none)
        if "tstz" in (ka, kb):  # instants; a TIMESTAMP or DATE side is cast to TIMESTAMPTZ first
            return self._compare_instants(a, b)
        if ka in ("date", "ts") and kb in ("date", "ts"):
            x = a.data * (86_400_000_000 if ka == "date" and kb == "ts" else 1)
            y = b.data * (86_400_000_000 if kb == "date" and ka == "ts" else 1)
            return x < y, x == y, none
        if ka == "null" or kb == "null":
            z = np.zeros(self.n, dtype=bool)
            return z, z, none
        if ka == "bool" and kb == "bool":
            x, y = a.data.astype(np.int8), b.data.astype(np.int8)
            return x < y, x == y, none
        lt, eq, fails = numeric.compare_numbers(a, b)
        for mask, msg in fails:
            none = np.maximum(none, self.fail(mask, msg))
        return lt, eq, none

    def _compare_instants(self, a: Val, b: Val) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(less, equal, error codes) of two values one of which is a TIMESTAMPTZ: DuckDB casts
        the other side to TIMESTAMPTZ (in the session's zone: UTC only, ``zoned``)."""
        tstz = a.type if a.type.kind == "tstz" else b.type
        sides = []
        for v in (a, b):
            if v.type.kind in ("date", "ts"):
                zoned.require_utc(f"comparing a {v.type} with a TIMESTAMP WITH TIME ZONE")
                v = self.coerce(v, tstz)  # its errors (a DATE out of range) include the operand's
            elif v.type.kind != "tstz":
                raise Unsupported(f"comparing a {v.type} with a TIMESTAMP WITH TIME ZONE")
            sides.append(v)
        x, y = sides
        return x.data < y.data, x.data == y.data, np.maximum(x.err, y.err).astype(np.int32)

    def _comparison(self, node: exp.Binary) -> Val:
        a, b = self.ev(node.left), self.ev(node.right)
        t = parse_type("BOOLEAN")
        lt, eq, cerr = self.compare(a, b)
        err = np.maximum(np.maximum(a.err, b.err), cerr)
        if isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
            same = (a.valid & b.valid & eq) | (~a.valid & ~b.valid)
            return Val(t, same if isinstance(node, exp.NullSafeEQ) else ~same, np.ones(self.n, bool), err)
        return Val(t, _TRUTH[type(node)](lt, eq), a.valid & b.valid, err)

    ev_EQ = ev_NEQ = ev_LT = ev_LTE = ev_GT = ev_GTE = ev_NullSafeEQ = ev_NullSafeNEQ = _comparison

    def ev_Not(self, node: exp.Not) -> Val:
        a = self.ev(node.this)
        if a.type.kind not in ("bool", "null"):
            raise Unsupported(f"NOT of {a.type}")
        return Val(self.type_of(node), ~a.data.astype(bool), a.valid, a.err)

    def _logic(self, node: exp.Binary) -> Val:
        a, b = self.ev(node.left), self.ev(node.right)
        is_and = isinstance(node, exp.And)
        parts = fused_logic(is_and, a, b)  # one compiled pass, else None
        return Val(self.type_of(node), *(parts if parts is not None else logic_reference(is_and, a, b)))

    ev_And = ev_Or = _logic

    def ev_Is(self, node: exp.Is) -> Val:
        a = self.ev(node.this)
        t = parse_type("BOOLEAN")
        target = node.expression
        if isinstance(target, exp.Null):
            return Val(t, ~a.valid, np.ones(self.n, bool), a.err)
        if isinstance(target, exp.Boolean) and a.type.kind == "bool":
            return Val(t, a.valid & (a.data == bool(target.this)), np.ones(self.n, bool), a.err)
        raise Unsupported(f"IS {target.sql(dialect='duckdb')}")

    def _in_one_type(self, vals: list[Val]) -> list[Val]:
        """The operands of an IN list or a BETWEEN in the one type DuckDB compares them in, the
        widest of all (``numeric.in_list_type``): with a DOUBLE anywhere every operand is a DOUBLE
        (`d IN (h, f)` compares d with the DECIMAL(38,0) h as doubles), and decimals meet at every
        operand's scale (`t8 IN (h, 0.5)` casts h to DECIMAL(38,1), which fails) — not pair by
        pair.  NULL operands stay as they are."""
        common = numeric.in_list_type([v.type for v in vals])
        if common is None:
            return vals
        return [v if v.type.kind == "null" else self.coerce(v, common) for v in vals]

    def ev_In(self, node: exp.In) -> Val:
        if node.args.get("query") is not None or node.args.get("unnest") is not None or node.args.get("field"):
            raise Unsupported("IN with a subquery")
        a, *items = self._in_one_type([self.ev(node.this)] + [self.ev(item) for item in node.expressions])
        hit = np.zeros(self.n, dtype=bool)
        unknown = ~a.valid
        err = a.err
        for b in items:
            _, eq, cerr = self.compare(a, b)
            hit = hit | (eq & a.valid & b.valid)
            unknown = unknown | ~b.valid
            err = np.maximum(np.maximum(err, b.err), cerr)
        return Val(self.type_of(node), hit, hit | ~unknown, err)

    def ev_Between(self, node: exp.Between) -> Val:
        a, lo, hi = self._in_one_type([self.ev(node.this), self.ev(node.args["low"]), self.ev(node.args["high"])])
        lt1, eq1, e1 = self.compare(lo, a)
        lt2, eq2, e2 = self.compare(a, hi)
        ge, le = lt1 | eq1, lt2 | eq2
        f1, f2 = lo.valid & a.valid & ~ge, a.valid & hi.valid & ~le
        valid = f1 | f2 | (a.valid & lo.valid & hi.valid)
        err = np.maximum(np.maximum(np.maximum(a.err, lo.err), hi.err), np.maximum(e1, e2))
        return Val(self.type_of(node), ge & le, valid, err)

    # -- conditionals ----------------------------------------------------------------------------------
    def _select(self, rt: SqlType, conds: list[exp.Expression], values: list[exp.Expression],
                default: exp.Expression | None, subject: Val | None = None) -> Val:
        """CASE: every condition and branch on every row; the first true condition picks.

        A condition's errors count where no earlier condition was true, a branch's where it
        is picked: exactly the rows on which DuckDB evaluates them.
        """
        taken = np.zeros(self.n, dtype=bool)
        picks, vals = [], []
        err = np.zeros(self.n, dtype=np.int32) if subject is None else subject.err
        for c, v in zip(conds, values):
            cv = self.ev(c)
            if subject is not None:
                _, eq, cerr = self.compare(subject, cv)
                truth = eq & subject.valid & cv.valid
                cv = Val(cv.type, cv.data, cv.valid, np.maximum(cv.err, cerr), cv.lengths)
            else:
                if cv.type.kind not in ("bool", "null"):
                    raise Unsupported(f"CASE condition of type {cv.type}")
                truth = cv.valid & cv.data.astype(bool)
            err = np.maximum(err, select(taken, 0, cv.err))
            pick = truth & ~taken
            taken = taken | truth
            picks.append(pick)
            vals.append(self.coerce(self.ev(v), rt))
        out = self.coerce(self.ev(default), rt) if default is not None else self.coerce(constant(parse_type("NULL"), None, self.n), rt)
        err = np.maximum(err, select(taken, 0, out.err))
        for pick, v in zip(reversed(picks), reversed(vals)):
            out = _choose(pick, v, out)
            err = np.maximum(err, select(pick, v.err, 0))
        out.err = err.astype(np.int32)
        return out

    def ev_Case(self, node: exp.Case) -> Val:
        ifs = node.args.get("ifs") or []
        subject = self.ev(node.this) if node.this is not None else None
        return self._select(self.type_of(node), [i.this for i in ifs], [i.args["true"] for i in ifs],
                            node.args.get("default"), subject)

    def ev_If(self, node: exp.If) -> Val:
        return self._select(self.type_of(node), [node.this], [node.args["true"]], node.args.get("false"))

    def ev_Coalesce(self, node: exp.Coalesce) -> Val:
        rt = self.type_of(node)
        vals = [self.coerce(self.ev(a), rt) for a in [node.this] + list(node.expressions)]
        reached = np.ones(self.n, dtype=bool)
        err = np.zeros(self.n, dtype=np.int32)
        for v in vals:  # argument k is evaluated where the arguments before it were NULL
            err = np.maximum(err, select(reached, v.err, 0))
            reached = reached & ~v.valid
        out = vals[-1]
        for v in reversed(vals[:-1]):
            out = _choose(v.valid, v, out)
        out.err = err.astype(np.int32)
        return out

    def literal(self, node: exp.Expression | None, what: str):
        """The value of a constant argument (folded at bind time); refuses a non-constant one."""
        entry = self.p.consts.get(id(node)) if node is not None else None
        if entry is None or entry.error is not None:
            raise Unsupported(f"{what} with a non-constant argument")
        return entry.value

    def ev_Nullif(self, node: exp.Nullif) -> Val:
        a, b = self.ev(node.this), self.ev(node.expression)
        _, eq, cerr = self.compare(a, b)
        same = eq & a.valid & b.valid
        out = self.coerce(a, self.type_of(node))
        out.valid = out.valid & ~same
        out.err = np.maximum(np.maximum(out.err, b.err), cerr)
        return out

    def _extreme(self, node: exp.Expression, greatest: bool) -> Val:
        rt = self.type_of(node)
        args = [self.coerce(self.ev(a), rt) for a in [node.this] + list(node.expressions)]
        out = args[0]
        err = out.err
        for v in args[1:]:
            if rt.kind == "interval":  # DuckDB orders the stored triples here (interval_lanes.compare)
                lt, eq = interval_lanes.compare(out.data, v.data, raw=True)
                cerr = np.zeros(self.n, np.int32)
            else:
                lt, eq, cerr = self.compare(out, v)
            better = ~(lt | eq) if not greatest else lt
            take = v.valid & (~out.valid | better)
            out = _choose(take, v, out)
            err = np.maximum(np.maximum(err, v.err), cerr)
        out.err = err
        return out

    def ev_Greatest(self, node: exp.Greatest) -> Val:
        return self._extreme(node, True)

    def ev_Least(self, node: exp.Least) -> Val:
        return self._extreme(node, False)

    def ev_Cast(self, node: exp.Cast) -> Val:
        from .casts import cast
        return cast(self, self.ev(node.this), self.type_of(node), try_=isinstance(node, exp.TryCast))

    ev_TryCast = ev_Cast


def logic_reference(is_and: bool, a: Val, b: Val) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SQL AND / OR with validity and error codes in numpy: ``(value, valid, err)`` (the
    reference of :func:`.fused.fused_logic`)."""
    fa, fb = a.valid & ~a.data.astype(bool), b.valid & ~b.data.astype(bool)  # definitely false
    ta, tb = a.valid & a.data.astype(bool), b.valid & b.data.astype(bool)    # definitely true
    if is_and:
        value, valid = ta & tb, fa | fb | (a.valid & b.valid)
        # a side whose result the other side decides may be skipped by DuckDB: its errors
        # count only where the other side does not decide the row
        err = np.maximum(select(fb, 0, a.err), select(fa, 0, b.err))
    else:
        value, valid = ta | tb, ta | tb | (a.valid & b.valid)
        err = np.maximum(select(tb, 0, a.err), select(ta, 0, b.err))
    return value, valid, err.astype(np.int32)


def _choose(mask: np.ndarray, a: Val, b: Val) -> Val:
    """Row-wise ``a if mask else b`` for two values of one type (strings padded to one width)."""
    valid = select(mask, a.valid, b.valid)
    if a.type.kind == "str":
        w = max(a.width, b.width)
        da, db = np.zeros((a.n, w), np.uint8), np.zeros((b.n, w), np.uint8)
        da[:, : a.width] = a.data
        db[:, : b.width] = b.data
        return Val(a.type, select(mask[:, None], da, db), valid, b.err, select(mask, a.lengths, b.lengths))
    if a.type.kind == "dec":
        return Val(a.type, i128.where(mask, a.data, b.data), valid, b.err)
    if a.type.kind == "interval":  # (n, 3) lanes
        return Val(a.type, select(mask[:, None], a.data, b.data), valid, b.err)
    return Val(a.type, select(mask, a.data, b.data), valid, b.err)


def _name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return f"function {str(node.this).upper()}"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name()}"
    return node.key.upper()
