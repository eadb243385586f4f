"""The DO exchange (dodb/operators/exchange.py, docs/distributed.md §Exchange).

- Every real row reaches exactly its destination's block, in every mode, on random tables
  with NULLs, duplicates, strings of mixed widths, dummies holding garbage, and empty ones.
- Block ``d`` is exactly the released size ``ñ_d >= c_d`` (never a dropped row).
- The view is a function of public sizes and the released sizes alone: a simulation from
  an all-dummy table of the same shape replays to the same trace, and coupled neighbours
  (one unit's rows removed, or replaced by another unit's) replay to the same trace.
- A planted exchange that sizes its blocks by their exact counts is caught by the same check.
- The count vector moves by at most the stability in L1 (twice it under replace).
- Equal keys get equal destinations across integer widths and string widths.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from dodb.oblivious.rng import new_rng
from dodb.operators import ExecContext, from_arrow
from dodb.operators import exchange as exchange_mod
from dodb.operators.exchange import exchange, exchange_sensitivity, partition_of
from dodb.operators.simulate import fake_like
from dodb.operators.table import Column, PaddedTable, column_from_arrow

KEYS = st.none() | st.integers(-3, 3) | st.sampled_from([-(2 ** 63), 2 ** 63 - 1])
TEXT = st.none() | st.sampled_from(["", "a", "bb", "a\x00", "longer text than eight bytes"])


@st.composite
def tables(draw, max_rows: int = 60):
    n = draw(st.integers(0, max_rows))
    units = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    keys = draw(st.lists(KEYS, min_size=n, max_size=n))
    text = draw(st.lists(TEXT, min_size=n, max_size=n))
    real = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    t = pa.table({"u": pa.array(units, pa.int64()), "k": pa.array(keys, pa.int64()), "s": pa.array(text, pa.string())})
    return from_arrow(t, stability=max(1, max([units.count(u) for u in set(units)], default=1)), is_real=real)


def _rows(block) -> list[tuple]:
    d = block.to_arrow().to_pydict()
    return sorted(zip(*d.values()), key=repr)


def _run(t, dest, parts, mode, seed=1, replay=None, neighbour="add_remove"):
    ctx = ExecContext(mode=mode, rng=new_rng(seed), replay=replay, neighbour=neighbour)
    return exchange(t, dest, parts, epsilon=8.0, delta=0.05, ctx=ctx), ctx  # little noise: sizes below n


@settings(deadline=None)
@given(t=tables(), parts=st.integers(1, 5), salt=st.integers(0, 2 ** 64 - 1))
def test_every_real_row_reaches_its_destination_once(t, parts, salt):
    dest = partition_of([t.column("k")], parts, salt)
    plain, _ = _run(t, dest, parts, "plain")
    for d in range(parts):
        mine = [tuple(r) for r, ok, to in zip(_rows_all(t), t.is_real, dest) if ok and to == d]
        assert _rows(plain.blocks[d]) == sorted(mine, key=repr)
    for mode in ("do", "oblivious"):
        got, ctx = _run(t, dest, parts, mode)
        assert [b.padded_size for b in got.blocks] == got.sizes
        for d in range(parts):
            assert _rows(got.blocks[d]) == _rows(plain.blocks[d])
            assert got.sizes[d] >= plain.sizes[d]
            assert got.sizes[d] <= t.padded_size


def _rows_all(t) -> list[tuple]:
    d = t.to_arrow(include_dummies=True).to_pydict()
    return list(zip(*d.values()))


@settings(deadline=None)
@given(t=tables(), parts=st.integers(1, 4))
def test_view_is_simulated_from_public_sizes_and_released_sizes(t, parts):
    dest = partition_of([t.column("k"), t.column("s")], parts, 3)
    got, ctx = _run(t, dest, parts, "do")
    fake = fake_like(t)
    sim, sim_ctx = _run(fake, np.zeros(t.padded_size, np.int64), parts, "do", seed=99,
                        replay=ctx.trace.leaked_values())
    assert sim_ctx.trace.events == ctx.trace.events
    assert sim.sizes == got.sizes


def _neighbour(t, unit: int, replace_with: int | None):
    """``t`` with ``unit``'s rows made dummies in their slots (add/remove), or, under
    replace, given to a fresh unit with other keys (the coupled neighbour in the same slots)."""
    u = t.column("u").values
    mine = t.is_real & (u == unit)
    if replace_with is None:
        return t.with_arrays(t.arrays()[:-1] + [t.is_real & ~mine], stability=t.stability)
    k = t.names.index("k")
    keys = t.columns[k].values.copy()
    keys[mine] = replace_with
    valid = t.columns[k].valid | mine
    cols = list(t.columns)
    cols[k] = Column(cols[k].type, keys, valid)
    return PaddedTable(list(t.names), cols, t.is_real.copy(), t.stability)


@settings(deadline=None)
@given(t=tables(), parts=st.integers(2, 4), unit=st.integers(0, 5), other=st.none() | st.integers(-3, 3))
def test_coupled_neighbours_replay_to_the_same_view(t, parts, unit, other):
    neighbour = "add_remove" if other is None else "replace"
    t2 = _neighbour(t, unit, other)
    d1 = partition_of([t.column("k")], parts, 5)
    d2 = partition_of([t2.column("k")], parts, 5)
    c1 = exchange_mod._counts(np.where(t.is_real, d1, parts), t.is_real, parts)
    c2 = exchange_mod._counts(np.where(t2.is_real, d2, parts), t2.is_real, parts)
    assert int(np.abs(c1 - c2).sum()) <= exchange_sensitivity(t.stability, neighbour)
    # run on the larger side first so that its released sizes cover the other (the
    # coupling: the neighbour's noise is the first run's shifted by the count difference)
    big, small, db, ds = (t, t2, d1, d2) if other is not None or c1.sum() >= c2.sum() else (t2, t, d2, d1)
    first, ctx1 = _run(big, db, parts, "do", neighbour=neighbour)
    released = ctx1.trace.leaked_values()
    if any(r < c for r, c in zip(released, exchange_mod._counts(np.where(small.is_real, ds, parts), small.is_real, parts))):
        return  # the coupling's failure event (probability ≤ δ): nothing to compare
    second, ctx2 = _run(small, ds, parts, "do", seed=2, replay=list(released), neighbour=neighbour)
    assert ctx2.trace.events == ctx1.trace.events
    assert second.sizes == first.sizes


def test_planted_exact_size_blocks_are_caught(monkeypatch):
    """An exchange that sizes each block by its exact count shows in the replayed view."""
    t = from_arrow(pa.table({"u": [0, 1, 2, 3], "k": [1, 2, 3, 4], "s": ["a", "b", "c", "d"]}), stability=1)
    t2 = t.with_arrays(t.arrays()[:-1] + [np.array([True, True, True, False])], stability=1)
    dest = partition_of([t.column("k")], 2, 0)
    _, ctx1 = _run(t, dest, 2, "do")
    replay = ctx1.trace.leaked_values()
    _, ctx2 = _run(t2, dest, 2, "do", replay=list(replay))
    assert ctx2.trace.events == ctx1.trace.events  # the real exchange passes
    real_release = ExecContext.release

    def exact(self, operator, name, true_values, *args):
        real_release(self, operator, name, true_values, *args)
        return np.asarray(true_values, dtype=np.int64)

    monkeypatch.setattr(ExecContext, "release", exact)
    got1, p1 = _run(t, dest, 2, "do")
    got2, p2 = _run(t2, dest, 2, "do", replay=list(p1.trace.leaked_values()))
    assert got1.sizes != got2.sizes
    assert [b.padded_size for b in got1.blocks] != [b.padded_size for b in got2.blocks]


def test_sensitivity_under_both_neighbour_relations():
    assert exchange_sensitivity(3, "add_remove") == 3
    assert exchange_sensitivity(3, "replace") == 6
    assert exchange_sensitivity(0, "replace") == 0


def test_public_input_releases_its_exact_counts():
    t = from_arrow(pa.table({"k": [1, 2, 3, 4, 5, 6]}), stability=0)
    dest = partition_of([t.column("k")], 3)
    got, ctx = _run(t, dest, 3, "do")
    assert got.sizes == [int((dest == d).sum()) for d in range(3)]
    assert all(b.is_real.all() for b in got.blocks)


def test_equal_keys_meet_across_widths_and_salts_change_the_map():
    ints = [pa.array([5, None, -7, 0], t) for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64())]
    dests = [partition_of([column_from_arrow(a)], 7, 11) for a in ints]
    assert all((d == dests[0]).all() for d in dests)
    narrow = column_from_arrow(pa.array(["x", "yz", None]), 2)
    wide = column_from_arrow(pa.array(["x", "yz", None]), 24)
    assert (partition_of([narrow], 5, 1) == partition_of([wide], 5, 1)).all()
    many = column_from_arrow(pa.array(np.arange(20000), pa.int64()))
    a, b = partition_of([many], 8, 1), partition_of([many], 8, 2)
    assert (a != b).mean() > 0.8
    counts = np.bincount(a, minlength=8)
    assert counts.min() > 20000 / 8 * 0.9  # balanced: a keyed mix, not value mod P
    assert partition_of([], 3).shape == (0,)
    with pytest.raises(ValueError):
        partition_of([many], 0)
