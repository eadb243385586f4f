"""``cluster=`` of :func:`dodb.connect`: which executor runs a database's plans.

* ``None`` — this process (the default, the embedded engine);
* ``"inline:P"`` — ``P`` workers run one after another in this process over the shards:
  the cluster's plan and views without a cluster (tests, the audit);
* ``"local:P"`` — a Ray cluster of ``P`` worker processes started on this machine
  (``pip install 'dodb[ray]'``), stopped when the database closes;
* ``"ray://host:port"`` or ``"ray"`` — an existing Ray cluster (``"ray"``: the one this
  process already initialised, or ``RAY_ADDRESS``); the worker count is its CPU count.
"""
from __future__ import annotations

import re

from ..errors import DodbError

__all__ = ["parse_cluster", "executor_for"]

_LOCAL = re.compile(r"^(inline|local):(\d+)$")


def parse_cluster(spec: str | None) -> tuple[str, int | str | None]:
    """``(kind, argument)`` of a ``cluster=`` string, or a one-line error."""
    if spec is None:
        return "embedded", None
    if not isinstance(spec, str):
        raise DodbError(f"cluster must be a string such as 'local:4', got {spec!r}")
    m = _LOCAL.match(spec.strip())
    if m:
        workers = int(m.group(2))
        if not 1 <= workers <= 256:
            raise DodbError(f"cluster {spec!r}: the worker count must be from 1 to 256")
        return m.group(1), workers
    if spec.startswith("ray://") or spec == "ray":
        return "ray", spec
    raise DodbError(f"cluster {spec!r} is not one of 'inline:P', 'local:P', 'ray://host:port' or 'ray'")


def executor_for(spec: str | None, shards):
    """The executor for ``spec`` (``None``: run in this process); ``shards()`` reads the
    database's shard set at query time."""
    kind, arg = parse_cluster(spec)
    if kind == "embedded":
        return None
    from .sharded import InlineRunner, ShardedExecutor

    if kind == "inline":
        return ShardedExecutor(InlineRunner(arg), shards)
    from .ray_runner import RayRunner

    return ShardedExecutor(RayRunner.start(arg if kind == "local" else None, address=arg if kind == "ray" else None),
                           shards)
