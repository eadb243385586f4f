"""What the command handlers and the shell share: opening the named database and the progress spinner."""
from __future__ import annotations

import os

from ..errors import DodbError
from ..progress import progress  # the CLI shows the progress the API shows (dodb/progress.py)

__all__ = ["CLI_WAIT", "open_database", "progress"]

CLI_WAIT = 60.0  # seconds a command waits for another process to release the database file


def open_database(args, *, allow_insecure: bool = False, owner_calls: bool = False):
    """The database named on the command line: a file (it must exist unless ``--create``) or a server.
    ``owner_calls``: a file that ``dodb serve`` holds is reached through that server's owner
    actions (budget, history, tokens: :mod:`dodb.owner_admin`)."""
    import dodb

    path = args.db
    if path.startswith(("grpc://", "grpc+tcp://", "grpc+tls://")):
        if getattr(args, "cluster", None):
            raise DodbError("--cluster is for a database file: a dodb server runs its own executor")
        return dodb.connect(path, token=getattr(args, "token", None) or os.environ.get("DODB_TOKEN"))
    if getattr(args, "token", None):
        raise DodbError("--token is for a dodb server (grpc://host:port)")
    if owner_calls:
        from ..owner_admin import open_owner_admin

        admin = open_owner_admin(path)
        if admin is not None:
            return admin
    # short commands take turns on a file another process holds (docs/design.md §Concurrency)
    return dodb.connect(path, allow_insecure=allow_insecure, create=getattr(args, "create", False), wait=CLI_WAIT,
                        cluster=getattr(args, "cluster", None))
