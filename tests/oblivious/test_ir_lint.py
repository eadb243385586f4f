"""The LLVM IR of every compiled kernel has no branch or address computed from data.

Also the proof that the IR lint bites: deliberately leaky numba kernels (a branch on a
loaded value, an index computed from one) must be flagged, a branch-free one must not.
"""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba import uint64 as ix
from numba.core.registry import CPUDispatcher

from dodb.oblivious import compiled, compiled_int128, compiled_sort
from dodb.oblivious import ir_cache
from dodb.oblivious.backend import kernel_backend_scope

from .ir_lint import fresh_ir, lint_ir

from dodb.oblivious import compiled_expr, compiled_libm, compiled_program, compiled_reduce, compiled_strings  # noqa: E402  (expressions, programs, totals, strings, libm)

OPTS = dict(nogil=True, boundscheck=False, error_model="numpy")  # as the kernels, without the cache


def _exercise() -> None:
    """Run every public kernel once on the compiled backend, so every signature exists."""
    from dodb.oblivious import (compact, distribute, expand, forward_fill, oblivious_sort, segmented_lex_scan,
                                segmented_scan)
    from dodb.oblivious import sort as sort_mod

    rng = np.random.default_rng(0)
    n = 37
    keys = rng.integers(0, 5, n).astype(np.uint64)
    flags = rng.random(n) < 0.5
    starts = rng.random(n) < 0.3
    saved = sort_mod.BLOCK, sort_mod.SUB_BLOCK
    sort_mod.BLOCK, sort_mod.SUB_BLOCK = 8, 4  # small blocks: whole-array stages and pieces run too
    try:
        with kernel_backend_scope("compiled"):
            oblivious_sort([keys], [np.arange(n)], key_bits=3)  # one key word (packed)
            oblivious_sort([keys], [np.arange(n)])  # two (key, position)
            oblivious_sort([keys, keys], [np.arange(n)])  # three: the general path
    finally:
        sort_mod.BLOCK, sort_mod.SUB_BLOCK = saved
    from dodb.oblivious.unmerge import oblivious_unmerge
    with kernel_backend_scope("compiled"):
        oblivious_unmerge(np.arange(n), [np.arange(n)], split=n // 3)  # the merge's inverse (one kernel)
        compact(flags, [np.arange(n)])
        distribute(np.arange(n) < 5, np.arange(n) * 2, [np.arange(n)])
        expand(rng.integers(0, 2, n), [np.arange(n)], 2 * n)
        forward_fill(flags, [np.arange(n)])
        segmented_scan(np.arange(n), starts, "sum")
        segmented_lex_scan([keys], starts, "max", payload=[np.arange(n)])
    compiled.checksum_words(np.arange(6, dtype=np.uint64), 6)
    k, w = 3, 2
    u64, u8 = np.zeros(n * w, np.uint64), np.zeros(n, np.uint8)
    compiled.lookup_rows(u64[:n], np.zeros(k, np.uint64), 1, u8, np.ones(k, np.uint8), np.zeros(w * k, np.uint64),
                         u64, w, n, k, u8.copy(), np.zeros(k, np.uint64), 0, n)
    for kernel in (compiled.compact_rounds, compiled.distribute_rounds):  # small blocks: waves and single rounds
        mk, tmp = (np.zeros(m, np.uint64) for m in compiled.scratch_rows(n, 6, 8, 2))
        kernel((flags & (np.arange(n) < 20)).astype(np.uint8), np.zeros(n, np.int64), u64.copy(), w, n, 6, mk, tmp, 8, 2)
    _exercise_int128(rng, n)


def _exercise_int128(rng, n: int) -> None:
    """Every 128-bit kernel through the public ``int128`` functions that call it."""
    from dodb.operators.expressions import int128 as i128

    a = i128.I128(rng.integers(-2**63, 2**63, n, dtype=np.int64), rng.integers(0, 2**64, n, dtype=np.uint64))
    b = i128.I128(rng.integers(-3, 3, n, dtype=np.int64), rng.integers(0, 2**64, n, dtype=np.uint64))
    with kernel_backend_scope("compiled"):
        i128.add(a, b), i128.sub(a, b), i128.neg(a), i128.absolute(a), i128.mul(a, b), i128.mul_pow10(a, 2)
        i128.less(a, b), i128.equal(a, b), i128.compare(a, b), i128.where(rng.random(n) < 0.5, a, b)
        i128.in_bounds(a, 10**18), i128.divmod_small(i128.absolute(a), 10), i128.to_i64(a)
        i128.mul64(a.hi, b.hi)


def _exercise_strings() -> None:
    """Every string predicate kernel once (compiled backend): compare, against a constant,
    LIKE (every step kind, two bitset words), find, first_match."""
    from dodb.operators.expressions import strings

    n, w = 5, 70
    mat = np.zeros((n, w), np.uint8)
    lengths = np.arange(n, dtype=np.int64)
    with kernel_backend_scope("compiled"):
        strings.compare(mat, lengths, mat[:, :9], lengths)
        strings.compare_const(mat, lengths, b"abc")
        strings.like(mat, lengths, b"a_%b")
        strings.first_match(strings.find(mat, lengths, b"ab"))


def _exercise_expressions() -> None:
    """The AND/OR kernel (a predicate too large for one program runs node by node) and
    predicate programs through the evaluator, and the
    global aggregate's totals through ``group_by``."""
    from dodb.operators import expressions as E
    from dodb.operators.expressions.fused import fused_logic
    from dodb.operators.expressions.types import parse_type
    from dodb.operators.expressions.value import Val
    from dodb.operators.table import from_arrow

    truth = Val(parse_type("BOOLEAN"), np.array([True, False, True]), np.ones(3, bool), np.zeros(3, np.int32))
    with kernel_backend_scope("compiled"):
        fused_logic(True, truth, truth)

    import pyarrow as pa
    t = pa.table({"a": pa.array([1, None, 3], pa.int64()), "d": pa.array([1, 2, None], pa.decimal128(15, 2))})
    pt = from_arrow(t, stability=1, widths={}, is_real=np.array([True, True, False]))
    with kernel_backend_scope("compiled"):
        E.evaluate(pt, {"x": "(a < 2 AND d >= 1.5) OR a = d"})
    from dodb.operators import Agg, ExecContext, group_by  # the one-pass global totals
    f = from_arrow(pa.table({"d": t["d"], "f": pa.array([1.5, None, 2.0])}), stability=1, widths={},
                   is_real=np.array([True, True, False]))
    with kernel_backend_scope("compiled"):
        group_by(f, [], [Agg("sum", "d", "s"), Agg("sum", "f", "g")], ctx=ExecContext(mode="do"))
        group_by(f, ["f"], [Agg("sum", "d", "s")], ctx=ExecContext(mode="do"))  # per-run sums (grouped_sums)
        E.evaluate(pt, {"m": "ln(a) + pow(a, d) + atan2(d, a)"})  # the C library's functions (compiled_libm)


def _kernels() -> list:
    return [v for mod in (compiled, compiled_sort, compiled_int128, compiled_strings, compiled_expr, compiled_reduce,
                                compiled_libm, compiled_program) for v in vars(mod).values()
            if isinstance(v, CPUDispatcher)]


def _inlined(d) -> bool:
    """``inline="always"`` helpers are inlined into their callers' numba IR: no code of their own."""
    return d.targetoptions.get("inline") == "always"


@pytest.fixture(scope="module")
def kernel_ir() -> dict[str, list[str]]:
    """The IR of every signature the exercises reach: compiled in this process, or kept by the
    process that compiled it (``dodb warmup``; dodb/oblivious/ir_cache.py), or else — for the
    kernels with a signature nobody kept — compiled again here without the cache (and kept
    for the next run)."""
    _exercise()
    _exercise_strings()
    _exercise_expressions()
    kernels = _kernels()
    found: dict[str, list[str]] = {}
    missing = []
    for d in kernels:
        irs = [ir_cache.in_process(d, sig) or ir_cache.load(d, sig) for sig in d.signatures]
        kept = [ir for ir in ir_cache.load_all(d) if ir not in irs]
        if not all(irs) or (not _inlined(d) and not irs + kept):
            missing.append(d)  # a signature compiled by another process that kept no IR
        else:
            found[d.py_func.__name__] = irs + kept
    if missing:  # compile those again without numba's cache (their callees come along)
        found.update(fresh_ir(missing))
        if any(not found.get(d.py_func.__name__) for d in kernels if not _inlined(d)):
            found = fresh_ir(kernels)  # a helper no recompiled caller reached: everything
    ir_cache.save(kernels)  # what this process compiled, for the next run
    return found


def test_kept_ir_is_the_ir_of_the_source_it_was_kept_for(tmp_path, monkeypatch):
    """An entry is found only for the same kernel sources, versions and CPU: change a kernel
    module and the kept IR is not used (the lint compiles again)."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    ir_cache._stamp.cache_clear()
    try:
        d = compiled.checksum_words
        d(np.arange(6, dtype=np.uint64), 6)
        sig = d.signatures[0]
        monkeypatch.setattr(ir_cache, "in_process", lambda d, s: "define void @f() { ret void }")
        assert ir_cache.save([d]) >= 1 and ir_cache.load(d, sig) == "define void @f() { ret void }"
        monkeypatch.setattr(ir_cache, "KERNEL_MODULES", ir_cache.KERNEL_MODULES[:-1])  # other sources
        ir_cache._stamp.cache_clear()
        assert ir_cache.load(d, sig) is None
    finally:
        ir_cache._stamp.cache_clear()


def test_every_kernel_was_compiled(kernel_ir):
    names = {d.py_func.__name__ for d in _kernels() if not _inlined(d)}
    assert names <= set(kernel_ir)
    assert all(kernel_ir[name] for name in names), [name for name in names if not kernel_ir[name]]


def test_compiled_kernels_have_no_data_dependent_branch_or_address(kernel_ir):
    problems = [f"{name}: {f}" for name, irs in kernel_ir.items() for ir in irs for f in lint_ir(ir)]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- planted leaks


@njit(**OPTS)
def leak_early_exit(a, out, n):
    for i in range(n):
        if a[ix(i)] > 7:  # branch on a loaded value: stops at the first large one
            break
        out[ix(i)] = a[ix(i)]


@njit(**OPTS)
def leak_gather(a, b, out, n):
    for i in range(n):
        out[ix(i)] = b[ix(a[ix(i)])]  # index computed from data


@njit(**OPTS)
def leak_scatter(a, out, n):
    for i in range(n):
        out[ix(a[ix(i)])] = np.uint64(i)


@njit(**OPTS)
def leak_data_loop(a, out, n):
    for i in range(n):
        j = 0
        while j < a[ix(i)]:  # trip count from data
            out[ix(j)] += np.uint64(3)
            j += 1


@njit(**OPTS)
def leak_pointer_select(a, b, c, n):
    for i in range(n):
        src = b
        if a[ix(i)] > 0:  # which array is read depends on data
            src = c
        a[ix(i)] = src[ix(i)]


@njit(**OPTS)
def leak_program_indexed_by_data(program, a, out, n):
    for i in range(n):
        out[ix(i)] = program[ix(a[ix(i)])]  # the public array read at a data-dependent slot


@njit(**OPTS)
def leak_branch_on_other_array(code, a, out, n):
    for j in range(code.shape[0]):  # the same interpreter loop, over an array not named program
        if code[ix(j)] == 1:
            for i in range(n):
                out[ix(i)] += a[ix(i)]


@njit(**OPTS)
def program_interpreter(program, a, out, n):
    for j in range(program.shape[0]):  # branches on the public program: allowed
        if program[ix(j)] == 1:
            for i in range(n):
                out[ix(i)] += a[ix(i)]
        else:
            for i in range(n):
                out[ix(i)] ^= a[ix(i)]


@njit(**OPTS)
def branch_free(a, b, out, n):
    for i in range(n):
        m = np.uint64(0) - np.uint64(a[ix(i)] > b[ix(i)])
        out[ix(i)] = b[ix(i)] ^ ((a[ix(i)] ^ b[ix(i)]) & m)
        out[ix(i)] += min(a[ix(i)], b[ix(i)])  # select on data: allowed


def _ir(fn, *args) -> str:
    fn(*args)
    return fn.inspect_llvm(fn.signatures[0])


U = np.arange(8, dtype=np.uint64)
PLANTED = {
    "early exit": (lambda: _ir(leak_early_exit, U.copy(), U.copy(), 8), "branch"),
    "gather": (lambda: _ir(leak_gather, U.copy(), U.copy(), U.copy(), 8), "data index"),
    "scatter": (lambda: _ir(leak_scatter, U.copy(), U.copy(), 8), "data index"),
    "data-dependent loop": (lambda: _ir(leak_data_loop, U.copy(), U.copy(), 8), "branch"),
    "pointer select": (lambda: _ir(leak_pointer_select, U.copy(), U.copy(), U.copy(), 8), ""),
    "program read at a data index": (lambda: _ir(leak_program_indexed_by_data, U.copy(), U.copy(), U.copy(), 8),
                                     "data index"),
    "branch on an array not named program": (lambda: _ir(leak_branch_on_other_array, U.copy(), U.copy(), U.copy(), 8),
                                             "branch"),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_leak_is_flagged(name):
    make, word = PLANTED[name]
    findings = lint_ir(make())
    assert findings, f"IR lint missed the planted leak: {name}"
    assert any(word in f.rule for f in findings), [str(f) for f in findings]


def test_branch_free_kernel_passes():
    assert not lint_ir(_ir(branch_free, U.copy(), U[::-1].copy(), U.copy(), 8))


def test_branches_on_the_public_program_pass():
    """Loads from the parameter named ``program`` (compiled_program.run_program's) are public."""
    assert not lint_ir(_ir(program_interpreter, U.copy() % 2, U.copy(), U.copy(), 8))
