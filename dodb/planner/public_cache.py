"""Facts computed from public data at plan time, kept across plans while that data is unchanged.

docs/design.md §Planning caches.  Planning runs public sub-plans (exact degree bounds,
lookup sides) and asks DuckDB for public tables' key multiplicities; re-planning the same
query repeated that work every time.  Each result is kept under a key made of

* the sub-plan's *structure* (every field of every node except its per-plan id, with
  expressions rendered as DuckDB SQL), or the fact's name and arguments;
* the catalog's fingerprint (tables, columns and types, views, macros, privacy specs);
* a *content fingerprint* of every public table it reads: ``count(*)``, ``sum(hash(row))``
  and ``bit_xor(hash(row))`` over the table, read fresh once per plan.

So any change to a public table's rows (insert, update, delete) or to the schema gives a
new key and the fact is recomputed.  The fingerprint is one DuckDB scan of the table,
never more work than the sub-plan it saves (which scans the same table and then runs
dodb's operators).  Nothing private is cached here: a sub-plan is cached only if every
node is public (stability 0), and admission still reads the ledger on every query.

>>> structural_key(Scan(table="t", alias="t", source_columns=["a"])) == \\
...     structural_key(Scan(table="t", alias="t", source_columns=["a"]))
True
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any, Callable

from sqlglot import exp

from .logical import Node, Scan, walk

__all__ = ["PublicFacts", "structural_key", "scanned_tables", "MAX_CACHED_ROWS"]

MAX_CACHED_ROWS = 1 << 18  # larger public results are recomputed (memory over speed)
MAX_ENTRIES = 256


class _Uncacheable(Exception):
    pass


def _freeze(v: Any) -> Any:
    if isinstance(v, Node):
        return structural_key(v)
    if isinstance(v, exp.Expression):
        return ("sql", type(v).__name__, v.sql(dialect="duckdb"))
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    if isinstance(v, dict):
        return ("dict", tuple((_freeze(k), _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_freeze(x) for x in v))
    if isinstance(v, (set, frozenset)):
        return ("set", frozenset(_freeze(x) for x in v))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__, tuple((f.name, _freeze(getattr(v, f.name))) for f in dataclasses.fields(v)))
    raise _Uncacheable(type(v).__name__)


def structural_key(node: Node) -> tuple | None:
    """Everything that determines ``node``'s result except per-plan ids; ``None`` if unknown."""
    try:
        return (type(node).__name__,) + tuple(
            (f.name, _freeze(getattr(node, f.name))) for f in dataclasses.fields(node) if f.name != "node_id")
    except _Uncacheable:
        return None


def scanned_tables(node: Node) -> list[str]:
    return sorted({n.table for n in walk(node) if isinstance(n, Scan)})


class PublicFacts:
    """A bounded LRU of public facts; keys must carry every fingerprint they depend on."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple, Any] = OrderedDict()
        self.hits = self.misses = 0

    def get_or_compute(self, key: tuple | None, compute: Callable[[], Any], *, keep: Callable[[Any], bool] =
                       lambda _: True) -> Any:
        if key is None:
            return compute()
        if key in self._entries:
            self._entries.move_to_end(key)
            self.hits += 1
            return self._entries[key]
        self.misses += 1
        value = compute()
        if keep(value):
            self._entries[key] = value
            while len(self._entries) > MAX_ENTRIES:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()
