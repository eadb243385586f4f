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


def plant_magnitude_branch(monkeypatch) -> None:
    """Every operator takes a branch when a real integer in its output is beyond ±10^6 (the
    class of leak only values the data never had reach: an overflow or slow path)."""
    orig = execute_mod.Executor._dispatch

    def branching(self, node, inputs, ctx, eps, delta):
        out = orig(self, node, inputs, ctx, eps, delta)
        for col in out.columns:
            if col.values.ndim == 1 and np.issubdtype(col.values.dtype, np.integer):
                big = out.is_real & col.valid & (np.abs(col.values.astype(np.float64)) > 1e6)
                if big.any():
                    ctx.trace.record("planted:big-value", -1, 1)
        return out

    monkeypatch.setattr(execute_mod.Executor, "_dispatch", branching)


def plant_data_sized_peak(monkeypatch) -> None:
    """Every operator briefly holds a Python buffer of 16 KiB per real output row and frees
    it: only the traced peak shows it (not a numpy allocation, nothing left alive)."""
    orig = execute_mod.Executor._dispatch

    def transient(self, node, inputs, ctx, eps, delta):
        out = orig(self, node, inputs, ctx, eps, delta)
        bytearray(int(np.count_nonzero(out.is_real)) * 16384)  # made and freed at once
        return out

    monkeypatch.setattr(execute_mod.Executor, "_dispatch", transient)


def plant_one_host_allocation(monkeypatch) -> None:
    """Once, in the first recorded operator after the first neighbour is written, 512 KiB of Python
    memory come and go: what a host thread (a test runner's messaging, a server) allocating
    while an operator runs does to the process-wide peak.  It does not repeat."""
    from dodb.audit.neighbour import Neighbourhood

    armed = []
    write, orig = Neighbourhood.write, execute_mod.Executor._dispatch

    def arming(self, states):
        write(self, states)
        if not armed:  # after the write, which may run plans of its own
            armed.append(True)

    def once(self, node, inputs, ctx, eps, delta):
        out = orig(self, node, inputs, ctx, eps, delta)
        if armed == [True] and self.ctx.observer is not None:  # a recorded run, not planning's
            armed.append(False)
            bytearray(512 * 1024)  # made and freed at once: only the peak sees it
        return out

    monkeypatch.setattr(Neighbourhood, "write", arming)
    monkeypatch.setattr(execute_mod.Executor, "_dispatch", once)
