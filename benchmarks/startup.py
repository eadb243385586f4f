"""First use, side by side: two dodb trees, each in fresh processes (issue 26).

For each tree (``--before``, ``--after``; run from ``PYTHONPATH``), measured in one run,
the trees taking turns:

* ``import dodb`` and ``dodb --help`` (best of ``--repeats`` fresh processes);
* the demo's first use in a fresh process with an **empty** kernel cache
  (``NUMBA_CACHE_DIR`` a new folder): build the TPC-H sample, protect it, run TPC-H
  Q1, Q3 and Q13 — what a new user waits for, compile included;
* the same in a fresh process with that cache now **warm**.

Writes ``--out`` (markdown) with the command line, the commits and the machine.

    git worktree add /tmp/dodb-before <commit>
    python benchmarks/startup.py --before /tmp/dodb-before --after . --out benchmarks/results/startup.md
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

_FIRST_USE = r'''
import time
t0 = time.perf_counter()
import dodb
from dodb.datasets import generate_tpch, protect_tpch, tpch_query
db = dodb.connect()
generate_tpch(db.con, SCALE)
db.set_budget(epsilon=100.0, delta=1e-5)
protect_tpch(db)
t1 = time.perf_counter()
for q in (1, 3, 13):
    db.sql(tpch_query(q), epsilon=1.0).arrow()
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f}")
'''


def _env(tree: Path, cache: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env["PYTHONPATH"] = str(tree.resolve())
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    return env


def _seconds(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t


def _first_use(tree: Path, cache: str, scale: float) -> tuple[float, float, float]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _FIRST_USE.replace("SCALE", repr(scale))], env=_env(tree, cache),
                         cwd=tempfile.gettempdir(), check=True, capture_output=True, text=True)
    total = time.perf_counter() - t
    protect, queries = (float(x) for x in out.stdout.split()[-2:])
    return total, protect, queries


def _commit(tree: Path) -> str:
    r = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, required=True)
    p.add_argument("--after", type=Path, required=True)
    p.add_argument("--scale", type=float, default=0.01)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/startup.md"))
    a = p.parse_args()
    trees = {"before": a.before, "after": a.after}
    rows: dict[str, dict[str, float]] = {k: {} for k in trees}
    tmp = Path(tempfile.mkdtemp(prefix="dodb-startup-"))
    for _ in range(a.repeats):
        for name, tree in trees.items():
            for what, cmd in (("import dodb", [sys.executable, "-c", "import dodb"]),
                              ("dodb --help", [sys.executable, "-m", "dodb.cli", "--help"])):
                s = _seconds(cmd, _env(tree), tmp)
                rows[name][what] = min(rows[name].get(what, s), s)
    for name, tree in trees.items():
        cache = str(tmp / f"cache-{name}")
        for state in ("cold", "warm"):
            total, protect, queries = _first_use(tree, cache, a.scale)
            rows[name][f"first use, {state} cache: total"] = total
            rows[name][f"first use, {state} cache: protect"] = protect
            rows[name][f"first use, {state} cache: Q1+Q3+Q13"] = queries
    lines = [f"# First use: before ({_commit(a.before)}) and after ({_commit(a.after)})", "",
             f"`python benchmarks/startup.py {' '.join(sys.argv[1:])}`", "",
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores; shared machine: compare the ratio column.  Fresh processes; 'cold' is an "
             f"empty kernel cache (NUMBA_CACHE_DIR), 'warm' the same cache after that run; TPC-H sf {a.scale}.", "",
             "| measure (seconds) | before | after | before / after |", "|---|---:|---:|---:|"]
    for what in rows["before"]:
        b, f = rows["before"][what], rows["after"][what]
        lines.append(f"| {what} | {b:.3f} | {f:.3f} | {b / f:.1f}x |")
    a.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
