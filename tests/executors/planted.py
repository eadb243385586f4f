"""Planted cluster leaks shared by the cluster tests (docs/distributed.md §Audit across workers)."""
from __future__ import annotations


def plant_exact_size_exchange(monkeypatch) -> None:
    """Every worker's exchange cuts the blocks it sends to their real rows, after making its
    release (so the driver's release check passes): block sizes become the exact counts."""
    from dodb.executors import worker as worker_mod

    real = worker_mod.exchange_by_keys

    def exact(table, keys, parts, **kw):
        sent = real(table, keys, parts, **kw)
        sent.blocks = [b.with_arrays([a[b.is_real] for a in b.arrays()]) for b in sent.blocks]
        return sent

    monkeypatch.setattr(worker_mod, "exchange_by_keys", exact)
