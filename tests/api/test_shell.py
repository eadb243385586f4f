"""``dodb shell`` driven through a real pseudo-terminal (pexpect): a multi-line query, the
dot-commands, errors that leave the shell running, Ctrl-C, the budget in the prompt, the
history file, and Ctrl-D (issue 29 item 3)."""
from __future__ import annotations

import io
import os
import sys

import duckdb
import pytest

from dodb.cli.shell import Shell, split_statements

from ..cli_run import run_cli

pexpect = pytest.importorskip("pexpect")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def dbfile(tmp_path_factory):
    d = tmp_path_factory.mktemp("shell")
    path = str(d / "s.duckdb")
    con = duckdb.connect(path)
    con.execute("CREATE TABLE visits AS SELECT range AS id, range % 3 AS ward FROM range(30)")
    con.execute("CREATE TABLE wards AS SELECT range AS ward, 'w' || range AS name FROM range(3)")
    con.close()
    assert run_cli("budget", path, "--set", "10", "1e-5", cwd=d).returncode == 0
    r = run_cli("protect", path, "visits", "--privacy-unit", "id", "--max-contributions", "1", "--capacity", "40",
                cwd=d)
    assert r.returncode == 0, r.stderr
    return path


def test_shell_in_a_pseudo_terminal(dbfile, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, DODB_HISTORY=str(tmp_path / "hist"), TERM="dumb", COLUMNS="120")
    child = pexpect.spawn(sys.executable, ["-m", "dodb", "shell", dbfile, "--epsilon", "0.5"], env=env,
                          encoding="utf-8", timeout=60, dimensions=(40, 200))
    seen = child.logfile_read = io.StringIO()  # everything the terminal showed
    try:
        _drive(child)
    except pexpect.TIMEOUT:
        raise AssertionError(f"the shell stopped answering; the terminal showed:\n{seen.getvalue()[-1500:]}") from None
    finally:
        child.close(force=True)
    assert child.exitstatus == 0 and "Traceback" not in seen.getvalue()
    hist = (tmp_path / "hist").read_text()
    assert "FROM visits GROUP BY ward ORDER BY ward;" in hist and ".tables" in hist
    assert "SELECT nonsense" not in hist  # the interrupted line never reached the history


def _drive(child) -> None:
    """Type into the shell and read what it shows (each expect waits for its text)."""
    child.expect(r"each query is charged ε=0\.5")
    child.expect_exact("dodb ε 10/10> ")  # nothing spent yet: all of the budget left
    # a statement over two lines: the second line gets the continuation prompt
    child.sendline("SELECT ward, count(*) AS n")
    child.expect_exact("...> ")
    child.sendline("FROM visits GROUP BY ward ORDER BY ward;")
    child.expect(r"│\s+2\s+│\s+10\s+│")  # DuckDB's box
    child.expect(r"3 rows in [\d.]+s; charged ε=0\.5, δ=[\d.e-]+ \(query #1; asked ε=0\.5\)")
    child.expect_exact("dodb ε 9.5/10> ")  # the prompt shows what is left
    child.sendline(".tables")
    child.expect(r"visits\s+\|\s+private\s+\|\s+visits \(id\)\s+\|\s+40 slots \(declared\)")
    child.expect_exact("> ")
    child.sendline(".mode csv")
    child.expect_exact("mode: csv")
    child.sendline("SELECT name FROM wards WHERE ward = 1;")
    child.expect(r"name\r\nw1\r\n")
    child.expect(r"charged nothing \(public tables only\)")
    # errors: one line each, the shell keeps running, nothing charged
    child.sendline("SELECT wardd FROM visits;")
    child.expect(r"Error: [^\r\n]*Candidate bindings[^\r\n]*\r\n")
    child.sendline(".bogus")
    child.expect(r"Error: unknown command '\.bogus'")
    child.sendline(".epsilon 1e9")
    child.expect_exact("each query is charged ε=1e+09")
    child.sendline("SELECT count(*) FROM visits GROUP BY ward;")
    child.expect(r"Error: epsilon=1e\+09 is above 40[^\r\n]*nothing was charged")  # the sampler's cap
    child.sendline(".epsilon 20")
    child.sendline("SELECT count(*) FROM visits GROUP BY ward;")
    child.expect(r"Error: privacy budget exceeded[^\r\n]*nothing was charged")
    child.sendline(".epsilon 0.25")
    child.sendline(".budget")
    child.expect(r"spent\s+ε 0\.5 of 10 under the best of basic, advanced and Rényi")
    child.expect(r"plain sum of the 1 charges")
    child.sendline(".explain SELECT count(*) FROM visits")
    child.expect("Aggregate")
    child.expect_exact("dodb ε 9.5/10> ")  # readline is reading before the next keys come
    # Ctrl-C drops a half-typed statement; it is never run
    child.send("SELECT nonsense FROM")
    child.expect_exact("nonsense FROM")  # readline has the keys (a ^C before that finds none to drop)
    child.sendintr()
    child.expect_exact("^C")
    child.expect_exact("dodb ε 9.5/10> ")
    child.sendline("SELECT 42 AS answer;")
    child.expect(r"answer\r\n42\r\n")
    child.expect_exact("dodb ε 9.5/10> ")  # readline reads again before Ctrl-D is typed
    child.sendeof()  # Ctrl-D leaves
    child.expect(pexpect.EOF)


def test_shell_help_and_quit_when_piped(dbfile, tmp_path):
    r = run_cli("shell", "--help", cwd=tmp_path)
    assert r.returncode == 0 and ".explain" in r.stdout and "[default: 1.0]" in r.stdout
    out: list[str] = []
    err: list[str] = []
    from dodb import connect

    db = connect(dbfile)
    try:
        shell = Shell(db, epsilon=0.5, mode="line", output=out.append, errors=err.append)
        lines = [".help", "SELECT 'a;b' AS s, -- a ; in a comment", "2 AS n;", ".quit", "SELECT 1;"]
        assert shell.loop(_reader(lines), interactive=False) == 0
        assert any(".budget" in o for o in out) and "s = a;b\nn = 2" in out and not err  # .quit: no SELECT 1
        failing = Shell(db, epsilon=0.5, output=out.append, errors=err.append)
        assert failing.loop(_reader(["SELECT nope FROM wards;", "SELECT 1"]), interactive=False) == 1  # a piped script's status
    finally:
        db.close()
    assert len(err) == 2 and "nope" in err[0] and "no ';'" in err[1]


def _reader(lines: list[str]):
    """``input`` over ``lines``: EOFError at their end, as a closed pipe gives."""
    it = iter(lines)

    def read(prompt: str) -> str:
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    return read


def test_statements_split_at_semicolons_outside_quotes_and_comments():
    assert split_statements("SELECT 1; SELECT ';' /* ; */; SEL") == (["SELECT 1", "SELECT ';' /* ; */"], " SEL")
    assert split_statements('SELECT "a;b" -- x;\n, 2;') == (['SELECT "a;b" -- x;\n, 2'], "")
