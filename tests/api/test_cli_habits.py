"""The CLI's habits (issue 29 items 3 and 4): --params, dodb tables, every default in
--help, and budget displays that say what the admitting filter counts, with the plain sum
labelled as one and floats rounded."""
from __future__ import annotations

import json

import click
import duckdb
import pytest

import dodb
from dodb.cli import cli

from ..cli_run import run_cli

GROUPED = "SELECT g, count(*) AS n FROM t WHERE g >= ? GROUP BY g ORDER BY g"


@pytest.fixture(scope="module")
def renyi(tmp_path_factory):
    """A file whose 24 charges sum to more than its budget while the Rényi filter admits them."""
    d = tmp_path_factory.mktemp("habits")
    path = str(d / "h.duckdb")
    db = dodb.connect(path)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(30)")
    db.con.execute("CREATE TABLE pub AS SELECT 1 AS k")
    db.set_budget(epsilon=0.9, delta=1e-2, filter="renyi")
    db.protect("t", "id", max_contributions=1, capacity=40)
    for _ in range(24):
        db.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=0.05)
    info = db.budget
    db.close()
    assert info["spent"][0] > info["budget"][0] > info["filter_spent"][0]  # the case the issue met
    return d, path, info


def test_budget_says_what_the_filter_counts_and_labels_the_plain_sum(renyi):
    d, path, info = renyi
    out = run_cli("budget", path, cwd=d)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"spent    ε {info['filter_spent'][0]:.3g} of 0.9 under Rényi")
    assert lines[1].startswith(f"left     ε={info['remaining'][0]:.4g} ")
    assert lines[2].startswith("plain sum of the 24 charges in 'dodb history': ε=1.2 ") and "not what admits" in lines[2]
    assert not any("spent  ε=1.2" in ln or "999" in ln for ln in lines)  # neither unlabelled nor unrounded


def test_the_report_names_its_budget_numbers(renyi):
    d, path, _ = renyi
    db = dodb.connect(path)
    try:
        rep = db.sql("SELECT k FROM pub", epsilon=0.05).privacy
    finally:
        db.close()
    assert "left for the next query; the charges so far sum to ε=1.2" in str(rep)
    assert "a plain sum" in rep.verbose()


def test_params_bind_on_query_and_explain(renyi):
    d, path, _ = renyi
    r = run_cli("query", path, GROUPED, "--epsilon", "0.01", "--params", "[1]", "--json", cwd=d)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["rows"] == [{"g": 1, "n": 10}, {"g": 2, "n": 10}]
    r = run_cli("explain", path, "SELECT count(*) FROM t WHERE g = $g", "--params", '{"g": 2}', cwd=d)
    assert r.returncode == 0 and "Filter" in r.stdout, r.stderr
    for bad, says in (("[1", "--params is not JSON"), ("3", "give a JSON list")):
        r = run_cli("query", path, GROUPED, "--epsilon", "0.01", "--params", bad, cwd=d)
        assert r.returncode == 2 and says in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    before = json.loads(run_cli("budget", path, "--json", cwd=d).stdout)["spent"]
    r = run_cli("query", path, GROUPED, "--epsilon", "0.01", cwd=d)  # a placeholder without --params
    assert r.returncode == 2 and "params" in r.stderr
    assert json.loads(run_cli("budget", path, "--json", cwd=d).stdout)["spent"] == before  # nothing charged


def test_tables_lists_protection_unit_and_capacity(renyi):
    d, path, _ = renyi
    r = run_cli("tables", path, cwd=d)
    assert r.returncode == 0, r.stderr
    rows = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
            for ln in r.stdout.splitlines() if ln.startswith("| ") and "protection" not in ln}
    assert rows == {"pub": ["public", "-", "-"], "t": ["private", "t (id)", "40 slots (declared)"]}
    listing = json.loads(run_cli("tables", path, "--json", cwd=d).stdout)
    assert [t["name"] for t in listing] == ["pub", "t"] and listing[1]["capacity"] == 40


def test_every_default_is_in_the_help(tmp_path):
    """Each option with a default value says it in its command's --help."""
    group = cli()
    missing = []
    for name, command in group.commands.items():
        r = run_cli(name, "--help", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        text = " ".join(r.stdout.split())
        for p in command.params:
            if not isinstance(p, click.Option) or p.is_flag or p.multiple or p.default is None or p.required:
                continue
            shown = f"[default: {p.default}]" in text or (p.help and "default" in p.help)
            if not shown:
                missing.append(f"{name} {p.opts[0]}")
    assert not missing, missing
    assert len(group.commands) == 15 and "gateway" in group.commands  # every command was looked at


def test_history_rounds_floats_and_keeps_one_line_per_entry(tmp_path):
    path = str(tmp_path / "r.duckdb")
    con = duckdb.connect(path)
    con.execute("CREATE TABLE t AS SELECT range AS id FROM range(5)")
    con.close()
    assert run_cli("budget", path, "--set", "1", "1e-6", "--create", cwd=tmp_path).returncode == 0
    db = dodb.connect(path)
    db.set_budget(epsilon=0.1 + 0.2, delta=1e-6)  # 0.30000000000000004
    db.protect("t", "id", max_contributions=1, capacity=8)
    db.sql("SELECT count(*)\nFROM t\nGROUP BY id % 2", epsilon=0.1)
    db.close()
    out = run_cli("history", path, cwd=tmp_path).stdout
    assert '"epsilon": 0.3,' in out and "0.30000000000000004" not in out
    assert "completed: SELECT count(*) FROM t GROUP BY id % 2" in out


def test_query_prints_duckdbs_box_or_a_data_format(renyi):
    d, path, _ = renyi
    r = run_cli("query", path, "SELECT g, count(*) AS n FROM t GROUP BY g ORDER BY g", "--epsilon", "0.01", cwd=d)
    assert r.returncode == 0, r.stderr
    box = str(duckdb.connect().sql("SELECT range AS g, 10::BIGINT AS n FROM range(3)"))  # the same answer
    assert r.stdout.startswith(box.rstrip("\n") + "\n")
    r = run_cli("query", path, "SELECT g, count(*) AS n FROM t GROUP BY g ORDER BY g", "--epsilon", "0.01",
                "--format", "csv", "--limit", "2", cwd=d)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "g,n\n0,10\n1,10\n… 1 more rows\n"  # the report and the ε used go to stderr
    assert "privacy report" in r.stderr and "ε used: 0.01" in r.stderr


def test_table_and_markdown_modes_are_plain_text_in_a_pipe(renyi):
    """``--format table`` is DuckDB's ``.mode table`` and ``markdown`` a Markdown table (drawn
    by rich): numbers right-aligned, NULL shown, data never read as markup, no ANSI codes."""
    d, path, _ = renyi
    sql = "SELECT k, '[bold]x[/bold]' AS s, NULL::INT AS z FROM pub"
    r = run_cli("query", path, sql, "--epsilon", "0.01", "--format", "table", cwd=d)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("+---+----------------+------+\n"
                               "| k | s              |    z |\n"
                               "+---+----------------+------+\n"
                               "| 1 | [bold]x[/bold] | NULL |\n"
                               "+---+----------------+------+\n")
    r = run_cli("query", path, sql, "--epsilon", "0.01", "--format", "markdown", cwd=d)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("| k | s              |    z |\n"
                               "|---|----------------|------|\n"
                               "| 1 | [bold]x[/bold] | NULL |\n")
    assert "\x1b" not in r.stdout + r.stderr


def test_progress_shows_only_for_a_query_past_its_threshold(monkeypatch):
    import io
    import time

    from dodb.cli.common import progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    quick, slow = Tty(), Tty()
    monkeypatch.setattr("sys.stderr", quick)
    with progress("running", after=0.3):
        pass
    monkeypatch.setattr("sys.stderr", slow)
    with progress("running", after=0.05):
        time.sleep(0.5)
    assert quick.getvalue() == "" and "running" in slow.getvalue() and slow.getvalue().endswith("\x1b[2K")  # erased
