"""``octet_length(encode(s))``, ``to_base64(encode(s))`` and ``len(string_split(s, sep))``
(dodb/operators/expressions/blobs.py, text.py) against DuckDB: every length around the
base64 groups, multi-byte characters, separators that overlap themselves, empty and
multi-byte separators, NULLs, over random tables among adversarial dummies."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.errors import UnsupportedQueryError
from dodb.operators import expressions as E
from dodb.operators.table import from_arrow

from tests.operators.expr_cases import compare, operand, padded, tables

SEPS = ["' '", "'a'", "'é'", "''", "'aa'", "'aba'", "'%_'"]


@st.composite
def exprs(draw) -> str:
    s, n = draw(operand("str")), draw(operand("str"))
    sep = draw(st.sampled_from(SEPS))
    return draw(st.sampled_from([
        f"octet_length(encode({s}))", f"to_base64(encode({s}))", f"base64(encode({s} || {n}))",
        f"len(string_split({s}, {sep}))", f"array_length(string_split({s} || 'aa' || {n}, {sep}))",
        f"length(str_split({s}, {sep}))",
    ]))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_match_duckdb(data):
    t = data.draw(tables())
    compare(t, data.draw(padded(t)), data.draw(exprs()))


def test_every_length_and_overlapping_separators():
    words = ["", "a", "ab", "abc", "abcd", "abcde", "abcdef", "é", "éé", "\U0001F986x", "aaaa", "aaaaa", "ababa",
             "abababab", " a  b ", "%_%__", "ÿ\x00ÿ", None]
    t = pa.table({"s": pa.array(words)})
    garbage = pa.table({"s": pa.array(["\xff" * 5] * 3)})
    pt = from_arrow(pa.concat_tables([garbage, t]), stability=1, widths={"s": 16},
                    is_real=np.r_[np.zeros(3, bool), np.ones(len(words), bool)])
    for sql in ["octet_length(encode(s))", "to_base64(encode(s))"] + [f"len(string_split(s, {p}))" for p in SEPS]:
        compare(t, pt, sql)
    cols, _ = E.evaluate(pt, {"b": "to_base64(encode(s))"})
    assert cols["b"].values.shape[1] == 4 * 6  # a public width: 4·⌈16/3⌉


@pytest.mark.parametrize("sql", ["encode(s)", "octet_length(CAST(s AS BLOB))", "len(string_split(s, n))",
                                 "len(string_split(s, NULL))"])
def test_other_blobs_and_lists_are_refused(sql):
    t = pa.table({"s": pa.array(["a b"]), "n": pa.array([" "])})
    duckdb.connect().sql(f"SELECT {sql} FROM t").fetchall()  # DuckDB answers
    with pytest.raises(UnsupportedQueryError):
        E.evaluate(from_arrow(t, stability=1), {"r": sql})
