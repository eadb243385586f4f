"""The ``dodb`` commands and their options, on click (docs/design.md §Analyst API).

Every option's default shows in its command's ``--help`` (``show_default``); options whose
default is computed later (``None`` here) say it in their help text.  Each command's
callback hands its options, as attributes, to the handler in ``commands.py``, which
imports the engine only then: building this parser imports nothing heavy, so
``dodb --help`` stays fast (tests/test_startup.py).
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

import click

from ..audit import command as audit_command
from .render import MODES  # light: the renderers import rich only when they draw
from .commands import (_budget, _demo, _explain, _gateway, _history, _protect, _query, _serve, _shard, _shell,
                       _tables, _token, _unprotect, _warmup)

__all__ = ["EPSILON_CAP", "build_cli"]

# The sampler's per-release ε cap (``oblivious.noise.MAX_RELEASE_EPSILON``), written here so that
# the help does not import the engine (tests/api/test_epsilon_cap.py keeps the two equal).
EPSILON_CAP = 40.0

SETTINGS = {"help_option_names": ["-h", "--help"], "show_default": True, "max_content_width": 110}


def _opt(*decls: str, **kw: Any) -> click.Option:
    return click.Option(list(decls), **kw)


def _arg(name: str, **kw: Any) -> click.Argument:
    return click.Argument([name], **kw)


def _db() -> click.Argument:
    """The database positional (a file, or grpc://host:port); click arguments carry no help
    text, so the command's own help names it."""
    return _arg("db", metavar="DB")


def _token_opt(extra: str = "") -> click.Option:
    return _opt("--token", default=None, help=f"analyst token for a dodb server (or DODB_TOKEN){extra}")


def _json() -> click.Option:
    return _opt("--json", is_flag=True, help="machine-readable output")


def _create() -> click.Option:
    return _opt("--create", is_flag=True, help="create the database file if it does not exist")


def _query_and_explain(epsilon: click.Option) -> list[click.Parameter]:
    """What ``query`` and ``explain`` share, around their own ``--epsilon``."""
    return [
        _db(), _arg("sql", metavar="SQL"), epsilon,
        _opt("--delta", type=float, default=None, help="the query's δ (default: the dataset's default query δ)"),
        _opt("--params", metavar="JSON", default=None,
             help="values for the ? / $1 (a JSON list) or $name (a JSON object) placeholders, bound as constants of "
             "the parsed query"),
        _opt("--mode", type=click.Choice(["do", "oblivious", "plain"]), default="do",
             help="do: differentially oblivious; oblivious: releases no size; plain: DuckDB, unprotected"),
        _json(), _token_opt(),
        _opt("--cluster", metavar="SPEC", default=None,
             help="run on workers over the shards ('dodb shard' first): local:P starts P Ray workers here, inline:P "
             "runs them in this process, ray://HOST:PORT joins a cluster (docs/distributed.md)"),
        _create(),
    ]


def _about(summary: str, text: str | None = None) -> dict[str, str]:
    """A command's one-line summary (listed by ``dodb --help``) and the text of its own help."""
    return {"short_help": summary, "help": text or summary[0].upper() + summary[1:] + "."}


def _commands() -> list[tuple[str, Callable[[Any], int], dict[str, Any], list[click.Parameter]]]:
    """(name, handler, click.Command settings, parameters) of every command, in help order."""
    fmt = _opt("--format", type=click.Choice(MODES), default="box",
               help="how to print the answer: DuckDB's box, or as DuckDB's shell modes (--json: rows and report)")
    return [
        ("demo", _demo, _about("private query session on a built-in TPC-H sample"), [
            _opt("--scale", type=float, default=0.01, help="TPC-H scale factor"),
            _opt("--db", default=None, help="database file (default: in memory)"),
            _opt("--budget", type=float, default=5.0, help="the sample's total ε")]),
        ("warmup", _warmup, _about("compile the oblivious kernels once, ahead of the first query (cached per user)"),
         []),
        ("query", _query, _about("run a private query",
                                 "Run SQL on DB (a database file, or grpc://host:port of a dodb server)."),
         _query_and_explain(
            # ε is never silently defaulted on a query that charges (issue 29); EXPLAIN charges nothing
            _opt("--epsilon", type=float, required=True,
                 help=f"the query's ε (at most {EPSILON_CAP:g}, the padding sampler's cap)")) + [
            _opt("--limit", type=int, default=50, help="rows to print"), fmt,
            _opt("--verbose", is_flag=True, help="privacy report with every release's ε/δ and theorems"),
            _opt("--allow-insecure", is_flag=True, help="needed for --mode plain on private tables")]),
        ("explain", _explain, _about("show the plan without running or charging",
                                     "Show the plan of SQL on DB (a file, or grpc://host:port) without running or "
                                     "charging."),
         _query_and_explain(
            _opt("--epsilon", type=float, default=1.0, help="the ε to plan with (nothing is charged)"))),
        ("tables", _tables, _about("the tables: private or public, privacy unit path, capacity",
                                   "The tables of DB (a file, or grpc://host:port): private or public, privacy unit "
                                   "path, capacity."),
         [_db(), _json(), _token_opt(), _create()]),
        ("shell", _shell, _about("interactive SQL shell (statements end with ';', .help for dot-commands)",
                                 "An interactive SQL shell on DB (a database file, or grpc://host:port of a dodb "
                                 "server): statements end with ';' and may span lines; .tables, .budget, .explain "
                                 "SQL, .mode MODE, .epsilon E, .delta D, .help, .quit. The prompt shows the ε left "
                                 "of the budget; each answer says the ε it was charged."), [
            _db(),
            _opt("--epsilon", type=float, default=1.0, help="the ε each query is charged (.epsilon E changes it)"),
            _opt("--delta", type=float, default=None, help="each query's δ (default: the dataset's default query δ)"),
            _opt("--format", type=click.Choice(MODES), default="box", help="output mode (.mode changes it)"),
            _token_opt(), _create()]),
        ("budget", _budget, _about("show (or set: an owner action, recorded) the dataset's privacy budget"), [
            _db(), _opt("--set", "set", type=float, nargs=2, default=None, metavar="EPSILON DELTA",
                        help="the new total ε and δ"),
            _opt("--horizon", type=int, default=None, help="queries the default query δ is sized for (default 10000)"),
            _opt("--force", is_flag=True, help="allow lowering the budget below what was spent (recorded)"),
            _json(),
            _opt("--plot", metavar="FILE", default=None,
                 help="draw spending over time to FILE (.png/.svg/.pdf; needs matplotlib)"),
            _token_opt(), _create()]),
        ("history", _history, _about("past queries, owner releases and owner actions"), [
            _db(), _opt("--limit", type=int, default=0, help="only the last N entries (0: all)"), _json(),
            _token_opt(": your own queries"), _create()]),
        ("unprotect", _unprotect, _about("make a private table public again (owner action, recorded)"), [
            _db(), _arg("table", metavar="TABLE"),
            _opt("--force", is_flag=True, help="needed once anything was charged (recorded)"), _create()]),
        ("token", _token, _about("issue, revoke or list analyst tokens for 'dodb serve'",
                                 "Issue, revoke or list analyst tokens for 'dodb serve' (add and revoke take NAME; "
                                 "add prints the token on its last line)."), [
            _arg("action", type=click.Choice(["add", "revoke", "list"])), _db(),
            _arg("name", required=False, default=None, metavar="[NAME]"), _create()]),
        ("serve", _serve, _about("serve the database to analysts over Arrow Flight (token auth)"), [
            _db(),
            _opt("--host", default="127.0.0.1", help="address to listen on (anything but loopback needs TLS)"),
            _opt("--port", type=int, default=47470, help="0 picks a free port (printed)"),
            _opt("--tls-cert", default=None, help="PEM certificate (with --tls-key): serve grpc+tls://"),
            _opt("--tls-key", default=None, help="PEM key of --tls-cert"),
            _opt("--request-log", metavar="PATH", default=None,
                 help="one JSON line per request, nothing data-dependent (default: DB.requests.jsonl; "
                 "'none': off)")]),
        ("gateway", _gateway, _about(
            "serve Flight SQL (ADBC, JDBC, BI tools) on this machine, forwarding queries to a dodb server with "
            "your token",
            "An analyst-side Arrow Flight SQL endpoint: local tools connect to it; it sends each query to "
            "the dodb server at --engine with your token, charges every query the --epsilon given here, strips the "
            "dummy rows and answers. 'SELECT * FROM dodb_last_report' shows the last query's privacy report. See "
            "docs/served.md."), [
            _opt("--engine", required=True, metavar="URL", help="the dodb server, grpc://HOST:PORT (or grpc+tls://)"),
            _opt("--token", default=None, help="your analyst token (default: $DODB_TOKEN)"),
            _opt("--epsilon", type=float, required=True, help="ε charged for every query (required)"),
            _opt("--delta", type=float, default=None,
                 help="δ for every query (default: the dataset's default query δ)"),
            _opt("--port", type=int, default=47471, help="port to listen on (0 picks a free one, printed)"),
            _opt("--host", default=None, help="address to listen on (default: 127.0.0.1; anything else warns: "
                 "whoever reaches the gateway spends your budget)"),
            _opt("--tls-root-certs", metavar="PEM", default=None, help="CA certificate of a grpc+tls:// engine")]),
        ("shard", _shard, _about("cut the private tables into shards by privacy unit, for --cluster (owner "
                                 "action; the shard sizes are released and charged)"), [
            _db(), _opt("--workers", type=int, required=True, help="the number of shards (one per worker)"),
            _opt("--epsilon", type=float, default=None,
                 help="ε for the released shard sizes (default: as for protect)"),
            _json(), _create()]),
        ("protect", _protect, _about("declare a table private"), [
            _db(), _arg("table", metavar="TABLE"),
            _opt("--privacy-unit", required=True,
                 help="the column naming each row's privacy unit (with --parent: the column referencing TABLE.KEY)"),
            _opt("--parent", default=None, help="TABLE.KEY the privacy unit column references"),
            _opt("--max-contributions", type=int, default=None, help="rows one unit may own"),
            _opt("--key", multiple=True, help="unique key columns, comma-separated (repeatable)"),
            _opt("--max-degree", multiple=True, help="COL=N (or COL= for a bound released under DP; repeatable)"),
            _opt("--width", multiple=True, help="COL=BYTES: public width of a string column (repeatable)"),
            _opt("--capacity", type=int, default=None,
                 help="a public capacity (>= rows): nothing is charged for the size"),
            _opt("--epsilon", type=float, default=None,
                 help="ε for the released size (default: 5% of the budget, at most 40)"),
            _opt("--orphans", type=click.Choice(["keep", "refuse"]), default="keep",
                 help="rows whose --parent key names no parent row: kept in the unit their key names, or refused"),
            _opt("--null-units", type=click.Choice(["keep", "refuse"]), default="keep",
                 help="rows whose unit key is NULL: each a unit of its own, or refused"),
            _json(), _create()]),
        ("audit", audit_command.run, _about(
            "coupled-neighbour audit of queries on a TPC-H sample (exit 1 if any view differs)"),
         audit_command.parameters()),
    ]


class _InOrder(click.Group):
    """A group that lists its commands in the order they were added (click sorts them)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


def build_cli(dispatch: Callable[[str, Callable[[Any], int], SimpleNamespace], int]) -> click.Group:
    """The ``dodb`` group; each command calls ``dispatch(name, handler, options)``."""
    from .. import __version__

    group = _InOrder("dodb", help="Differentially oblivious SQL for DuckDB.", context_settings=SETTINGS)
    click.version_option(__version__, "--version", prog_name="dodb", message="%(prog)s %(version)s")(group)
    for name, handler, settings, params in _commands():
        group.add_command(click.Command(name, params=params, callback=_callback(dispatch, name, handler), **settings))
    return group


def _callback(dispatch: Callable[[str, Callable[[Any], int], SimpleNamespace], int], name: str,
              handler: Callable[[Any], int]) -> Callable[..., int]:
    """What click calls with a command's options: ``dispatch`` with them as attributes."""
    def run(**options: Any) -> int:
        return dispatch(name, handler, SimpleNamespace(command=name, **options))

    return run
