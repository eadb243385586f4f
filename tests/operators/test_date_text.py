"""CAST(text AS DATE) and TRY_CAST (dodb/operators/expressions/date_text.py) against DuckDB:
random date-like texts (separators, one or two digit fields, signs, (BC), white space,
the special words, out-of-range fields and years at the type's ends) among dummy slots of
garbage; a text with a time part is an error on its row, never a wrong date or NULL."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.operators import expressions as E
from dodb.operators.table import from_arrow

_FIELDS = st.sampled_from(["2020", "1", "0", "00002020", "5881580", "5881581", "5877641", "1900", "2000", "12", "99999999"])
_SMALL = st.sampled_from(["1", "01", "02", "12", "13", "29", "30", "31", "001", "0", "7"])
_SEP = st.sampled_from(["-", "/", " ", "\\", ".", ""])
_TAIL = st.sampled_from(["", " ", "  ", " (BC)", " (bc)", "\t(BC)", "(BC)", " (BC) ", "x", "3", "T", "\n", " (BC)x"])
_WORDS = st.sampled_from(["infinity", " Infinity ", "-inf", "INF", " inf", "inf ", "-Inf\t", "epoch", " EPOCH ", "+infinity", "infinity (BC)", "", " ", "-"])


@st.composite
def date_texts(draw) -> str:
    if draw(st.integers(0, 5)) == 0:
        return draw(_WORDS)
    sep = draw(_SEP)
    second = sep if draw(st.integers(0, 6)) else draw(_SEP)
    return (draw(st.sampled_from(["", " ", "\t", "-", "+"])) + draw(_FIELDS) + sep + draw(_SMALL) + second
            + draw(_SMALL) + draw(_TAIL))


def _run(values: list, dummies: list, sql: str):
    t = pa.table({"s": pa.array(dummies + values, pa.string())})
    is_real = np.array([False] * len(dummies) + [True] * len(values), dtype=bool)
    pt = from_arrow(t, stability=1, widths={"s": 28}, is_real=is_real)
    cols, codes = E.evaluate(pt, {"r": sql})
    assert not codes[~is_real].any(), "an error on a dummy slot"
    col = cols["r"]
    real = np.flatnonzero(is_real)
    return [int(col.values[i]) if col.valid[i] else None for i in real], [int(codes[i]) for i in real]


def _duckdb_days(values: list) -> list:
    con = duckdb.connect()
    out = []
    for v in values:
        d = con.execute("SELECT TRY_CAST(? AS DATE)", [v]).fetchone()[0] if v is not None else None
        if d is None:
            out.append(None)
            continue
        inf = con.execute("SELECT isinf(TRY_CAST(? AS DATE)), TRY_CAST(? AS DATE) > DATE '2000-01-01'", [v, v]).fetchone()
        out.append(((1 << 31) - 1) * (1 if inf[1] else -1) if inf[0] else
                   con.execute("SELECT TRY_CAST(? AS DATE) - DATE '1970-01-01'", [v]).fetchone()[0])
    return out


def _timed(text: str | None) -> bool:
    """A valid date then ``T`` or white space and a digit: the time part dodb does not read."""
    import re
    return text is not None and re.search(r"\d([Tt]|\s+(\(bc\)\s+)?)\d", text.lower()) is not None


@settings(max_examples=40, deadline=None)
@given(values=st.lists(date_texts() | st.none(), max_size=8), dummies=st.lists(st.text(max_size=6), max_size=3))
def test_try_cast_and_cast_to_date_match_duckdb(values, dummies):
    want = _duckdb_days(values)
    got, codes = _run(values, dummies, "TRY_CAST(s AS DATE)")
    for v, g, w, code in zip(values, got, want, codes):
        if code:  # only a time part dodb does not read, on a row DuckDB reads
            assert _timed(v) and "time part" in E.message_for(code), (v, E.message_for(code))
        else:
            assert g == w, (v, g, w)
    got, codes = _run(values, dummies, "CAST(s AS DATE)")
    for v, g, w, code in zip(values, got, want, codes):
        if w is None and v is not None:
            assert code, (v, "DuckDB raises, dodb does not")
        elif code:
            assert _timed(v), (v, E.message_for(code))
        else:
            assert g == w, (v, g, w)


@pytest.mark.parametrize("text", ["2020-01-02", "  2020-1-2  ", "2020\\01\\02", "-0-01-01", "0-01-01", "1-01-01 (BC)",
                                  "5881580-07-10", "5881580-07-11", "-5877641-06-25", "-5877641-06-24", " INF ",
                                  "-infinity", "Epoch", "2020-02-30", "2020-01-023", "+2020-01-02", "0-01-01 (BC)"])
def test_date_text_edges(text):
    got, codes = _run([text], ["garbage", ""], "TRY_CAST(s AS DATE)")
    assert codes == [0] and got == _duckdb_days([text])


def test_a_time_part_is_an_error_not_a_guess():
    got, codes = _run(["2020-01-02 12:00:00", "2020-01-02T12:00"], [], "TRY_CAST(s AS DATE)")
    assert all(codes) and all("time part" in E.message_for(c) for c in codes)
