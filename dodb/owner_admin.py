"""The owner's calls to a running ``dodb serve`` (docs/served.md §The owner while the server runs).

DuckDB lets one process open a file for writing, and no other process may open it at all
meanwhile, so ``dodb budget FILE``, ``dodb history FILE`` and ``dodb token add/revoke/list
FILE`` reach the server that holds the file instead.  The server writes an owner
credential beside the file (``FILE.serve``, mode 0600: whoever may read it may read the
database file too) with its address and a random owner token; the owner's commands find
it there.  The owner token opens the ``admin:*`` actions only: it runs no query and spends
no budget.  The server removes the file when it stops; a file left by a killed server
names an address nobody answers, and the commands then open the database file itself.
"""
from __future__ import annotations

import json
import os
import secrets
from typing import Any

from .errors import DodbError

__all__ = ["OWNER_TOKEN_PREFIX", "credential_path", "write_credential", "remove_credential", "OwnerAdmin",
           "open_owner_admin"]

OWNER_TOKEN_PREFIX = "dodb_owner_"


def credential_path(database: str) -> str:
    return f"{database}.serve"


def write_credential(database: str, location: str, tls_cert: str | None = None) -> tuple[str, str]:
    """A new owner token, written with the server's address to ``FILE.serve`` (0600); returns
    (token, path)."""
    token = OWNER_TOKEN_PREFIX + secrets.token_urlsafe(32)
    path = credential_path(database)
    if os.path.lexists(path):
        os.unlink(path)  # left by a server that was killed: a new file, so the mode below holds
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"location": location, "owner_token": token, "pid": os.getpid(),
                   "tls_cert": os.path.abspath(tls_cert) if tls_cert else None}, f)
    return token, path


def remove_credential(path: str, token: str) -> None:
    """Remove ``path`` if it still holds ``token`` (a newer server may have replaced it)."""
    try:
        with open(path, encoding="utf-8") as f:
            if json.load(f).get("owner_token") != token:
                return
        os.unlink(path)
    except (OSError, ValueError):
        pass


class OwnerAdmin:
    """The owner's view of a served database: budget, history and tokens (module doc)."""

    def __init__(self, remote, database: str):
        self._remote = remote  # a dodb.remote.RemoteDatabase holding the owner token
        self.database = database
        self.location = remote.location

    @property
    def budget(self) -> dict[str, Any]:
        from .display import BudgetInfo

        b = self._remote.call_action("admin:budget")
        for k in ("budget", "spent", "remaining", "filter_spent"):
            if b.get(k) is not None:
                b[k] = tuple(b[k])
        return BudgetInfo(b)

    def history(self, owner_actions: bool = True) -> list[dict[str, Any]]:
        return self._remote.call_action("admin:history", {"owner_actions": bool(owner_actions)})

    def add_token(self, name: str) -> str:
        return self._remote.call_action("admin:token_add", {"name": name})["token"]

    def revoke_token(self, name: str) -> None:
        self._remote.call_action("admin:token_revoke", {"name": name})

    def list_tokens(self) -> list[dict[str, Any]]:
        return self._remote.call_action("admin:tokens")

    def close(self) -> None:
        self._remote.close()


def open_owner_admin(database: str) -> OwnerAdmin | None:
    """The running server's owner calls for ``database``, or ``None`` when no server holds it
    (no credential file, or one whose server does not answer)."""
    from .remote import AuthenticationError, RemoteDatabase, ServerUnavailableError

    path = credential_path(database)
    try:
        with open(path, encoding="utf-8") as f:
            cred = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise DodbError(f"cannot read the server's owner credential {path!r}: {e}") from None
    roots = None
    if cred.get("tls_cert"):
        with open(cred["tls_cert"], "rb") as f:
            roots = f.read()
    try:
        remote = RemoteDatabase(cred["location"], token=cred["owner_token"], timeout=10.0, tls_root_certs=roots)
    except (ServerUnavailableError, AuthenticationError):
        return None  # a credential left by a killed server (its port free, or another server's now)
    return OwnerAdmin(remote, database)
