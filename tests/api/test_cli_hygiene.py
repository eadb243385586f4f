"""CLI hygiene (issue 12 item 8): --allow-insecure, --create, the ε used, history, recorded budget changes.

The commands run in this process (``tests/cli_run.py``); ``test_readme_and_cli.py`` runs them as subprocesses."""
from __future__ import annotations

import json
import os
import subprocess

import duckdb

from ..cli_run import run_cli

GROUPED = "SELECT g, count(*) AS n FROM t GROUP BY g ORDER BY g"


def _dodb(*args: str, cwd) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd)  # in this process (tests/cli_run.py); the README test runs subprocesses


def _ok(r: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert r.returncode == 0, r.stderr
    return r


def _error(r: subprocess.CompletedProcess, text: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert text in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_missing_file_needs_create(tmp_path):
    missing = str(tmp_path / "nope.duckdb")
    _error(_dodb("query", missing, "SELECT 1", "--epsilon", "1", cwd=tmp_path), "no database file")
    _error(_dodb("budget", missing, cwd=tmp_path), "no database file")
    _error(_dodb("history", missing, cwd=tmp_path), "no database file")
    assert not os.path.exists(missing)  # nothing was created
    _ok(_dodb("budget", missing, "--set", "2", "1e-6", "--create", cwd=tmp_path))
    assert os.path.exists(missing)


def test_plain_mode_budget_history_and_epsilon_used(tmp_path):
    db = str(tmp_path / "h.duckdb")
    con = duckdb.connect(db)
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(30)")
    con.execute("CREATE TABLE pub AS SELECT 1 AS k")
    con.close()
    _ok(_dodb("budget", db, "--set", "2", "1e-6", cwd=tmp_path))
    out = _ok(_dodb("protect", db, "t", "--privacy-unit", "id", "--max-contributions", "1", "--capacity", "40",
                    cwd=tmp_path)).stdout  # in words, not a raw dict (--json gives the fields)
    assert out.startswith("protected t: privacy unit reached via t, at most 1 row(s) per unit") and "{" not in out
    assert "capacity: 40 slots (declared; nothing charged)" in out
    # plain mode on a private table needs --allow-insecure
    _error(_dodb("query", db, GROUPED, "--mode", "plain", "--epsilon", "1", cwd=tmp_path), "allow_insecure")
    plain = _ok(_dodb("query", db, GROUPED, "--mode", "plain", "--allow-insecure", "--epsilon", "1", cwd=tmp_path))
    assert plain.stdout.splitlines()[-1] == "ε used: 0 (δ 0; plain mode, which protects nothing: nothing charged)"
    obl = _ok(_dodb("query", db, "SELECT count(*) FROM t", "--mode", "oblivious", "--epsilon", "1", cwd=tmp_path))
    assert obl.stdout.splitlines()[-1] == "ε used: 0 (δ 0; fully oblivious: it released no size: nothing charged)"
    # the ε a query used is always printed, private or public, text or JSON
    r = _ok(_dodb("query", db, GROUPED, "--epsilon", "0.5", cwd=tmp_path))
    assert "ε used: 0.5" in r.stdout and "query #1" in r.stdout
    r = _ok(_dodb("query", db, "SELECT k FROM pub", "--epsilon", "1", cwd=tmp_path))
    assert r.stdout.splitlines()[-1] == "ε used: 0 (δ 0; public tables only: nothing charged)"
    r = _ok(_dodb("query", db, GROUPED, "--epsilon", "0.25", "--json", cwd=tmp_path))
    assert json.loads(r.stdout)["epsilon_used"] <= 0.25 + 1e-9 and "ε used" in r.stderr
    # budget changes are owner actions; lowering below what was spent needs --force
    _ok(_dodb("budget", db, "--set", "3", "1e-6", "--horizon", "500", cwd=tmp_path))
    _error(_dodb("budget", db, "--set", "0.1", "1e-6", cwd=tmp_path), "force=True")
    _ok(_dodb("budget", db, "--set", "0.1", "1e-6", "--force", cwd=tmp_path))
    text = _ok(_dodb("budget", db, cwd=tmp_path)).stdout
    assert "sized for 500 queries" in text and "2 charges" in text
    hist = _ok(_dodb("history", db, cwd=tmp_path)).stdout
    lines = hist.strip().splitlines()
    assert sum("owner    set_budget" in ln for ln in lines) == 3 and "FORCED" in lines[-1]
    assert any("set_horizon" in ln for ln in lines) and any("owner    protect t" in ln for ln in lines)
    assert sum(" query  #" in ln for ln in lines) == 2
    rows = json.loads(_ok(_dodb("history", db, "--json", cwd=tmp_path)).stdout)
    assert [r["type"] for r in rows].count("owner action") >= 5
    spent = json.loads(_ok(_dodb("budget", db, "--json", cwd=tmp_path)).stdout)["spent"][0]
    assert abs(spent - sum(r["epsilon"] for r in rows if r["type"] != "owner action")) < 1e-9
    # unprotect after charges needs --force, and is recorded
    _error(_dodb("unprotect", db, "t", cwd=tmp_path), "force=True")
    _ok(_dodb("unprotect", db, "t", "--force", cwd=tmp_path))
    assert "unprotect t" in _ok(_dodb("history", db, "--limit", "1", cwd=tmp_path)).stdout
    _error(_dodb("token", "add", db, cwd=tmp_path), "dodb token add FILE NAME")
