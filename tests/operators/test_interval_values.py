"""INTERVAL values as lanes (dodb/operators/expressions/interval_lanes.py) against DuckDB:
comparisons on the normalised triple (30-day months, 24-hour days), GREATEST/LEAST on the
stored one (as DuckDB orders them there), CASE/COALESCE/IS NULL, epoch(interval) bit for bit
and the value itself, over random and extreme fields, NULLs and garbage dummy slots."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.operators import expressions as E
from dodb.operators.table import from_arrow

I32, I64 = (-(1 << 31), (1 << 31) - 1), (-(1 << 63) + 1, (1 << 63) - 1)
_MONTHS = st.integers(*I32) | st.integers(-30, 30) | st.sampled_from([I32[0], I32[1], 0, 1, -1, 12, -12])
_DAYS = st.integers(*I32) | st.integers(-100, 100) | st.sampled_from([I32[0], I32[1], 0, 30, -30, 29, -31])
_US = st.integers(*I64) | st.integers(-(10 ** 12), 10 ** 12) | st.sampled_from(
    [I64[0], I64[1], 0, 86_400_000_000, -86_400_000_000, 86_399_999_999, 2_592_000_000_000])
_IV = st.tuples(_MONTHS, _DAYS, _US)
EXPRS = ["a < b", "a = b", "a <> b", "a >= b", "a > INTERVAL 1 DAY", "a <= INTERVAL '1 month 2 days'",
         "a = INTERVAL '30 days'", "greatest(a, b) = a", "least(a, b) = b", "coalesce(a, b) = b",
         "CASE WHEN a < b THEN a ELSE b END = a", "a IS NULL", "a BETWEEN b AND INTERVAL 10 YEAR",
         "a IN (b, INTERVAL 25 HOUR)"]


def _table(rows: list) -> pa.Table:
    def text(k):
        return [None if r[k] is None else "{} months {} days {} microseconds".format(*r[k]) for r in rows]
    return duckdb.connect().execute("SELECT unnest(?::INTERVAL[]) a, unnest(?::INTERVAL[]) b",
                                    [text(0), text(1)]).to_arrow_table()


def _check(rows: list, dummies: int, exprs: list[str]) -> None:
    t = _table(rows)
    garbage = _table([((I32[1], I32[0], I64[0]), (I32[0], I32[1], I64[1]))] * dummies)
    both = pa.concat_tables([garbage, t])
    is_real = np.array([False] * dummies + [True] * len(rows))
    pt = from_arrow(both, stability=1, is_real=is_real)
    con = duckdb.connect()
    con.register("t", t)
    for expr in exprs:
        cols, codes = E.evaluate(pt, {"r": f"({expr})::VARCHAR"})
        assert not codes.any()
        got = cols["r"].to_arrow(is_real).to_pylist()
        want = [r[0] for r in con.execute(f"SELECT ({expr})::VARCHAR FROM t").fetchall()]
        assert got == want, (expr, rows, got, want)
    cols, codes = E.evaluate(pt, {"e": "epoch(a)", "v": "coalesce(a, b)"})
    want = con.execute("SELECT epoch(a) e, coalesce(a, b) v FROM t").to_arrow_table()
    got_e = cols["e"].to_arrow(is_real)
    assert got_e.is_null().to_pylist() == want["e"].is_null().to_pylist()
    assert np.array_equal(np.asarray(got_e.fill_null(0.0)).view(np.int64),
                          np.asarray(want["e"].fill_null(0.0)).view(np.int64)), rows  # bit for bit
    assert cols["v"].to_arrow(is_real).to_pylist() == want["v"].combine_chunks().to_pylist()


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.tuples(_IV | st.none(), _IV | st.none()), min_size=1, max_size=6), dummies=st.integers(0, 2),
       exprs=st.lists(st.sampled_from(EXPRS), min_size=4, max_size=4, unique=True))
def test_intervals_match_duckdb(rows, dummies, exprs):
    _check(rows, dummies, exprs)


@pytest.mark.parametrize("expr", EXPRS)
def test_intervals_at_the_edges(expr):
    rows = [((0, 40, 0), (1, 0, 0)), ((0, 0, -90_000_000_000), (0, -1, 0)), ((0, 30, 0), (1, 0, 0)),
            ((I32[1], I32[1], I64[1]), (I32[0], I32[0], I64[0])), ((0, 1, -1), (0, 0, 86_399_999_999)),
            ((-1, 30, 0), (0, 0, 0)), ((12, 0, 0), (0, 365, 0)), (None, (0, 0, 0)), ((0, 0, 0), None)]
    _check(rows, 2, [expr])


def test_a_bare_interval_constant_is_a_value():
    """``SELECT INTERVAL 1 DAY FROM t``: the whole expression is the constant (bind.py types
    each whole expression, not only the value nodes inside it, which skip INTERVALs)."""
    import dodb

    db = dodb.connect()
    db.con.sql("CREATE TABLE c AS SELECT range AS id, range % 3 AS k FROM range(6)")
    want = db.con.sql("SELECT id, INTERVAL 1 DAY AS a, INTERVAL '90' MINUTE AS b FROM c ORDER BY id").fetchall()
    db.set_budget(epsilon=10, delta=1e-4)
    db.protect("c", "id", max_contributions=1)
    got = db.sql("SELECT id, INTERVAL 1 DAY AS a, INTERVAL '90' MINUTE AS b FROM c ORDER BY id", epsilon=1.0)
    assert got.fetchall() == want
    db.close()
