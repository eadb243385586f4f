"""SPLIT_PART, GLOB, FORMAT/PRINTF, LEVENSHTEIN and DIVIDE against DuckDB (issue 30's top-200
list): separators that overlap themselves, empty separators, parts counted from the end,
escaped braces and percents, multibyte characters, and divide on integers (integer
division), over random tables among adversarial dummies."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from tests.operators.expr_cases import compare, operand, padded, tables


@st.composite
def exprs(draw) -> str:
    s, n = draw(operand("str")), draw(operand("str"))
    i, j = draw(operand("int")), draw(operand("int"))
    k = draw(st.sampled_from(["1", "2", "-1", "-2", "0", "5"]))
    sep = draw(st.sampled_from(["' '", "'a'", "'é'", "''", "'aa'", "'%_'"]))
    return draw(st.sampled_from([
        f"split_part({s}, {sep}, {k})", f"split_part({s} || 'aa' || {n}, 'aa', {k})",
        f"{s} GLOB 'a*'", f"{s} GLOB '?*b'", f"{s} GLOB '*'", f"format('{{}}-{{}}', {s}, {i})",
        f"format('{{{{}}}}{{}}', {n})", f"printf('%s|%d%%', {s}, {i})", f"levenshtein({s}, {n})",
        f"levenshtein({s}, 'é%a')", f"divide({i}, {j})", f"divide(t8, {j})",
    ]))


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_match_duckdb(data):
    t = data.draw(tables())
    compare(t, data.draw(padded(t)), data.draw(exprs()))
