"""What the command handlers and the shell share: opening the named database and the progress spinner."""
from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from ..errors import DodbError

__all__ = ["CLI_WAIT", "open_database", "progress"]

CLI_WAIT = 60.0  # seconds a command waits for another process to release the database file


@contextmanager
def progress(label: str, after: float = 1.0) -> Iterator[None]:
    """A spinner with elapsed seconds on stderr once a query has run ``after`` seconds
    (terminals only: a quick answer is not preceded by a flicker)."""
    if not sys.stderr.isatty():
        yield
        return
    done = threading.Event()
    start = time.time()

    def spin() -> None:
        if done.wait(after):
            return
        frames = "|/-\\"
        i = 0
        while not done.wait(0.2):
            sys.stderr.write(f"\r{frames[i % 4]} {label} {time.time() - start:5.1f}s")
            sys.stderr.flush()
            i += 1
        sys.stderr.write("\r" + " " * (len(label) + 12) + "\r")

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()


def open_database(args, *, allow_insecure: bool = False):
    """The database named on the command line: a file (it must exist unless ``--create``) or a server."""
    import dodb

    path = args.db
    if path.startswith(("grpc://", "grpc+tcp://", "grpc+tls://")):
        if getattr(args, "cluster", None):
            raise DodbError("--cluster is for a database file: a dodb server runs its own executor")
        return dodb.connect(path, token=getattr(args, "token", None) or os.environ.get("DODB_TOKEN"))
    if getattr(args, "token", None):
        raise DodbError("--token is for a dodb server (grpc://host:port)")
    # short commands take turns on a file another process holds (docs/design.md §Concurrency)
    return dodb.connect(path, allow_insecure=allow_insecure, create=getattr(args, "create", False), wait=CLI_WAIT,
                        cluster=getattr(args, "cluster", None))
