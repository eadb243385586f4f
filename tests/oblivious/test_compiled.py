"""The compiled kernels (dodb/oblivious/compiled.py) against the numpy reference.

Every public kernel runs on both backends with the same inputs: outputs (values, dtypes,
shapes) and recorded traces must be identical.  Tiny cache blocks make the sort take
every path (blocks, transposed tiles, whole-array stages, block tails, pruned runs).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from dodb.oblivious import (
    Trace,
    compact,
    distribute,
    expand,
    forward_fill,
    oblivious_sort,
    segmented_lex_scan,
    segmented_scan,
)
from dodb.oblivious.backend import kernel_backend, kernel_backend_scope, set_kernel_backend

U64MAX = 2**64 - 1
words = st.one_of(st.integers(0, 3), st.integers(0, U64MAX), st.sampled_from([0, 1, U64MAX, U64MAX - 1, 2**63]))


def both(fn):
    """``fn(trace)`` on the reference and on the compiled backend: (result, trace) each."""
    out = {}
    for name in ("numpy", "compiled"):
        with kernel_backend_scope(name):
            t = Trace()
            out[name] = (fn(t), t)
    return out["numpy"], out["compiled"]


def assert_same(a, b, path="out"):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (path, a.dtype, b.dtype, a.shape, b.shape)
    assert a.tobytes() == b.tobytes(), f"{path}: {a!r} != {b!r}"


def check(fn):
    (ra, ta), (rb, tb) = both(fn)
    assert_same(ra, rb)
    assert ta == tb, f"traces differ:\n{ta.events}\n{tb.events}"


@pytest.fixture(params=[(2, 2), (4, 2), (16, 4), (64, 8), (1 << 16, 1 << 12)], ids=lambda b: f"block{b[0]}-{b[1]}")
def block(request, monkeypatch):
    """Cache block and the compiled network's inner block (sub-blocks smaller than blocks)."""
    import dodb.oblivious.sort as sort_mod

    monkeypatch.setattr(sort_mod, "BLOCK", request.param[0])
    monkeypatch.setattr(sort_mod, "SUB_BLOCK", request.param[1])
    return request.param


@st.composite
def sort_inputs(draw, max_n=80):
    n = draw(st.integers(0, max_n))
    nk = draw(st.integers(1, 3))
    keys = [np.array(draw(st.lists(words, min_size=n, max_size=n)), dtype=np.uint64) for _ in range(nk)]
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    kinds = draw(st.lists(st.sampled_from(["i8", "i4x3", "bytes", "bool", "f8"]), max_size=3))
    pay = []
    for kind in kinds:
        if kind == "i8":
            pay.append(rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64))
        elif kind == "i4x3":
            pay.append(rng.integers(-2**31, 2**31 - 1, (n, 3), dtype=np.int32))
        elif kind == "bytes":
            pay.append(np.array([bytes(rng.integers(0, 256, 11, dtype=np.uint8)) for _ in range(n)], dtype="S11"))
        elif kind == "bool":
            pay.append(rng.random(n) < 0.5)
        else:
            pay.append(rng.standard_normal(n))
    return keys, pay


@given(sort_inputs(), st.booleans(), st.booleans())
def test_sort_matches_reference(block, inp, descending, unique):
    keys, pay = inp
    if unique:  # the caller contract: distinct keys below all-ones
        keys = [np.arange(len(keys[0]), dtype=np.uint64)[::-1].copy()] + keys[1:]
    check(lambda t: oblivious_sort(keys, pay, descending=descending, unique=unique, trace=t))


@given(st.lists(st.integers(0, 2**20 - 1), max_size=80), st.booleans())
def test_packed_sort_matches_reference(block, values, descending):
    k = np.array(values, dtype=np.uint64)
    check(lambda t: oblivious_sort([k], [np.arange(len(values))], key_bits=20, descending=descending, trace=t))


@pytest.mark.parametrize("n", [255, 256, 257, 700])
def test_sort_larger_sizes(block, n):
    # sizes around a power of two with many blocks: every pruning boundary is hit
    rng = np.random.default_rng(n)
    keys = [rng.integers(0, 5, n).astype(np.uint64), rng.integers(0, 2**64, n, dtype=np.uint64)]
    flag = rng.random(n) < 0.5
    check(lambda t: oblivious_sort(keys, [np.arange(n), flag], trace=t))
    check(lambda t: oblivious_sort(keys[:1], [np.arange(n)], key_bits=3, trace=t))


flags = st.lists(st.booleans(), max_size=90)


@given(flags, st.integers(0, 2**32), st.sampled_from([None, 1, 2, 8]))
def test_compact_matches_reference(marked, seed, blk):
    m = np.array(marked, dtype=bool)
    n = m.shape[0]
    if blk is not None:
        m = m[: n - n % blk]
        n = m.shape[0]
    rng = np.random.default_rng(seed)
    pay = [rng.integers(0, 2**62, n), np.array([b"xy%d" % i for i in range(n)], dtype="S6"), rng.random((n, 2))]
    check(lambda t: compact(m, pay, block=blk, trace=t))
    check(lambda t: compact(m, [], block=blk, trace=t))


@pytest.mark.parametrize("threads", [2, 3, 5])
@pytest.mark.parametrize("bins, span", [(2, 4), (3, 4), (7, 16), (64, 1024)])
def test_binned_compaction_on_threads_matches_reference(monkeypatch, bins, span, threads):
    """Large binned compactions run contiguous groups of bins on their own threads
    (compact._run_compiled_parts): the same bytes and trace as the reference, odd bin counts
    and more threads than bins too."""
    import importlib

    from dodb.oblivious.threads import set_threads

    compact_mod = importlib.import_module("dodb.oblivious.compact")  # the package exports the function
    monkeypatch.setattr(compact_mod, "PARALLEL_MIN_ROWS", 1)
    previous = set_threads(threads)
    try:
        n = bins * span
        rng = np.random.default_rng(n)
        m = rng.random(n) < 0.4
        pay = [rng.integers(0, 2**62, n), np.array([b"r%d" % i for i in range(n)], dtype="S7"), rng.random((n, 3)),
               rng.random(n) < 0.5]
        check(lambda t: compact(m, pay, block=span, trace=t))
        called = []
        real = compact_mod._run_compiled
        monkeypatch.setattr(compact_mod, "_run_compiled", lambda *a: called.append(a[4]) or real(*a))
        with kernel_backend_scope("compiled"):
            compact(m, pay, block=span)
        assert len(called) == min(threads, bins) and sum(called) == n  # one compaction per group of bins
    finally:
        set_threads(previous)


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
@pytest.mark.parametrize("n", [1000, 1023])
def test_compaction_split_by_words_matches_reference(monkeypatch, threads, n):
    """A compaction (and a distribution) with many payload words splits its word columns
    between threads (compact.word_groups): every slot's bytes (unmarked ones included) and
    the trace are the reference's, whatever the count; with two threads or more it does split."""
    import importlib

    from dodb.oblivious import threads as threads_mod

    compact_mod = importlib.import_module("dodb.oblivious.compact")
    monkeypatch.setattr(compact_mod, "PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(threads_mod, "_chosen", [threads])
    rng = np.random.default_rng(n * threads)
    m = rng.random(n) < 0.35
    pay = [rng.integers(0, 2**62, n), np.array([b"w%d" % i for i in range(n)], dtype="S12"), rng.random((n, 3)),
           rng.random(n) < 0.5, rng.integers(-9, 9, n).astype(np.int32)]
    check(lambda t: compact(m, pay, trace=t))
    k = int(m.sum())
    live = np.arange(n) < k
    target = np.sort(rng.choice(n, size=k, replace=False)).astype(np.int64)
    check(lambda t: distribute(live, np.concatenate([target, np.zeros(n - k, np.int64)]), pay, trace=t))
    groups = []
    real = compact_mod._rounds_on_words
    monkeypatch.setattr(compact_mod, "_rounds_on_words", lambda *a: groups.append(a[3].shape[0]) or real(*a))
    with kernel_backend_scope("compiled"):
        compact(m, pay)
    assert len(groups) == min(threads, sum(groups) // 2) and sum(groups) >= 4


@given(flags, st.data())
def test_distribute_matches_reference(live_flags, data):
    n = len(live_flags)
    k = sum(live_flags)
    tg = sorted(data.draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=k, max_size=k, unique=True))) if n else []
    live = np.zeros(n, bool)
    live[:k] = True
    target = np.zeros(n, np.int64)
    target[:k] = tg
    check(lambda t: distribute(live, target, [np.arange(n) * 7, np.arange(n) % 2 == 0], trace=t))


@given(st.lists(st.integers(0, 4), max_size=50), st.integers(0, 5))
def test_expand_matches_reference(counts, extra):
    d = np.array(counts, dtype=np.int64)
    m = int(d.sum()) + extra
    check(lambda t: expand(d, [np.arange(d.shape[0]) + 100, np.array(["s%d" % i for i in range(len(counts))], "S4")],
                           m, trace=t))


@given(flags, st.integers(0, 2**32))
def test_forward_fill_matches_reference(has, seed):
    h = np.array(has, dtype=bool)
    v = np.random.default_rng(seed).integers(-50, 50, (h.shape[0], 2))
    check(lambda t: forward_fill(h, [v, h.copy()], trace=t))


@st.composite
def segments(draw):
    n = draw(st.integers(0, 70))
    starts = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return n, starts, np.random.default_rng(draw(st.integers(0, 2**32)))


VALUE_KINDS = ["int64", "uint64", "float64", "int32", "bool", "extreme"]


def scan_values(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "int64":
        return rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    if kind == "uint64":
        return rng.integers(0, 2**64, n, dtype=np.uint64)
    if kind == "float64":
        return rng.standard_normal(n) * 1e6
    if kind == "int32":
        return rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32)
    if kind == "bool":
        return rng.random(n) < 0.5
    return rng.choice(np.array([0, 1, U64MAX, 2**63], dtype=np.uint64), n)


@given(segments(), st.sampled_from(["sum", "count", "min", "max", "first"]), st.booleans(),
       st.sampled_from(VALUE_KINDS))
def test_segmented_scan_matches_reference(seg, op, reverse, kind):
    n, starts, rng = seg
    values = scan_values(kind, n, rng)
    if kind == "bool" and op in ("sum", "min", "max"):
        values = values.astype(np.int64)
    check(lambda t: segmented_scan(values, starts, op, reverse=reverse, trace=t))


@given(segments(), st.sampled_from(["min", "max"]), st.booleans(), st.integers(1, 3))
def test_lex_scan_matches_reference(seg, op, reverse, nw):
    n, starts, rng = seg
    ws = [rng.choice(np.array([0, 1, 2, U64MAX], dtype=np.uint64), n) for _ in range(nw)]
    pay = [np.arange(n), np.array([b"v%d" % i for i in range(n)], dtype="S9")]
    check(lambda t: segmented_lex_scan(ws, starts, op, payload=pay, reverse=reverse, trace=t))


@given(st.integers(1, 60), st.sampled_from(["i8", "bool", "u1x25", "i4x3", "f8"]), st.integers(0, 2**32))
def test_storage_checksum_matches_reference(n, kind, seed):
    from dodb.storage.canonical import _checksum

    rng = np.random.default_rng(seed)
    a = {"i8": lambda: rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64), "bool": lambda: rng.random(n) < 0.5,
         "u1x25": lambda: rng.integers(0, 256, (n, 25)).astype(np.uint8),
         "i4x3": lambda: rng.integers(-2**31, 2**31 - 1, (n, 3)).astype(np.int32),
         "f8": lambda: rng.standard_normal(n)}[kind]()
    (x, _), (y, _) = both(lambda t: _checksum(a))
    assert x == y
    b = a.copy()
    raw = b.view(np.uint8).reshape(-1)
    raw[rng.integers(0, raw.size)] ^= 1  # one bit flipped (a bool stays 0/1): caught
    with kernel_backend_scope("compiled"):
        assert _checksum(b) != y


def test_backend_switch():
    assert kernel_backend() in ("compiled", "numpy")
    with kernel_backend_scope("numpy"):
        assert kernel_backend() == "numpy"
    with pytest.raises(ValueError):
        set_kernel_backend("fortran")


def test_environment_selects_reference():
    import subprocess
    import sys

    code = "from dodb.oblivious.backend import kernel_backend; print(kernel_backend())"
    env = {"DODB_KERNELS": "numpy", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "numpy"


def test_kernels_run_without_a_writable_cache_directory():
    """With no writable cache folder (a read-only home, say) the kernels must still compile
    and run, uncached, with a warning (oblivious/kernel_cache.py)."""
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    code = ("import warnings, numpy as np\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    from dodb.oblivious import compiled, segmented_scan\n"
            "print(compiled._OPTS['cache'], any('NUMBA_CACHE_DIR' in str(x.message) for x in w))\n"
            "print(segmented_scan(np.arange(6), np.array([1, 0, 0, 1, 0, 0], bool), 'sum').tolist())\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    # the per-user cache folder cannot be made (its parent is a file, which even root cannot write into)
    env.update(XDG_CACHE_HOME="/dev/null/cache", DODB_KERNELS="compiled",
               PYTHONPATH=str(root) + os.pathsep + env.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["False True", "[0, 1, 3, 3, 7, 12]"]


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
@pytest.mark.parametrize("n", [1000, 1025])
def test_sort_threads_do_not_change_the_result(monkeypatch, threads, n):
    """The compiled network split over threads (blocks, and slices of whole-array stages)
    gives the reference's rows and trace; small blocks make every split path run."""
    import dodb.oblivious.sort as sort_mod
    from dodb.oblivious import threads as threads_mod

    monkeypatch.setattr(sort_mod, "BLOCK", 64)
    monkeypatch.setattr(sort_mod, "SUB_BLOCK", 16)
    monkeypatch.setattr(threads_mod, "_chosen", [threads])
    rng = np.random.default_rng(n + threads)
    keys = [rng.integers(0, 7, n).astype(np.uint64), rng.integers(0, 3, n).astype(np.uint64)]
    flag = rng.random(n) < 0.5
    for nk in (1, 2):
        check(lambda t: oblivious_sort(keys[:nk], [np.arange(n), flag], trace=t))
    check(lambda t: oblivious_sort(keys[:1], [np.arange(n)], key_bits=3, descending=True, trace=t))


def test_sort_default_blocks_several_blocks():
    """Default BLOCK / SUB_BLOCK with more than one block and whole-array stage pairs."""
    n = (1 << 17) + 3
    rng = np.random.default_rng(5)
    k = rng.integers(0, 2**40, n).astype(np.uint64)
    check(lambda t: oblivious_sort([k], [np.arange(n)], key_bits=40, trace=t))


def test_lookup_kernel_stores_every_lane():
    """The machine code of ``lookup_rows`` has no masked store (``vpmaskmovq``, or AVX-512's
    ``vmovdqu64 … {%k}`` to memory): LLVM once vectorised ``msk[j] &= 0 - (key == v)`` into
    one, whose lanes were the private key comparisons (docs/design.md §Address audit).
    Compiled here for this CPU with the engine's options, and run against a plain loop."""
    import re

    from numba import njit

    from dodb.oblivious import compiled
    from dodb.oblivious.compiled import _OPTS

    kernel = njit(**{**_OPTS, "cache": False})(compiled.lookup_rows.py_func)
    rng = np.random.default_rng(3)
    n, k, nkw, words = 64, 9, 2, 3
    LW = rng.integers(0, 4, n * nkw).astype(np.uint64)
    RWT = rng.integers(0, 4, k * nkw).astype(np.uint64)
    ok, r_ok = rng.integers(0, 2, n).astype(np.uint8), rng.integers(0, 2, k).astype(np.uint8)
    PUBT = rng.integers(1, 1 << 40, k * words).astype(np.uint64)
    OUT, matched = np.zeros(n * words, np.uint64), np.zeros(n, np.uint8)
    kernel(LW, RWT, nkw, ok, r_ok, PUBT, OUT, words, n, k, matched, np.zeros(k, np.uint64), 0, n)
    for i in range(n):  # the plain definition: OR of the public words of every equal, valid pair
        hit = [j for j in range(k) if ok[i] and r_ok[j] and all(LW[w * n + i] == RWT[w * k + j] for w in range(nkw))]
        assert matched[i] == (1 if hit else 0)
        for w in range(words):
            want = np.uint64(0)
            for j in hit:
                want |= PUBT[w * k + j]
            assert OUT[w * n + i] == want
    asm = kernel.inspect_asm(kernel.signatures[0])
    # AT&T syntax: a store's memory operand is last — ``…, (%rdx,%rsi,8) {%k1}`` or ``vpmaskmovq …, (%rdi)``
    masked = [line.strip() for line in asm.splitlines()
              if re.search(r"\)\s*\{%k\d\}", line) or ("maskmov" in line and line.rstrip().endswith(")"))]
    assert not masked, masked[:4]


@given(st.integers(0, 300), st.sampled_from([None, 1, 4, 32]), st.integers(0, 2**32), st.sampled_from(["count", "prefixes"]))
def test_compact_decodes_only_the_chosen_rows(n, span, seed, how):
    """``compact(..., rows=…)`` gives exactly those rows of the full compaction, on both backends
    and on the threaded binned path (the rows are public: a count or per-bin prefixes)."""
    import sys

    from dodb.oblivious.compact import compact
    from dodb.operators.filter import prefix_rows

    compact_mod = sys.modules["dodb.oblivious.compact"]

    rng = np.random.default_rng(seed)
    if span is not None:
        n -= n % span
    marked = rng.random(n) < 0.4
    payload = [rng.integers(0, 2**62, n), rng.integers(0, 2**64, (n, 2), dtype=np.uint64), rng.random(n) < 0.5,
               np.array([b"x%d" % i for i in range(n)], "S6")]
    b = span or max(1, n)
    bins = n // b if n else 0
    counts = marked.reshape(bins, b).sum(axis=1) if bins else np.zeros(0, np.int64)
    keep = np.minimum(counts + rng.integers(0, 3, bins), b) if bins else counts
    rows = int(keep.sum()) if how == "count" or bins <= 1 else prefix_rows(b, keep)
    if how == "count" and span is not None and bins > 1:
        rows = min(rows, b)
    saved = compact_mod.PARALLEL_MIN_ROWS
    compact_mod.PARALLEL_MIN_ROWS = 1  # the threaded binned path on these small inputs too
    try:
        for name in ("numpy", "compiled"):
            with kernel_backend_scope(name):
                live, full = compact(marked, payload, block=span if bins > 1 else None)
                got_live, got = compact(marked, payload, block=span if bins > 1 else None, rows=rows)
            pick = slice(0, rows) if isinstance(rows, int) else rows
            assert got_live.tobytes() == live[pick].tobytes()
            for a, c in zip(got, full):
                assert a.dtype == c.dtype and a.tobytes() == c[pick].tobytes()
    finally:
        compact_mod.PARALLEL_MIN_ROWS = saved
