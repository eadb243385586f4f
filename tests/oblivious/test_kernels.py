"""Property tests of every kernel against a plain numpy reference."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from dodb.oblivious import (
    compact,
    distribute,
    expand,
    forward_fill,
    oblivious_sort,
    segment_ends,
    segmented_lex_scan,
    segmented_scan,
)
from dodb.oblivious.trace import Trace

U64MAX = 2**64 - 1
key_values = st.one_of(
    st.integers(0, 3),  # many ties
    st.integers(0, U64MAX),  # extremes
    st.sampled_from([0, 1, U64MAX, U64MAX - 1, 2**63]),
)
sizes = st.integers(0, 70)


@st.composite
def key_lists(draw, words=1):
    n = draw(sizes)
    return [np.array(draw(st.lists(key_values, min_size=n, max_size=n)), dtype=np.uint64) for _ in range(words)]


def ref_order(keys, descending=False):
    rows = list(zip(*[k.tolist() for k in keys]))
    idx = list(range(len(rows)))
    return sorted(idx, key=lambda i: rows[i], reverse=False) if not descending else \
        sorted(idx, key=lambda i: tuple(-v for v in rows[i]))


@pytest.fixture(params=[2, 4, 1 << 14], ids=lambda b: f"block{b}")
def sort_block(request, monkeypatch):
    """Run the sort tests with tiny cache blocks too, so the blocked tail stages are exercised."""
    import dodb.oblivious.sort as sort_mod

    monkeypatch.setattr(sort_mod, "BLOCK", request.param)
    return request.param


@given(key_lists(words=1), st.booleans())
def test_sort_single_word(sort_block, keys, desc):
    n = keys[0].shape[0]
    payload = np.arange(n, dtype=np.int64)
    rows = np.stack([payload, payload * 3], axis=1) if n else np.zeros((0, 2), np.int64)
    (sk,), (sp, sr) = oblivious_sort(keys, [payload, rows], descending=desc)
    order = ref_order(keys, desc)
    assert sp.tolist() == order  # stable: ties keep input order
    assert sk.tolist() == [int(keys[0][i]) for i in order]
    assert sr.tolist() == rows[order].tolist()


@given(key_lists(words=3), st.booleans())
def test_sort_multi_word(sort_block, keys, desc):
    n = keys[0].shape[0]
    p = np.arange(n)
    out_keys, (sp,) = oblivious_sort(keys, [p], descending=desc)
    order = ref_order(keys, desc)
    assert sp.tolist() == order
    for k, ok in zip(keys, out_keys):
        assert ok.tolist() == [int(k[i]) for i in order]


@given(st.lists(st.integers(0, 2**20 - 1), max_size=70), st.booleans())
def test_sort_packed(sort_block, values, desc):
    k = np.array(values, dtype=np.uint64)
    p = np.arange(len(values))
    (sk,), (sp,) = oblivious_sort([k], [p], key_bits=20, descending=desc)
    order = ref_order([k], desc)
    assert sp.tolist() == order
    assert sk.tolist() == [values[i] for i in order]


def test_sort_strings_as_byte_rows():
    words = ["pear", "apple", "", "apple", "zz", "a"]
    blk = np.array([w.encode().ljust(8, b"\0") for w in words], dtype="S8")
    key = np.frombuffer(blk.tobytes(), dtype=">u8").astype(np.uint64)
    _, (out,) = oblivious_sort([key], [blk])
    assert [b.decode() for b in out] == sorted(words)


@given(st.lists(st.booleans(), max_size=80))
def test_compact_is_stable(flags):
    m = np.array(flags, dtype=bool)
    v = np.arange(m.shape[0])
    live, (out,) = compact(m, [v, ])
    k = int(m.sum())
    assert live.tolist() == [True] * k + [False] * (m.shape[0] - k)
    assert out[:k].tolist() == v[m].tolist()


@given(st.lists(st.booleans(), max_size=60), st.data())
def test_distribute_places_rows(flags, data):
    n = len(flags)
    k = sum(flags)
    targets = sorted(data.draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=k, max_size=k, unique=True))) if n else []
    live = np.zeros(n, bool)
    live[:k] = True
    tgt = np.zeros(n, np.int64)
    tgt[:k] = targets
    vals = np.arange(n) * 7
    occ, (out,) = distribute(live, tgt, [vals])
    assert np.flatnonzero(occ).tolist() == targets
    assert out[occ].tolist() == vals[:k].tolist()


@given(st.lists(st.integers(0, 5), max_size=40), st.integers(0, 6))
def test_expand_matches_repeat(counts, extra):
    d = np.array(counts, dtype=np.int64)
    total = int(d.sum())
    v = np.arange(d.shape[0]) + 100
    real, ci, (out,) = expand(d, [v], total + extra)
    assert real.tolist() == [True] * total + [False] * extra
    assert out[:total].tolist() == np.repeat(v, d).tolist()
    assert ci[:total].tolist() == [j for c in counts for j in range(c)]


@given(st.lists(st.integers(0, 1), max_size=60), st.integers(0, 6))
def test_unit_expand_matches_the_full_expansion(counts, extra):
    """A unit expansion (every count 0 or 1, a public bound) is the compaction alone: the
    same real slots, copies and payload as the three-step expansion, and a trace that
    depends on ``(n, m)`` only (the all-zero counts give the same events)."""
    d = np.array(counts, dtype=np.int64)
    total = int(d.sum())
    v = np.arange(d.shape[0]) + 100
    real, ci, (out,) = expand(d, [v], total + extra)
    t_unit, t_zero = Trace(), Trace()
    real_u, ci_u, (out_u,) = expand(d, [v], total + extra, unit=True, trace=t_unit)
    assert real_u.tolist() == real.tolist()
    assert ci_u.tolist() == ci.tolist()
    assert out_u[:total].tolist() == out[:total].tolist() == v[d == 1].tolist()
    expand(np.zeros_like(d), [v], total + extra, unit=True, trace=t_zero)
    assert t_unit == t_zero


def test_unit_expand_refuses_a_count_above_one():
    """A bound that does not hold would lose copies silently: the contract is checked."""
    with pytest.raises(ValueError, match="unit expansion"):
        expand(np.array([1, 2, 0]), [np.arange(3)], 3, unit=True)


@st.composite
def segmented(draw):
    n = draw(st.integers(0, 60))
    vals = draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n))
    starts = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if n:
        starts[0] = True
    return np.array(vals, dtype=np.int64), np.array(starts, dtype=bool)


def ref_scan(vals, starts, op, reverse=False):
    segs = np.cumsum(starts)
    groups = {}
    for i, s in enumerate(segs.tolist()):
        groups.setdefault(s, []).append(i)
    res = [None] * len(vals)
    for idx in groups.values():
        seq = idx[::-1] if reverse else idx
        acc = None
        for i in seq:
            v = int(vals[i])
            if acc is None:
                acc = v
            elif op == "sum":
                acc += v
            elif op == "min":
                acc = min(acc, v)
            elif op == "max":
                acc = max(acc, v)
            elif op == "first":
                pass
            res[i] = acc
    return res


@given(segmented(), st.sampled_from(["sum", "min", "max", "first"]), st.booleans())
def test_segmented_scan(seg, op, reverse):
    vals, starts = seg
    out = segmented_scan(vals, starts, op, reverse=reverse)
    assert out.tolist() == ref_scan(vals, starts, op, reverse)


@given(segmented())
def test_segmented_count_and_ends(seg):
    vals, starts = seg
    flags = vals > 0
    out = segmented_scan(flags, starts, "count")
    assert out.tolist() == ref_scan(flags.astype(np.int64), starts, "sum")
    ends = segment_ends(starts)
    n = len(starts)
    assert ends.tolist() == [i == n - 1 or bool(starts[i + 1]) for i in range(n)]


@given(segmented(), st.sampled_from(["min", "max"]))
def test_lex_scan_matches_tuple_order(seg, op):
    vals, starts = seg
    hi = (vals % 3).astype(np.uint64)
    lo = (vals + 1000).astype(np.uint64)
    (w0, w1), (idx,) = segmented_lex_scan([hi, lo], starts, op, payload=[np.arange(len(vals))])
    segs = np.cumsum(starts)
    for i in range(len(vals)):
        prior = [j for j in range(i + 1) if segs[j] == segs[i]]
        tuples = [(int(hi[j]), int(lo[j])) for j in prior]
        assert (int(w0[i]), int(w1[i])) == (min(tuples) if op == "min" else max(tuples))
        assert (int(hi[idx[i]]), int(lo[idx[i]])) == (int(w0[i]), int(w1[i]))


@given(st.lists(st.booleans(), max_size=60))
def test_forward_fill(flags):
    has = np.array(flags, dtype=bool)
    v = np.arange(has.shape[0]) * 10
    filled, (out,) = forward_fill(has, [v])
    last = None
    for i, h in enumerate(flags):
        if h:
            last = int(v[i])
        assert filled[i] == (last is not None)
        if last is not None:
            assert out[i] == last


@given(n=st.integers(0, 300), narrow=st.booleans(), width=st.integers(1, 3), seed=st.integers(0, 9))
def test_sort_events_are_the_sorts_events(n, narrow, width, seed):
    """``Kernels.sort_events`` records what ``Kernels.sort`` records, from the same key and
    payload (a sorted side served from memory has the sort's view: operators/join.py)."""
    from dodb.operators.keys import KeyField, encode_keys
    from dodb.operators.kernels import ObliviousKernels
    from dodb.operators.table import Column
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    dummy = KeyField(rng.integers(0, 2, n).astype(np.uint64), 1)
    if narrow:  # one word with room for the position
        cols = [Column(pa.int32(), rng.integers(-50, 50, n).astype(np.int32), np.ones(n, bool))]
    else:  # several words: the position is appended
        cols = [Column(pa.int64(), rng.integers(-2**62, 2**62, n), rng.integers(0, 2, n).astype(bool))
                for _ in range(width)]
    enc = encode_keys(cols, leading=[dummy], n=n)
    payload = [rng.integers(0, 9, n).astype(np.int64), rng.integers(0, 255, (n, 5)).astype(np.uint8)]
    ran, recorded, shaped = Trace(), Trace(), Trace()
    ObliviousKernels(ran).sort(enc, payload)
    ObliviousKernels(recorded).sort_events(enc, payload)
    # the shape kept beside a sorted side in the slot cache gives the same events
    ObliviousKernels(shaped).sort_events(ObliviousKernels.sort_shape(enc), payload)
    assert [str(e) for e in ran.events] == [str(e) for e in recorded.events] == [str(e) for e in shaped.events]
    if enc.single_word_bits is None:
        assert ObliviousKernels.sort_shape(enc)[2] == len(enc.with_position().words)
