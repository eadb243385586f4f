"""Worker tasks on a Ray cluster (``pip install 'dodb[ray]'``; docs/distributed.md §Ray).

Ray Core only: one task per worker, each given its :class:`~dodb.executors.worker.WorkerTask`
through the object store and returning its :class:`~dodb.executors.worker.WorkerResult`.
Private rows never go through Ray Data (its shuffles size blocks by their data); a task
reads its shard file itself.  Tasks are never retried: a retry would draw fresh noise
that nobody charged, so a worker that dies fails the query (a :class:`ClusterError`,
reported as charged by the session).  ``local:P`` starts a cluster of ``P`` CPUs whose
servers listen on the loopback interface only, and stops it when the database closes.
"""
from __future__ import annotations

import os
from typing import Sequence

from ..errors import ClusterError, DodbError, one_line
from .worker import WorkerResult, WorkerTask, run_worker

__all__ = ["RayRunner", "ClusterError"]


def _ray():
    try:
        import ray
    except ImportError:
        raise DodbError("a Ray cluster needs Ray: pip install 'dodb[ray]' (or use cluster='inline:P')") from None
    return ray


def _warm_up() -> int:
    """Import the worker's modules and load the most used kernels in a fresh worker process;
    returns the process id (the cluster's worker processes, for the fault test)."""
    import numpy as np

    from ..oblivious import oblivious_sort

    oblivious_sort([np.arange(4, dtype=np.uint64)], [np.arange(4)], key_bits=2)
    return os.getpid()


class RayRunner:
    """Runs worker tasks as Ray tasks (module doc)."""

    threads_per_worker = 1  # each task holds one CPU of the cluster

    def __init__(self, workers: int, started: bool):
        self.workers = workers
        self._started = started
        ray = _ray()
        # max_retries=0: a retried task would draw fresh, uncharged noise
        self._task = ray.remote(num_cpus=1, max_retries=0)(run_worker)
        # each worker process imports dodb and loads the compiled kernels once; start that now
        # (not waited for) rather than in the first query
        warm = ray.remote(num_cpus=1, max_retries=0)(_warm_up)
        self._warming = [warm.remote() for _ in range(workers)]

    @classmethod
    def start(cls, workers: int | None, address: str | None = None) -> "RayRunner":
        """``workers`` set: a local cluster of that many CPUs on the loopback interface;
        ``address`` ``"ray"``: this process's Ray (or ``RAY_ADDRESS``); else ``ray://…``."""
        started = False
        if workers is not None:
            # a cluster of this process's own, on the loopback interface only: Ray binds its
            # servers to the node's IP, which is 127.0.0.1 only with "clusters" switched off
            # (the switch Ray reads on macOS/Windows; its worker processes inherit it)
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        ray = _ray()
        if workers is not None:
            if ray.is_initialized():
                raise DodbError("Ray is already initialised in this process: use cluster='ray' to run on it")
            import ray._private.ray_constants as ray_constants  # read at import: Ray may be imported already

            ray_constants.ENABLE_RAY_CLUSTER = False
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
            started = True
        elif address == "ray":
            if not ray.is_initialized():
                try:
                    ray.init(address=os.environ.get("RAY_ADDRESS", "auto"), log_to_driver=False)
                except Exception as e:  # noqa: BLE001 - Ray's own error types vary by version
                    raise DodbError(f"cannot join a Ray cluster: {str(e).splitlines()[0]}") from None
        else:
            try:
                ray.init(address=address, log_to_driver=False)
            except Exception as e:  # noqa: BLE001
                raise DodbError(f"cannot join the Ray cluster at {address}: {str(e).splitlines()[0]}") from None
        if workers is None:
            workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        return cls(workers, started)

    def map(self, tasks: Sequence[WorkerTask]) -> list[WorkerResult]:
        ray = _ray()
        refs = [self._task.remote(ray.put(t)) for t in tasks]
        try:
            return ray.get(refs)
        except Exception as e:  # noqa: BLE001 - RayTaskError, WorkerCrashedError, ...
            # let the other tasks end (they are one query's, short): force-cancelling a task that
            # is completing aborts this process inside Ray (task_manager "not pending" check)
            try:
                ray.wait(refs, num_returns=len(refs), timeout=600)
            except Exception:  # noqa: BLE001 - the failure to report is the first one
                pass
            cause = getattr(e, "cause", None) or e  # a RayTaskError carries the task's own exception
            raise ClusterError(f"a cluster worker failed: {type(cause).__name__}: {one_line(cause)}") from None

    def describe(self) -> str:
        return f"ray:{self.workers}"

    def worker_pids(self) -> list[int]:
        """Process ids of the worker processes warmed up when the cluster started."""
        return sorted(set(_ray().get(self._warming)))

    def close(self) -> None:
        if self._started:
            ray = _ray()
            if ray.is_initialized():
                ray.shutdown()
            self._started = False
