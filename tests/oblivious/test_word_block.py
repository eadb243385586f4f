"""The word block (oblivious/rows.py): every array comes back bit for bit, whatever its dtype,
shape and position among the others, and the layout is a function of dtypes and shapes alone."""
import numpy as np
from hypothesis import given, settings, strategies as st

from dodb.oblivious.rows import block_layout, from_word_block, pack_rows, unpack_rows, word_block

DTYPES = ["?", "i1", "u1", "i2", "u2", "i4", "u4", "f4", "i8", "u8", "f8"]


@st.composite
def arrays(draw):
    n = draw(st.integers(0, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out = []
    for _ in range(draw(st.integers(1, 12))):
        dt = np.dtype(draw(st.sampled_from(DTYPES)))
        tail = draw(st.sampled_from([(), (), (), (1,), (3,), (2,), (4,), (9,), (0,)]))
        raw = rng.integers(0, 256, size=(n,) + tail + (dt.itemsize,), dtype=np.uint8)
        a = raw.view(dt).reshape((n,) + tail)
        if dt.kind == "b":
            a = raw[..., 0].reshape((n,) + tail) & 1 == 1
        out.append(a)
    return out, n


@settings(max_examples=60, deadline=None)
@given(case=arrays(), spare=st.integers(0, 9))
def test_word_block_round_trips(case, spare):
    arrs, n = case
    block, layout = word_block(arrs, n + spare)
    assert block.shape == (layout.words, n + spare)
    assert not block[:, n:].any()  # rows past n are zero
    for a, b in zip(arrs, from_word_block(block, arrs, layout, n)):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    assert block_layout([np.zeros((7,) + a.shape[1:], a.dtype) for a in arrs]) == layout  # dtypes and shapes only


@settings(max_examples=30, deadline=None)
@given(case=arrays())
def test_pack_rows_round_trips(case):
    arrs, n = case
    matrix, layout = pack_rows(arrs)
    for a, b in zip(arrs, unpack_rows(matrix, layout)):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_narrow_columns_share_words():
    """Eight bools, two int32s and two one-byte string blocks take three words, not twelve
    (each row pass moves fewer words); a 3-byte block keeps a word of its own."""
    n = 5
    arrs = [np.ones(n, bool)] * 8 + [np.arange(n, dtype=np.int32)] * 2 + [np.zeros((n, 1), np.uint8)] * 2
    assert block_layout(arrs + [np.arange(n, dtype=np.int64)]).words == 4
    assert block_layout(arrs + [np.zeros((n, 3), np.uint8)]).words == 4
