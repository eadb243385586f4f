"""``dodb warmup`` compiles every kernel signature the engine uses, into the per-user cache
(dodb/warmup.py, dodb/oblivious/kernel_cache.py; issue 26)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

# In a fresh process: warm up, then run the 22 TPC-H queries and the audit's built-in set
# in both private modes; any kernel signature the workload adds was missed by the warmup.
_CHECK = textwrap.dedent("""
    import json, sys
    import dodb
    from dodb.audit.command import BUILTIN_QUERIES
    from dodb.datasets import generate_tpch, protect_tpch, tpch_query
    from dodb.warmup import compiled_signatures, warmup

    warmup()
    before = compiled_signatures()
    db = dodb.connect()
    generate_tpch(db.con, 0.001)
    db.set_budget(epsilon=1e9, delta=0.5)
    protect_tpch(db)
    for mode in ("do", "oblivious"):
        for q in [tpch_query(n) for n in range(1, 23)] + list(BUILTIN_QUERIES):
            db.sql(q, epsilon=1.0, mode=mode).arrow()
    after = compiled_signatures()
    json.dump({"before": before, "after": after}, sys.stdout)
""")


def test_warmup_compiles_every_signature_the_queries_use():
    out = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True, timeout=1800,
                         env={**os.environ, "DODB_KERNELS": "compiled"})
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout)
    missed = {k: (res["before"].get(k, 0), v) for k, v in res["after"].items() if v > res["before"].get(k, 0)}
    assert not missed, f"signatures the warmup does not compile (before, after): {missed}"
    assert sum(res["before"].values()) >= 10


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
