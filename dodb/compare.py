"""Comparing query answers the way SQL defines equality of results.

Used by the demo and the benchmark harness to check that a private answer is DuckDB's
answer: same rows (as a multiset, or in order when the query orders), floats equal up
to rounding in the last digits (summation order may differ), -0.0 equal to 0.0.
"""
from __future__ import annotations

import datetime
import decimal
import math

import pyarrow as pa

__all__ = ["same_answer", "snapshot", "table_rows"]


def table_rows(table: pa.Table) -> list[tuple]:
    """The rows of ``table`` as tuples, one value per column — also when two columns share
    a name (``SELECT a, a``), which ``Table.to_pylist()``'s dicts would merge into one.

    >>> table_rows(pa.table([[1, 2], [3, 4]], names=["a", "a"]))
    [(1, 3), (2, 4)]
    """
    if table.num_columns == 0:
        return [()] * table.num_rows
    return list(zip(*(_python_values(c) for c in table.columns)))


def _python_values(column: pa.ChunkedArray) -> list:
    """A column's values as DuckDB's Python client gives them: an INTERVAL (Arrow's
    month_day_nano) is a ``timedelta`` with a month as 30 days."""
    if column.type != pa.month_day_nano_interval():
        return column.to_pylist()
    return [None if v is None else datetime.timedelta(days=v.months * 30 + v.days, microseconds=v.nanoseconds // 1000)
            for v in column.to_pylist()]


def _cell(v):
    if isinstance(v, float):
        return ("f", v + 0.0)
    if isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool):
        return ("n", decimal.Decimal(v))
    return (type(v).__name__, v)


def _close(a, b, rel_tol: float) -> bool:
    if a == b:
        return True
    if a[0] == "f" and b[0] == "f" and math.isfinite(a[1]) and math.isfinite(b[1]):
        return math.isclose(a[1], b[1], rel_tol=rel_tol, abs_tol=1e-9)
    return False


def same_answer(got: pa.Table, want: pa.Table, *, ordered: bool = False, rel_tol: float = 1e-9) -> bool:
    """Whether two result tables hold the same rows (in order if ``ordered``)."""
    if got.num_columns != want.num_columns or got.num_rows != want.num_rows:
        return False
    g = [tuple(map(_cell, r)) for r in table_rows(got)]
    w = [tuple(map(_cell, r)) for r in table_rows(want)]
    if not ordered:
        key = lambda r: tuple((t, str(round(v, 6)) if t == "f" else str(v)) for t, v in r)  # noqa: E731
        g, w = sorted(g, key=key), sorted(w, key=key)
    return all(all(_close(x, y, rel_tol) for x, y in zip(a, b)) for a, b in zip(g, w))


def snapshot(con) -> "duckdb.DuckDBPyConnection":
    """A copy of every base table of ``con``'s current schema in a new in-memory database.

    The data owner's oracle for demos, tests and benchmarks: take it *before* protecting
    (protected tables leave the current schema).  It holds private data in the clear.
    """
    import duckdb
    from sqlglot import exp

    out = duckdb.connect()
    names = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = current_schema() "
        "AND database_name = current_database()").fetchall()]
    for name in names:
        data = con.sql(exp.select(exp.Star()).from_(exp.table_(name, quoted=True)).sql(dialect="duckdb")).to_arrow_table()
        out.register("__snapshot", data)
        out.execute(f"CREATE TABLE {exp.to_identifier(name, quoted=True).sql(dialect='duckdb')} AS "
                    "SELECT * FROM __snapshot").fetchall()
        out.unregister("__snapshot")
    return out
