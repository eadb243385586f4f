"""Function coverage measured against DuckDB's own catalog (issue 30; docs/function_coverage.md).

Every deterministic scalar function and operator DuckDB lists in ``duckdb_functions()`` is
called, for each overload whose parameter types dodb stores (integers, DECIMAL, DOUBLE,
VARCHAR, DATE, TIMESTAMP, BOOLEAN), over a private table of ordinary and extreme rows
(type limits, ±inf, NaN, −0.0, the empty string, ±infinity dates and timestamps, BC
dates, NULLs) hidden among dummy slots, in three forms: every argument a column, the first
a column and the rest constants, and every argument a constant but a column-valued first.
Each call is classified:

* ``ok`` — dodb's oblivious evaluator (behind the planner's allow-list) gives DuckDB's
  values, type and errors;
* ``refused`` — dodb refuses it by name (``UnsupportedQueryError``) where DuckDB answers;
* ``wrong`` — both answer and the values or the type differ;
* ``error`` — one raises and the other does not;
* calls DuckDB cannot bind are not counted.

    python -m tests.functions.catalog --out docs/function_coverage.md

``tests/functions/test_catalog_coverage.py`` runs a sample in CI and fails on any wrong
answer not listed in :data:`KNOWN_WRONG` (and on a listed one that is now right).
"""
from __future__ import annotations

import argparse
import collections
import datetime as dt
import decimal
import re
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
from sqlglot import parse_one
from sqlglot.errors import ParseError

from dodb.errors import UnsupportedQueryError
from dodb.operators import expressions as E
from dodb.operators.table import from_arrow
from dodb.planner.guard import check_scalar, check_unit_arguments
from tests.operators.expr_cases import _norm, _same

D = decimal.Decimal
# DuckDB's ±infinity as Arrow stores them: the extreme day and microsecond counts
INF_DAYS, INF_MICROS = 2 ** 31 - 1, 2 ** 63 - 1
# one column per stored type: ordinary values, limits and specials (NULL in every column)
ROWS = {
    "t8": (pa.int8(), [1, -128, 127, 0, -1, 5, None, 3]),
    "t16": (pa.int16(), [2, -32768, 32767, 0, -7, 300, None, 1]),
    "i": (pa.int32(), [3, -2147483648, 2147483647, 0, -1, 42, None, 7]),
    "b": (pa.int64(), [4, -(2 ** 63), 2 ** 63 - 1, 0, -5, 1000, None, 9]),
    "d": (pa.decimal128(15, 2), [D("1.25"), D("-9999999999999.99"), D("9999999999999.99"), D("0"), D("-0.50"),
                                 D("100.00"), None, D("2.50")]),
    "h": (pa.decimal128(38, 0), [D(10 ** 30), D(10 ** 38 - 1), D(-(10 ** 38 - 1)), D(0), D(-3), D(12), None, D(5)]),
    "f": (pa.float64(), [1.5, float("inf"), float("-inf"), float("nan"), -0.0, 1e300, None, -2.25]),
    "s": (pa.string(), ["ab", "", "é%_x", " a b ", "ABC", "Zz9", None, "12"]),
    "n": (pa.string(), ["12", "-7", " 42 ", "x", "", "1.5", None, "2147483648"]),
    "dt": (pa.date32(), [dt.date(1995, 5, 17), dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1),
                         dt.date(2000, 2, 29), dt.date(1969, 12, 31), None, dt.date(1992, 1, 1)]),
    "ts": (pa.timestamp("us"), [dt.datetime(2000, 1, 1, 12), dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59),
                                dt.datetime(1970, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
                                dt.datetime(2013, 7, 4, 6, 30), None, dt.datetime(1992, 1, 1)]),
    "k": (pa.bool_(), [True, False, True, False, True, False, None, True]),
}
WIDTHS = {"s": 24, "n": 24}
# DuckDB parameter type -> (column argument, constant argument)
ARGS = {
    "TINYINT": ("t8", "2::TINYINT"), "SMALLINT": ("t16", "2::SMALLINT"), "INTEGER": ("i", "2"),
    "BIGINT": ("b", "2::BIGINT"), "HUGEINT": ("h::HUGEINT", "2::HUGEINT"), "DOUBLE": ("f", "1.5::DOUBLE"),
    "DECIMAL": ("d", "1.25"), "VARCHAR": ("s", "'ab'"), "DATE": ("dt", "DATE '1995-05-17'"),
    "TIMESTAMP": ("ts", "TIMESTAMP '2000-01-01 12:00:00'"), "BOOLEAN": ("k", "TRUE"),
}
# extra constant forms worth a call of their own: the units and formats of date functions
UNIT_CONSTANTS = ["'year'", "'month'", "'day'", "'hour'", "'minute'", "'quarter'", "'week'", "'%Y-%m-%d'"]
# casts between the stored types and DATE/TIMESTAMP ± INTERVAL are not functions in the
# catalog: they are called here too, as the functions "CAST", "TRY_CAST" and "+ INTERVAL"
CAST_TARGETS = ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "DECIMAL(18,3)", "DOUBLE", "VARCHAR", "DATE",
                "TIMESTAMP", "BOOLEAN"]
INTERVALS = ["INTERVAL 3 HOUR", "INTERVAL '90 minutes'", "INTERVAL 1 MONTH", "INTERVAL '1 year 2 days'",
             "INTERVAL 7 DAY", "INTERVAL 1500 MILLISECOND"]
UNBOUNDED = {"lpad", "rpad", "repeat"}
SKIP = {"error", "raise", "typeof", "stats", "alias", "current_setting", "getvariable", "constant_or_null",
        "create_sort_key", "finalize", "combine", "can_cast_implicitly", "get_current_timestamp",
        "version", "pg_typeof", "current_schema", "current_database", "current_catalog"}


@dataclass(frozen=True)
class Call:
    function: str
    signature: str
    sql: str


@dataclass(frozen=True)
class Outcome:
    call: Call
    status: str  # ok / refused / wrong / error
    detail: str = ""


def table() -> tuple[pa.Table, object]:
    """The private table (real rows) and its padded form: every row again, as dummies, reversed."""
    t = pa.table({name: pa.array(values, type=typ) for name, (typ, values) in ROWS.items()})
    # ±infinity dates and timestamps replace two ordinary rows (Arrow takes them as raw counts only)
    days = pa.array([v if i not in (0, 7) else (INF_DAYS if i == 0 else -INF_DAYS)
                     for i, v in enumerate(t["dt"].cast(pa.int32()).to_pylist())], pa.int32()).cast(pa.date32())
    micros = pa.array([v if i not in (0, 7) else (INF_MICROS if i == 0 else -INF_MICROS)
                       for i, v in enumerate(t["ts"].cast(pa.int64()).to_pylist())], pa.int64()).cast(pa.timestamp("us"))
    t = t.set_column(t.column_names.index("dt"), "dt", days).set_column(t.column_names.index("ts"), "ts", micros)
    full = pa.concat_tables([t, t.take(pa.array(np.arange(t.num_rows)[::-1]))])
    real = np.r_[np.ones(t.num_rows, bool), np.zeros(t.num_rows, bool)]
    return t, from_arrow(full, stability=1, widths=WIDTHS, is_real=real)


def _render(name: str, args: list[str]) -> str:
    if re.fullmatch(r"[^\w\s]+", name):  # an operator
        return f"({name} {args[0]})" if len(args) == 1 else f"({args[0]} {name} {args[1]})" if len(args) == 2 else ""
    return f"{name}({', '.join(args)})"


def calls(con: duckdb.DuckDBPyConnection | None = None) -> list[Call]:
    """Every call of the catalog's deterministic scalar overloads over the stored types."""
    con = con or duckdb.connect()
    rows = con.sql("SELECT DISTINCT function_name, parameter_types FROM duckdb_functions() "
                   "WHERE function_type = 'scalar' AND stability = 'CONSISTENT' AND NOT function_name LIKE '\\_\\_%' "
                   "ESCAPE '\\' ORDER BY ALL").fetchall()
    out: list[Call] = []
    for name, params in rows:
        params = [re.sub(r"\(.*\)", "", p) for p in (params or [])]
        if name in SKIP or any(p not in ARGS for p in params):
            continue
        sig = f"{name}({', '.join(params)})"
        columns = [ARGS.get(p)[0] for p in params]
        constants = [ARGS.get(p)[1] for p in params]
        if name in UNBOUNDED:  # a column count of INT_MAX makes DuckDB build gigabytes: constants only
            columns = columns[:1] + constants[1:]
        forms = {_render(name, columns)}
        if len(params) > 1:
            forms.add(_render(name, columns[:1] + constants[1:]))
            forms.add(_render(name, constants[:-1] + columns[-1:]))
            if params[0] == "VARCHAR" and {"DATE", "TIMESTAMP"} & set(params[1:]):
                forms.update(_render(name, [u] + columns[1:]) for u in UNIT_CONSTANTS)
        out += [Call(name, sig, f) for f in sorted(forms) if f]
    return out + _cast_calls() + _interval_calls()


def _cast_calls() -> list[Call]:
    out = []
    for source, (column, _) in ARGS.items():
        for target in CAST_TARGETS:
            for kind in ("CAST", "TRY_CAST"):
                out.append(Call(kind, f"{kind}({source} AS {target})", f"{kind}({column} AS {target})"))
    return out


def _interval_calls() -> list[Call]:
    out = []
    for source in ("DATE", "TIMESTAMP"):
        column = ARGS[source][0]
        for iv in INTERVALS:
            for sql in (f"{column} + {iv}", f"{column} - {iv}", f"{iv} + {column}"):
                out.append(Call("± INTERVAL", f"{source} ± INTERVAL", sql))
    return out


def _duckdb(con, sql: str):
    try:
        rel = con.sql(f"SELECT {sql} AS r FROM t")
        return [r[0] for r in rel.fetchall()], rel.types[0], None
    except duckdb.Error as e:
        return None, None, str(e).split("\n")[0]
    except (UnicodeDecodeError, OverflowError, ValueError) as e:  # not UTF-8, or no Python value
        return None, None, f"Unfetchable: {type(e).__name__}"


_NOT_BOUND = ("Binder Error", "Parser Error", "Catalog Error", "Not implemented Error", "Unfetchable")


def classify(call: Call, t: pa.Table, pt, con) -> Outcome | None:
    """The outcome of one call, or ``None`` when DuckDB cannot bind it (not counted)."""
    want, _, want_err = _duckdb(con, call.sql)
    if want_err is not None and want_err.startswith(_NOT_BOUND):
        return None
    try:
        tree = parse_one(f"SELECT {call.sql}", read="duckdb")
    except ParseError as e:  # the planner refuses what sqlglot cannot read, in one line
        return Outcome(call, "refused", f"sqlglot cannot read it: {str(e).splitlines()[0][:80]}")
    try:
        check_unit_arguments(f"SELECT {call.sql}")
        check_scalar(tree)
        cols, codes = E.evaluate(pt, {"r": call.sql})
    except UnsupportedQueryError as e:
        if want_err is not None:  # DuckDB raises for every row too (a bad unit or format): not a call
            return None
        return Outcome(call, "refused", str(e).split("\n")[0])
    except Exception as e:  # noqa: BLE001 - any other failure is a bug the table must show
        return Outcome(call, "error", f"dodb crashed: {type(e).__name__}: {str(e)[:100]}")
    real = int(np.max(codes[pt.is_real], initial=0))
    if want_err is not None:
        return Outcome(call, "ok" if real else "error", "" if real else f"DuckDB raises {want_err[:80]}")
    if real:
        return Outcome(call, "error", f"dodb raises {E.message_for(real)[:80]}")
    con.register("x", pa.table({"r": cols["r"].to_arrow(pt.is_real)}))
    try:
        got = [r[0] for r in con.sql("SELECT r FROM x").fetchall()]
    except (UnicodeDecodeError, OverflowError, ValueError) as e:
        return Outcome(call, "wrong", f"dodb's answer has no Python value: {type(e).__name__}")
    bad = [(i, a, b) for i, (a, b) in enumerate(zip(got, want)) if not _same(_norm(a), _norm(b))]
    if len(got) != len(want) or bad:
        return Outcome(call, "wrong", f"row {bad[0][0]}: dodb {bad[0][1]!r}, DuckDB {bad[0][2]!r}" if bad else "rows")
    want_type = con.sql(f"SELECT {call.sql} AS r FROM t LIMIT 0").to_arrow_table().schema.field("r").type
    got_type = cols["r"].type
    if not (got_type == want_type or (pa.types.is_string(got_type) and str(want_type) in ("string", "string_view",
                                                                                          "large_string"))):
        return Outcome(call, "wrong", f"type {got_type}, DuckDB {want_type}")
    return Outcome(call, "ok")


def run(sample: int = 1) -> list[Outcome]:
    """Classify every ``sample``-th call (1: all)."""
    t, pt = table()
    con = duckdb.connect()
    con.register("t", t)
    outcomes = []
    for c in calls(con)[::sample]:
        o = classify(c, t, pt, con)
        if o is not None:
            outcomes.append(o)
    return outcomes


def report(outcomes: list[Outcome]) -> str:
    """The Markdown coverage table: totals, then per function its calls by outcome."""
    by_fn: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for o in outcomes:
        by_fn[o.call.function][o.status] += 1
    total = collections.Counter(o.status for o in outcomes)
    fully = sum(1 for c in by_fn.values() if c["ok"] and not (c["wrong"] or c["error"]))
    lines = ["# Function coverage against DuckDB's catalog", "",
             "Generated by `python -m tests.functions.catalog --out docs/function_coverage.md` "
             "(tests/functions/catalog.py says how the calls are made and classified).", "",
             f"- calls: {len(outcomes)} over {len(by_fn)} functions and operators",
             f"- ok {total['ok']}, refused {total['refused']}, wrong {total['wrong']}, error {total['error']}",
             f"- functions with at least one ok call and none wrong: {fully} of {len(by_fn)}", "",
             "| function | ok | refused | wrong | error | first problem |", "| --- | ---: | ---: | ---: | ---: | --- |"]
    first = {}
    for o in outcomes:
        if o.status != "ok":
            first.setdefault(o.call.function, f"{o.status}: `{o.call.sql}` {o.detail}".replace("|", "\\|"))
    for name in sorted(by_fn):
        c = by_fn[name]
        shown = name.replace("|", "\\|")  # a pipe inside a cell must be escaped, even in code
        lines.append(f"| `{shown}` | {c['ok']} | {c['refused']} | {c['wrong']} | {c['error']} | {first.get(name, '')} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=None)
    p.add_argument("--sample", type=int, default=1)
    args = p.parse_args(argv)
    text = report(run(args.sample))
    if args.out:
        open(args.out, "w").write(text)
    print("\n".join(text.splitlines()[:8]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
