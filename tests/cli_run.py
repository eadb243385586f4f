"""Run the ``dodb`` command line in this process (``dodb.cli.main``), as a subprocess would
report it: exit status, standard output and standard error.  Subprocess tests of the CLI
(the README's commands, the served mode) cost 1–3 s each in interpreter and kernel start-up;
tests of what a command prints and changes run here in milliseconds."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess


def run_cli(*args: str, cwd) -> subprocess.CompletedProcess:
    """``dodb ARGS`` in ``cwd``: a ``CompletedProcess`` with the exit status and both streams."""
    from dodb.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as e:  # a usage error raised past main (main returns its status)
                code = e.code if isinstance(e.code, int) else 2
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(["dodb", *args], code, out.getvalue(), err.getvalue())
