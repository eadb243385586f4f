"""Bitwise operators, BIT_COUNT, ASCII/UNICODE/ORD and CHR against DuckDB (issue 30's top-200
list): values in every integer width, shifts by every amount from −2 to past the width,
the errors DuckDB raises (a negative operand or amount, an overflow, a shift too wide),
code points at every UTF-8 length boundary and the surrogates, among extreme dummies."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.operators.table import from_arrow

from tests.operators.expr_cases import compare, operand, padded, tables


def _table():
    rng = np.random.default_rng(5)
    n = 400
    b = rng.integers(-(2 ** 63), 2 ** 63 - 1, n, endpoint=True)
    b[:6] = [-(2 ** 63), 2 ** 63 - 1, 0, -1, 1, 2 ** 40]
    t = pa.table({
        "b": b, "i": pa.array(rng.integers(-(2 ** 31), 2 ** 31 - 1, n), pa.int32()),
        "t8": pa.array(rng.integers(-128, 127, n, endpoint=True), pa.int8()),
        "k": pa.array(np.arange(n) % 72 - 2, pa.int32()),              # shift amounts −2 … 69
        "small": pa.array(rng.integers(0, 64, n), pa.int64()),
        "cp": pa.array(np.r_[[0, 127, 128, 2047, 2048, 55295, 57344, 65535, 65536, 1114111],
                             rng.integers(0, 55295, n - 10)], pa.int64()),
        "s": pa.array(["", "a", "é", "日本", "😀x", None, "Zz"] * (n // 7) + ["q"] * (n % 7), pa.string()),
    })
    extreme = t.slice(0, 1).set_column(0, "b", pa.array([2 ** 63 - 1]))
    full = pa.concat_tables([t, t.take(pa.array(np.arange(n)[::-1])), extreme])
    return t, from_arrow(full, stability=1, widths={"s": 8}, is_real=np.r_[np.ones(n, bool), np.zeros(n + 1, bool)])


@pytest.fixture(scope="module")
def wide():
    return _table()


@pytest.mark.parametrize("sql", [
    "b & i", "b | t8", "xor(b, i)", "i & t8", "~b", "~i", "~t8", "bit_count(b)", "bit_count(i)", "bit_count(t8)",
    "b >> k", "i >> k", "t8 >> k", "small << (k % 8 + 2) % 8", "(small % 4) << (k % 60 + 60) % 60",
    "ascii(s)", "unicode(s)", "ord(s)", "chr(cp)", "ascii(chr(cp)) = cp",
])
def test_values_match_duckdb(wide, sql):
    t, pt = wide
    compare(t, pt, sql)


@pytest.mark.parametrize("sql", ["b << 1", "i << k", "t8 << 3", "small << k", "chr(cp + 55296 - cp % 2)",
                                 "chr(-1 - small)", "chr(cp + 1114112)"])
def test_errors_match_duckdb(wide, sql):
    """Each raises in DuckDB on some real row; dodb raises too, never on a dummy."""
    t, pt = wide
    compare(t, pt, sql)


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_random_bit_expressions_match_duckdb(data):
    t = data.draw(tables())
    a, b = data.draw(operand("int")), data.draw(operand("int"))
    sql = data.draw(st.sampled_from([f"{a} & {b}", f"{a} | {b}", f"xor({a}, {b})", f"~({a})", f"bit_count({a})",
                                     f"{a} >> {b}", f"{a} << {b}", "ascii(s) + unicode(n)"]))
    compare(t, data.draw(padded(t)), sql)
