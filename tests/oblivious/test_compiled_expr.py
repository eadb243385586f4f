"""The compiled expression-node kernels (dodb/oblivious/compiled_expr.py) against the numpy reference.

* whole expressions — comparisons of every type pair and nested AND/OR/NOT over random
  padded tables (NULLs, extremes, adversarial dummies) — evaluate to the same bytes on both
  kernel backends: values, validity and per-row error codes;
* the logic kernel on operands that carry error codes (which random SQL rarely yields)
  equals :func:`~dodb.operators.expressions.evaluator.logic_reference` row for row;
* a narrow DECIMAL comparison is exact at the edges of its type (``±(10^15 - 1)`` cents
  against integers and other scales), where a wrong scale factor or an overflowing product
  would differ from the 128-bit path.
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.oblivious.backend import kernel_backend_scope
from dodb.operators import expressions as E
from dodb.operators.expressions.evaluator import logic_reference
from dodb.operators.expressions.fused import fused_logic
from dodb.operators.expressions.types import parse_type
from dodb.operators.expressions.value import Val
from dodb.operators.table import from_arrow

from ..operators.expr_cases import comparison_exprs, logic_exprs, padded, tables


def _both(pt, sql: str):
    out = {}
    for backend in ("numpy", "compiled"):
        with kernel_backend_scope(backend):
            try:
                cols, codes = E.evaluate(pt, {"x": sql})
            except Exception as e:  # noqa: BLE001 - both backends must refuse alike
                out[backend] = ("refused", type(e).__name__, str(e))
                continue
            c = cols["x"]
            out[backend] = (c.values.tobytes(), c.values.dtype.str, c.valid.tobytes(), codes.tobytes())
    return out


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_comparisons_and_logic_are_identical_on_both_backends(data):
    table = data.draw(tables())
    pt = data.draw(padded(table))
    sql = data.draw(comparison_exprs() | logic_exprs())
    out = _both(pt, sql)
    assert out["numpy"] == out["compiled"], sql


def _val(rng, n: int, *, codes: bool) -> Val:
    data = rng.random(n) < 0.5
    valid = rng.random(n) < 0.7
    err = (rng.integers(0, 4, n) * (rng.random(n) < 0.4)).astype(np.int32) if codes else np.zeros(n, np.int32)
    return Val(parse_type("BOOLEAN"), data, valid, err)


@pytest.mark.parametrize("is_and", [True, False])
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_logic_kernel_keeps_errors_only_where_duckdb_evaluates(is_and, n):
    rng = np.random.default_rng(n + is_and)
    a, b = _val(rng, n, codes=True), _val(rng, n, codes=True)
    with kernel_backend_scope("compiled"):
        got = fused_logic(is_and, a, b)
    want = logic_reference(is_and, a, b)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g, w)
    if n == 1000:  # the rule matters here: some rows carry an error the other side masks
        decided = (b.valid & ~b.data) if is_and else (b.valid & b.data)
        assert ((a.err > 0) & decided).any() and not (got[2][(a.err > 0) & decided & (b.err == 0)]).any()


def test_numpy_backend_takes_the_reference_path():
    v = Val(parse_type("BOOLEAN"), np.ones(3, bool), np.ones(3, bool), np.zeros(3, np.int32))
    with kernel_backend_scope("numpy"):
        assert fused_logic(True, v, v) is None


EDGE = 10 ** 13 - 1  # DECIMAL(15,2): 13 integer digits


@pytest.mark.parametrize("other, sql_type", [
    (["0", "1", "-1", "2147483647", "-2147483648"], "INTEGER"),
    (["0", "-1", str(EDGE), str(-EDGE), str(EDGE + 1), "9223372036854775807"], "BIGINT"),  # 21 digits: 128-bit path
    (["0.001", "-0.001", f"{EDGE}.999", f"-{EDGE}.999", "0.005"], "DECIMAL(16,3)"),
    (["0.5", "-0.5", f"{EDGE}.5", f"-{EDGE}.5"], "DECIMAL(14,1)"),
])
def test_narrow_decimal_comparisons_are_exact_at_the_edges(other, sql_type):
    mine = [decimal.Decimal(x) for x in ("0", "0.01", "-0.01", f"{EDGE}.99", f"-{EDGE}.99", f"{EDGE}.00", "0.50")]
    rows = [(m, o) for m in mine for o in other]
    ints = {"INTEGER": pa.int32(), "BIGINT": pa.int64()}
    arrow_other = ints.get(sql_type) or pa.decimal128(*map(int, sql_type[8:-1].split(",")))
    table = pa.table({"d": pa.array([r[0] for r in rows], pa.decimal128(15, 2)),
                      "o": pa.array([int(r[1]) if sql_type in ints else decimal.Decimal(r[1]) for r in rows],
                                    arrow_other)})
    pt = from_arrow(table, stability=1, widths={}, is_real=np.ones(len(rows), bool))
    for op in ("=", "<>", "<", "<=", ">", ">="):
        out = _both(pt, f"d {op} o")
        assert out["numpy"] == out["compiled"], op
        with kernel_backend_scope("compiled"):
            got = E.evaluate(pt, {"x": f"d {op} o"})[0]["x"].values.astype(bool).tolist()
        want = [{"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
                for a, b in ((r[0], decimal.Decimal(r[1])) for r in rows)]
        assert got == want, op



@settings(max_examples=80, deadline=None)
@given(st.integers(-(10 ** 38) + 1, 10 ** 38 - 1) | st.sampled_from([0, 1, -1, 2 ** 63 - 1, -(2 ** 63)]),
       st.integers(0, 38), st.integers(0, 20), st.sampled_from(["compiled", "numpy"]))
def test_a_constant_is_rescaled_once_exactly_as_per_row(value, precision_scale, up, backend):
    """``as_i128`` of a public constant (its ``scalar``) gives the words and overflow flags of
    the per-row rescale, overflowing products included."""
    from dodb.operators.expressions.numeric import as_i128
    from dodb.operators.expressions.value import constant

    scale = min(precision_scale, 38)
    t = parse_type(f"DECIMAL(38,{scale})")
    with decimal.localcontext(decimal.Context(prec=80)):  # exact (the default context keeps 28 digits)
        c = constant(t, decimal.Decimal(value).scaleb(-scale), 3)
    assert c.scalar == value
    rows = Val(c.type, c.data, c.valid, c.err)  # the same lanes, not known to be a constant
    with kernel_backend_scope(backend):
        (a, fa), (b, fb) = as_i128(c, min(38, scale + up)), as_i128(rows, min(38, scale + up))
    assert a.hi.tobytes() == b.hi.tobytes() and a.lo.tobytes() == b.lo.tobytes() and fa.tolist() == fb.tolist()
