"""Shared helpers for operator tests: random tables and DuckDB-oracle comparison."""
from __future__ import annotations

import datetime as dt
import decimal
import math

import duckdb
import pyarrow as pa
from hypothesis import strategies as st

from dodb.compare import table_rows

SMALL_STR = st.sampled_from(["", "a", "b", "ab", "abc", "zz", "héllo", "a\u00e9"])
COLUMN_KINDS = {
    "int": (pa.int64(), st.integers(-3, 3)),
    "bigint": (pa.int64(), st.integers(-(2**62), 2**62)),
    "int32": (pa.int32(), st.integers(-5, 5)),
    "str": (pa.string(), SMALL_STR),
    "dec": (pa.decimal128(15, 2), st.decimals(-50, 50, places=2, allow_nan=False, allow_infinity=False)),
    "float": (pa.float64(), st.floats(-100, 100, allow_nan=False).map(lambda x: round(x, 3))),
    "date": (pa.date32(), st.dates(dt.date(1992, 1, 1), dt.date(1992, 1, 10))),
    "bool": (pa.bool_(), st.booleans()),
}


@st.composite
def tables(draw, kinds=None, min_rows=0, max_rows=40, nullable=True, names=None):
    """A random Arrow table with the given column kinds (NULLs, duplicates, empty tables)."""
    kinds = kinds or draw(st.lists(st.sampled_from(sorted(COLUMN_KINDS)), min_size=1, max_size=4))
    n = draw(st.integers(min_rows, max_rows))
    cols = {}
    for i, k in enumerate(kinds):
        typ, strat = COLUMN_KINDS[k]
        vals = strat | st.none() if nullable else strat
        cols[(names or {}).get(i, f"c{i}")] = pa.array(draw(st.lists(vals, min_size=n, max_size=n)), type=typ)
    return pa.table(cols)


def _norm(v):
    if isinstance(v, float):
        return ("f", round(v, 6) + 0.0 if math.isfinite(v) else v)  # -0.0 == 0.0 in SQL
    if isinstance(v, decimal.Decimal):
        return ("d", v.normalize() if v == v else v)
    if isinstance(v, int) and not isinstance(v, bool):
        return ("d", decimal.Decimal(v).normalize())
    return (type(v).__name__, v)


def rows(table: pa.Table) -> list[tuple]:
    return [tuple(map(_norm, r)) for r in table_rows(table)]  # every column, also repeated names


def _close(a, b) -> bool:
    if a == b:
        return True
    if a[0] == "f" and b[0] == "f":
        if math.isnan(a[1]) and math.isnan(b[1]):  # corr over a constant column is NaN in DuckDB
            return True
        return math.isclose(a[1], b[1], rel_tol=1e-9, abs_tol=1.5e-6)  # values were rounded to 1e-6
    return False


def assert_same_rows(got: pa.Table, want: pa.Table, ordered: bool = False) -> None:
    g, w = rows(got), rows(want)
    assert len(g) == len(w), f"row counts differ: got {len(g)}, want {len(w)}\n got={g[:10]}\nwant={w[:10]}"
    if not ordered:
        key = lambda r: tuple((t, str(v)) for t, v in r)
        g, w = sorted(g, key=key), sorted(w, key=key)
    for a, b in zip(g, w):
        assert len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b)), f"rows differ:\n got {a}\nwant {b}"


def duck(sql: str, **tables: pa.Table) -> pa.Table:
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    return con.sql(sql).to_arrow_table()


def twin_connections(**tables: pa.Table) -> tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]:
    """Two DuckDB connections holding the same tables: the oracle's, and one for dodb to attach."""
    raw, con = duckdb.connect(), duckdb.connect()
    for c in (raw, con):
        for name, t in tables.items():
            c.register("_t", t)
            c.execute(f'CREATE TABLE "{name}" AS SELECT * FROM _t')
            c.unregister("_t")
    return raw, con


def assert_same_answer_or_error(db, raw: duckdb.DuckDBPyConnection, sql: str) -> None:
    """dodb answers ``sql`` as DuckDB does: the same rows (and Python values), or an error of
    the same kind (the text before the first ':') when DuckDB fails."""
    import pytest

    from dodb.errors import DodbError

    try:
        want = raw.sql(sql).to_arrow_table()
    except duckdb.Error as e:
        with pytest.raises(DodbError) as got:
            db.sql(sql, epsilon=1.0).fetchall()
        assert str(got.value).split(":")[0] == str(e).split(":")[0], sql
        return
    got = db.sql(sql, epsilon=1.0)
    assert_same_rows(got.arrow(), want)
    assert sorted(got.fetchall(), key=repr) == sorted(raw.sql(sql).fetchall(), key=repr), sql


# DuckDB's exception classes and the prefix of dodb's message for the same row error
ERROR_KINDS = {"ConversionException": "Conversion Error", "OutOfRangeException": "Out of Range Error"}


def duckdb_row_results(con, expr: str, n: int) -> list:
    """``(value as text or None, DuckDB's exception class or None)`` of ``expr`` over each of
    the ``n`` rows of table ``t`` on ``con``, one row at a time (a row's error stays its own)."""
    out = []
    for k in range(n):
        try:
            out.append((con.execute(f"SELECT ({expr})::VARCHAR FROM t LIMIT 1 OFFSET {k}").fetchone()[0], None))
        except duckdb.Error as e:
            out.append((None, type(e).__name__))
    return out
