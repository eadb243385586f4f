"""Bind-time preparation and check of expressions over an input schema.
See docs/design.md §Expressions.

:func:`prepare` parses each expression, asks DuckDB for the type of every
sub-expression (:func:`.types.bind_types`, over zero rows), folds constant sub-trees with
DuckDB (public values: literals, ``CAST('1994-01-01' AS DATE)``, ``lower(pattern)``),
and then runs the evaluator itself over **zero rows** of the schema.  Dispatch depends
only on node classes and types, so that dry run reaches every check the real run makes:
anything the evaluator cannot do exactly raises :class:`~dodb.errors.UnsupportedQueryError`
here, before the query is admitted, naming the construct as written.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Mapping, NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import sqlglot
from sqlglot import exp

from ...duckcalls import scratch
from ...sqlpos import position_of
from ...errors import UnsupportedQueryError
from ..table import Column
from .errors import message_for
from .now import pinned
from .numeric import Unsupported
from .types import SqlType, bind_types
from .zoned import current_zone

__all__ = ["Const", "Prepared", "prepare", "Output", "operator_functions"]

# nodes that are syntax, not values of their own
_NOT_VALUES = (exp.DataType, exp.DataTypeParam, exp.Var, exp.Identifier, exp.Star, exp.Interval)


class Const(NamedTuple):
    value: object
    error: str | None


class Output(NamedTuple):
    type: SqlType
    arrow: pa.DataType
    width: int


@dataclass
class Prepared:
    trees: dict[str, exp.Expression]
    types: dict[int, SqlType] = field(default_factory=dict)
    consts: dict[int, Const] = field(default_factory=dict)
    lowered: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, Output] = field(default_factory=dict)
    messages: dict[int, str] = field(default_factory=dict)  # the errors the expressions can raise


_lock = threading.Lock()
_cache: dict[tuple, Prepared] = {}


_OPERATOR_FUNCTIONS = {"ADD": exp.Add, "SUBTRACT": exp.Sub, "MULTIPLY": exp.Mul}


def operator_functions(tree: exp.Expression) -> exp.Expression:
    """DuckDB's function forms of ``+``, ``-`` and ``*`` written as the operators (the same
    functions in DuckDB: types, overflow errors and all), so one evaluator serves both.

    >>> operator_functions(sqlglot.parse_one("add(a, multiply(b, 2))", read="duckdb")).sql("duckdb")
    '(a + (b * 2))'
    """
    def swap(node: exp.Expression) -> exp.Expression:
        cls = _OPERATOR_FUNCTIONS.get(str(node.this).upper()) if isinstance(node, exp.Anonymous) else None
        if cls is None or len(node.expressions) != 2:
            return node
        return exp.Paren(this=cls(this=node.expressions[0], expression=node.expressions[1]))

    for node in reversed(list(tree.find_all(exp.Anonymous))):  # innermost first
        new = swap(node)
        if new is not node:
            if node is tree:
                return new
            node.replace(new)
    return tree


def _typed_divide(tree: exp.Expression, types: dict) -> exp.Expression:
    """DuckDB's ``divide(a, b)`` on two integers as ``//`` (truncating, the same errors); the new
    node keeps the call's type.  On other types it is ``/`` that raises on a zero divisor,
    which dodb does not evaluate: left as the call, and refused."""
    for node in reversed(list(tree.find_all(exp.Anonymous))):
        if str(node.this).upper() != "DIVIDE" or len(node.expressions) != 2:
            continue
        a, b = node.expressions
        ta, tb = types.get(id(a)), types.get(id(b))
        if ta is None or tb is None or id(node) not in types:
            continue
        if ta.kind != "int" or tb.kind != "int":  # lint: public types only
            continue
        new = exp.IntDiv(this=a, expression=b)
        types[id(new)] = types[id(node)]  # lint: public the query's parse tree
        if node is tree:
            return new
        node.replace(new)
    return tree


def _sql(e: exp.Expression | str) -> str:
    return e if isinstance(e, str) else e.sql(dialect="duckdb")


def _value_nodes(tree: exp.Expression) -> list[exp.Expression]:
    out = []
    for node in tree.walk():
        if isinstance(node, _NOT_VALUES) or (isinstance(node, exp.If) and isinstance(node.parent, exp.Case)):
            continue
        out.append(node)
    return out


def _types(schema: Mapping[str, pa.DataType], sqls: list[str]) -> dict[str, SqlType]:
    try:
        return dict(zip(sqls, bind_types(schema, sqls)))
    except duckdb.Error:
        pass
    out = {}
    for s in sqls:  # one at a time: a piece that DuckDB cannot bind alone stays untyped
        try:
            out[s] = bind_types(schema, [s])[0]
        except duckdb.Error:
            continue
    return out


def _fold(sqls: list[str]) -> dict[str, Const]:
    """Values of constant expressions, computed by DuckDB (or the error DuckDB raises)."""
    if not sqls:
        return {}
    con = scratch().cursor()  # a cursor: a failed statement leaves the scratch connection clean
    try:
        try:
            row = con.execute("SELECT " + ", ".join(sqls)).fetchall()[0]
            return {s: Const(v, None) for s, v in zip(sqls, row)}
        except duckdb.Error:
            out = {}
            for s in sqls:
                try:
                    out[s] = Const(con.execute(f"SELECT {s}").fetchall()[0][0], None)
                except duckdb.Error as e:
                    out[s] = Const(None, str(e).split("\n")[0])
            return out
    finally:
        con.close()


# functions whose value changes from row to row although no column is involved
_VOLATILE = {"RANDOM", "RAND", "UUID", "GEN_RANDOM_UUID", "NEXTVAL", "SETSEED"}


def _volatile(node: exp.Expression) -> bool:
    return any(isinstance(n, exp.Rand) or (isinstance(n, exp.Func) and n.sql_name().upper() in _VOLATILE)
               or (isinstance(n, exp.Anonymous) and str(n.this).upper() in _VOLATILE) for n in node.walk())


def _unique(items) -> list[str]:
    """Distinct items in order of first appearance (deterministic for one expression)."""
    return list(dict.fromkeys(items))


def _constants(tree: exp.Expression, types: dict[int, SqlType]) -> list[exp.Expression]:
    """Maximal constant sub-trees worth folding (no column, a plain value type, not volatile)."""
    found = []

    def visit(node: exp.Expression) -> None:
        if isinstance(node, _NOT_VALUES):
            return
        t = types.get(id(node))
        if t is not None and t.kind not in ("interval", "other") and node.find(exp.Column) is None \
                and not _volatile(node) \
                and not (isinstance(node, exp.If) and isinstance(node.parent, exp.Case)):
            found.append(node)
            return
        for child in node.iter_expressions():
            visit(child)

    visit(tree)
    return found


def prepare(exprs: Mapping[str, exp.Expression | str], schema: Mapping[str, pa.DataType],
            widths: Mapping[str, int]) -> Prepared:
    """Types, folded constants and the checked outputs of ``exprs`` over ``schema``.

    ``widths``: public byte widths of the string columns.  Raises
    :class:`~dodb.errors.UnsupportedQueryError` for anything not evaluated exactly.
    """
    zone = current_zone()  # a zone-dependent TIMESTAMPTZ operation binds in UTC only (zoned.py)
    # current_date/current_timestamp become this moment's constants before any cache (now.py)
    sqls = pinned({name: _sql(e) for name, e in exprs.items()}, zone)
    # first by the whole schema (no parse on a repeated query), then by the columns used
    whole = (tuple((n, str(t), int(widths.get(n, 0))) for n, t in schema.items()), tuple(sqls.items()), zone)
    with _lock:
        hit = _cache.get(whole)
    if hit is not None:
        return hit
    used = set()
    trees = {}
    for name, s in sqls.items():
        trees[name] = operator_functions(sqlglot.parse_one(s, read="duckdb"))
        used |= {c.name for c in trees[name].find_all(exp.Column)}
    sub_schema = {n: t for n, t in schema.items() if n in used}
    key = (tuple((n, str(t), int(widths.get(n, 0))) for n, t in sub_schema.items()),
           tuple(sqls.items()), zone)
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        with _lock:
            _cache[whole] = hit
        return hit
    p = Prepared(trees)
    # every value node, and each whole expression (a bare INTERVAL constant is one too)
    nodes = [n for t in trees.values() for n in _value_nodes(t)] + \
        [t for t in trees.values() if isinstance(t, exp.Interval)]
    by_sql = _types(sub_schema, _unique(n.sql(dialect="duckdb") for n in nodes))
    for name, tree in trees.items():
        if by_sql.get(tree.sql(dialect="duckdb")) is None:
            raise UnsupportedQueryError(f"expression DuckDB cannot bind: {sqls.get(name)[:80]}")
    p.types = {id(n): by_sql.get(n.sql(dialect="duckdb")) for n in nodes if by_sql.get(n.sql(dialect="duckdb"))}
    for name, tree in trees.items():
        trees[name] = _typed_divide(tree, p.types)
    consts = [c for t in trees.values() for c in _constants(t, p.types)]
    folded = _fold(_unique(c.sql(dialect="duckdb") for c in consts))
    p.consts = {id(c): folded.get(c.sql(dialect="duckdb")) for c in consts}
    patterns = _unique(str(c.value) for node in nodes if isinstance(node, exp.ILike)
                       for c in [p.consts.get(id(node.expression))] if c is not None and c.value is not None)
    if patterns:
        low = _fold([f"lower({exp.Literal.string(s).sql(dialect='duckdb')})" for s in patterns])
        p.lowered = {s: low.get(f"lower({exp.Literal.string(s).sql(dialect='duckdb')})").value for s in patterns}
    _dry_run(p, sub_schema, widths)
    with _lock:
        if len(_cache) > 2048:
            _cache.clear()
        _cache[key] = _cache[whole] = p
    return p


def _empty_column(t: pa.DataType | str, width: int) -> Column:
    from .types import HUGEINT
    if t == HUGEINT:
        return Column(pa.decimal128(38, 0), np.zeros((0, 2), np.uint64), np.zeros(0, bool), huge=True)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return Column(pa.string(), np.zeros((0, max(1, width)), np.uint8), np.zeros(0, bool), np.zeros(0, np.int32))
    if pa.types.is_decimal(t) or t == pa.month_day_nano_interval():  # two words a value
        return Column(t, np.zeros((0, 2), np.uint64), np.zeros(0, bool))
    return Column(t, np.zeros(0, np.int64), np.zeros(0, bool))


def _dry_run(p: Prepared, schema: Mapping[str, pa.DataType], widths: Mapping[str, int]) -> None:
    from .evaluator import Evaluator
    from .types import arrow_type

    cols = {n: _empty_column(t, int(widths.get(n, 1))) for n, t in schema.items()}
    ev = Evaluator(p, cols, 0)
    outputs: dict[str, Output] = {}
    for name, tree in p.trees.items():
        try:
            v = ev.ev(tree)
            out_t = p.types.get(id(tree))
            if out_t is not None and v.type.name != out_t.name:
                raise Unsupported(f"{_construct(tree)} (type {v.type} where DuckDB has {out_t})")
            outputs[name] = Output(v.type, arrow_type(v.type), v.width)
        except Unsupported as e:
            raise UnsupportedQueryError(f"{e.what} in {_construct(tree)}", position_of(tree)) from None
    p.outputs = outputs
    p.messages = {c: message_for(c) for c in ev.codes}


def _construct(tree: exp.Expression) -> str:
    return tree.sql(dialect="duckdb")[:80]
