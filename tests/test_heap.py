"""Freed memory is kept in the process (docs/design.md §Freed memory kept): measured with the
kernel's own page-fault counter, not with what the module reports about itself."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

_PROBE = """
import resource, numpy as np, dodb
dodb.connect().close()  # opening a database is what turns the setting on
n = 200 << 20
def touch():
    a = np.empty(n // 8, dtype=np.uint64); a[:] = 1; return a
a = touch(); del a
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    a = touch(); del a
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(keep: str) -> int:
    env = {**os.environ, "DODB_KEEP_FREED_MEMORY": keep}
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_second_large_array_reuses_freed_pages():
    kept, off = _faults("1"), _faults("0")
    # 3 × 200 MB written again: with the setting no page is faulted in; without it every array is
    # a fresh mapping (at least one fault per 2 MiB huge page, 300 in all; 4 KiB pages: 150k)
    assert kept <= 16, kept
    assert off >= 150, off
