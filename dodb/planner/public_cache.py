"""Facts computed from public data at plan time, kept across plans while that data is unchanged.

docs/design.md §Planning caches.  Planning runs public sub-plans (exact degree bounds,
lookup sides); re-planning the same query repeated that work every time.  Each result
(and each degree computed from it) is kept under a key made of

* the sub-plan's *structure*: every field of every node except its per-plan id, with
  expressions as nested tuples of node types and arguments (equal tuples, equal SQL);
* the catalog's fingerprint (tables, columns and types, views, macros, privacy specs);
* a *content fingerprint* of every public table it reads: ``count(*)``,
  ``sum(hash(row))`` and ``bit_xor(hash(row))`` over all its columns, read fresh once per
  plan (those of all the query's public tables in one statement).

So any change to a public table's rows (insert, update, delete) or to the schema gives a
new key and the result is recomputed.  The fingerprint is one DuckDB scan of the table,
never more work than the sub-plan it saves (which scans the same table and then runs
dodb's operators), and it also gives the table's row count (the public scan size).
Nothing private is cached here: a sub-plan is run at plan time only if every node is
public (stability 0), and admission still reads the ledger on every query.

>>> structural_key(Scan(table="t", alias="t", source_columns=["a"])) == \\
...     structural_key(Scan(table="t", alias="t", source_columns=["a"]))
True
"""
from __future__ import annotations

import dataclasses
import enum
from collections import OrderedDict
from typing import Any, Callable

from sqlglot import exp

from .. import sqlbuild
from .logical import Node, Scan, walk

__all__ = ["PublicFacts", "structural_key", "scanned_tables", "content_fingerprints", "public_base_tables"]

MAX_ENTRIES = 256
MAX_TOTAL_ROWS = 1 << 20  # rows of cached public results per database (memory over speed)


class _Uncacheable(Exception):
    pass


def _tree(e: exp.Expression) -> tuple:
    """An expression as nested tuples of its node types and arguments (equal tuples: equal trees,
    so equal SQL); cheaper than rendering it, which copies the tree first."""
    out = [type(e).__name__]
    for k, v in e.args.items():
        if v is None or (isinstance(v, list) and not v):
            continue
        if isinstance(v, exp.Expression):
            out.append((k, _tree(v)))
        elif isinstance(v, list):
            out.append((k, tuple(_tree(x) if isinstance(x, exp.Expression) else _plain(x) for x in v)))
        else:
            out.append((k, _plain(v)))
    return tuple(out)


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, (str, int, float, bool)):
        return (type(v).__name__, v)
    if isinstance(v, enum.Enum):  # e.g. a DataType's type
        return (type(v).__name__, v.name)
    raise _Uncacheable(type(v).__name__)


def _freeze(v: Any, memo: dict) -> Any:
    if isinstance(v, Node):
        return _node_key(v, memo)
    if isinstance(v, exp.Expression):
        return _tree(v)
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    if isinstance(v, dict):
        return ("dict", tuple((_freeze(k, memo), _freeze(x, memo)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_freeze(x, memo) for x in v))
    if isinstance(v, (set, frozenset)):
        return ("set", frozenset(_freeze(x, memo) for x in v))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__, tuple((f.name, _freeze(getattr(v, f.name), memo)) for f in dataclasses.fields(v)))
    raise _Uncacheable(type(v).__name__)


def _node_key(node: Node, memo: dict) -> tuple:
    fields = [f.name for f in dataclasses.fields(node) if f.name != "node_id"]
    # a memo entry is reused only while every field still holds the same object (the
    # builder assigns fields such as a pushed predicate, it does not edit them in place)
    holds = tuple(id(getattr(node, f)) for f in fields)
    hit = memo.get(node.node_id)
    if hit is not None and hit[0] == holds:
        return hit[1]
    key = (type(node).__name__,) + tuple((f, _freeze(getattr(node, f), memo)) for f in fields)
    memo[node.node_id] = (holds, key, node)  # keeps node alive: its field ids stay meaningful
    return key


def structural_key(node: Node, memo: dict | None = None) -> tuple | None:
    """Everything that determines ``node``'s result except per-plan ids; ``None`` if unknown.

    ``memo`` (one per plan) lets nested public sub-plans share their children's keys.
    """
    try:
        return _node_key(node, {} if memo is None else memo)
    except _Uncacheable:
        return None


def public_base_tables(catalog, tables) -> list[str]:
    """The public base tables among ``tables`` (views are expanded already): the ones whose
    rows planning may read."""
    return sorted(t for t in tables if t in catalog.tables and not catalog.tables[t].private
                  and catalog.tables[t].kind == "table")


def scanned_tables(node: Node) -> list[str]:
    return sorted({n.table for n in walk(node) if isinstance(n, Scan)})


def content_fingerprints(catalog, tables: set[str]) -> dict[str, tuple]:
    """``(count, sum of row hashes, xor of row hashes)`` of each public table, in one statement."""
    names = sorted(tables)
    stmts = [catalog.schema_cache.get_or_compute(  # rendering is the slow part: keep the text
        ("fingerprint sql", t), lambda t=t: sqlbuild.content_fingerprint(
            catalog.relation(t), list(catalog.table(t).columns))) for t in names]
    cur = catalog.cursor()
    try:
        rows = cur.execute(" UNION ALL ".join(f"SELECT {i} AS i, * FROM ({q})" for i, q in enumerate(stmts))
                           ).fetchall()
    finally:
        cur.close()
    return {names[r[0]]: tuple(int(v) if v is not None else None for v in r[1:]) for r in rows}


class PublicFacts:
    """A bounded LRU of facts; keys must carry every fingerprint they depend on.

    At most ``max_entries`` entries and, counting each entry's ``weight`` (rows of a cached
    table), at most ``max_weight`` in total: large public results cannot pile up in memory.
    """

    def __init__(self, max_entries: int = MAX_ENTRIES, max_weight: int = MAX_TOTAL_ROWS) -> None:
        self._entries: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()
        self.max_entries, self.max_weight = max_entries, max_weight
        self._weight = 0
        self.hits = self.misses = 0

    def get_or_compute(self, key: tuple | None, compute: Callable[[], Any], *,
                       weight: Callable[[Any], int] = lambda _: 0) -> Any:
        if key is None:
            return compute()
        if key in self._entries:
            self._entries.move_to_end(key)
            self.hits += 1
            return self._entries[key][0]
        self.misses += 1
        value = compute()
        self.put(key, value, weight(value))
        return value

    def peek(self, key: tuple, valid: Callable[[Any], bool] = lambda _: True) -> Any:
        """The value under ``key`` (now the most recently used), or ``None`` if there is none
        or ``valid`` rejects it (counted as a miss)."""
        hit = self._entries.get(key)
        if hit is None or not valid(hit[0]):
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return hit[0]

    def put(self, key: tuple, value: Any, weight: int = 0) -> None:
        """Keep ``value`` under ``key`` (replacing any), evicting the least recently used."""
        if key in self._entries:
            self._weight -= self._entries.pop(key)[1]
        if weight > self.max_weight:
            return
        self._entries[key] = (value, weight)
        self._weight += weight
        while len(self._entries) > self.max_entries or self._weight > self.max_weight:
            _, (_, old) = self._entries.popitem(last=False)
            self._weight -= old

    def clear(self) -> None:
        self._entries.clear()
        self._weight = 0

    def forget(self, match: Callable[[tuple], bool]) -> None:
        """Drop the entries whose key ``match`` accepts."""
        for key in [k for k in self._entries if match(k)]:
            _, w = self._entries.pop(key)
            self._weight -= w
