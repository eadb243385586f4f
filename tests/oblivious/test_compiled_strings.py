"""The compiled string kernels (dodb/oblivious/compiled_strings.py) against the numpy reference.

``strings.compare``, ``compare_const``, ``like``, ``find`` and ``first_match`` run on both
backends with the same lanes: ASCII and multi-byte UTF-8, empty strings, strings filling
the width, arbitrary bytes past the length (the reference ignores them), different widths
on the two sides, patterns with ``%``, ``_``, ``%%``; results must be identical.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from dodb.oblivious.backend import kernel_backend_scope
from dodb.operators.expressions import strings as S

CHARS = ["a", "b", "z", "%", "_", "é", "€", "𝄞", "\x00", "\x7f", "ÿ"]
text = st.lists(st.sampled_from(CHARS), max_size=12).map("".join)


def both(fn, *args):
    out = []
    for name in ("numpy", "compiled"):
        with kernel_backend_scope(name):
            out.append(fn(*args))
    return out


def assert_same(r, c):
    if isinstance(r, tuple):
        for x, y in zip(r, c):
            assert_same(x, y)
        return
    assert r.dtype == c.dtype and r.shape == c.shape
    assert np.array_equal(r, c)


@st.composite
def lanes(draw, n=None, w=None):
    """(mat, lengths): rows of UTF-8 text truncated to whole characters within ``w`` bytes,
    the bytes past each length zero or arbitrary."""
    n = draw(st.sampled_from([0, 1, 2, 7, 300])) if n is None else n
    w = draw(st.integers(1, 70)) if w is None else w
    garbage = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    pool = draw(st.lists(text, min_size=1, max_size=8))
    rng = np.random.default_rng(seed)
    mat = rng.integers(0, 256, (n, w)).astype(np.uint8) if garbage else np.zeros((n, w), np.uint8)
    lengths = np.zeros(n, np.int64)
    for i in range(n):
        s = pool[int(rng.integers(len(pool)))]
        if rng.random() < 0.2:  # random text too, often filling the width
            s = "".join(CHARS[k] for k in rng.integers(0, len(CHARS), int(rng.integers(0, w + 1))))
        b = b""
        for ch in s:  # whole characters only, as the lanes hold
            e = ch.encode()
            if len(b) + len(e) > w:
                break
            b += e
        mat[i, : len(b)] = np.frombuffer(b, np.uint8)
        if not garbage:
            mat[i, len(b):] = 0
        lengths[i] = len(b)
    return mat, lengths


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_compare(data):
    a, la = data.draw(lanes())
    b, lb = data.draw(lanes(n=a.shape[0]))
    if data.draw(st.booleans()):  # equal and prefix rows are the interesting ones
        k = min(a.shape[1], b.shape[1])
        b[:, :k] = a[:, :k]
        lb = np.maximum(np.minimum(la, k) - data.draw(st.integers(0, 1)), 0)  # equal, or a prefix
    assert_same(*both(S.compare, a, la, b, lb))


@settings(max_examples=150, deadline=None)
@given(lanes(), text)
def test_compare_const(al, const):
    a, la = al
    c = const.encode()
    r, k = both(S.compare_const, a, la, c)
    assert_same(r, k)
    row = np.zeros((a.shape[0], max(1, len(c))), np.uint8)
    row[:, : len(c)] = np.frombuffer(c, np.uint8)
    with kernel_backend_scope("numpy"):  # the reference with the constant's lanes in every row
        assert_same(r, S.compare(a, la, row, np.full(a.shape[0], len(c), np.int64)))


@settings(max_examples=150, deadline=None)
@given(lanes(), text)
def test_compare_const_prefixes(al, const):
    """Rows that are prefixes/extensions of the constant (equal up to the common length)."""
    a, la = al
    c = const.encode()
    k = min(a.shape[1], len(c))
    a = a.copy()
    a[:, :k] = np.frombuffer(c[:k], np.uint8)  # every row equals the constant up to the common length
    assert_same(*both(S.compare_const, a, la, c))


patterns = st.lists(st.sampled_from(["%", "%%", "_", "a", "b", "é", "€", "𝄞", "\x00"]), max_size=8).map("".join)


@settings(max_examples=200, deadline=None)
@given(lanes(), patterns)
def test_like(al, pattern):
    a, la = al
    assert_same(*both(S.like, a, la, pattern.encode()))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_like_wide_rows(data):
    """Several bitset words (positions 0..w past 64, 128)."""
    w = data.draw(st.sampled_from([63, 64, 65, 80, 127, 128, 129, 200]))
    a, la = data.draw(lanes(w=w))
    pattern = data.draw(st.sampled_from(["%a%b%", "%", "", "_%_", "a%", "%b", "%%a__%", "%€%", "%_", "_"]))
    assert_same(*both(S.like, a, la, pattern.encode()))


def test_like_matches_known_rows():
    rows = ["special requests", "xx special yy requests zz", "requests special", "", "é€𝄞", "a" * 80]
    w = 80
    mat = np.zeros((len(rows), w), np.uint8)
    lengths = np.array([len(r.encode()) for r in rows], np.int64)
    for i, r in enumerate(rows):
        mat[i, : lengths[i]] = np.frombuffer(r.encode(), np.uint8)
    for pattern, want in [("%special%requests%", [1, 1, 0, 0, 0, 0]), ("___", [0, 0, 0, 0, 1, 0]),
                          ("", [0, 0, 0, 1, 0, 0]), ("%", [1] * 6), ("a%a", [0, 0, 0, 0, 0, 1])]:
        for name in ("numpy", "compiled"):
            with kernel_backend_scope(name):
                assert S.like(mat, lengths, pattern.encode()).tolist() == [bool(x) for x in want], (name, pattern)


@settings(max_examples=150, deadline=None)
@given(lanes(), text)
def test_find_and_first_match(al, needle):
    a, la = al
    nd = needle.encode()[:6]
    r, c = both(S.find, a, la, nd)
    assert_same(r, c)
    assert_same(*both(S.first_match, r))


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 40), st.integers(1, 30), st.integers(0, 2**32 - 1))
def test_first_match_random_masks(n, w, seed):
    mask = np.random.default_rng(seed).random((n, w)) < 0.3
    assert_same(*both(S.first_match, mask))
