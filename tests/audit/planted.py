"""Leaks planted into the executor for the audit tests to catch."""
from __future__ import annotations

import numpy as np

from dodb.planner import execute as execute_mod


def plant_data_sized_buffer(monkeypatch) -> list:
    """Every operator keeps a numpy buffer sized by its real rows (v1's Arrow string
    buffers); returns the list that keeps them alive."""
    orig = execute_mod.Executor._dispatch
    kept: list = []

    def sized(self, node, inputs, ctx, eps, delta):
        out = orig(self, node, inputs, ctx, eps, delta)
        kept.append(np.zeros(int(np.count_nonzero(out.is_real)) * 16 + 1, dtype=np.uint8))
        return out

    monkeypatch.setattr(execute_mod.Executor, "_dispatch", sized)
    return kept
