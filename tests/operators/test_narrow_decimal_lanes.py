"""DECIMALs of at most 18 digits travel through operators as one word (docs/design.md
§Expressions): ``Column.arrays`` hands out the low word, ``with_arrays`` restores the high
word by sign extension — exact for every value the type can hold."""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
from hypothesis import given, strategies as st

from dodb.operators.table import column_from_arrow

LIMIT = 10 ** 18 - 1


@given(st.lists(st.one_of(st.none(), st.integers(-LIMIT, LIMIT)), max_size=40), st.integers(0, 18))
def test_narrow_decimal_round_trip_is_exact(unscaled, scale):
    typ = pa.decimal128(18, scale)
    arr = pa.array([None if u is None else decimal.Decimal(u).scaleb(-scale) for u in unscaled], type=typ)
    col = column_from_arrow(pa.chunked_array([arr]))
    lanes = col.arrays()
    assert lanes[0].ndim == 1  # one word per row in transit
    moved = col.with_arrays([np.ascontiguousarray(a[::-1]) for a in lanes])  # a real move: fresh arrays
    assert np.array_equal(moved.values, col.values[::-1])
    assert moved.to_arrow().to_pylist() == arr.to_pylist()[::-1]
    same = col.with_arrays(lanes)  # handed back untouched: the very same words
    assert same.values is col.values


def test_wide_decimals_keep_both_words():
    arr = pa.array([decimal.Decimal("12345678901234567890.5")], type=pa.decimal128(38, 1))
    col = column_from_arrow(pa.chunked_array([arr]))
    assert col.arrays()[0].shape == (1, 2)
    assert col.with_arrays(col.arrays()).to_arrow().to_pylist() == arr.to_pylist()


def test_a_dropped_high_word_would_be_caught():
    """Plant the bug: restoring with a zero high word breaks negative values."""
    arr = pa.array([decimal.Decimal("-1.25")], type=pa.decimal128(10, 2))
    col = column_from_arrow(pa.chunked_array([arr]))
    low = np.ascontiguousarray(col.arrays()[0])
    wrong = np.stack([low, np.zeros_like(low)], axis=1)
    assert not np.array_equal(wrong, col.values)
    assert np.array_equal(col.with_arrays([low, col.valid]).values, col.values)
