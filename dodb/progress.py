"""Progress for queries longer than a second: a spinner on a terminal's stderr (drawn by
rich), or a line in a Jupyter cell that is updated and then cleared.

Shown only where someone watches: stderr must be a terminal, or IPython must already be
loaded in a kernel (a notebook); nothing is imported for it until it shows (``import dodb``
stays light, and rich loads only once a query on a terminal passes its second).
``DODB_PROGRESS=0`` turns it off.  What it shows is the label, the seconds elapsed and what
the caller said since (e.g. served mode's "charged ε=0.5 (query #3), running on the server").
"""
from __future__ import annotations

import html
import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["progress", "Progress", "PROGRESS_AFTER"]

_active = threading.local()  # the progress this thread shows, if any
PROGRESS_AFTER = 1.0  # seconds a query runs before its progress shows: a quick answer is not preceded by a flicker


class Progress:
    """What a running query shows; ``say`` replaces the text after the label."""

    def __init__(self, label: str):
        self.label = label
        self.note = ""
        self.start = time.monotonic()

    def say(self, note: str) -> None:
        self.note = note

    def line(self) -> str:
        note = f" - {self.note}" if self.note else ""
        return f"{self.label}{note} {time.monotonic() - self.start:.1f}s"


def _notebook_display() -> Any:
    """(``display``, ``HTML``) of IPython when this process is a notebook kernel that already
    loaded IPython, else None (a plain IPython terminal has stderr for the spinner)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    if type(shell).__name__ != "ZMQInteractiveShell":
        return None
    try:
        from IPython.display import HTML, display
    except ImportError:
        return None
    return display, HTML


def _terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress(label: str, after: float | None = None) -> Iterator[Progress]:
    """Show ``label`` and the elapsed seconds once the body has run ``after`` seconds, until it ends.
    Inside another ``progress`` of this thread (the CLI around ``db.sql``) it is that one."""
    outer = getattr(_active, "shown", None)
    if outer is not None:
        yield outer
        return
    shown = Progress(label)
    if os.environ.get("DODB_PROGRESS", "1") == "0":
        yield shown
        return
    notebook = None if _terminal() else _notebook_display()
    if notebook is None and not _terminal():
        yield shown
        return
    done = threading.Event()
    after = PROGRESS_AFTER if after is None else after

    def terminal() -> None:
        if done.wait(after):
            return
        # rich draws the spinner (imported only now: a quick query, a pipe or a notebook never loads it)
        from rich.console import Console
        from rich.live import Live
        from rich.spinner import Spinner

        spinner = Spinner("line", text=shown.line())
        console = Console(file=sys.stderr, force_jupyter=False, highlight=False)
        # transient: the line is erased when the query ends; stdout and stderr stay the caller's
        with Live(spinner, console=console, transient=True, auto_refresh=False, redirect_stdout=False,
                  redirect_stderr=False) as live:
            while True:
                spinner.update(text=shown.line())
                live.refresh()
                if done.wait(0.2):
                    break

    def cell() -> None:
        if done.wait(after):
            return
        display, HTML = notebook
        page = lambda: HTML(f"<code>{html.escape(shown.line())}</code>")  # noqa: E731
        handle = display(page(), display_id=True)
        while not done.wait(0.5):
            handle.update(page())
        handle.update(HTML(""))

    worker = threading.Thread(target=terminal if notebook is None else cell, name="dodb-progress", daemon=True)
    worker.start()
    _active.shown = shown
    try:
        yield shown
    finally:
        _active.shown = None
        done.set()
        worker.join()
