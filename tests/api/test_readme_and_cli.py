"""The README's tour runs as written; the CLI works end to end (subprocess)."""
from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from ..cli_run import run_cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def _dodb(*args: str, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "dodb", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600)


def test_readme_starts_with_the_two_commands():
    first = _blocks("sh")[0].strip().splitlines()
    assert first[0].startswith("make run") and first[1].startswith("make test")


def test_readme_tour(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for code in _blocks("python"):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "privacy report" in out and "charged" in out
    # the README's shell commands, parsed as a shell would, through dodb.cli.main in this
    # process (test_demo_runs runs the installed command itself)
    for line in _blocks("console")[0].strip().splitlines():
        cmd = shlex.split(line.lstrip("$ "), comments=True)
        assert cmd[0] == "dodb"
        r = run_cli(*cmd[1:], cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    r = run_cli("budget", "tour.duckdb", "--json", cwd=tmp_path)
    info = json.loads(r.stdout)
    assert 0 < info["spent"][0] <= 3.0  # the tour's queries were charged and persisted


def test_cli_end_to_end(tmp_path):
    """Protect, budget, query, explain and the errors, through ``dodb.cli.main`` in this process
    (exit status and both streams as a subprocess reports them; `test_demo_runs` and the
    README tour run the installed command itself)."""
    db = str(tmp_path / "c.duckdb")
    import duckdb

    con = duckdb.connect(db)
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 4 AS g, range * 1.5 AS x FROM range(100)")
    con.close()
    r = run_cli("protect", db, "t", "--privacy-unit", "id", "--max-contributions", "1", cwd=tmp_path)
    assert r.returncode == 2 and "budget" in r.stderr  # the capacity release needs a budget (or --capacity)
    assert run_cli("budget", db, "--set", "1.0", "1e-6", cwd=tmp_path).returncode == 0
    r = run_cli("protect", db, "t", "--privacy-unit", "id", "--max-contributions", "1", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    protect_eps = json.loads(r.stdout)["charged_epsilon"]
    assert 0 < protect_eps <= 0.05 + 1e-12  # the capacity release: 5% of the budget by default
    r = run_cli("query", db, "SELECT g, count(*) AS n FROM t GROUP BY g ORDER BY g", "--epsilon", "0.4", "--json",
              cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["rows"] == [{"g": i, "n": 25} for i in range(4)]
    assert out["privacy"]["charged_epsilon"] <= 0.4 + 1e-12
    spent = json.loads(run_cli("budget", db, "--json", cwd=tmp_path).stdout)["spent"][0]
    assert max(protect_eps, out["privacy"]["charged_epsilon"]) <= spent
    assert spent <= protect_eps + out["privacy"]["charged_epsilon"] + 1e-9
    # over budget: a clear one-line error, no traceback, exit status 2, nothing charged
    r = run_cli("query", db, "SELECT g, count(*) FROM t GROUP BY g", "--epsilon", "5", cwd=tmp_path)
    assert r.returncode == 2 and "budget exceeded" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("budget", db, "--json", cwd=tmp_path)
    assert json.loads(r.stdout)["spent"][0] == pytest.approx(spent)
    r = run_cli("query", db, "SELEC nonsense", "--epsilon", "1", cwd=tmp_path)
    assert r.returncode == 2 and "malformed SQL" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("explain", db, "SELECT count(*) FROM t WHERE x > 3", cwd=tmp_path)
    assert r.returncode == 0 and "Filter" in r.stdout


def test_demo_runs():
    r = _dodb("demo", cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("identical to DuckDB's answer: yes") == 3
    assert "refused before running" in r.stdout and "nothing was charged" in r.stdout
