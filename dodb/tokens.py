"""Analyst tokens for served mode (docs/design.md §Served mode).

The owner issues one token per analyst (``dodb token add FILE NAME``); the token is
printed once and only its SHA-256 is stored, in ``dodb_meta.tokens`` next to the ledger.
Tokens are 256 random bits, so a plain hash is enough (no password stretching).
Issuing and revoking are owner actions in the ledger history (the token itself is never
recorded).  The server checks the hash on every call, so a revoked token stops working
at the next request of a server that sees the revocation.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime, timezone
from typing import Any

import duckdb

from .errors import DodbError

__all__ = ["TokenError", "add_token", "revoke_token", "list_tokens", "verify_token", "TOKEN_PREFIX"]

TOKEN_PREFIX = "dodb_"
_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
_TABLE = "dodb_meta.tokens"


class TokenError(DodbError):
    """A token name is invalid, already issued, or unknown."""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _create(cur: duckdb.DuckDBPyConnection) -> None:
    cur.execute(f"""CREATE TABLE IF NOT EXISTS {_TABLE} (
        token_id BIGINT PRIMARY KEY, name VARCHAR NOT NULL, token_hash VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL, revoked_at TIMESTAMP)""").fetchall()


def _active(cur: duckdb.DuckDBPyConnection, name: str) -> list[tuple]:
    return cur.execute(f"SELECT token_id FROM {_TABLE} WHERE name = ? AND revoked_at IS NULL", [name]).fetchall()


def add_token(db, name: str) -> str:
    """Issue a token for analyst ``name``; returns it (shown once, stored hashed)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise TokenError(f"token name {name!r}: use 1-64 letters, digits, '_', '.', '@' or '-'")
    db._writable("issue a token")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)

    def body(cur: duckdb.DuckDBPyConnection) -> None:
        _create(cur)
        if _active(cur, name):
            raise TokenError(f"analyst {name!r} already has a token; revoke it first (dodb token revoke)")
        tid = cur.execute(f"SELECT coalesce(max(token_id), 0) + 1 FROM {_TABLE}").fetchall()[0][0]
        cur.execute(f"INSERT INTO {_TABLE} VALUES (?, ?, ?, ?, NULL)", [tid, name, _hash(token), _now()]).fetchall()
        db.ledger.record_owner_action(cur, "token_add", name, old=None, new={"token_id": tid})

    db.ledger._transact(body)
    return token


def revoke_token(db, name: str) -> None:
    """Revoke analyst ``name``'s token (recorded)."""
    db._writable("revoke a token")

    def body(cur: duckdb.DuckDBPyConnection) -> None:
        _create(cur)
        ids = _active(cur, name)
        if not ids:
            raise TokenError(f"no active token for analyst {name!r}")
        cur.execute(f"UPDATE {_TABLE} SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
                    [_now(), name]).fetchall()
        db.ledger.record_owner_action(cur, "token_revoke", name, old={"token_id": ids[0][0]}, new=None)

    db.ledger._transact(body)


def list_tokens(db) -> list[dict[str, Any]]:
    """Issued tokens (names and times, never the tokens)."""
    cur = db.con.cursor()
    try:
        if not _exists(cur):
            return []
        rows = cur.execute(f"SELECT name, created_at, revoked_at FROM {_TABLE} ORDER BY token_id").fetchall()
    finally:
        cur.close()
    return [{"name": n, "created_at": c, "revoked_at": r} for n, c, r in rows]


def _exists(cur: duckdb.DuckDBPyConnection) -> bool:
    return bool(cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'dodb_meta' "
                            "AND table_name = 'tokens'").fetchall()[0][0])


def verify_token(con: duckdb.DuckDBPyConnection, token: str | None) -> str | None:
    """The analyst's name if ``token`` is an active token, else ``None``."""
    if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    digest = _hash(token)
    cur = con.cursor()
    try:
        if not _exists(cur):
            return None
        rows = cur.execute(f"SELECT name, token_hash FROM {_TABLE} WHERE revoked_at IS NULL").fetchall()
    finally:
        cur.close()
    found = None
    for name, stored in rows:  # compare every active hash in constant time
        if hmac.compare_digest(stored, digest):
            found = name
    return found
