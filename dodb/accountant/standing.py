"""``spent`` and ``remaining`` computed when first read (a charge's and a report's).

Right after a charge the ledger knows the state it left (``ledger_sums.py``), but the
filter's headroom over it is a bisection (``filters.py``) that costs more than the rest of
the charge; most reports are never read.  So a charge keeps the frozen state and the
pair is computed on first read, from that state: the value is the same whenever it is
read (docs/design.md §Budget defaults).

>>> from dataclasses import dataclass
>>> @dataclass
... class R:
...     spent: tuple | None = Standing()
...     remaining: tuple | None = Standing()
>>> r = R(); r._standing_of = lambda: ((1.0, 0.0), (2.0, 0.0)); r.remaining
(2.0, 0.0)
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["Standing", "defer_standing", "has_standing"]


class Standing:
    """A dataclass field descriptor for ``spent`` / ``remaining``: the value set, or, when
    that is ``None`` and the object has a ``_standing_of()`` thunk, the thunk's pair."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.index = 0 if name == "spent" else 1

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return None  # the field's default
        d = obj.__dict__
        value = d.get("_" + self.name)
        thunk: Callable[[], tuple[Any, Any]] | None = d.get("_standing_of")
        if value is None and thunk is not None:
            d["_spent"], d["_remaining"] = thunk()
            del d["_standing_of"]
            value = d["_" + self.name]
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__["_" + self.name] = value


def defer_standing(obj: Any, thunk: Callable[[], tuple[Any, Any]]) -> None:
    """Give ``obj`` (with ``Standing`` fields left ``None``) the thunk that computes them."""
    obj.__dict__["_standing_of"] = thunk


def has_standing(obj: Any) -> bool:
    """Whether ``obj``'s pair is set or deferred (without computing it)."""
    d = obj.__dict__
    return d.get("_spent") is not None or d.get("_standing_of") is not None
