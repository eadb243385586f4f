"""strptime / try_strptime with a constant format (dodb/operators/expressions/strptime.py)
against DuckDB: random texts built from the pieces formats read (numbers of every width,
names in any case, AM/PM, runs of white space, the special words, junk) under formats of
every supported specifier, among dummy slots of garbage; values, NULLs and the kind of
error (Invalid Input for a text the format does not read, Conversion for a date that does
not exist)."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.errors import UnsupportedQueryError
from dodb.operators import expressions as E
from dodb.operators.table import from_arrow

FORMATS = ["%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%d/%m/%y", "%m/%d/%Y %I:%M %p", "%d %b %Y",
           "%B %d, %Y", "%a %Y %j", "%A, %Y-%-m-%-d", "%Y%m%d%H%M%S", "%Y %j", "%j %y %H", "%H:%M:%S.%g", "%I%p",
           "%y%%  %S", "T%Y", "%Y %j %m", "%Y %j %b"]
PIECES = st.sampled_from(["2020", "1999", "0000", "9999", "20", "69", "68", "1", "01", "12", "13", "0", "00", "29", "30",
                          "31", "32", "59", "60", "23", "24", "366", "365", "123456", "1234567", "5", "-", "/", ":",
                          ".", ",", "%", " ", "  ", "\t", "Jan", "jan", "FEB", "February", "may", "Mayday", "sept",
                          "Mon", "monday", "TUE", "AM", "pm", "Pm", "a", "T", "x", "é", ""])
WORDS = st.sampled_from(["infinity", " -Infinity ", "EPOCH", "epoch x", "inf", "-infinity\t", "infinityy"])


@st.composite
def texts(draw) -> str:
    if draw(st.integers(0, 6)) == 0:
        return draw(WORDS)
    return draw(st.sampled_from(["", " ", "  "])) + "".join(draw(st.lists(PIECES, min_size=1, max_size=9))) + \
        draw(st.sampled_from(["", " ", "x"]))


@st.composite
def matching(draw, fmt: str) -> str:
    """A text written by DuckDB's strftime from the same format (mostly readable), perturbed."""
    import datetime as dt
    when = draw(st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31)))
    text = duckdb.execute("SELECT strftime(?::TIMESTAMP, ?)", [when, fmt]).fetchone()[0]
    if draw(st.booleans()):
        k = draw(st.integers(0, len(text)))
        text = text[:k] + draw(PIECES) + text[k + draw(st.integers(0, 2)):]
    return text


def _run(values: list, dummies: list, sql: str, width: int = 40):
    t = pa.table({"s": pa.array(dummies + values, pa.string())})
    is_real = np.array([False] * len(dummies) + [True] * len(values), dtype=bool)
    pt = from_arrow(t, stability=1, widths={"s": width}, is_real=is_real)
    cols, codes = E.evaluate(pt, {"r": sql})
    assert not codes[~is_real].any(), "an error on a dummy slot"
    col = cols["r"]
    assert str(col.type) == "timestamp[us]"
    real = np.flatnonzero(is_real)
    return [int(col.values[i]) if col.valid[i] else None for i in real], [int(codes[i]) for i in real]


_CON = duckdb.connect()


def _duckdb(text, fmt: str):
    """(µs or ±(2^63 − 1) for ±infinity or None under try_strptime, the error class strptime raises)."""
    us, inf, pos = _CON.execute("SELECT epoch_us(try_strptime(?, ?)), isinf(try_strptime(?, ?)), "
                                "try_strptime(?, ?) > TIMESTAMP '2000-01-01'", [text, fmt] * 3).fetchone()
    value = ((1 << 63) - 1) * (1 if pos else -1) if inf else us
    try:
        _CON.execute("SELECT strptime(?, ?)", [text, fmt]).fetchone()
        return value, None
    except duckdb.Error as e:
        return value, type(e).__name__


_KINDS = {"InvalidInputException": "Invalid Input Error", "ConversionException": "Conversion Error"}


def _check(values: list, dummies: list, fmt: str) -> None:
    got_try, try_codes = _run(values, dummies, f"try_strptime(s, '{fmt}')")
    got, codes = _run(values, dummies, f"strptime(s, '{fmt}')")
    assert not any(try_codes)
    for v, g_try, g, code in zip(values, got_try, got, codes):
        want, raised = _duckdb(v, fmt) if v is not None else (None, None)
        assert g_try == want, (v, fmt, g_try, want)
        if raised is None:
            assert code == 0 and g == want, (v, fmt, g, want, code and E.message_for(code))
        else:
            assert code and E.message_for(code).startswith(_KINDS[raised]), (v, fmt, raised, code and E.message_for(code))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), fmt=st.sampled_from(FORMATS), dummies=st.lists(st.text(max_size=8), max_size=3))
def test_strptime_matches_duckdb(data, fmt, dummies):
    values = data.draw(st.lists(texts() | matching(fmt) | st.none(), max_size=6))
    _check(values, dummies, fmt)


@pytest.mark.parametrize("text,fmt", [
    ("2020-02-30", "%Y-%m-%d"), ("2021 366", "%Y %j"), ("2020 366", "%Y %j"), ("13 PM", "%H %p"), ("0 PM", "%H %p"),
    ("12 am", "%I %p"), ("12.5", "%S.%f"), ("  2020", " %Y"), ("2020", "%Y "), ("Mayday", "%B"), ("0000", "%Y"),
    ("infinityx", "%Y"), (" -Infinity ", "%Y"), ("2020 200 Feb", "%Y %j %b"), ("2020 200 05", "%Y %j %d"),
    ("99-12-31", "%y-%m-%d"), ("69-1-1", "%y-%m-%d"), ("9999-12-31 23:59:59.999999", "%Y-%m-%d %H:%M:%S.%f"),
    ("2020\t \n05", "%Y %m"), ("12:30", "%H:%M %p"), ("", "%Y")])
def test_strptime_edges(text, fmt):
    _check([text], ["garbage", "2020-01-01"], fmt)


def test_a_null_format_and_null_text_are_null():
    got, codes = _run(["2020", None], ["x"], "strptime(s, NULL)")
    assert got == [None, None] and codes == [0, 0]
    got, codes = _run([None], ["x"], "strptime(s, '%Y')")
    assert got == [None] and codes == [0]


@pytest.mark.parametrize("fmt", ["%z", "%Y %Z", "%n", "%U", "%G", "%c"])
def test_formats_dodb_does_not_read_are_refused(fmt):
    # %z/%Z make DuckDB type the result TIMESTAMPTZ, refused for strptime as a whole
    with pytest.raises(UnsupportedQueryError, match="STRPTIME format|values of type|STRPTIME of VARCHAR giving"):
        _run(["2020"], [], f"strptime(s, '%Y {fmt}')")
