"""Shared benchmark plumbing: timing (warm-up + median), peak memory, machine info, JSON.

Timing policy (used by every sub-benchmark): ``warmup`` untimed runs, then ``repeats``
timed runs, reported as the median.  A configuration whose first run already takes
longer than ``long_seconds`` is not repeated: that run is the measurement (``runs`` in
the JSON says how many timed runs a number is the median of).  The machine is shared
(2 cores, other jobs running), so every report carries a noise caveat.

Peak memory: the process's resident-set high-water mark (``VmHWM`` in
``/proc/self/status``) is reset before a measured run by writing ``5`` to
``/proc/self/clear_refs`` (Linux ≥ 4.0); the peak is ``VmHWM`` after the run minus
``VmRSS`` before it, on a run that first hands dodb's kept free pages back
(``PeakMemory(release_heap=True)``, the first run of a configuration; later runs reuse
them and are not slowed by it).  It therefore counts everything the process touches — numpy
buffers, Arrow buffers and DuckDB's own memory — unlike tracemalloc.  Where the reset is
not allowed the fallback is the ``getrusage`` ``ru_maxrss`` delta (a lower bound: it only
moves when a new process-wide maximum is reached).
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

__all__ = [
    "Timing", "measure", "PeakMemory", "machine_info", "write_json", "read_json", "geomean",
    "fmt_seconds", "fmt_bytes", "fmt_ratio", "log2_sizes", "machine_lines", "progress", "NOISE_CAVEAT",
    "DEFAULT_OUT",
]

DEFAULT_OUT = Path(__file__).resolve().parent / "results"

NOISE_CAVEAT = (
    "Timings come from a shared 2-core machine on which other jobs (test suites) were running at "
    "the same time: each number is the median of the repeats after a warm-up, but absolute times "
    "can be off by tens of percent and small ratios (< 1.5x) should not be over-read."
)


class Timing(dict):
    """``{"median": s, "min": s, "runs": k, "times": [...], "warmup": w}`` (a dict, JSON-ready)."""

    @property
    def median(self) -> float:
        return self["median"]


def measure(fn: Callable[[], Any], *, warmup: int = 1, repeats: int = 3, long_seconds: float = 30.0,
            on_result: Callable[[Any], None] | None = None) -> Timing:
    """Run ``fn`` ``warmup`` times untimed, then up to ``repeats`` timed; median seconds.

    If the first run (warm-up or timed) takes longer than ``long_seconds`` the function is
    not run again: a warm-up that slow becomes the single measurement (its one-off costs are
    negligible next to its length).  ``on_result`` sees the value of the last run.
    """
    times: list[float] = []
    done_warmup = 0
    out = None
    for _ in range(warmup):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        done_warmup += 1
        if dt > long_seconds:
            times.append(dt)  # too long to repeat: use this run
            done_warmup -= 1
            break
    if not times:
        for i in range(max(1, repeats)):
            t0 = time.perf_counter()
            out = fn()
            dt = time.perf_counter() - t0
            times.append(dt)
            if dt > long_seconds:
                break
    if on_result is not None:
        on_result(out)
    return Timing(median=statistics.median(times), min=min(times), runs=len(times),
                  times=[round(t, 6) for t in times], warmup=done_warmup)


def protected_tpch(scale: float, *, epsilon: float = 1e9):
    """A seeded (benchmark mode) in-memory dodb database with TPC-H at ``scale`` generated and
    its private tables protected, under a budget no benchmark exhausts."""
    import dodb
    from dodb.datasets import generate_tpch, protect_tpch
    from dodb.oblivious.rng import enable_seeding

    enable_seeding()
    db = dodb.connect(seed=1)
    generate_tpch(db.con, scale)
    db.set_budget(epsilon=epsilon, delta=0.5)
    protect_tpch(db)
    return db


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            m = re.search(rf"^{field}:\s+(\d+)\s+kB", f.read(), re.M)
        return int(m.group(1)) if m else None
    except OSError:
        return None


class PeakMemory:
    """Context manager: ``.peak_bytes`` = peak resident memory added while inside."""

    method: str = ""

    def __init__(self, release_heap: bool = False):
        # dodb keeps freed heap pages mapped (dodb/heap.py); they would count in the resident set
        # before a run and hide the run's own need, so a run that measures memory hands them back first
        self.release_heap = release_heap

    def __enter__(self) -> "PeakMemory":
        if self.release_heap:
            from dodb.heap import release_freed_memory
            release_freed_memory()
        self.base_rss = _status_kb("VmRSS")
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.method = "VmHWM reset (clear_refs) minus VmRSS before"
        except OSError:
            self.method = "ru_maxrss delta"
        self.base_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.peak_bytes = 0
        return self

    def __exit__(self, *exc) -> None:
        if self.method.startswith("VmHWM") and self.base_rss is not None:
            hwm = _status_kb("VmHWM") or 0
            self.peak_bytes = max(0, hwm - self.base_rss) * 1024
        else:
            self.peak_bytes = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - self.base_max) * 1024


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_commit() -> str | None:
    try:
        import dodb  # the library under test decides which commit this is

        root = Path(dodb.__file__).resolve().parent.parent
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _dodb_dirty() -> list[str] | None:
    """Uncommitted changes to the library when the run started (other people commit concurrently)."""
    try:
        import dodb

        root = Path(dodb.__file__).resolve().parent.parent
        out = subprocess.run(["git", "status", "--short", "--", "dodb"], cwd=root, capture_output=True,
                             text=True, timeout=10).stdout
        return [line.strip() for line in out.splitlines() if line.strip()]
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info() -> dict[str, Any]:
    import duckdb
    import numpy as np
    import pyarrow as pa

    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) * 1024
    except (OSError, AttributeError):
        pass
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "cpu": _cpu_model(), "cores": os.cpu_count(), "memory_bytes": mem, "loadavg_at_start": load,
        "python": sys.version.split()[0], "numpy": np.__version__, "duckdb": duckdb.__version__,
        "pyarrow": pa.__version__, "platform": platform.platform(), "git_commit": _git_commit(),
        "dodb_uncommitted": _dodb_dirty(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def machine_lines(info: dict[str, Any]) -> list[str]:
    mem = fmt_bytes(info["memory_bytes"]) if info.get("memory_bytes") else "?"
    load = ", ".join(f"{x:.2f}" for x in info["loadavg_at_start"]) if info.get("loadavg_at_start") else "?"
    return [
        f"- CPU: {info['cpu']}, {info['cores']} cores, {mem} RAM; load average at start: {load}",
        f"- Python {info['python']}, numpy {info['numpy']}, DuckDB {info['duckdb']}, pyarrow {info['pyarrow']}",
        f"- dodb commit {info.get('git_commit') or '?'}"
        + (f" plus uncommitted changes to {', '.join(d.split()[-1] for d in info['dodb_uncommitted'])}"
           if info.get("dodb_uncommitted") else "") + f", run {info['date']}",
    ]


def _default(o):
    import numpy as np

    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o)}")


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=_default, allow_nan=True))
    tmp.replace(path)


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


def geomean(values) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def fmt_seconds(s: float | None) -> str:
    if s is None or (isinstance(s, float) and not math.isfinite(s)):
        return "–"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    if s < 100:
        return f"{s:.2f} s"
    return f"{s:.0f} s"


def fmt_bytes(b: float | None) -> str:
    if b is None:
        return "–"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(b) < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024
    return f"{b:.1f} GiB"


def fmt_ratio(r: float | None) -> str:
    if r is None or not math.isfinite(r):
        return "–"
    if r < 1:
        return f"{r:.2f}×"
    return f"{r:.1f}×" if r < 100 else f"{r:.0f}×"


def log2_sizes(min_log2: int, max_log2: int, step: int = 1) -> list[int]:
    if min_log2 > max_log2:
        min_log2 = max_log2
    out = list(range(min_log2, max_log2 + 1, max(1, step)))
    if out[-1] != max_log2:
        out.append(max_log2)
    return out


def progress(iterable=None, **kw):
    """tqdm if installed (the ``bench`` extra), else the plain iterable."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return iterable if iterable is not None else _NoBar()
    kw.setdefault("file", sys.stderr)
    kw.setdefault("dynamic_ncols", True)
    return tqdm(iterable, **kw)


class _NoBar:
    def update(self, *_a, **_k): ...
    def set_postfix_str(self, *_a, **_k): ...
    def set_description(self, *_a, **_k): ...
    def close(self): ...
    def write(self, s): print(s, file=sys.stderr)
