"""Random tables and SQL expressions for the evaluator's tests (docs/design.md §Expressions).

:func:`tables` draws a table of one fixed wide schema (every type the evaluator handles)
with NULLs, duplicates, extreme values and empty tables; :func:`padded` hides its rows
among dummy slots that hold *adversarial* garbage (zero divisors, extreme integers,
unparsable strings), so an expression that looked at dummies would fail or differ.
:func:`compare` evaluates one expression with dodb's evaluator and with DuckDB on the
real rows and checks values, types and errors.  The ``*_exprs`` strategies draw
expressions of one family each.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math

import duckdb
import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

from dodb.errors import UnsupportedQueryError
from dodb.operators import expressions as E
from dodb.operators.table import PaddedTable, from_arrow

I8, I16, I32, I64 = (-(1 << 7), (1 << 7) - 1), (-(1 << 15), (1 << 15) - 1), (-(1 << 31), (1 << 31) - 1), \
    (-(1 << 63), (1 << 63) - 1)


def _ints(lo: int, hi: int) -> st.SearchStrategy:
    return st.integers(-4, 4) | st.sampled_from([lo, hi, lo + 1, hi - 1, 0, 1, -1]) | st.integers(lo, hi)


def _decimals(digits: int, places: int) -> st.SearchStrategy:
    top = 10 ** (digits - places) - 1
    small = st.decimals(-50, 50, places=places, allow_nan=False, allow_infinity=False)
    big = st.sampled_from([decimal.Decimal(top), decimal.Decimal(-top), decimal.Decimal(0)])
    return small | big


STR_ALPHABET = "aAbBzé%_ -1"
STRINGS = st.text(alphabet=STR_ALPHABET, max_size=6)
NUMERIC_TEXT = st.sampled_from(["0", "12", "-7", " 42 ", "+3", "x", "", "1.5", "99999999999", "-2147483648"])
DATES = st.sampled_from([dt.date(1992, 1, 1), dt.date(1994, 3, 31), dt.date(2000, 2, 29), dt.date(1969, 12, 31),
                         dt.date(1970, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1996, 12, 31)]) | \
    st.dates(dt.date(1990, 1, 1), dt.date(2001, 12, 31))
TIMES = st.sampled_from([dt.time(0, 0), dt.time(23, 59, 59, 999999), dt.time(12, 0)]) | st.times()
TIMESTAMPS = st.datetimes(dt.datetime(1990, 1, 1), dt.datetime(2001, 12, 31)) | \
    st.sampled_from([dt.datetime(1970, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)])

# name: (arrow type, values); strings are declared 24 bytes wide (6 characters of up to 2 bytes)
SCHEMA = {
    "t8": (pa.int8(), _ints(*I8)), "t16": (pa.int16(), _ints(*I16)), "i": (pa.int32(), _ints(*I32)),
    "b": (pa.int64(), _ints(*I64)), "d": (pa.decimal128(15, 2), _decimals(15, 2)),
    "h": (pa.decimal128(38, 0), _decimals(38, 0)), "f": (pa.float64(), st.floats(-1e3, 1e3).map(lambda x: round(x, 2))
                                                        | st.sampled_from([0.0, -0.0, 1e300, float("nan"), float("inf")])),
    "s": (pa.string(), STRINGS), "n": (pa.string(), NUMERIC_TEXT), "dt": (pa.date32(), DATES),
    "ts": (pa.timestamp("us"), TIMESTAMPS), "k": (pa.bool_(), st.booleans()),
    "tm": (pa.time64("us"), TIMES),
}
WIDTHS = {"s": 24, "n": 24}
INTS, DECS = ["t8", "t16", "i", "b"], ["d", "h"]
NUMS = INTS + DECS + ["f"]


@st.composite
def tables(draw, max_rows: int = 12, rows: int | None = None) -> pa.Table:
    """Rows of the wide schema: NULLs, duplicates (few distinct draws) and empty tables."""
    n = draw(st.integers(0, max_rows)) if rows is None else rows
    cols = {}
    for name, (typ, values) in SCHEMA.items():
        pool = draw(st.lists(values | st.none(), min_size=1, max_size=4))
        cols[name] = pa.array([draw(st.sampled_from(pool)) for _ in range(n)], type=typ)
    return pa.table(cols)


@st.composite
def padded(draw, table: pa.Table, extra: int | None = None) -> PaddedTable:
    """``table``'s rows in order among dummy slots full of adversarial non-NULL garbage."""
    extra = draw(st.integers(0, 5)) if extra is None else extra
    n = table.num_rows + extra
    real_at = sorted(draw(st.permutations(range(n)))[: table.num_rows])
    is_real = np.zeros(n, dtype=bool)
    is_real[real_at] = True
    junk = {name: pa.array([draw(values) for _ in range(extra)], type=typ) for name, (typ, values) in SCHEMA.items()}
    order = np.zeros(n, dtype=np.int64)
    order[is_real] = np.arange(table.num_rows)
    order[~is_real] = table.num_rows + np.arange(extra)
    full = pa.concat_tables([table, pa.table(junk)]).take(pa.array(order))
    return from_arrow(full, stability=1, widths=WIDTHS, is_real=is_real)


# -- comparison with DuckDB ---------------------------------------------------------------------

def _rows_via_duckdb(arr: pa.Array) -> list:
    con = duckdb.connect()
    con.register("x", pa.table({"r": arr}))
    return [r[0] for r in con.sql("SELECT r FROM x").fetchall()]


def _norm(v):
    if isinstance(v, float):
        return ("f", "nan") if math.isnan(v) else ("f", v + 0.0)
    if isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool):
        return ("n", decimal.Decimal(v).normalize() if decimal.Decimal(v).is_finite() else str(v))
    return (type(v).__name__, v)


def _same(a, b) -> bool:
    if a == b:
        return True
    if a[0] == b[0] == "f" and "nan" not in (a[1], b[1]):
        return math.isclose(a[1], b[1], rel_tol=1e-12, abs_tol=1e-300)
    return False


def duckdb_answer(table: pa.Table, sql: str) -> tuple[list | None, pa.DataType | None, str | None]:
    """DuckDB's values, Arrow result type and error (first line) for ``SELECT sql FROM t``."""
    con = duckdb.connect()
    con.register("t", table)
    try:
        rel = con.sql(f"SELECT {sql} AS r FROM t")
        typ = rel.to_arrow_table().schema.field("r").type if table.num_rows == 0 else None
        values = [r[0] for r in rel.fetchall()]
        if typ is None:
            typ = con.sql(f"SELECT {sql} AS r FROM t LIMIT 0").to_arrow_table().schema.field("r").type
        return values, typ, None
    except duckdb.Error as e:
        return None, None, str(e).split("\n")[0]


def _binder_error(message: str) -> bool:
    return message.startswith(("Binder Error", "Parser Error", "Catalog Error", "Not implemented Error"))


def compare(table: pa.Table, pt: PaddedTable, sql: str, lenient: bool = False) -> None:
    """dodb's evaluator over every slot of ``pt`` agrees with DuckDB on ``table`` (its real rows).

    * no error code on a dummy row;
    * DuckDB answers ⇒ no error on a real row, the same values and the same Arrow type;
    * DuckDB raises ⇒ some real row carries an error code (unless ``lenient``: AND/OR,
      whose operand errors dodb drops where the other operand decides the row);
    * dodb may refuse (``UnsupportedQueryError``) only what DuckDB cannot bind either.
    """
    want, want_type, want_err = duckdb_answer(table, sql)
    try:
        cols, codes = E.evaluate(pt, {"r": sql})
    except UnsupportedQueryError:
        if want_err is not None and _binder_error(want_err):
            return  # DuckDB cannot run it either
        raise
    assert codes.shape == (pt.padded_size,)
    assert not np.any(codes[~pt.is_real]), f"{sql}: an error code on a dummy row"
    real_code = int(np.max(codes[pt.is_real], initial=0))
    if want_err is not None:
        assert real_code or lenient, f"{sql}: DuckDB raises {want_err!r}, dodb does not"
        return
    assert real_code == 0, f"{sql}: dodb raises {E.message_for(real_code)!r} where DuckDB answers {want}"
    col = cols["r"]
    got_type = col.type
    if pa.types.is_string(want_type) or pa.types.is_large_string(want_type) or str(want_type) == "string_view":
        assert pa.types.is_string(got_type), f"{sql}: type {got_type} != {want_type}"
    else:
        assert got_type == want_type, f"{sql}: type {got_type} != {want_type}"
    got = _rows_via_duckdb(col.to_arrow(pt.is_real))
    g, w = [_norm(v) for v in got], [_norm(v) for v in want]
    bad = [(i, a, b) for i, (a, b) in enumerate(zip(g, w)) if not _same(a, b)]
    assert len(g) == len(w) and not bad, f"{sql}: first differences (row, dodb, duckdb) {bad[:3]}"


# -- expression families -------------------------------------------------------------------------

def _lit(kind: str) -> st.SearchStrategy:
    return {
        "int": st.sampled_from(["0", "1", "-1", "3", "127", "2147483647", "9223372036854775807", "-128"]),
        "dec": st.sampled_from(["0.5", "1.25", "-3.75", "100.00", "0.001", "99999999999.99"]),
        "float": st.sampled_from(["1.5::DOUBLE", "0.0::DOUBLE", "-2.25::DOUBLE", "1e300::DOUBLE"]),
        "str": st.sampled_from(["'a'", "''", "'é'", "'ab'", "'A%'", "'1'"]),
        "date": st.sampled_from(["DATE '1994-01-01'", "DATE '2000-02-29'", "DATE '1970-01-01'"]),
    }[kind]


def operand(kind: str) -> st.SearchStrategy:
    cols = {"int": INTS, "dec": DECS, "float": ["f"], "num": NUMS, "str": ["s", "n"], "date": ["dt"],
            "ts": ["ts"], "bool": ["k"]}[kind]
    special = {"num": _lit("int") | _lit("dec") | _lit("float"), "ts": st.just("TIMESTAMP '1995-06-01 12:00:00'"),
               "bool": st.sampled_from(["TRUE", "FALSE", "NULL::BOOLEAN"])}
    lits = special[kind] if kind in special else _lit(kind)
    return st.sampled_from(cols) | lits | st.just(f"NULL::{_NULL_TYPE[kind]}")


_NULL_TYPE = {"int": "INTEGER", "dec": "DECIMAL(15,2)", "float": "DOUBLE", "num": "BIGINT", "str": "VARCHAR",
              "date": "DATE", "ts": "TIMESTAMP", "bool": "BOOLEAN"}


@st.composite
def arithmetic_exprs(draw) -> str:
    a, b = draw(operand("num")), draw(operand("num"))
    op = draw(st.sampled_from(["+", "-", "*", "/", "//", "%"]))
    form = draw(st.integers(0, 5))
    if form == 0:
        return f"-({a})"
    if form == 1:
        return f"abs({a})"
    if form == 2:
        c = draw(st.sampled_from(INTS))
        return f"({a} {op} {b}) {draw(st.sampled_from(['+', '*', '-']))} {c}"
    return f"{a} {op} {b}"


@st.composite
def comparison_exprs(draw) -> str:
    kind = draw(st.sampled_from(["num", "num", "str", "date", "ts", "bool"]))
    a, b = draw(operand(kind)), draw(operand(kind))
    if kind == "ts" and draw(st.booleans()):
        b = draw(operand("date"))
    op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM"]))
    return f"{a} {op} {b}"


@st.composite
def logic_exprs(draw, depth: int = 2) -> str:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.just("k") | comparison_exprs() | st.sampled_from(["TRUE", "FALSE", "NULL::BOOLEAN"]))
    form = draw(st.integers(0, 3))
    if form == 0:
        return f"NOT ({draw(logic_exprs(depth - 1))})"
    op = "AND" if form == 1 else "OR"
    return f"({draw(logic_exprs(depth - 1))}) {op} ({draw(logic_exprs(depth - 1))})"


@st.composite
def conditional_exprs(draw) -> str:
    kind = draw(st.sampled_from(["num", "str", "date", "int"]))
    x, y, z = draw(operand(kind)), draw(operand(kind)), draw(operand(kind))
    form = draw(st.integers(0, 8))
    if form == 0:
        return f"CASE WHEN {draw(logic_exprs(1))} THEN {x} WHEN {draw(logic_exprs(1))} THEN {y} ELSE {z} END"
    if form == 1:
        return f"CASE {x} WHEN {y} THEN 'one' WHEN {z} THEN 'two' END"
    if form == 2:
        return f"COALESCE({x}, {y}, {z})"
    if form == 3:
        return f"NULLIF({x}, {y})"
    if form == 4:
        return f"{x} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if form == 5:
        return f"{x} {draw(st.sampled_from(['', 'NOT ']))}IN ({y}, {z})"
    if form == 6:
        return f"{x} {draw(st.sampled_from(['', 'NOT ']))}BETWEEN {y} AND {z}"
    if form == 7:
        return f"CASE WHEN {draw(logic_exprs(1))} THEN 10 // {draw(st.sampled_from(INTS))} ELSE 0 END"
    return f"{draw(st.sampled_from(['greatest', 'least']))}({x}, {y})"


PATTERN = st.text(alphabet="ab%_éA", max_size=4)


@st.composite
def string_exprs(draw) -> str:
    s = draw(st.sampled_from(["s", "n", "upper(s)", "s || n", "NULL::VARCHAR"]))
    pat = "'" + draw(PATTERN) + "'"
    word = "'" + draw(st.text(alphabet="ab é1", max_size=3)) + "'"
    k, m = draw(st.integers(-7, 7)), draw(st.integers(-3, 7))
    form = draw(st.integers(0, 16))
    return [
        f"{s} {draw(st.sampled_from(['LIKE', 'NOT LIKE', 'ILIKE', 'NOT ILIKE']))} {pat}",
        f"{draw(st.sampled_from(['prefix', 'suffix', 'contains', 'starts_with', 'ends_with']))}({s}, {word})",
        f"substring({s}, {k}, {m})", f"substring({s}, {k})", f"upper({s})", f"lower({s})",
        f"length({s})", f"{s} || {word}", f"concat({s}, {draw(operand('int') | operand('dec'))}, {word})",
        f"{draw(st.sampled_from(['trim', 'ltrim', 'rtrim']))}({s})",
        f"{draw(st.sampled_from(['trim', 'ltrim', 'rtrim']))}({s}, {word})",
        f"replace({s}, {word}, 'xy')", f"{draw(st.sampled_from(['lpad', 'rpad']))}({s}, {abs(m)}, '*')",
        f"left({s}, {k})", f"right({s}, {k})", f"strpos({s}, {word})", f"{s} {draw(st.sampled_from(['<', '=', '>=']))} {word}",
    ][form]


NUMBER_TYPES = ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "DECIMAL(10,2)", "DECIMAL(4,1)",
                "DECIMAL(38,3)", "DOUBLE", "BOOLEAN"]
# what each source may be cast to (the rest is refused: tests/operators/test_expressions.py)
CASTS = [(operand("int") | operand("dec") | st.sampled_from(["k"]), NUMBER_TYPES + ["VARCHAR"]),
         (operand("float"), NUMBER_TYPES), (st.sampled_from(["n", "s"]), ["TINYINT", "INTEGER", "BIGINT", "VARCHAR"]),
         (st.sampled_from(["dt", "ts"]), ["DATE", "TIMESTAMP", "VARCHAR"])]


@st.composite
def cast_exprs(draw) -> str:
    src, targets = draw(st.sampled_from(CASTS))
    fn = draw(st.sampled_from(["CAST", "TRY_CAST"]))
    return f"{fn}({draw(src)} AS {draw(st.sampled_from(targets))})"


@st.composite
def date_exprs(draw) -> str:
    d = draw(st.sampled_from(["dt", "ts", "DATE '1995-03-31'", "NULL::DATE"]))
    part = draw(st.sampled_from(["year", "month", "day", "quarter", "dow", "isodow", "doy", "week", "yearweek",
                                 "decade", "century", "isoyear"]))
    unit = draw(st.sampled_from(["year", "quarter", "month", "day"]))
    k = draw(st.integers(-40, 40))
    form = draw(st.integers(0, 12))
    return [
        f"{d} + INTERVAL '{k}' {draw(st.sampled_from(['DAY', 'MONTH', 'YEAR', 'HOUR']))}",
        f"{d} - INTERVAL '{abs(k)}' {draw(st.sampled_from(['DAY', 'MONTH', 'YEAR']))}",
        f"dt + {k}", f"dt - {draw(st.sampled_from(['dt', 'DATE ' + repr('1994-01-01')]))}",
        f"EXTRACT({part} FROM {d})", f"date_part('{part}', {d})", f"{draw(st.sampled_from(['year', 'month', 'day']))}({d})",
        f"date_trunc('{unit}', {d})", f"last_day({d})", f"strftime({d}, '%Y-%m-%d')", f"monthname({d})",
        f"date_diff('{unit}', {d}, DATE '1996-07-15')", f"{d} {draw(st.sampled_from(['<', '=', '>']))} DATE '1995-01-01'",
    ][form]
