"""Checks of invariants that no correct run breaks, on private data (docs/design.md §Address audit).

A check such as "the DP-padded size is at least the true size" reads private values, but
its outcome is a public constant (always false) unless dodb has a bug, and then the run
stops rather than drop rows.  :func:`broken` is the one place such a check reads its
private flag: the address audit (``dodb audit --addresses``) declassifies the flag there
(like a release), and everything before it stays numpy, with no Python number of a
private value.

>>> import numpy as np
>>> broken(np.array([3, 4]).sum() > 9)
False
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .select import any_along

__all__ = ["broken", "set_declassifier"]

_declassify: Callable[[np.ndarray], None] | None = None


def set_declassifier(fn: Callable[[np.ndarray], None] | None) -> None:
    """The address audit's hook: called with the flag's array before it is read."""
    global _declassify
    _declassify = fn


def broken(flag) -> bool:
    """Whether an invariant check (a numpy boolean computed from private data) failed."""
    a = np.array(flag, dtype=bool)
    if _declassify is not None:
        _declassify(a)
    return bool(any_along(a.reshape(-1), 0))  # every flag read: no stop at the first true one
