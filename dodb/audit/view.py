"""What the audit records of one run: the observer's view (docs/threat-model.md, docs/design.md §Audit).

* the trace (every kernel pass, allocation and released value, in order);
* per plan node, the numpy allocations — the size of every numpy data allocation made
  since the previous node ended, in order (numpy's own allocator replaced while the run
  is recorded, :mod:`.allocations`), the multiset of sizes of live numpy buffers
  (tracemalloc's numpy domain) when the node ends, relative to the start of the run,
  and the peak of traced memory while it ran — and the Arrow memory pool's usage, with
  the bytes and the number of every allocation made while the node ran (freed or not);
* per plan node, the shape of its output: padded length, and each array's dtype and size;
* every call into DuckDB (:mod:`dodb.duckcalls`): SQL text, the Arrow data handed over
  and the sizes of every result buffer;
* the padded answer's buffers.

Two runs on coupled neighbours, with the first run's released values replayed into the
second, must record equal views.
"""
from __future__ import annotations

import gc
import re
import tracemalloc
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from . import allocations as numpy_allocations

__all__ = ["ViewRecorder", "View", "CountingSource", "first_difference", "peak_only", "numpy_block_sizes"]

_NUMPY_DOMAIN = np.lib.tracemalloc_domain
# Peak traced memory is compared at this granularity, and two peaks one step apart count
# as equal: the peak also counts Python objects (integers whose size depends on their
# magnitude, interpreter caches), which the threat model leaves out of scope
# (docs/threat-model.md, "The Python interpreter's own bookkeeping").  Buffers that
# outlive an operator are compared exactly (the numpy block multisets), and so is every
# allocation the oblivious layer records in the trace.
PEAK_GRANULARITY = 4096
_NODE_LABEL = re.compile(r"#\d+")


def _renumber(text: str) -> str:
    """Plan node labels (``Filter#6``) renumbered in order of appearance.

    Node ids come from a process-wide counter, a public count of plans built so far;
    the audit compares plans of two runs, so only the numbering's pattern matters.
    """
    ids: dict[str, str] = {}
    return _NODE_LABEL.sub(lambda m: ids.setdefault(m.group(0), f"#{len(ids)}"), text)


def numpy_block_sizes() -> list[int]:
    """Sizes of the live numpy buffers tracemalloc traced (numpy's domain only).

    Reads tracemalloc's raw traces, the ``(domain, size, traceback, frames)`` tuples that
    ``take_snapshot()`` wraps: ``Snapshot.filter_traces`` builds an object per trace and
    costs about 10× more, and the audit and the trace tests call this at every return."""
    raw = getattr(tracemalloc, "_get_traces", None)
    if raw is None:  # pragma: no cover - a Python without the raw accessor
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, _NUMPY_DOMAIN)])
        return [t.size for t in snap.traces]
    return [t[1] for t in raw() if t[0] == _NUMPY_DOMAIN]


def _numpy_blocks() -> Counter:
    return Counter(numpy_block_sizes())


@dataclass
class View:
    """Everything recorded of one run; equal views mean the observer cannot tell the runs apart."""

    plan: str = ""
    trace: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    duckdb: list = field(default_factory=list)
    random: list = field(default_factory=list)
    answer: Any = None
    messages: list = field(default_factory=list)  # warnings, log records and stderr text (MessageRecorder)
    # the blocks a sharded run moved between processes (docs/distributed.md §Exchange log)
    moves: list = field(default_factory=list)

    def parts(self) -> dict[str, list]:
        return {"plan": [_renumber(self.plan)], "moves": [str(m) for m in self.moves], "trace": [str(e) for e in self.trace], "operators": self.nodes,
                "duckdb": self.duckdb, "random": self.random, "answer": [self.answer], "messages": self.messages}


def first_difference(a: View, b: View) -> str:
    """'' if the views are equal, else where they first differ (one line)."""
    pa_, pb = a.parts(), b.parts()
    for part in pa_:
        x, y = pa_[part], pb[part]
        for i, (u, v) in enumerate(zip(x, y)):
            if not _same(part, u, v):
                if isinstance(u, dict) and isinstance(v, dict):
                    key = next(k for k in u if u.get(k) != v.get(k))
                    if key == "numpy_allocations":
                        return f"{part} item {i} ({u.get('node', '')}): {_first_allocation(u[key], v.get(key))}"
                    return f"{part} item {i} ({u.get('node', '')}): {key} {_short(u[key])} != {_short(v.get(key))}"
                return f"{part} item {i}: {_short(u)} != {_short(v)}"
        if len(x) != len(y):
            return f"{part}: {len(x)} items != {len(y)}"
    return ""


def peak_only(a: View, b: View) -> bool:
    """Whether two differing views differ only in some operators' traced peaks.

    tracemalloc's peak is process-wide: a thread of the host (a test runner's messaging
    thread, a server's) that allocates while an operator runs moves it.  The audits measure
    such a pair again (the same seeds and data), and a difference that repeats stands: every
    other part of a view is exact and per thread.
    """
    pa_, pb = a.parts(), b.parts()
    for part in pa_:
        x, y = pa_[part], pb[part]
        if len(x) != len(y):
            return False
        for u, v in zip(x, y):
            if part == "operators" and isinstance(u, dict) and isinstance(v, dict):
                if {k: w for k, w in u.items() if k != "peak"} != {k: w for k, w in v.items() if k != "peak"}:
                    return False
            elif u != v:
                return False
    return first_difference(a, b) != ""


def _same(part: str, u: Any, v: Any) -> bool:
    if part != "operators" or not isinstance(u, dict) or not isinstance(v, dict):
        return u == v
    pu, pv = u.get("peak"), v.get("peak")
    if pu is not None and pv is not None and abs(pu - pv) > 1:
        return False
    return {k: x for k, x in u.items() if k != "peak"} == {k: x for k, x in v.items() if k != "peak"}


def _first_allocation(a: tuple, b: tuple | None) -> str:
    """Where two sequences of numpy allocation sizes part (one line)."""
    b = () if b is None else b
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    at = lambda s: f"{s[i]} B" if i < len(s) else "none"  # noqa: E731
    return f"numpy allocation #{i} of {len(a)} vs {len(b)}: {at(a)} != {at(b)}"


def _short(x: Any, limit: int = 160) -> str:
    s = repr(x)
    return s if len(s) <= limit else s[: limit - 3] + "..."


class CountingSource:
    """A random source that records the size of every request (the sampler's work is part of
    the view: a sampler whose draws depend on data shows up here)."""

    def __init__(self, inner):
        self.inner = inner
        self.requests: list[tuple[str, int]] = []

    def getrandbits(self, k: int) -> int:
        self.requests.append(("bits", int(k)))
        return self.inner.getrandbits(k)

    def randrange(self, stop: int) -> int:
        self.requests.append(("range", int(stop)))
        return self.inner.randrange(stop)


class ViewRecorder:
    """The executor's observer (``ExecContext.observer``) for one run."""

    def __init__(self, allocations: bool = True):
        self.allocations = allocations
        self.nodes: list = []
        self._baseline: Counter = Counter()
        self._started = False
        self._log = None  # the numpy allocation log while recording (:mod:`.allocations`)

    def start(self) -> None:
        # the young generations only: a full collection walks every object of the process
        # (0.1–0.4 s in a test worker) and changes nothing recorded, since collection stays
        # off until the run ends and tracing starts after this point
        gc.collect(1)
        # no automatic collection while recording: when it runs depends on everything the
        # process allocated before (the neighbour's write, earlier runs), and what it frees
        # moves the traced peak of whichever operator it lands in
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        if self.allocations:
            if not tracemalloc.is_tracing():
                tracemalloc.start()
                self._started = True
            self._baseline = _numpy_blocks()
            if numpy_allocations.available():
                self._recording = numpy_allocations.recording()
                self._log = self._recording.__enter__()
        self._arrow0 = pa.total_allocated_bytes()

    def stop(self) -> None:
        if self._log is not None:
            rest = self._log.take()  # made after the last node (the executor's answer)
            self._recording.__exit__(None, None, None)
            self._log = None
            self.nodes.append({"node": "after the last node", "numpy_allocations": rest})
        if getattr(self, "_gc_was_enabled", False):
            gc.enable()
        if self._started:
            tracemalloc.stop()
            self._started = False

    def enter(self, node) -> None:
        if self.allocations:
            tracemalloc.reset_peak()
            self._cur0 = tracemalloc.get_traced_memory()[0]
        pool = pa.default_memory_pool()
        self._pool0 = (pool.total_bytes_allocated(), pool.num_allocations())

    def leave(self, node, out) -> None:
        rec: dict[str, Any] = {"node": node.describe(), "padded": out.padded_size, "aligned": bool(out.aligned),
                               "arrays": [(str(a.dtype), a.shape) for a in out.arrays()]}
        if self.allocations:
            now = _numpy_blocks()
            rec["numpy_new"] = sorted((now - self._baseline).items())
            rec["numpy_freed"] = sorted((self._baseline - now).items())
            rec["peak"] = (tracemalloc.get_traced_memory()[1] - self._cur0) // PEAK_GRANULARITY
        if self._log is not None:  # every size, in order, since the previous node ended
            rec["numpy_allocations"] = self._log.take()
        rec["arrow"] = pa.total_allocated_bytes() - self._arrow0
        # every Arrow allocation while the node ran, freed or not (the pool's running totals:
        # a transient buffer sized by the data shows here, where the live total above misses it)
        pool = pa.default_memory_pool()
        rec["arrow_allocated"] = (pool.total_bytes_allocated() - self._pool0[0], pool.num_allocations() - self._pool0[1])
        self.nodes.append(rec)


class MessageRecorder:
    """Everything a run says outside its result (docs/threat-model.md §Messages): Python and
    numpy warnings, log records of any logger, and text written to ``sys.stderr``.  A served
    engine's host sees all three, so the audit compares them like the rest of the view.

    Used around one audited run (the audit runs one query at a time; ``warnings`` state is
    process-global).  Text written by C code straight to file descriptor 2 is not seen.
    """

    def __init__(self) -> None:
        self.messages: list[str] = []

    def __enter__(self) -> "MessageRecorder":
        import io
        import logging
        import sys
        import warnings

        self._warnings = warnings.catch_warnings(record=True)
        self._caught = self._warnings.__enter__()
        warnings.simplefilter("always")
        recorder = self

        class _Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                recorder.messages.append(f"log {record.name} {record.levelname}: {record.getMessage()}")

        self._handler = _Handler(level=logging.DEBUG)
        self._root = logging.getLogger()
        self._level = self._root.level
        self._root.addHandler(self._handler)
        self._root.setLevel(logging.DEBUG)
        self._stderr, self._buffer = sys.stderr, io.StringIO()
        sys.stderr = self._buffer
        return self

    def __exit__(self, *exc) -> None:
        import sys

        sys.stderr = self._stderr
        self._root.removeHandler(self._handler)
        self._root.setLevel(self._level)
        self._warnings.__exit__(*exc)
        self.messages += [f"warning {w.category.__name__}: {w.message}" for w in self._caught]
        text = self._buffer.getvalue()
        if text:
            self.messages.append(f"stderr: {text}")
