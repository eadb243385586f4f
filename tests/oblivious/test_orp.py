"""The ORP sort path (docs/design.md §Sorting by random permutation): correctness, the
permutation's uniformity, overflow, traces simulated from public sizes and labels, and the
comparison phase's pattern being independent of the data (with planted leaks)."""
from __future__ import annotations

import itertools
import math
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba.core.registry import CPUDispatcher
from scipy import stats

from dodb.oblivious import orp_kernels
from dodb.oblivious.orp import (
    _random_words,
    buckets_for,
    choose_bucket_size,
    comparison_order,
    comparison_steps,
    orp_delta,
    orp_permute,
    orp_sort,
    overflow_probability,
    sort_with,
    tie_probability,
)
from dodb.oblivious.rng import new_rng, seeded_mode
from dodb.oblivious.sort import oblivious_sort
from dodb.oblivious.trace import Trace

U64 = np.uint64


@pytest.fixture(autouse=True)
def _seeded():
    with seeded_mode():
        yield


def _reference(keys: list[np.ndarray], descending: bool) -> np.ndarray:
    """Stable order by the key words (most significant first), via np.lexsort."""
    n = keys[0].shape[0]
    cols = [~k if descending else k for k in keys]
    return np.lexsort([np.arange(n)] + cols[::-1])


# --------------------------------------------------------------------------- correctness

key_word = st.one_of(st.integers(0, 3), st.integers(0, 2**64 - 1), st.sampled_from([0, 2**63, 2**64 - 1]))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 140), st.integers(1, 2), st.booleans(), st.sampled_from([2, 4, 8, 16, 64, None]),
       st.integers(0, 2**32), st.data())
def test_orp_sort_equals_lexsort_and_the_network(n, words, descending, Z, seed, data):
    keys = [np.array(data.draw(st.lists(key_word, min_size=n, max_size=n)), dtype=U64) for _ in range(words)]
    g = np.random.default_rng(seed)
    pay = [g.integers(-2**62, 2**62, n), g.integers(0, 255, (n, 3)).astype(np.uint8), np.arange(n)]
    got_k, got_p = orp_sort(keys, pay, descending=descending, rng=new_rng(seed), bucket_size=Z)
    order = _reference(keys, descending)
    for a, b in zip(got_k, keys):
        np.testing.assert_array_equal(a, b[order])
    for a, b in zip(got_p, pay):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b[order])  # payload = position too: stable
    net_k, net_p = oblivious_sort(keys, pay, descending=descending)
    for a, b in zip(got_k + got_p, net_k + net_p):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 31, 33, 1000, 4097])
def test_orp_sort_sizes_and_duplicates(n):
    g = np.random.default_rng(n)
    k = g.integers(0, 7, n).astype(U64)
    (sk,), (sp,) = orp_sort([k], [np.arange(n)], rng=new_rng(n))
    order = np.argsort(k, kind="stable")
    np.testing.assert_array_equal(sk, k[order])
    np.testing.assert_array_equal(sp, order)


def test_sort_with_switch():
    k = np.array([3, 1, 2, 1], dtype=U64)
    for method in ("network", "orp"):
        (sk,), (sp,) = sort_with(method, [k], [np.arange(4)])
        assert sk.tolist() == [1, 1, 2, 3] and sp.tolist() == [1, 3, 2, 0]
    with pytest.raises(ValueError, match="unknown sort method"):
        sort_with("quick", [k])


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least one key"):
        orp_sort([])
    with pytest.raises(ValueError, match="same length"):
        orp_sort([np.zeros(3, U64)], [np.zeros(2)])
    with pytest.raises(ValueError, match="power of two"):
        orp_sort([np.zeros(3, U64)], bucket_size=12)
    with pytest.raises(ValueError, match="at least 6 bytes"):  # 3 rows: 2 merge passes of 3 steps
        orp_sort([np.zeros(3, U64)], record=np.zeros(5, np.uint8))


# --------------------------------------------------------------------------- the permutation


def _permutations(n: int, Z: int, runs: int, seed: int) -> tuple[Counter, int]:
    rng = new_rng(seed)
    rows = np.arange(n, dtype=U64)[None, :]
    seen: Counter = Counter()
    overflows = 0
    for _ in range(runs):
        out, _ = orp_permute(rows, n, rng, Z, Trace(), 0)
        if out is None:
            overflows += 1
            continue
        seen[tuple(out[0].tolist())] += 1
    return seen, overflows


@pytest.mark.parametrize("n,Z,runs", [(4, 4, 2400), (5, 8, 3600)])
def test_permutation_is_uniform(n, Z, runs):
    """Chi-square over all n! orders (these sizes cannot overflow: n <= Z)."""
    assert buckets_for(n, Z) == 2  # one MergeSplit level runs
    seen, overflows = _permutations(n, Z, runs, seed=7)
    assert overflows == 0
    counts = [seen.get(p, 0) for p in itertools.permutations(range(n))]
    assert sum(counts) == runs
    assert stats.chisquare(counts).pvalue > 1e-4, counts


def test_positions_are_uniform_over_several_levels():
    """n = 24, Z = 16: 4 buckets, 2 levels; every row is equally likely at every position."""
    n, Z, runs = 24, 16, 2400
    assert buckets_for(n, Z) == 4
    rng = new_rng(11)
    rows = np.arange(n, dtype=U64)[None, :]
    where = np.zeros((n, n), dtype=np.int64)
    done = 0
    for _ in range(runs):
        out, _ = orp_permute(rows, n, rng, Z, Trace(), 0)
        if out is not None:
            where[out[0].astype(np.int64), np.arange(n)] += 1
            done += 1
    assert done >= runs * (1 - 2 * overflow_probability(n, Z)) - 30
    assert stats.chisquare(where.reshape(-1)).pvalue > 1e-4


def test_permutation_is_not_uniform_without_the_final_bucket_sort(monkeypatch):
    """Planted: skip the bucket sort; rows keep their routed order and the chi-square fails."""
    monkeypatch.setattr("dodb.oblivious.orp.bucket_sort_stage", lambda *a: None)
    with pytest.raises(AssertionError):
        test_permutation_is_uniform(5, 8, 3600)


# --------------------------------------------------------------------------- overflow and δ


def test_overflow_falls_back_to_the_network_and_stays_correct():
    n, Z = 600, 4  # capacity 4 with 2 reals per initial bucket: overflows almost surely
    g = np.random.default_rng(1)
    k = g.integers(0, 50, n).astype(U64)
    t = Trace()
    (sk,), (sp,) = orp_sort([k], [np.arange(n)], rng=new_rng(3), bucket_size=Z, trace=t)
    assert [e.sizes for e in t.events if e.kind == "orp:overflow"] == [(1,)]
    assert any(e.kind == "orp:fallback" for e in t.events)
    assert any(e.kind.startswith("sort:") for e in t.events)  # the network ran
    np.testing.assert_array_equal(sp, np.argsort(k, kind="stable"))
    np.testing.assert_array_equal(sk, np.sort(k))


@pytest.mark.parametrize("n,Z", [(256, 16), (24, 8), (64, 8)])
def test_overflow_rate_is_below_the_bound(n, Z):
    runs = 400
    _, overflows = _permutations(n, Z, runs, seed=n + Z)
    bound = overflow_probability(n, Z)
    assert overflows / runs <= bound + 3 * math.sqrt(bound * (1 - bound) / runs) + 1e-9, (overflows, bound)


@pytest.mark.parametrize("N,p,Z", [(16, 0.5, 8), (64, 0.125, 8), (1024, 2**-6, 16), (2**14, 2**-8, 128)])
def test_binomial_tail_bound(N, p, Z):
    from dodb.oblivious.orp import _binomial_tail_above

    exact = stats.binom.sf(Z, N, p)
    got = _binomial_tail_above(N, p, Z)
    assert exact <= got <= 2.5 * exact + 1e-300


def test_bound_is_below_chernoff_and_delta_is_small():
    for n in (100, 2**16, 2**20, 2**24):
        for Z in (16, 64, 256, 512):
            B = buckets_for(n, Z)
            chernoff = (B.bit_length() - 1) * B * (math.e / 4) ** (Z / 2)
            assert overflow_probability(n, Z) <= min(1.0, chernoff) * (1 + 1e-6)
        Z = choose_bucket_size(n)
        assert orp_delta(n, Z) <= 2.0**-64 < orp_delta(n, Z // 2)
    assert tie_probability(2**22) < 2.0**-84


# --------------------------------------------------------------------------- traces


def _simulated_trace(n: int, Z: int, seed: int) -> list[tuple[str, tuple]]:
    """The ORP's trace from ``(n, Z)`` and the random labels alone -- no row is read."""
    B = buckets_for(n, Z)
    if B == 1:
        Z = max(2, 1 << max(0, n - 1).bit_length())
    h, N = (Z // 2 if B > 1 else Z), B * Z
    labels = _random_words(new_rng(seed), N)
    slot = (np.arange(n) // h) * Z + np.arange(n) % h  # real row e starts at bucket e // h, slot e % h
    lab = labels[slot]
    out = [("orp:buckets", (n, B, Z))]
    levels = B.bit_length() - 1
    over = False
    for i in range(levels):
        out.append(("orp:level", (N, Z, i)))
        group = (slot // Z) >> (i + 1)
        key = group * (2 << i) + (lab & U64((2 << i) - 1)).astype(np.int64)
        over |= bool(np.bincount(key).max(initial=0) > Z)
    if levels:
        out.append(("orp:overflow", (int(over),)))
        if over:
            return out
    out.append(("orp:bucket_sort", (N, Z)))
    loads = np.bincount((lab & U64(B - 1)).astype(np.int64), minlength=B)
    return out + [("orp:loads", tuple(loads.tolist()))]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 300), st.sampled_from([4, 8, 16, 32]), st.integers(0, 2**32), st.integers(0, 2**32))
def test_trace_is_simulated_from_public_sizes_and_labels(n, Z, seed, data_seed):
    g = np.random.default_rng(data_seed)
    rows = g.integers(0, 2**63, (2, n)).astype(U64)
    t = Trace()
    orp_permute(rows, n, new_rng(seed), Z, t, 0)
    assert [(e.kind, e.sizes) for e in t.events] == _simulated_trace(n, Z, seed)


def test_coupled_neighbours_have_the_same_orp_trace():
    """The audit's coupling (same randomness): the whole ORP phase's view is identical."""
    n = 500
    g = np.random.default_rng(0)
    a = g.integers(0, 10, n).astype(U64)
    b = a.copy()
    b[17] = 2**64 - 1  # one row changed
    from dodb.audit.view import CountingSource

    ta, tb = Trace(), Trace()
    ra, rb = CountingSource(new_rng(5)), CountingSource(new_rng(5))
    orp_sort([a], [a], rng=ra, trace=ta)
    orp_sort([b], [b], rng=rb, trace=tb)
    assert ta == tb and any(e.kind == "orp:loads" for e in ta.events)
    assert ra.requests == rb.requests and len(ra.requests) == 2  # the label and the second word, sized by N


# --------------------------------------------------------------------------- the comparison phase


def _pattern_counts(keys: list[list[int]], *, tag: bool = True, permute: bool = True) -> Counter:
    """Exact distribution of the comparison sort's recorded outcomes over every input order.

    ``permute``: the rows enter in each of the ``n!`` orders (what the ORP makes uniform);
    otherwise only in their own order (the comparison sort without the ORP).  ``tag``:
    the original position is the last key word (keys made unique).
    """
    n = len(keys[0])
    words = [np.array(k, dtype=U64) for k in keys] + ([np.arange(n, dtype=U64)] if tag else [])
    orders = itertools.permutations(range(n)) if permute else [tuple(range(n))]
    counts: Counter = Counter()
    for sigma in orders:
        rec = np.empty(max(1, comparison_steps(n)), dtype=np.uint8)
        comparison_order([w[list(sigma)] for w in words], rec)
        counts[rec.tobytes()] += 1
    return counts


INPUTS = [
    [[0, 1, 2, 3, 4]],
    [[7, 7, 7, 7, 7]],
    [[2**64 - 1, 0, 2**64 - 1, 5, 0]],
    [[1, 1, 0, 0, 1], [9, 3, 9, 3, 2**63]],  # two key words with partial ties
]


def test_comparison_pattern_distribution_does_not_depend_on_the_data():
    simulated = _pattern_counts([[0, 1, 2, 3, 4]])  # what a simulator knowing only n draws from
    assert len(simulated) > 1
    for keys in INPUTS:
        assert _pattern_counts(keys) == simulated, keys


def test_planted_leak_comparison_sort_without_the_orp_is_caught():
    dists = {str(k): _pattern_counts(k, permute=False) for k in INPUTS}
    assert len({tuple(sorted(d.items())) for d in dists.values()}) > 1


def test_planted_leak_keys_not_made_unique_is_caught():
    dists = [_pattern_counts(k, tag=False) for k in INPUTS[:3]]
    assert dists[0] != dists[1] or dists[1] != dists[2]


def _sampled_patterns(keys: np.ndarray, runs: int, seed: int, bypass: bool = False) -> Counter:
    n = keys.shape[0]
    rng = new_rng(seed)
    seen: Counter = Counter()
    for _ in range(runs):
        rec = np.empty(comparison_steps(n), dtype=np.uint8)
        if bypass:  # planted: the comparison sort on the input order
            comparison_order([keys, np.arange(n, dtype=U64)], rec)
        else:
            orp_sort([keys], rng=rng, bucket_size=8, record=rec)
        seen[rec.tobytes()] += 1
    return seen


def _same_distribution(a: Counter, b: Counter) -> bool:
    cells = sorted(set(a) | set(b))
    table = np.array([[a.get(c, 0) for c in cells], [b.get(c, 0) for c in cells]])
    return stats.chi2_contingency(table).pvalue > 1e-4


def test_end_to_end_comparison_pattern_is_independent_of_the_data():
    """orp_sort on two different inputs (n = 5, one MergeSplit level): same pattern law."""
    a = np.array([0, 1, 2, 3, 4], dtype=U64)
    b = np.array([9, 9, 0, 9, 0], dtype=U64)
    assert _same_distribution(_sampled_patterns(a, 1500, 1), _sampled_patterns(b, 1500, 2))
    assert not _same_distribution(_sampled_patterns(a, 300, 1, bypass=True), _sampled_patterns(b, 300, 2, bypass=True))


def _switch_counts(keys: np.ndarray, runs: int, seed: int, bypass: bool = False) -> list[int]:
    """Per run of ``orp_sort`` (n = 64, Z = 16: 8 buckets, 3 levels): how often consecutive merge
    steps switch between the two runs -- one scalar of the comparison pattern (the count of
    right-hand takes is always n/2 per pass); overflowed runs are skipped."""
    n = keys.shape[0]
    rng = new_rng(seed)
    out = []
    for _ in range(runs):
        rec = np.zeros(comparison_steps(n), dtype=np.uint8)
        if bypass:
            comparison_order([keys, np.arange(n, dtype=U64)], rec)
        else:
            t = Trace()
            orp_sort([keys], rng=rng, bucket_size=16, trace=t, record=rec)
            if any(e.kind == "orp:fallback" for e in t.events):
                continue
        out.append(int(np.count_nonzero(rec[1:] != rec[:-1])))
    return out


def test_comparison_pattern_over_several_levels_is_independent_of_the_data():
    sorted_keys = np.arange(64, dtype=U64)
    few_values = (np.arange(64) % 3).astype(U64)[::-1].copy()
    a, b = _switch_counts(sorted_keys, 600, 1), _switch_counts(few_values, 600, 2)
    assert len(a) > 500 and len(b) > 500 and len(set(a)) > 5
    assert stats.ks_2samp(a, b).pvalue > 1e-4
    # planted: without the ORP the two inputs give two fixed, different patterns
    assert _switch_counts(sorted_keys, 1, 0, bypass=True) != _switch_counts(few_values, 1, 0, bypass=True)


def test_planted_leak_no_bucket_sort_is_caught_over_several_levels(monkeypatch):
    """Without the final bucket sort the rows keep their routed (input-derived) order."""
    monkeypatch.setattr("dodb.oblivious.orp.bucket_sort_stage", lambda *a: None)
    with pytest.raises(AssertionError):
        test_comparison_pattern_over_several_levels_is_independent_of_the_data()


# --------------------------------------------------------------------------- lints


def _orp_dispatchers() -> list:
    return [v for v in vars(orp_kernels).values() if isinstance(v, CPUDispatcher)]


def test_orp_kernels_ir_has_no_data_dependent_branch_or_address():
    from .ir_lint import fresh_ir, lint_ir

    orp_sort([np.arange(40, dtype=U64)[::-1].copy()], [np.arange(40)], rng=new_rng(0), bucket_size=8)
    kernels = _orp_dispatchers()
    assert {d.py_func.__name__ for d in kernels} >= {"merge_split_level", "bucket_sort_stage", "_compact_front"}
    ir = fresh_ir(kernels)
    assert all(ir[name] for name in ("merge_split_level", "bucket_sort_stage"))
    problems = [f"{name}: {f}" for name, irs in ir.items() for text in irs for f in lint_ir(text)]
    assert not problems, "\n".join(problems)


def test_ir_lint_flags_the_comparison_sort():
    """The comparison phase depends on the data by design: the IR lint must see it."""
    from dodb.oblivious.orp import _merge_sort_order

    from .ir_lint import fresh_ir, lint_ir

    comparison_order([np.array([3, 1, 2], dtype=U64)])
    findings = [f for text in fresh_ir([_merge_sort_order])["_merge_sort_order"] for f in lint_ir(text)]
    assert findings


def test_source_lint_exemptions_in_orp_are_exactly_the_revealing_lines():
    """Without its ``# lint: public`` comments orp.py is flagged only at the loads, the overflow
    decision, the gathers and the comparison kernel -- the lines §Sorting by random permutation argues for."""
    import pathlib

    from .lint_rules import lint_source

    src = (pathlib.Path(__file__).resolve().parents[2] / "dodb" / "oblivious" / "orp.py").read_text()
    assert not lint_source(src)
    stripped = re.sub(r"#\s*lint: public.*", "", src)
    flagged = {f.text for f in lint_source(stripped)}
    assert flagged, "the lint should see the data-dependent lines"
    fns = {"_merge_sort_order", "orp_permute", "orp_sort"}
    owner = {}
    current = None
    for line in stripped.splitlines():
        m = re.match(r"def (\w+)", line)
        if m:
            current = m.group(1)
        owner[line.strip()] = current
    assert {owner.get(text) for text in flagged} <= fns, flagged
