"""Decimal ``+ - *`` that the declared types prove in range skip the overflow checks
(``numeric._exact_narrow``): its lanes equal the general 128-bit path's on every row, and the
general path indeed finds no overflow there — so no error DuckDB could raise is dropped."""
from __future__ import annotations

import decimal
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dodb.oblivious.backend import kernel_backend_scope
from dodb.operators.expressions import numeric
from dodb.operators.expressions.types import parse_type
from dodb.operators.expressions.value import Val
from dodb.operators.expressions import int128 as i128

_TYPES = st.sampled_from(["INTEGER", "SMALLINT", "TINYINT"]) | st.tuples(st.integers(1, 18), st.integers(0, 18)).map(
    lambda ps: f"DECIMAL({ps[0]},{min(ps[0], ps[1])})")


def _result_type(op: str, ta, tb):
    """DuckDB's result type of a decimal ``op`` (its binder's rule, capped at 38 digits)."""
    def ds(t):
        return (numeric._INT_DIGITS[t.bits], 0) if t.kind == "int" else (t.precision, t.scale)
    (pa_, sa), (pb, sb) = ds(ta), ds(tb)
    if op == "*":
        return parse_type(f"DECIMAL({min(38, pa_ + pb)},{sa + sb})")
    scale = max(sa, sb)
    return parse_type(f"DECIMAL({min(38, max(pa_ - sa, pb - sb) + scale + 1)},{scale})")


def _rows(t, draw_values) -> Val:
    if t.kind == "int":
        lo, hi = {8: (-128, 127), 16: (-(2 ** 15), 2 ** 15 - 1), 32: (-(2 ** 31), 2 ** 31 - 1)}[t.bits]
        vals = [max(lo, min(hi, v)) for v in draw_values]
        return Val(t, np.array(vals, dtype=np.int64), np.ones(len(vals), bool), np.zeros(len(vals), np.int32))
    bound = 10 ** t.precision - 1
    vals = [max(-bound, min(bound, v)) for v in draw_values]
    return Val(t, i128.from_i64(np.array(vals, dtype=np.int64)), np.ones(len(vals), bool), np.zeros(len(vals), np.int32))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["+", "-", "*"]), _TYPES, _TYPES,
       st.lists(st.tuples(st.integers(-(10 ** 18), 10 ** 18), st.integers(-(10 ** 18), 10 ** 18)), min_size=1,
                max_size=12),
       st.sampled_from(["compiled", "numpy"]))
def test_exact_narrow_equals_the_checked_path(op, ta, tb, pairs, backend):
    ta, tb = parse_type(ta), parse_type(tb)
    rt = _result_type(op, ta, tb)
    a = _rows(ta, [p[0] for p in pairs])
    b = _rows(tb, [p[1] for p in pairs])
    with kernel_backend_scope(backend):
        fast = numeric._exact_narrow(op, a, b, rt)
        with mock.patch.object(numeric, "_exact_narrow", lambda *args: None):
            general, fails = numeric.arith(op, a, b, rt)
    if fast is None:
        return
    assert not any(mask.any() for mask, _ in fails), "the types did not prove the result in range"
    assert np.array_equal(fast.hi, general.hi) and np.array_equal(fast.lo, general.lo)


@pytest.mark.parametrize("op, ta, tb, rt, taken", [
    ("*", "DECIMAL(15,2)", "DECIMAL(15,2)", "DECIMAL(30,4)", True),    # TPC-H Q6's product: 128-bit, no check
    ("-", "INTEGER", "DECIMAL(15,2)", "DECIMAL(16,2)", True),          # 1 - l_discount
    ("*", "DECIMAL(18,2)", "DECIMAL(18,2)", "DECIMAL(36,4)", True),
    ("+", "DECIMAL(18,2)", "DECIMAL(18,2)", "DECIMAL(19,2)", False),   # 19 digits: the 128-bit path
    ("*", "BIGINT", "DECIMAL(4,2)", "DECIMAL(23,2)", False),           # BIGINT has 19 digits
    ("*", "DECIMAL(15,2)", "DECIMAL(31,4)", "DECIMAL(38,6)", False),   # Q1's second product: capped, checked
    ("*", "DECIMAL(10,2)", "DECIMAL(10,2)", "DECIMAL(19,4)", False),   # a result narrower than the digits: checked
    ("+", "DECIMAL(10,2)", "DECIMAL(10,2)", "DECIMAL(10,2)", False),   # a carry could leave it: checked
])
def test_which_products_and_sums_are_exact(op, ta, tb, rt, taken):
    def rows(t):
        t = parse_type(t)
        data = np.arange(3, dtype=np.int64) if t.kind == "int" else i128.from_i64(np.arange(3, dtype=np.int64))
        return Val(t, data, np.ones(3, bool), np.zeros(3, np.int32))
    assert (numeric._exact_narrow(op, rows(ta), rows(tb), parse_type(rt)) is not None) == taken


def test_q6_product_is_exact_at_its_extremes():
    big = 10 ** 15 - 1
    t = parse_type("DECIMAL(15,2)")
    a = _rows(t, [big, -big, big, 0])
    b = _rows(t, [big, big, -big, -big])
    r = numeric._exact_narrow("*", a, b, parse_type("DECIMAL(30,4)"))
    got = [(int(h) << 64) + int(l) for h, l in zip(r.hi, r.lo)]
    assert got == [big * big, -big * big, -big * big, 0]
    assert decimal.Decimal(got[0]).scaleb(-4) < decimal.Decimal(10) ** 26


@settings(max_examples=100, deadline=None)
@given(st.tuples(st.integers(1, 18), st.integers(0, 6)), st.tuples(st.integers(1, 18), st.integers(0, 6)),
       st.lists(st.tuples(st.integers(-(10 ** 18), 10 ** 18), st.integers(-(10 ** 18), 10 ** 18)), min_size=1,
                max_size=12),
       st.sampled_from(["compiled", "numpy"]))
def test_narrow_products_keep_the_bound_check(pa_sa, pb_sb, pairs, backend):
    """DuckDB types a product of two narrow DECIMALs within 18 digits when its scale allows
    (DECIMAL(15,2) × DECIMAL(15,2) is DECIMAL(18,4)), so it can overflow: the exact product
    (``_narrow_product``) and its bound check equal the general path's lanes and failures."""
    ta = parse_type(f"DECIMAL({pa_sa[0]},{min(pa_sa)})")
    tb = parse_type(f"DECIMAL({pb_sb[0]},{min(pb_sb)})")
    scale = ta.scale + tb.scale
    rt = parse_type(f"DECIMAL({max(18, scale)},{scale})")
    a = _rows(ta, [p[0] for p in pairs])
    b = _rows(tb, [p[1] for p in pairs])
    with kernel_backend_scope(backend):
        fast, fast_fails = numeric.arith("*", a, b, rt)
        with mock.patch.object(numeric, "_exact_narrow", lambda *args: None), \
                mock.patch.object(numeric, "_narrow_product", lambda *args: None):
            general, fails = numeric.arith("*", a, b, rt)
    assert np.array_equal(fast.hi, general.hi) and np.array_equal(fast.lo, general.lo)
    failed = np.zeros(len(pairs), bool)
    for mask, _ in fails:
        failed = failed | mask
    fast_failed = np.zeros(len(pairs), bool)
    for mask, _ in fast_fails:
        fast_failed = fast_failed | mask
    assert fast_failed.tolist() == failed.tolist()
    assert {m for _, m in fast_fails} <= {m for _, m in fails}
