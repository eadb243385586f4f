"""TRUNC, FMOD, NEXTAFTER, SIGNBIT, GCD, LCM, STRLEN/BIT_LENGTH and the function forms of
+ − × (add, subtract, multiply) against DuckDB: values bit for bit, types and errors, over
integers at their limits (the least BIGINT has no absolute value), ±inf, NaN and −0.0,
among extreme dummies (issue 30's catalog list)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.operators.table import from_arrow

from tests.operators.expr_cases import compare, operand, padded, tables

LO, HI = -(2 ** 63), 2 ** 63 - 1


def _table(seed: int):
    rng = np.random.default_rng(seed)
    n = 600
    x = np.concatenate([rng.integers(-10 ** 6, 10 ** 6, n // 2), rng.integers(LO, HI, n // 2, endpoint=True)])
    x[:8] = [LO, HI, 0, -1, 1, LO, 2 ** 31, -(2 ** 31)]
    y = np.concatenate([rng.integers(-1000, 1000, n // 2), rng.integers(LO, HI, n // 2, endpoint=True)])
    y[:8] = [0, 2, 0, LO, HI, LO, 2 ** 32, 6]
    f = np.concatenate([rng.uniform(-100, 100, n // 2), np.exp(rng.uniform(-40, 40, n // 2))])
    f[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 5.5, -5.5, 1e308]
    g = np.concatenate([rng.uniform(-10, 10, n // 2), -np.exp(rng.uniform(-40, 40, n // 2))])
    g[:8] = [0.0, 2.0, 3.0, np.inf, 1.0, -np.inf, 2.0, 1e-308]
    t = pa.table({"x": x, "y": y, "f": f, "g": g, "s": pa.array(["", "a", "é", "日本", None, "ab", "x" * 9, "y"] * (n // 8)),
                  "small": pa.array(rng.integers(-128, 128, n), pa.int8())})
    extreme = pa.table({"x": [HI], "y": [LO], "f": [np.nan], "g": [-0.0], "s": ["zzzzzzzzzz"],
                        "small": pa.array([-128], pa.int8())})
    full = pa.concat_tables([t, t.take(pa.array(np.arange(n)[::-1])), extreme])
    return t, from_arrow(full, stability=1, widths={"s": 12}, is_real=np.r_[np.ones(n, bool), np.zeros(n + 1, bool)])


@pytest.fixture(scope="module")
def wide():
    return _table(0)


SAFE = ["trunc(f)", "trunc(x)", "fmod(f, g)", "fmod(x, 7)", "fmod(f, 0)", "nextafter(f, g)", "signbit(f)",
        "signbit(x)", "signbit(x::DECIMAL(38,0))", "strlen(s)", "bit_length(s)", "octet_length(s)",
        "gcd(x % 1000000, y % 1000)", "lcm(small, x % 100000)", "add(x % 1000, y)", "subtract(f, g)",
        "multiply(small, 3)", "trunc(f::DECIMAL(18,3))"]


@pytest.mark.parametrize("sql", SAFE)
def test_values_match_duckdb(wide, sql):
    t, pt = wide
    compare(t, pt, sql)


@pytest.mark.parametrize("sql", ["gcd(x, y)", "lcm(x, y)", "add(x, y)", "multiply(x, y)", "gcd(x, 0::BIGINT)"])
def test_errors_match_duckdb(wide, sql):
    """Each of these raises in DuckDB on some real row (an overflow, abs of the least BIGINT):
    dodb raises too, never on a dummy row."""
    t, pt = wide
    compare(t, pt, sql)


def test_gcd_and_lcm_rows_that_answer(wide):
    """Without the rows that raise: every value equal (the least BIGINT included where DuckDB answers)."""
    t, pt = wide
    compare(t, pt, "CASE WHEN x = -9223372036854775808 AND y IN (0, -9223372036854775808) THEN NULL "
                   "ELSE gcd(x, y) END")
    compare(t, pt, "lcm(x % 1000003, y % 997)")


@st.composite
def number_exprs(draw) -> str:
    a, b = draw(operand("num")), draw(operand("num"))
    f = draw(st.sampled_from(["trunc({a})", "fmod({a}, {b})", "signbit({a})", "add({a}, {b})", "subtract({a}, {b})",
                              "multiply({a}, {b})", "gcd(CAST({a} AS BIGINT) % 1000, 12)"]))
    return f.format(a=a, b=b)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_number_functions_match_duckdb(data):
    t = data.draw(tables())
    compare(t, data.draw(padded(t)), data.draw(number_exprs()))
