"""``dodb audit --addresses``: branches and addresses measured under valgrind (docs/design.md §Address audit).

One child process under memcheck runs three queries over a small protected table: a
filter and a GROUP BY that must show no branch or address depending on private data, and
two runs with a leak planted into the compaction (``planted_addresses.py``) that the
measurement must find — compaction by ``np.argsort``, and a compiled kernel that branches
on each private flag.  Neither plant changes a size, an allocation or the trace the code
reports, so the coupled-neighbour audit does not see them.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import dodb
from dodb.audit.addresses import audit_addresses

ROOT = Path(__file__).resolve().parents[2]
PLANTED = "tests.audit.planted_addresses"
# DECIMAL arithmetic in a projection: a select of two loads once hid in a vectorised loop's
# scalar tail (compiled_int128.where_rows on 41 slots)
# ... and EXTRACT of a date: numpy's signed floor division fixed each quotient's sign with a
# branch in its scalar loop (a few rows; TPC-H Q7 at sf 0.002), now select.floor_div
CLEAN = ("SELECT k, count(*), sum(v), sum(d * 2), max(extract(year FROM dt) * 100 + extract(month FROM dt)) "
         "FROM t WHERE v > 3 GROUP BY k")
FILTER = "SELECT uid, v FROM t WHERE v > 5"


def _valgrind() -> None:
    if shutil.which("valgrind") is None:
        if os.environ.get("DODB_REQUIRE_VALGRIND"):  # set by .ci/run, which installs it
            pytest.fail("valgrind is not installed")
        pytest.skip("valgrind is not installed (apt-get install valgrind)")


@pytest.fixture
def database(tmp_path):
    path = tmp_path / "small.duckdb"
    db = dodb.connect(str(path), seed=0)
    db.con.execute("CREATE TABLE t AS SELECT i AS uid, i % 3 AS k, (i * 7) % 11 AS v, "
                   "((i * 37) % 1000 / 7)::DECIMAL(15, 2) AS d, DATE '1992-01-01' + (i * 53)::INTEGER AS dt "
                   "FROM range(40) r(i)")
    db.set_budget(epsilon=1e9, delta=0.5)
    db.protect("t", "uid", max_contributions=1)
    db.close()
    return path


def test_no_private_branch_or_address_and_planted_ones_are_found(database, monkeypatch):
    _valgrind()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    report = audit_addresses(database, [CLEAN, FILTER, FILTER],
                             plants=[None, f"{PLANTED}:argsort_compaction", f"{PLANTED}:compiled_branch"])
    clean, argsort, branch = report.queries
    assert clean.ok, "\n".join([clean.line()] + [f.describe() for f in clean.findings[:10]])
    assert clean.nodes >= 4
    assert not argsort.ok and argsort.error is None, argsort.line()
    assert any("sort" in f.frame for f in argsort.findings), [f.describe() for f in argsort.findings[:5]]
    assert all(f.node.startswith("Filter") for f in argsort.findings)
    assert not branch.ok and branch.error is None, branch.line()
    assert all(f.node.startswith("Filter") for f in branch.findings)
    assert not report.ok and "1 of 3 queries" in report.lines()[-1]
