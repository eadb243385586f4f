"""Which privacy unit owns each slot of the private tables (owner side, docs/neighbours.md §Privacy units).

A direct-unit table's real slot belongs to ``("unit", k)`` for its unit value ``k``, or to
``("null", table, slot)`` when ``k`` is NULL (a unit of its own).  A hop table's slot
belongs to the unit of the parent row its key names, to ``("orphan", parent, k)`` when no
parent row has that key, or to ``("null", table, slot)`` when the key is NULL.  Dummy
slots belong to no unit (``None``).  The audit builds neighbours from these labels and
sharding places every row of one unit on one shard by them (docs/distributed.md
§Sharded storage).  This reads private rows in the clear: owner tooling only.
"""
from __future__ import annotations

from typing import Callable, Hashable, Sequence

__all__ = ["slot_units", "UnitLabel"]

UnitLabel = Hashable


def slot_units(order: Sequence[str], parent_of: Callable[[str], tuple[str, str] | None],
               unit_column: Callable[[str], str], values: Callable[[str, str], list],
               is_real: Callable[[str], Sequence[bool]]) -> dict[str, list[UnitLabel | None]]:
    """Unit labels per slot for the tables in ``order`` (parents before children).

    ``values(table, column)`` gives the column's Python values per slot (``None`` on NULLs
    and dummies).

    >>> vals = {("c", "id"): [1, None, 2], ("o", "cid"): [2, 7, None], ("o", "oid"): [10, 11, 12]}
    >>> units = slot_units(["c", "o"], {"c": None, "o": ("c", "id")}.get, {"c": "id", "o": "cid"}.get,
    ...                    lambda t, c: vals[(t, c)], lambda t: [True, True, True])
    >>> units["c"], units["o"]
    ([('unit', 1), ('null', 'c', 1), ('unit', 2)], [('unit', 2), ('orphan', 'c', 7), ('null', 'o', 2)])
    """
    units: dict[str, list[UnitLabel | None]] = {}
    for t in order:
        keys = values(t, unit_column(t))
        real = is_real(t)
        parent = parent_of(t)
        if parent is None:
            units[t] = [None if not r else (("null", t, i) if k is None else ("unit", k))
                        for i, (k, r) in enumerate(zip(keys, real))]
            continue
        ptable, pkey = parent
        owner = {v: u for v, u in zip(values(ptable, pkey), units[ptable]) if u is not None and v is not None}
        units[t] = [None if not r else (("null", t, i) if k is None else owner.get(k, ("orphan", ptable, k)))
                    for i, (k, r) in enumerate(zip(keys, real))]
    return units
