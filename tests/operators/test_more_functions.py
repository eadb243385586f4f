"""CONCAT_WS, TRANSLATE, REVERSE, HEX/TO_HEX, FACTORIAL, ROUND_EVEN and DATE_ADD against DuckDB
(issue 30's top-200 list): values, NULLs and errors over random tables with multibyte and
wildcard characters, DECIMAL ties, negative integers and both infinities, among
adversarial dummies."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.operators.table import from_arrow

from tests.operators.expr_cases import compare, operand, padded, tables


@st.composite
def more_exprs(draw) -> str:
    s, n = draw(operand("str")), draw(operand("str"))
    i = draw(operand("int"))
    d = draw(st.sampled_from(["d", "d * 3", "-d", "d * 0.25"]))  # DECIMALs (round_even of a DOUBLE is refused)
    return draw(st.sampled_from([
        f"concat_ws(',', {s}, {n})", f"concat_ws('--', {s}, NULL, {i}, {n})", f"concat_ws('', {s})",
        f"translate({s}, 'aé%', 'Xe')", f"translate({s}, 'ab', 'bazz')", f"reverse({s})", f"reverse({s} || {n})",
        f"to_hex({i})", f"hex({s})", f"factorial(({i}) % 40)", f"round_even({d}, 1)", "roundbankers(d, 0)",
        f"round_even(CAST({d} AS DECIMAL(18,4)), 2)", "date_add(dt, INTERVAL 3 DAY)",
        "date_add(ts, INTERVAL '1 month 2 hours')",
    ]))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_more_functions_match_duckdb(data):
    t = data.draw(tables())
    compare(t, data.draw(padded(t)), data.draw(more_exprs()))


def test_round_even_ties_and_hex_limits():
    """Every tie at one place of a DECIMAL(15,2) in a range goes to the even neighbour; hex of
    the least and greatest BIGINT and of negatives is their two's complement."""
    d = [f"{k / 100:.2f}" for k in range(-400, 401)]
    b = [-(2 ** 63), 2 ** 63 - 1, -1, 0, 255, -256] + [7] * (len(d) - 6)
    t = pa.table({"d": pa.array(d).cast(pa.decimal128(15, 2)), "b": pa.array(b, pa.int64())})
    pt = from_arrow(t, stability=1, is_real=np.ones(len(d), dtype=bool))
    compare(t, pt, "round_even(d, 1)")
    compare(t, pt, "round_even(d, 0)")
    compare(t, pt, "to_hex(b)")


@pytest.mark.parametrize("sql", ["factorial(b % 50)", "factorial(-1 - (b % 3))"])
def test_factorial_errors_match_duckdb(sql):
    b = pa.array(np.arange(-3, 60), pa.int64())
    t = pa.table({"b": b})
    compare(t, from_arrow(t, stability=1, is_real=np.ones(len(b), dtype=bool)), sql)
