"""The compiled 128-bit kernels (dodb/oblivious/compiled_int128.py) against the numpy reference.

Every operation of ``operators.expressions.int128`` runs on both kernel backends with the
same operands; values and overflow flags must be bit-identical (same dtypes, same bytes).
Operands mix hypothesis-drawn values (edges: 0, ±1, ±2^63, ±2^64, MIN, MAX, values around
10^18 and 10^38, every bit length) with seeded random rows of every bit length, and rows
where ``b`` equals ``a`` or is next to it, for n = 0, 1, and a few hundred.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from dodb.oblivious import compiled_int128
from dodb.oblivious.backend import kernel_backend_scope
from dodb.operators.expressions import int128 as i128

MIN, MAX = -(1 << 127), (1 << 127) - 1
EDGES = sorted({s * v for v in (0, 1, 2, 2**31, 2**32, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1, 2**64, 2**64 + 1,
                                10**9, 10**18 - 1, 10**18, 10**18 + 1, 10**19, 10**37, 10**38 - 1, 10**38, 10**38 + 1,
                                2**126, MAX) for s in (1, -1)} | {MIN, MIN + 1})


def _bits(b: int) -> st.SearchStrategy[int]:
    """A value of bit length ``b`` (magnitude in ``[2^(b-1), 2^b)``), either sign."""
    if b == 0:
        return st.just(0)
    mag = st.integers(1 << (b - 1), (1 << b) - 1)
    return st.one_of(mag, mag.map(lambda m: max(-m, MIN)))


values = st.one_of(st.sampled_from(EDGES), st.integers(0, 127).flatmap(_bits), st.integers(MIN, MAX))


def _random_rows(rng: np.random.Generator, n: int) -> list[int]:
    """Seeded rows of uniformly random bit length (0..127) and sign, a fifth of them edges."""
    out = []
    for _ in range(n):
        if rng.random() < 0.2:
            out.append(EDGES[int(rng.integers(len(EDGES)))])
            continue
        b = int(rng.integers(0, 128))
        v = int.from_bytes(rng.bytes(16), "little") % (1 << b) | ((1 << (b - 1)) if b else 0)
        out.append(-v if rng.random() < 0.5 else v)
    return out


def _i128(vals: list[int]) -> i128.I128:
    w = [v & ((1 << 128) - 1) for v in vals]
    hi = np.array([x >> 64 for x in w], dtype=np.uint64).view(np.int64)
    return i128.I128(hi, np.array([x & ((1 << 64) - 1) for x in w], dtype=np.uint64))


@st.composite
def operands(draw, rows=st.sampled_from([0, 1, 2, 3, 300])):
    """``(a, b)``: columns of ``n`` rows; ``b`` copies or neighbours ``a`` in some rows."""
    n = draw(rows)
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    a = (draw(st.lists(values, max_size=min(n, 30))) + _random_rows(rng, n))[:n]
    b = (draw(st.lists(values, max_size=min(n, 30))) + _random_rows(rng, n))[:n]
    rng.shuffle(b)
    for i in range(n):
        r = rng.random()
        if r < 0.15:
            b[i] = a[i]
        elif r < 0.25:
            b[i] = min(max(a[i] + int(rng.integers(-1, 2)), MIN), MAX)
    return a, b


def _same(x, y, path="out") -> None:
    if isinstance(x, tuple):
        assert isinstance(y, tuple) and len(x) == len(y), path
        for i, (p, q) in enumerate(zip(x, y)):
            _same(p, q, f"{path}[{i}]")
        return
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype and x.shape == y.shape, (path, x.dtype, y.dtype, x.shape, y.shape)
    assert x.tobytes() == y.tobytes(), f"{path}: {x!r} != {y!r}"


def _check(fn) -> None:
    with kernel_backend_scope("numpy"):
        ref = fn()
    with kernel_backend_scope("compiled"):
        got = fn()
    _same(ref, got)


@given(operands())
def test_add_sub_neg_abs(ab):
    a, b = map(_i128, ab)
    _check(lambda: i128.add(a, b))
    _check(lambda: i128.sub(a, b))
    _check(lambda: i128.neg(a))
    _check(lambda: i128.absolute(b))


@given(operands())
def test_mul(ab):
    a, b = map(_i128, ab)
    _check(lambda: i128.mul(a, b))
    _check(lambda: i128.mul(b, a))
    _check(lambda: i128.mul(a, a))


I64_EDGES = [0, 1, -1, 2 ** 63 - 1, -(2 ** 63), -(2 ** 63) + 1, 10 ** 18 - 1, -(10 ** 18 - 1), 2 ** 32, -(2 ** 32)]


@given(st.lists(st.tuples(st.sampled_from(I64_EDGES) | st.integers(-(2 ** 63), 2 ** 63 - 1),
                          st.sampled_from(I64_EDGES) | st.integers(-(2 ** 63), 2 ** 63 - 1)), max_size=40))
def test_mul64_is_the_exact_product(pairs):
    x = np.array([p[0] for p in pairs], dtype=np.int64)
    y = np.array([p[1] for p in pairs], dtype=np.int64)
    _check(lambda: i128.mul64(x, y))
    with kernel_backend_scope("compiled"):
        got = i128.mul64(x, y)
    assert [(int(h) << 64) + int(l) for h, l in zip(got.hi, got.lo)] == [p * q for p, q in pairs]


@given(operands(), st.integers(0, 40))
def test_mul_pow10(ab, k):
    a = _i128(ab[0])
    _check(lambda: i128.mul_pow10(a, k))


def test_mul_pow10_every_k():
    a = _i128(EDGES + _random_rows(np.random.default_rng(7), 300))
    for k in range(41):
        _check(lambda: i128.mul_pow10(a, k))


@given(operands())
def test_compare_where(ab):
    a, b = map(_i128, ab)
    _check(lambda: i128.less(a, b))
    _check(lambda: i128.less(b, a))
    _check(lambda: i128.equal(a, b))
    _check(lambda: i128.compare(a, b))
    mask = i128.less(a, b)
    _check(lambda: i128.where(mask, a, b))
    _check(lambda: i128.where(~mask, a, b))


@given(operands(), st.one_of(st.sampled_from([1, 2, 10**18, 10**38, 2**64, MAX]), st.integers(1, MAX)))
def test_in_bounds_to_i64(ab, bound):
    a = _i128(ab[0])
    _check(lambda: i128.in_bounds(a, bound))
    _check(lambda: i128.to_i64(a))


@given(operands(), st.one_of(st.sampled_from([1, 2, 10, 10**9, 2**32 - 1]), st.integers(1, 2**32 - 1)))
def test_divmod_small(ab, d):
    a = _i128(ab[0])
    with kernel_backend_scope("numpy"):
        mag = i128.absolute(a)  # non-negative (MIN's magnitude is 2^127, as unsigned)
    _check(lambda: i128.divmod_small(mag, d))


@given(operands(rows=st.sampled_from([0, 1, 3, 40])), st.integers(0, 38),
       st.sampled_from(["half_away", "trunc", "floor", "ceil"]))
def test_div_pow10_divmod_trunc(ab, k, rounding):
    a, b = map(_i128, ab)
    _check(lambda: i128.div_pow10(a, k, rounding))
    _check(lambda: i128.divmod_trunc(a, b))


def test_compiled_backend_runs_the_kernels(monkeypatch):
    """Under the compiled backend every routed operation reaches its kernel."""
    called = set()
    for name in compiled_int128.__all__:
        kernel = getattr(compiled_int128, name)
        monkeypatch.setattr(compiled_int128, name, lambda *args, _k=kernel, _n=name: (called.add(_n), _k(*args))[1])
    a = _i128(EDGES)
    n = len(EDGES)
    b = _i128(EDGES[::-1])
    with kernel_backend_scope("compiled"):
        i128.add(a, b), i128.sub(a, b), i128.neg(a), i128.absolute(a), i128.mul(a, b), i128.mul_pow10(a, 3)
        i128.mul64(a.lo.view(np.int64), b.lo.view(np.int64))
        i128.less(a, b), i128.equal(a, b), i128.compare(a, b), i128.where(np.ones(n, bool), a, b)
        i128.in_bounds(a, 10**18), i128.divmod_small(i128.absolute(a), 10), i128.to_i64(a)
    assert called == set(compiled_int128.__all__)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_non_contiguous_and_other_shapes_fall_back_or_match(n):
    """Strided operands give the reference's answer too (copied to contiguous words)."""
    vals = _random_rows(np.random.default_rng(n), 2 * n)
    a = _i128(vals)
    strided = i128.I128(a.hi[::2], a.lo[::2])
    _check(lambda: i128.mul(strided, strided))
    _check(lambda: i128.mul_pow10(strided, 20))
    _check(lambda: i128.where(np.ones(n, bool)[::1], strided, strided))
