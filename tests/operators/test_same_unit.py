"""Joins along a privacy-unit path (same_unit): tighter stability, same answers."""
from __future__ import annotations

import pyarrow as pa

from dodb.oblivious.rng import new_rng
from dodb.operators import ExecContext, from_arrow, join


def test_same_unit_join_stability():
    """Joins along a privacy-unit path: rows of different units never match."""
    orders = from_arrow(pa.table({"ok": [1, 2, 3], "cust": [1, 1, 2]}), stability=2)
    items = from_arrow(pa.table({"lk": [1, 1, 2, 3, 3, 3]}), stability=6)
    ctx = ExecContext(mode="do", rng=new_rng(0))
    inner = join(items, orders, ["lk"], ["ok"], ctx=ctx, left_degree=3, right_degree=1, same_unit=True)
    assert inner.table.stability == min(6 * 1, 2 * 3)
    assert [lk.sensitivity for lk in inner.leaks] == [6]
    generic = join(items, orders, ["lk"], ["ok"], ctx=ctx, left_degree=3, right_degree=1)
    assert generic.table.stability == 6 * 1 + 2 * 3
    semi = join(orders, items, ["ok"], ["lk"], how="semi", ctx=ctx, left_degree=1, right_degree=3, same_unit=True)
    assert [lk.sensitivity for lk in semi.leaks] == [2]
    left = join(orders, items, ["ok"], ["lk"], how="left", ctx=ctx, left_degree=1, right_degree=3, same_unit=True)
    assert left.table.stability == 2 * 3 and sorted(lk.sensitivity for lk in left.leaks) == [2, 6]
    assert left.table.real_count == 6
