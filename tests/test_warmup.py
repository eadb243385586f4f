"""``dodb warmup`` compiles every kernel signature the engine uses, into the per-user cache
(dodb/warmup.py, dodb/oblivious/kernel_cache.py; issue 26)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

# In a fresh process: warm up, then run the warmup's workload and the reference queries (the
# 22 TPC-H queries and the audit's built-in set in both private modes); a dodb kernel compiled
# then (numba's compile event fires on a cache miss only) was missed by the warmup, and every
# signature they call must be in the warmup's list.
_CHECK = textwrap.dedent("""
    import json, sys
    from numba.core import event
    from dodb.precompile import recorded_signatures
    from dodb.warmup import run_reference_queries, run_workload, warmup

    warmup()
    compiled = []

    class Seen(event.Listener):
        def on_start(self, ev):
            d = ev.data.get("dispatcher")
            module = getattr(getattr(d, "py_func", None), "__module__", "") or ""
            if module.startswith("dodb."):
                compiled.append(f"{module}.{d.py_func.__qualname__} {ev.data.get('args')}")

        def on_end(self, ev):
            pass

    event.register("numba:compile", Seen())
    run_workload()  # what the list was recorded from: the workload and the reference queries
    run_reference_queries()
    json.dump({"compiled": compiled, "called": recorded_signatures()}, sys.stdout)
""")


def test_warmup_compiles_every_signature_the_queries_use():
    out = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True, timeout=1800,
                         env={**os.environ, "DODB_KERNELS": "compiled"})
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout)
    assert not res["compiled"], f"kernels the warmup did not compile: {res['compiled']}"
    assert sum(len(v) for v in res["called"].values()) >= 10
    # the list that `dodb warmup` compiles on every core holds every signature called
    from dodb.oblivious.kernel_signatures import SIGNATURES

    unlisted = {k: sorted(set(v) - set(SIGNATURES.get(k, ()))) for k, v in res["called"].items()}
    unlisted = {k: v for k, v in unlisted.items() if v}
    assert not unlisted, ("signatures missing from dodb/oblivious/kernel_signatures.py (run "
                          f"`python -m dodb.warmup --record`): {unlisted}")


def test_the_listed_signatures_parse_and_name_kernels():
    """Every entry of the list names a dodb kernel and parses to numba types (no compile)."""
    from numba.core.registry import CPUDispatcher

    from dodb import precompile
    from dodb.oblivious.kernel_signatures import SIGNATURES
    from dodb.precompile import kernel, parse_signature, plan_groups

    assert "dodb.oblivious.compiled_sort.sort_blocks" in SIGNATURES
    for name, sigs in SIGNATURES.items():
        assert isinstance(kernel(name), CPUDispatcher), name
        assert all(str(parse_signature(text)) == text for text in sigs), name
    names = sorted(SIGNATURES)
    two = plan_groups(names, 2)  # the sorting network's two entry points apart, heaviest first
    assert two[0][0] == "dodb.oblivious.compiled_sort.sort_blocks"
    assert two[1][0] == "dodb.oblivious.compiled_sort.sort_long"
    seconds = [sum(precompile.COMPILE_SECONDS.get(n, 1.0) for n in g) for g in two]
    assert abs(seconds[0] - seconds[1]) <= max(precompile.COMPILE_SECONDS.values()) / 4, seconds
    one = plan_groups(names, 1)
    assert len(one) == 1 and sorted(one[0]) == names
    assert sorted(n for g in plan_groups(names, 5) for n in g) == names
    assert precompile.useful_jobs(1) == 1 and precompile.useful_jobs(2) == 2
    assert precompile.useful_jobs(64) == math.ceil(sum(precompile.COMPILE_SECONDS.get(n, 1.0) for n in names)
                                                   / max(precompile.COMPILE_SECONDS.values())) <= 4


def test_parallel_compile_reports_a_failed_process(monkeypatch):
    """The children compile their groups (here: load them from the warm cache); a child that
    fails is reported, not ignored."""
    from dodb import precompile
    from dodb.oblivious import kernel_signatures

    assert precompile.compile_in_parallel(2) == []
    planted = {"dodb.oblivious.compiled_sort.no_such_kernel": ["(int64,)"], **kernel_signatures.SIGNATURES}
    monkeypatch.setattr(kernel_signatures, "SIGNATURES", planted)
    monkeypatch.setitem(precompile.COMPILE_SECONDS, "dodb.oblivious.compiled_sort.no_such_kernel", 1e3)  # a child's
    failures = precompile.compile_in_parallel(2)
    assert len(failures) == 1 and "no_such_kernel" in failures[0], failures
    # one this process compiles (one job: all of them here) is reported the same way, not raised
    failures = precompile.compile_in_parallel(1)
    assert len(failures) == 1 and failures[0].startswith("compiling in this process failed: AttributeError")


def test_kernel_cache_is_per_user_and_keyed_by_numba_and_cpu(tmp_path):
    code = ("import dodb.oblivious.compiled as c, numba.core.config as k; "
            "from dodb.oblivious.kernel_cache import cache_dir; print(k.CACHE_DIR); print(cache_dir())")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    used, expected = out.stdout.split()
    import numba

    assert used == expected and Path(used).is_dir()
    assert Path(used).parent == tmp_path / "dodb" and f"numba{numba.__version__}" in Path(used).name
    import dodb

    assert not Path(used).is_relative_to(Path(dodb.__file__).parent)  # never in the package folder
    # NUMBA_CACHE_DIR wins
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.stdout.split()[0] == str(tmp_path / "mine")


def test_a_cold_process_says_once_that_it_compiles(tmp_path):
    """The first compile of a process prints one line on stderr; a warm cache prints nothing."""
    code = ("import numpy as np; from dodb.oblivious.compiled import checksum_words; "
            "checksum_words(np.arange(8, dtype=np.uint64), 8); checksum_words(np.arange(8, dtype=np.uint64), 8)")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert cold.returncode == 0, cold.stderr
    lines = [ln for ln in cold.stderr.splitlines() if ln.startswith("dodb: compiling")]
    assert len(lines) == 1 and str(tmp_path) in lines[0]
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert warm.returncode == 0 and "compiling" not in warm.stderr


def test_other_numba_code_compiling_says_nothing(tmp_path):
    code = ("import numba, dodb.oblivious.compiled\n@numba.njit\ndef f(x):\n    return x + 1\nf(1)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "dodb: compiling" not in out.stderr
