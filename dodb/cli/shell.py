"""``dodb shell FILE``: an interactive SQL shell with DuckDB's habits.

A statement ends at ``;`` and may span lines; dot-commands (``.tables``, ``.budget``,
``.explain``, ``.mode``, ``.epsilon``, ``.help``, ``.quit``) act at once.  The prompt
shows what is left of the budget (``dodb ε 9.2/10> ``), every answer is followed by the
ε it was charged, and a user error is one line: the shell keeps running.  Input lines
go through readline, with a history file in the user's data folder (platformdirs).
Ctrl-C drops the line being typed (or stops a running query), Ctrl-D leaves.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable

from ..errors import DodbError
from . import render
from .common import open_database, progress

HELP = """\
SQL statements end with ';' and may span several lines. Dot-commands:
  .tables           the tables: private or public, privacy unit, capacity
  .budget           the privacy budget: spent as the admitting filter counts it, the plain sum, what is left
  .explain SQL      the plan of SQL with its ε per operator (runs nothing, charges nothing)
  .mode [MODE]      output mode: box, table, markdown, csv, json, line (no argument: the current one)
  .epsilon [E]      the ε each query is charged (no argument: the current one)
  .delta [D|default]  the δ each query is charged (default: the dataset's default query δ)
  .help             this text
  .quit, .exit      leave (Ctrl-D too); Ctrl-C drops the current input
"""


def history_file() -> str:
    """Where the shell keeps its input history: the user's data folder (``DODB_HISTORY`` overrides)."""
    if os.environ.get("DODB_HISTORY"):
        return os.environ["DODB_HISTORY"]
    from platformdirs import user_data_dir

    return os.path.join(user_data_dir("dodb", appauthor=False), "shell_history")


def split_statements(text: str) -> tuple[list[str], str]:
    """The complete statements in ``text`` (each ended by a ``;`` outside quotes and
    comments) and the unfinished rest."""
    out: list[str] = []
    start, i, n = 0, 0, len(text)
    quote: str | None = None
    while i < n:
        c = text[i]
        if quote:
            if c == quote:
                quote = None
        elif c in ("'", '"'):
            quote = c
        elif c == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        elif c == ";":
            stmt = text[start:i].strip()
            if stmt:
                out.append(stmt)
            start = i + 1
        i += 1
    return out, text[start:]


class Shell:
    """The read-evaluate-print loop over one open database (a file or a dodb server)."""

    def __init__(self, db: Any, *, epsilon: float, delta: float | None = None, mode: str = "box",
                 output: Callable[[str], None] | None = None, errors: Callable[[str], None] | None = None):
        self.db = db
        self.epsilon = float(epsilon)
        self.delta = delta
        self.mode = mode
        self.out = output or (lambda s: print(s, flush=True))
        self.err = errors or (lambda s: print(s, file=sys.stderr, flush=True))
        self.done = False
        self.failed = False  # any error: a script fed through a pipe exits with status 1

    # -- the prompt --------------------------------------------------------------------------
    def prompt(self) -> str:
        """``dodb ε LEFT/TOTAL> ``: the largest ε the next query can be charged, of the budget."""
        try:
            info = self.db.budget
        except Exception:  # no budget set yet (or the server is gone): the plain prompt
            return "dodb> "
        return f"dodb ε {render.num(info['remaining'][0], 3)}/{render.num(info['budget'][0])}> "

    # -- one input -----------------------------------------------------------------------------
    def run_sql(self, sql: str) -> None:
        """Run one statement, print its answer in the current mode and the ε it was charged."""
        t0 = time.monotonic()
        with progress("running"):  # a spinner on a terminal once the query passes a second
            res = self.db.sql(sql, epsilon=self.epsilon, delta=self.delta)
        secs = time.monotonic() - t0
        self.out(render.render(res, self.mode))
        rep = res.privacy
        rows = f"{len(res):,} row{'s' if len(res) != 1 else ''} in {secs:.2f}s"
        if rep.query_id is not None:
            self.out(f"{rows}; charged ε={render.num(rep.charged_epsilon)}, δ={render.num(rep.charged_delta, 3)} "
                     f"(query #{rep.query_id}; asked ε={render.num(self.epsilon)})")
        else:
            self.out(f"{rows}; charged nothing ({rep.free_reason()})")

    def dot(self, line: str) -> None:
        """A dot-command (``.help`` lists them)."""
        cmd, _, arg = line.strip().partition(" ")
        arg = arg.strip()
        if cmd in (".quit", ".exit", ".q"):
            self.done = True
        elif cmd == ".help":
            self.out(HELP.rstrip())
        elif cmd == ".tables":
            self.out("\n".join(render.table_listing_lines(self.db.tables())))
        elif cmd == ".budget":
            self.out("\n".join(render.budget_lines(self.db.budget)))
        elif cmd == ".explain":
            if not arg:
                raise DodbError(".explain needs a statement: .explain SELECT ...")
            self.out(str(self.db.explain(arg.rstrip().rstrip(";"), epsilon=self.epsilon, delta=self.delta)))
        elif cmd == ".mode":
            if arg:
                if arg not in render.MODES:
                    raise DodbError(f"unknown mode {arg!r}; choose one of {', '.join(render.MODES)}")
                self.mode = arg
            self.out(f"mode: {self.mode}")
        elif cmd == ".epsilon":
            if arg:
                self.epsilon = _positive(arg, ".epsilon")
            self.out(f"each query is charged ε={render.num(self.epsilon)}")
        elif cmd == ".delta":
            if arg:
                self.delta = None if arg == "default" else _positive(arg, ".delta")
            self.out("each query is charged " + ("the dataset's default query δ" if self.delta is None
                                                  else f"δ={render.num(self.delta, 3)}"))
        else:
            raise DodbError(f"unknown command {cmd!r} (.help lists them)")

    def guarded(self, action: Callable[[], None]) -> None:
        """Run ``action``; a user error (or any failure) is one line and the shell goes on."""
        import duckdb

        from ..accountant import AccountantError

        try:
            action()
            return
        except KeyboardInterrupt:
            self.err("Interrupted (a query admitted before it was stopped keeps its charge: see .budget)")
        except (DodbError, AccountantError, ValueError, duckdb.Error) as e:
            self.err(f"Error: {_first_line(e)}")
        except Exception as e:  # never a traceback in an interactive session
            self.err(f"Error: {type(e).__name__}: {_first_line(e)}")
        self.failed = True

    # -- the loop ------------------------------------------------------------------------------
    def loop(self, read: Callable[[str], str] = input, *, interactive: bool = True) -> int:
        """Read, run and print until ``.quit`` or end of input; the exit status (1 if a piped
        script met an error).  Ctrl-C at any moment (typing,
        a running query, the prompt being computed) drops the pending input, never the shell."""
        pending = ""
        while not self.done:
            try:
                if interactive:
                    prompt = self.prompt() if not pending.strip() else "   ...> "
                else:
                    prompt = ""
                try:
                    line = read(prompt)
                except EOFError:
                    if interactive:
                        self.out("")
                    break
                if not pending.strip() and line.lstrip().startswith("."):
                    self.guarded(lambda: self.dot(line))
                    continue
                pending += line + "\n"
                stmts, pending = split_statements(pending)
                for stmt in stmts:
                    self.guarded(lambda: self.run_sql(stmt))
            except KeyboardInterrupt:  # drop what was typed so far, as DuckDB's shell does
                self.out("^C" if interactive else "")
                pending = ""
        if pending.strip():
            self.err("Error: the last statement has no ';' and was not run")
            self.failed = True
        # a script through a pipe reports failure as DuckDB's shell does; a person saw each error
        return 1 if self.failed and not interactive else 0


def _positive(text: str, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise DodbError(f"{what} {text!r}: give a positive number") from None
    if not v > 0:
        raise DodbError(f"{what} {text!r}: give a positive number")
    return v


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _readline_history() -> Callable[[], None]:
    """Load the history file into readline; returns the function that saves it."""
    try:
        import readline
    except ImportError:  # no readline (some builds): input() still works, without history
        return lambda: None
    path = history_file()
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(2000)

    def save() -> None:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            readline.write_history_file(path)
        except OSError as e:
            print(f"dodb: could not save the shell history to {path}: {e}", file=sys.stderr)

    return save


def run_shell(args: Any) -> int:
    """``dodb shell``: open the database, greet, loop, save the history."""
    if args.format not in render.MODES:
        raise DodbError(f"unknown mode {args.format!r}")
    db = open_database(args)
    interactive = sys.stdin.isatty()
    if interactive:
        import signal

        # Ctrl-C must reach the loop even when the shell was started with SIGINT ignored (a
        # background job of a script): Python then installs no KeyboardInterrupt handler
        signal.signal(signal.SIGINT, signal.default_int_handler)
    shell = Shell(db, epsilon=args.epsilon, delta=args.delta, mode=args.format)
    save = _readline_history() if interactive else (lambda: None)
    try:
        if interactive:
            from .. import __version__

            shell.out(f"dodb {__version__} shell on {args.db}: each query is charged ε={render.num(args.epsilon)} "
                      "(.epsilon E to change). .help for help, Ctrl-D to leave.")
        return shell.loop(interactive=interactive)
    finally:
        save()
        db.close()
