"""Trace simulators (docs/design.md §Invariants, 1).

A simulator sees only public information — the padded sizes, schema and string widths
of the inputs, their stabilities, the operator's parameters, and the public tables
themselves (stability 0) — plus the noisy sizes the operator leaked.  It re-runs the
operator on fake private inputs (all rows dummy, all contents zero) with the leaked
values replayed in place of fresh noise.  If the operator's view depended on anything
else, the simulated trace would differ from the real one; the tests check equality.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..oblivious.trace import Trace
from .context import ExecContext
from .table import PaddedTable

__all__ = ["fake_like", "simulate"]


def fake_like(t: PaddedTable) -> PaddedTable:
    """Same public shape (size, types, widths, stability); no real rows, zero contents."""
    arrays = [np.zeros_like(a) for a in t.arrays()]
    return t.with_arrays(arrays)


def simulate(op: Callable, tables: Sequence[PaddedTable], leaked: Sequence[int], *, mode: str,
             neighbour: str = "add_remove", masks: Sequence[str] = (), **params) -> Trace:
    """Trace of ``op(*tables, **params)`` from public information and ``leaked`` values.

    ``masks`` names keyword parameters that carry data-dependent row masks (e.g. a
    filter predicate's result); they are replaced by all-false masks.
    """
    ctx = ExecContext(mode=mode, neighbour=neighbour, replay=list(leaked))
    fakes = [t if t.stability == 0 else fake_like(t) for t in tables]
    for m in masks:
        params[m] = np.zeros_like(np.asarray(params[m], dtype=bool))
    op(*fakes, ctx=ctx, **params)
    if ctx.replay:
        raise AssertionError("simulation consumed fewer leaked values than the real run")
    return ctx.trace
