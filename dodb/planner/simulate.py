"""Whole-query trace simulator (docs/design.md §Invariants, 1, composed over the plan).

Given only public information — the plan, the padded sizes and string widths of the
private tables, the public tables themselves — and the values the query leaked, re-run
the plan on fake private tables (every row a dummy, every value zero) replaying the
leaked values.  The resulting trace must equal the real execution's trace.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..oblivious.trace import Trace
from ..operators import ExecContext, PaddedTable
from ..operators.simulate import fake_like
from ..operators.table import Column
from .execute import Executor
from .logical import Scan
from .plan import QueryPlan

__all__ = ["simulate_plan"]


class _FakeScans(Executor):
    def _scan(self, node: Scan) -> PaddedTable:
        real = super()._scan(node)
        if not node.private:
            return real  # public tables are public
        fake = fake_like(real)
        fake.aligned = real.aligned  # the same slots, all dummies
        # the fake rows are not the slot cache's rows: never sorted into or served from it
        self._scan_sources.pop(node.node_id, None)
        return fake


def simulate_plan(plan: QueryPlan, leaked: list[int]) -> Trace:
    """The trace of ``plan`` reconstructed from public information and ``leaked`` values."""
    ctx = ExecContext(mode=plan.mode, neighbour=plan.neighbour, replay=list(leaked))
    _FakeScans(plan.catalog, ctx, plan.allocation).run(plan.root)
    if ctx.replay:
        raise AssertionError("simulation consumed fewer leaked values than the real run")
    return ctx.trace
