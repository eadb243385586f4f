"""The ``dodb`` command line: demo, warmup, query, explain, tables, shell, budget, history,
protect, unprotect, token, serve, gateway, shard, audit.

User errors (bad SQL, unknown tables, budget exceeded, invalid parameters) print one
clear line on stderr and exit with status 2 — no traceback.  ``--json`` prints machine-
readable output for scripts.  A database file must exist unless ``--create`` is given;
``query``/``explain``/``budget`` also take ``grpc://host:port`` with ``--token`` (or
``DODB_TOKEN``) to talk to a dodb server (docs/design.md §Served mode).  Parsing imports
nothing heavy: ``dodb --help`` stays fast (tests/test_startup.py).
"""
from __future__ import annotations

import argparse
import sys

from ..errors import DodbError
from .commands import (_budget, _demo, _explain, _gateway, _history, _protect, _query, _serve, _shard, _shell,
                       _tables, _token, _unprotect, _warmup)

__all__ = ["main"]


def _version() -> str:
    from .. import __version__

    return __version__


def _cap() -> float:
    """The sampler's per-release ε cap (``oblivious.noise.MAX_RELEASE_EPSILON``), without
    importing the engine: ``dodb --help`` stays light."""
    return 40.0


class _Formatter(argparse.HelpFormatter):
    """Help that shows every default (argparse's ``ArgumentDefaultsHelpFormatter``), except
    where the help text already says it or there is none to show (flags, unset options)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text or action.required:
            return text
        if action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            text += " (default: %(default)s)"
        return text


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dodb", description="Differentially oblivious SQL for DuckDB",
                                formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"dodb {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="private query session on a built-in TPC-H sample")
    d.add_argument("--scale", type=float, default=0.01, help="TPC-H scale factor")
    d.add_argument("--db", default=None, help="database file (default: in memory)")
    d.add_argument("--budget", type=float, default=5.0, help="the sample's total ε")
    sub.add_parser("warmup", help="compile the oblivious kernels once, ahead of the first query (cached per user)")
    q = sub.add_parser("query", help="run a private query")
    ex = sub.add_parser("explain", help="show the plan without running or charging")
    for sp in (q, ex):
        sp.add_argument("db", help="database file, or grpc://host:port of a dodb server")
        sp.add_argument("sql")
        sp.add_argument("--delta", type=float, default=None, help="the query's δ (default: the dataset's default query δ)")
        sp.add_argument("--params", metavar="JSON", default=None,
                        help="values for the ? / $1 (a JSON list) or $name (a JSON object) placeholders, bound as "
                        "constants of the parsed query")
        sp.add_argument("--mode", choices=["do", "oblivious", "plain"], default="do",
                        help="do: differentially oblivious; oblivious: releases no size; plain: DuckDB, unprotected")
        sp.add_argument("--json", action="store_true", help="machine-readable output")
        sp.add_argument("--token", help="analyst token for a dodb server (or DODB_TOKEN)")
    for sp in (q, ex):
        sp.add_argument("--cluster", metavar="SPEC", help="run on workers over the shards ('dodb shard' first): "
                        "local:P starts P Ray workers here, inline:P runs them in this process, ray://HOST:PORT joins "
                        "a cluster (docs/distributed.md)")
    # ε is never silently defaulted on a query that charges (issue 29); EXPLAIN charges nothing
    q.add_argument("--epsilon", type=float, required=True,
                   help=f"the query's ε (required; at most {_cap():g}, the padding sampler's cap)")
    ex.add_argument("--epsilon", type=float, default=1.0, help="the ε to plan with (nothing is charged)")
    q.add_argument("--limit", type=int, default=50, help="rows to print")
    q.add_argument("--format", choices=["box", "table", "csv", "json", "line"], default="box",
                   help="how to print the answer: DuckDB's box, or as DuckDB's shell modes (--json: rows and report)")
    q.add_argument("--verbose", action="store_true", help="privacy report with every release's ε/δ and theorems")
    q.add_argument("--allow-insecure", action="store_true", help="needed for --mode plain on private tables")
    tb = sub.add_parser("tables", help="the tables: private or public, privacy unit path, capacity")
    tb.add_argument("db", help="database file, or grpc://host:port of a dodb server")
    tb.add_argument("--json", action="store_true")
    tb.add_argument("--token", help="analyst token for a dodb server (or DODB_TOKEN)")
    shl = sub.add_parser("shell", help="interactive SQL shell (statements end with ';', .help for dot-commands)",
                         description="An interactive SQL shell: statements end with ';' and may span lines; "
                         ".tables, .budget, .explain SQL, .mode MODE, .epsilon E, .delta D, .help, .quit. The prompt "
                         "shows the ε left of the budget; each answer says the ε it was charged.")
    shl.add_argument("db", help="database file, or grpc://host:port of a dodb server")
    shl.add_argument("--epsilon", type=float, default=1.0, help="the ε each query is charged (.epsilon E changes it)")
    shl.add_argument("--delta", type=float, default=None, help="each query's δ (default: the dataset's default query δ)")
    shl.add_argument("--format", choices=["box", "table", "csv", "json", "line"], default="box",
                     help="output mode (.mode changes it)")
    shl.add_argument("--token", help="analyst token for a dodb server (or DODB_TOKEN)")
    b = sub.add_parser("budget", help="show (or set: an owner action, recorded) the dataset's privacy budget")
    b.add_argument("db")
    b.add_argument("--set", nargs=2, type=float, metavar=("EPSILON", "DELTA"))
    b.add_argument("--horizon", type=int, help="queries the default query δ is sized for (default 10000)")
    b.add_argument("--force", action="store_true", help="allow lowering the budget below what was spent (recorded)")
    b.add_argument("--json", action="store_true")
    b.add_argument("--plot", metavar="FILE", help="draw spending over time to FILE (.png/.svg/.pdf; needs matplotlib)")
    b.add_argument("--token", help="analyst token for a dodb server (or DODB_TOKEN)")
    h = sub.add_parser("history", help="past queries, owner releases and owner actions")
    h.add_argument("db")
    h.add_argument("--limit", type=int, default=0, help="only the last N entries")
    h.add_argument("--json", action="store_true")
    h.add_argument("--token", help="analyst token for a dodb server (or DODB_TOKEN): your own queries")
    u = sub.add_parser("unprotect", help="make a private table public again (owner action, recorded)")
    u.add_argument("db")
    u.add_argument("table")
    u.add_argument("--force", action="store_true", help="needed once anything was charged (recorded)")
    t = sub.add_parser("token", help="issue, revoke or list analyst tokens for 'dodb serve'")
    t.add_argument("action", choices=["add", "revoke", "list"])
    t.add_argument("db")
    t.add_argument("name", nargs="?", default=None)
    sv = sub.add_parser("serve", help="serve the database to analysts over Arrow Flight (token auth)")
    sv.add_argument("db")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (anything but loopback needs TLS)")
    sv.add_argument("--port", type=int, default=47470, help="0 picks a free port (printed)")
    sv.add_argument("--tls-cert", help="PEM certificate (with --tls-key): serve grpc+tls://")
    sv.add_argument("--tls-key")
    sv.add_argument("--request-log", metavar="PATH", default=None,
                    help="one JSON line per request, nothing data-dependent (default: DB.requests.jsonl; 'none': off)")
    gw = sub.add_parser("gateway", help="serve Flight SQL (ADBC, JDBC, BI tools) on this machine, forwarding "
                        "queries to a dodb server with your token",
                        description="An analyst-side Arrow Flight SQL endpoint: local tools connect to it; it sends "
                        "each query to the dodb server at --engine with your token, charges every query the "
                        "--epsilon given here, strips the dummy rows and answers. 'SELECT * FROM dodb_last_report' "
                        "shows the last query's privacy report. See docs/served.md.")
    gw.add_argument("--engine", required=True, metavar="URL", help="the dodb server, grpc://HOST:PORT (or grpc+tls://)")
    gw.add_argument("--token", default=None, help="your analyst token (default: $DODB_TOKEN)")
    gw.add_argument("--epsilon", type=float, required=True, help="ε charged for every query (required)")
    gw.add_argument("--delta", type=float, default=None,
                    help="δ for every query (default: the dataset's default query δ)")
    gw.add_argument("--port", type=int, default=47471, help="port to listen on (default: 47471; 0 picks a free one, printed)")
    gw.add_argument("--host", default=None, help="address to listen on (default: 127.0.0.1; "
                    "anything else warns: whoever reaches the gateway spends your budget)")
    gw.add_argument("--tls-root-certs", metavar="PEM", default=None, help="CA certificate of a grpc+tls:// engine")
    sh = sub.add_parser("shard", help="cut the private tables into shards by privacy unit, for --cluster "
                                       "(owner action; the shard sizes are released and charged)")
    sh.add_argument("db")
    sh.add_argument("--workers", type=int, required=True)
    sh.add_argument("--epsilon", type=float, help="ε for the released shard sizes (default: as for protect)")
    sh.add_argument("--json", action="store_true")
    pr = sub.add_parser("protect", help="declare a table private")
    pr.add_argument("db")
    pr.add_argument("table")
    pr.add_argument("--privacy-unit", required=True)
    pr.add_argument("--parent", help="TABLE.KEY the privacy unit column references")
    pr.add_argument("--max-contributions", type=int)
    pr.add_argument("--key", action="append", help="unique key columns, comma-separated (repeatable)")
    pr.add_argument("--max-degree", action="append", help="COL=N (or COL= for a bound released under DP)")
    pr.add_argument("--width", action="append", help="COL=BYTES: public width of a string column (repeatable)")
    pr.add_argument("--capacity", type=int, help="a public capacity (>= rows): nothing is charged for the size")
    pr.add_argument("--epsilon", type=float, help="ε for the released size (default: 5%% of the budget, at most 40)")
    pr.add_argument("--orphans", choices=["keep", "refuse"], default="keep",
                    help="rows whose --parent key names no parent row: kept in the unit their key names (default)")
    pr.add_argument("--null-units", choices=["keep", "refuse"], default="keep",
                    help="rows whose unit key is NULL: each a unit of its own (default)")
    pr.add_argument("--json", action="store_true")
    for sp in (q, ex, b, h, u, t, pr, sh, tb, shl):
        sp.add_argument("--create", action="store_true", help="create the database file if it does not exist")
    from ..audit import command as audit_command

    audit_command.add_arguments(sub.add_parser(
        "audit", help="coupled-neighbour audit of queries on a TPC-H sample (exit 1 if any view differs)"))
    for sp in sub.choices.values():  # every default in every --help
        sp.formatter_class = _Formatter
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # the engine loads only once a command runs: `dodb --help` stays fast (issue 26)
    import duckdb

    from ..accountant import AccountantError
    from ..audit import command as audit_command

    handlers = {"demo": _demo, "warmup": _warmup, "query": _query, "explain": _explain, "budget": _budget, "protect": _protect,
                "history": _history, "unprotect": _unprotect, "token": _token, "serve": _serve, "gateway": _gateway,
                "shard": _shard, "tables": _tables, "shell": _shell,
                "audit": audit_command.run}
    if args.command == "token" and args.action != "list" and not args.name:
        print(f"dodb: error: dodb token {args.action} FILE NAME", file=sys.stderr)
        return 2
    try:
        return handlers[args.command](args)
    except (DodbError, AccountantError, ValueError, duckdb.Error) as e:
        print(f"dodb: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dodb: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
