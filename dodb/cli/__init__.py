"""The ``dodb`` command line: demo, warmup, query, explain, tables, shell, budget, history,
unprotect, token, serve, gateway, shard, protect, audit (options in ``parser.py``, on click).

User errors (bad SQL, unknown tables, budget exceeded, invalid parameters) print one
clear line on stderr and exit with status 2 — no traceback; so do usage errors (click's
message under the command's usage).  ``--json`` prints machine-readable output for
scripts.  A database file must exist unless ``--create`` is given; ``query``/``explain``/
``budget`` also take ``grpc://host:port`` with ``--token`` (or ``DODB_TOKEN``) to talk to a
dodb server (docs/design.md §Served mode).  Parsing imports nothing heavy: ``dodb --help``
stays fast (tests/test_startup.py).
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import click

from ..errors import DodbError
from .parser import EPSILON_CAP, build_cli

__all__ = ["main", "cli"]


def _cap() -> float:
    """The sampler's per-release ε cap that the help states, without importing the engine."""
    return EPSILON_CAP


def _dispatch(name: str, handler: Callable[[Any], int], args: Any) -> int:
    """Run one command's handler; a user error is one line on stderr and exit status 2."""
    # the engine loads only once a command runs: `dodb --help` stays fast (issue 26)
    import duckdb

    from ..accountant import AccountantError

    if name == "token" and args.action != "list" and not args.name:
        print(f"dodb: error: dodb token {args.action} FILE NAME", file=sys.stderr)
        return 2
    try:
        return handler(args)
    except (DodbError, AccountantError, ValueError, duckdb.Error) as e:
        print(f"dodb: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dodb: interrupted", file=sys.stderr)
        return 130


def cli() -> click.Group:
    """The click group of every ``dodb`` command (for documentation tools and tests)."""
    return build_cli(_dispatch)


def main(argv: list[str] | None = None) -> int:
    """``dodb ARGS``: the exit status (0, 1 for an audit that found a difference, 2 for a
    user or usage error, 130 when interrupted)."""
    try:
        code = cli().main(args=argv, prog_name="dodb", standalone_mode=False)
    except click.ClickException as e:  # a usage error: click's message under the usage line
        e.show()
        return e.exit_code
    except click.Abort:
        print("dodb: interrupted", file=sys.stderr)
        return 130
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
