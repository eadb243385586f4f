"""SUBSTRING / LEFT / RIGHT whose offset, length or count differs per row (a column or an
expression), against DuckDB: values, NULLs and the supported-range errors, over the wide
schema's extreme integers with the rows hidden among adversarial dummies."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from tests.operators.expr_cases import compare, operand, padded, tables


@st.composite
def window_exprs(draw) -> str:
    s = draw(st.sampled_from(["s", "n", "upper(s)", "'héllo wörld'"]))
    a = draw(operand("int") | st.sampled_from(["t8 % 5", "-(t16 % 7)", "length(s) - 1", "i % 3 - 1"]))
    b = draw(operand("int") | st.sampled_from(["t8 % 4", "2", "-1", "length(n)"]))
    form = draw(st.integers(0, 4))
    return [f"substring({s}, {a}, {b})", f"substring({s}, {a})", f"substr({s}, 2, {b})", f"left({s}, {a})",
            f"right({s}, {a})"][form]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_per_row_windows_match_duckdb(data):
    t = data.draw(tables())
    compare(t, data.draw(padded(t)), data.draw(window_exprs()))


@st.composite
def needle_exprs(draw) -> str:
    """A needle that differs per row: another column, a piece of the same string, a NULL."""
    hay = draw(st.sampled_from(["s", "n", "upper(s)", "s || n", "'é%_x'"]))
    needle = draw(st.sampled_from(["n", "s", "substr(s, 2, 2)", "right(s, 1)", "lower(s)", "left(n, t8 % 3)",
                                   "NULL::VARCHAR", "''"]))
    f = draw(st.sampled_from(["strpos({h}, {n})", "instr({h}, {n})", "position({n} IN {h})", "contains({h}, {n})",
                              "starts_with({h}, {n})", "ends_with({h}, {n})", "prefix({h}, {n})",
                              "suffix({h}, {n})"]))
    return f.format(h=hay, n=needle)


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_per_row_needles_match_duckdb(data):
    """STRPOS and the affix tests with a needle per row: the needle's every byte is compared
    at every offset of every row (strings.find_each), so the work depends on widths only."""
    t = data.draw(tables())
    compare(t, data.draw(padded(t)), data.draw(needle_exprs()))


@st.composite
def like_exprs(draw) -> str:
    """LIKE with a pattern per row (another column, a piece of the string, a pattern built
    around it) and LIKE … ESCAPE with escaped wildcards."""
    hay = draw(st.sampled_from(["s", "n", "upper(s)", "s || n"]))
    pat = draw(st.sampled_from(["n", "s", "'%' || s", "left(s, 2) || '%'", "'_' || right(n, 1)", "replace(s, 'a', '_')",
                                "NULL::VARCHAR", "''", "'%'"]))
    esc = draw(st.sampled_from(["'a!%' ESCAPE '!'", "'%!_%' ESCAPE '!'", "'%\\%%' ESCAPE '\\'", "'!!%' ESCAPE '!'",
                                "'%é%' ESCAPE '#'"]))
    return draw(st.sampled_from([f"{hay} LIKE {pat}", f"{hay} NOT LIKE {pat}", f"{hay} LIKE {esc}",
                                 f"{hay} NOT LIKE {esc}"]))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_per_row_like_and_escape_match_duckdb(data):
    t = data.draw(tables())
    compare(t, data.draw(padded(t)), data.draw(like_exprs()))


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_per_row_replace_matches_duckdb(data):
    """REPLACE whose ``old`` differs per row (overlapping candidates taken left to right), with
    replacements shorter, longer and multibyte."""
    t = data.draw(tables())
    hay = data.draw(st.sampled_from(["s", "n", "s || s", "s || 'aa' || n"]))
    old = data.draw(st.sampled_from(["n", "s", "left(s, 1)", "right(n, 2)", "'a' || left(n, 1)", "NULL::VARCHAR", "''"]))
    new = data.draw(st.sampled_from(["''", "'x'", "'yz!'", "'é'"]))
    compare(t, data.draw(padded(t)), f"replace({hay}, {old}, {new})")
