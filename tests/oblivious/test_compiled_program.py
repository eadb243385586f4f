"""Predicate trees as one compiled program (dodb/oblivious/compiled_program.py,
dodb/operators/expressions/program.py) against the node-by-node numpy reference.

* random predicates — comparisons, IN lists, BETWEEN, IS NULL, string constants, leaves that
  raise errors, nested AND/OR/NOT — over random padded tables give the same value,
  validity and error code on *every* slot (dummies and NULL rows included) on both
  backends, and DuckDB's answer on the real rows;
* the program path is the one taken for the TPC-H shapes it is for, and a tree with more
  leaves than the kernel has slots falls back to the reference with the same result;
* the rows split between threads at block bounds fixed by the size alone: the result is
  the same for one thread or two.
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st
from sqlglot import exp

from dodb.oblivious import compiled_program, program_ops
from dodb.oblivious.backend import kernel_backend_scope
from dodb.oblivious.threads import set_threads
from dodb.operators.expressions import _schema, prepare
from dodb.operators.expressions.evaluator import Evaluator
from dodb.operators.table import from_arrow

from ..operators.expr_cases import compare, comparison_exprs, operand, padded, tables


def _vals(pt, sql: str):
    """(value, valid, err) bytes of ``sql`` on every slot, per backend (or the refusal)."""
    out = {}
    for backend in ("numpy", "compiled"):
        with kernel_backend_scope(backend):
            try:
                schema, widths = _schema(pt)
                p = prepare({"x": sql}, schema, widths)
                v = Evaluator(p, dict(zip(pt.names, pt.columns)), pt.padded_size).ev(p.trees["x"])
            except Exception as e:  # noqa: BLE001 - both backends must refuse alike
                out[backend] = ("refused", type(e).__name__, str(e))
                continue
            data = np.asarray(v.data)
            out[backend] = (data.astype(bool).tobytes(), v.valid.astype(bool).tobytes(),
                            np.asarray(v.err, np.int32).tobytes())
    return out


@st.composite
def in_exprs(draw) -> str:
    kind = draw(st.sampled_from(["int", "dec", "num", "str", "date"]))
    this = draw(st.sampled_from({"int": ["i", "b", "t8"], "dec": ["d"], "num": ["i", "d", "b"], "str": ["s"],
                                 "date": ["dt"]}[kind]))
    items = draw(st.lists(operand(kind), min_size=1, max_size=4))
    neg = "NOT " if draw(st.booleans()) else ""
    return f"{this} {neg}IN ({', '.join(items)})"


@st.composite
def between_exprs(draw) -> str:
    kind = draw(st.sampled_from(["int", "dec", "num", "date"]))
    a, lo, hi = draw(operand(kind)), draw(operand(kind)), draw(operand(kind))
    return f"{a} BETWEEN {lo} AND {hi}"


_FIXED = ["k", "i IS NULL", "d IS NOT NULL", "dt IS NULL", "s = 'a'", "'ab' <> s",
          "CAST(n AS INTEGER) > 3",  # an error on rows whose text is not a number
          "TRUE", "NULL::BOOLEAN", "s LIKE 'a%'"]
# an error on the largest BIGINT; not compared with DuckDB, which folds `b + 1 > 0` to true from
# the column's statistics when every b is the largest BIGINT instead of raising the overflow
_ATOMS = st.one_of(comparison_exprs(), in_exprs(), between_exprs(), st.sampled_from(_FIXED + ["b + 1 > 0"]))
_DUCKDB_ATOMS = st.one_of(comparison_exprs(), in_exprs(), between_exprs(), st.sampled_from(_FIXED))


@st.composite
def predicates(draw, depth: int = 3, atoms: st.SearchStrategy = _ATOMS) -> str:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(atoms)
    form = draw(st.integers(0, 4))
    if form == 0:
        return f"NOT ({draw(predicates(depth - 1, atoms))})"
    op = "AND" if form % 2 else "OR"
    return f"({draw(predicates(depth - 1, atoms))}) {op} ({draw(predicates(depth - 1, atoms))})"


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_programs_equal_the_reference_on_every_slot(data):
    table = data.draw(tables())
    pt = data.draw(padded(table))
    sql = data.draw(predicates())
    out = _vals(pt, sql)
    assert out["numpy"] == out["compiled"], sql


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_programs_answer_as_duckdb(data):
    table = data.draw(tables())
    pt = data.draw(padded(table))
    sql = data.draw(predicates(depth=2, atoms=_DUCKDB_ATOMS))
    with kernel_backend_scope("compiled"):
        compare(table, pt, sql, lenient=True)


def _lineitem(n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    cents = lambda lo, hi: pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(lo, hi, n)],
                                    pa.decimal128(15, 2))
    modes = np.array(["MAIL", "SHIP", "AIR", "RAIL", "TRUCK", "FOB", "REG AIR"])
    table = pa.table({
        "l_shipdate": pa.array(rng.integers(8000, 10500, n).astype(np.int32), pa.date32()),
        "l_discount": cents(0, 11), "l_quantity": cents(100, 5100),
        "l_shipmode": pa.array(list(modes[rng.integers(0, len(modes), n)])),
        "l_shipinstruct": pa.array(list(np.array(["DELIVER IN PERSON", "NONE", "TAKE BACK RETURN"])[rng.integers(0, 3, n)])),
        "p_size": pa.array(rng.integers(1, 51, n).astype(np.int32)),
    })
    mask = rng.random(n) < 0.05
    table = table.set_column(2, "l_quantity", pa.array([None if m else v for m, v in
                                                         zip(mask, table["l_quantity"].to_pylist())], pa.decimal128(15, 2)))
    return from_arrow(table, stability=1, widths={"l_shipmode": 10, "l_shipinstruct": 25},
                      is_real=rng.random(n) < 0.9)


Q6 = ("l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
      "AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l_quantity < 24")
Q19 = ("(l_quantity >= 1 AND l_quantity <= 11 AND p_size BETWEEN 1 AND 5 AND l_shipmode IN ('AIR', 'REG AIR') "
       "AND l_shipinstruct = 'DELIVER IN PERSON') OR (l_quantity >= 10 AND l_quantity <= 20 "
       "AND p_size BETWEEN 1 AND 10 AND l_shipmode IN ('AIR', 'REG AIR'))")


@pytest.mark.parametrize("sql", [Q6, Q19, "l_shipmode NOT IN ('MAIL', 'SHIP') OR l_quantity IS NULL"])
def test_tpch_predicates_take_the_program_path(sql, monkeypatch):
    pt = _lineitem(5000)
    runs = []
    real = compiled_program.run_program
    monkeypatch.setattr(compiled_program, "run_program",
                        lambda *a: runs.append(a[0].shape[0]) or real(*a))
    out = _vals(pt, sql)
    assert runs and len(runs) == 1, "one program for the whole predicate"
    assert out["numpy"] == out["compiled"]
    assert any(np.frombuffer(out["compiled"][0], bool))  # the predicate selects rows


def test_more_leaves_than_slots_fall_back_alike(monkeypatch):
    n = 300
    rng = np.random.default_rng(3)
    cols = {f"c{k}": pa.array(rng.integers(0, 5, n)) for k in range(program_ops.SLOTS64 + 2)}
    pt = from_arrow(pa.table(cols), stability=1, widths={}, is_real=np.ones(n, bool))
    sql = " AND ".join(f"c{k} < 3" for k in range(len(cols)))
    runs = []
    real = compiled_program.run_program
    monkeypatch.setattr(compiled_program, "run_program", lambda *a: runs.append(1) or real(*a))
    out = _vals(pt, sql)
    assert out["numpy"] == out["compiled"]
    # the whole tree does not fit, each AND of two columns does: smaller programs ran
    assert runs


def test_threads_split_at_public_block_bounds_with_one_result():
    pt = _lineitem(program_ops.BLOCK * 40 + 17, seed=5)
    got = []
    for count in (1, 2):
        previous = set_threads(count)
        try:
            got.append(_vals(pt, Q19)["compiled"])
        finally:
            set_threads(previous)
    assert got[0] == got[1]


def test_program_kernel_has_no_masked_store(monkeypatch):
    """The machine code of ``run_program``, compiled here for this CPU with the engine's options,
    has no masked store (``vpmaskmovq``, AVX-512's ``… {%k}`` to memory), whose lanes would be
    data-dependent (docs/design.md §Address audit; the lookup kernel once had one)."""
    import re

    from numba import njit

    from dodb.oblivious.compiled import _OPTS

    kernel = njit(**{**_OPTS, "cache": False})(compiled_program.run_program.py_func)
    monkeypatch.setattr(compiled_program, "run_program", kernel)
    out = _vals(_lineitem(3000), Q19 + " OR l_quantity IS NULL OR NOT (l_shipmode = 'MAIL')")
    assert out["numpy"] == out["compiled"] and kernel.signatures
    asm = kernel.inspect_asm(kernel.signatures[0])
    masked = [line.strip() for line in asm.splitlines()
              if re.search(r"\)\s*\{%k\d\}", line) or ("maskmov" in line and line.rstrip().endswith(")"))]
    assert not masked, masked[:4]


def test_a_tree_too_large_for_one_program_computes_each_leaf_once(monkeypatch):
    """A long OR of LIKEs needs more leaf slots than a program has: the tree falls back to
    node-by-node evaluation level by level, and every level's retry takes the leaves already
    computed instead of computing them again."""
    from dodb.operators.expressions import functions, text

    calls = []
    real = functions.HANDLERS[exp.Like]
    monkeypatch.setitem(functions.HANDLERS, exp.Like, lambda ev, node: calls.append(1) or real(ev, node))
    pt = _lineitem(2000)
    likes = [f"l_shipmode LIKE '%{c}%'" for c in "ABCDEFGHIJKLMNOP"]
    out = _vals(pt, " OR ".join(likes))  # binding runs the evaluator over zero rows once, and is kept
    assert out["numpy"] == out["compiled"]
    calls.clear()
    _vals(pt, " OR ".join(likes))
    assert len(calls) == 2 * len(likes), len(calls)  # once per backend; without the reuse each retry computes nine again
    assert text  # the handler module is the one registered
