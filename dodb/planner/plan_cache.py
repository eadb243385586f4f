"""Whole plans of repeated queries, kept while nothing they were built from has changed.

docs/design.md §Planning caches.  A plan is a pure function of

* the query text and its parameters (bound as constants of the parsed tree);
* ε, δ, the mode, the neighbour relation, the allocation strategy and the worker count;
* the catalog as the last refresh read it (its fingerprint: tables, columns, types, views,
  user functions, every private table's spec and data version);
* the rows of the public tables the query reads (degree bounds, lookup sides and public
  scan sizes are computed from them at plan time).

The key holds the first three; the last is checked on every use: each entry keeps the
content fingerprints (``count``, ``sum`` and ``bit_xor`` of row hashes,
planner/public_cache.py) of the public tables as read before the plan was built, and a
plan is reused only if they read the same now (one statement for all of them, which a
fresh plan reads anyway).  Nothing private is read: a plan holds public facts only, and
admission still prices its events against the ledger on every query.

Each use gets its own shallow copy (:func:`fresh`): execution sets a plan's statistics,
trace and placement; the node tree is shared and never edited after planning.

>>> params_key([1, "a"]) == params_key((1, "a"))
True
>>> params_key({"b": 2, "a": 1}) == params_key({"a": 1, "b": 2})
True
>>> params_key([1]) == params_key([1.0])
False
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Mapping, Sequence

from .public_cache import public_base_tables

__all__ = ["params_key", "fresh", "reuse_or_build", "forget_plans", "generation"]

_generation = [0]  # part of every key: forget_plans() makes every cached plan unreachable


def forget_plans() -> None:
    """Make every plan cached in this process unreachable: for code that changes how dodb
    plans while it runs (a test that plants a planner bug, then plans the same query)."""
    _generation[0] += 1


def generation() -> int:
    """The current generation of cached plans (in every plan key)."""
    return _generation[0]


# every mutable container a QueryPlan holds: copied per use, so no use sees another's edits
_CONTAINERS = ("names", "internal", "allocation", "events", "event_nodes", "types", "expected_rows")


def params_key(params: Sequence[Any] | Mapping[str, Any] | None) -> tuple | None:
    """A hashable key of query parameters that tells apart values of different types
    (``1``, ``1.0`` and ``True`` bind as different literals); ``None`` for no parameters."""
    if params is None:
        return None
    if isinstance(params, Mapping):
        return ("named",) + tuple(sorted((str(k), _value_key(v)) for k, v in params.items()))
    return ("positional",) + tuple(_value_key(v) for v in params)


def _value_key(v: Any) -> tuple:
    t = type(v)
    return (t.__module__, t.__qualname__, repr(v))


def fresh(plan):
    """A copy of ``plan`` for one use: its own containers and no execution state."""
    out = copy.copy(plan)
    for name in _CONTAINERS:
        value = getattr(plan, name, None)
        if value is not None:
            setattr(out, name, copy.copy(value))
    out.stats, out.moves = {}, []
    for name in ("trace", "leaks"):  # set by QueryPlan.execute
        out.__dict__.pop(name, None)
    return out


def reuse_or_build(catalog, key: tuple, tables, build: Callable[[dict[str, tuple]], Any],
                   read_contents: Callable[[set[str]], dict[str, tuple]]):
    """The plan cached under ``key`` if the public tables among ``tables`` hold the rows they
    held when it was built; otherwise ``build(contents)`` (given the content fingerprints just
    read, so the builder does not read them again), cached for the next use."""
    public = public_base_tables(catalog, tables)
    contents = read_contents(set(public)) if public else {}
    key = key + (generation(),)
    entry = catalog.plan_cache.peek(key, lambda held: held[1] == contents)
    if entry is not None:
        return fresh(entry[0])
    plan = build(contents)
    catalog.plan_cache.put(key, (fresh(plan), contents))
    return plan
