"""The request log of ``dodb serve``: one JSON line per request, nothing data-dependent
(docs/served.md §The request log).

A line holds what the observer of the engine's host already sees, and nothing more:
when, which analyst (the token's name, never the token), which call, a fingerprint of
the SQL text (the text itself stays in the ledger), the ledger's query id and charge,
the padded answer's row count (a released noisy size), the outcome *class* and the
duration.  It never holds an error message (a DuckDB error raised while the plan ran
may quote a private value), an answer value, a parameter value or the answer's status
word (whether a real row raised a runtime error: the client reads it, the host does not).
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from datetime import datetime, timezone
from typing import Any

__all__ = ["RequestLog", "LOGGED_FIELDS", "sql_fingerprint", "default_log_path"]

# every field a line may hold; record() refuses any other, so a new field is a decision here
LOGGED_FIELDS = ("at", "analyst", "call", "sql_fingerprint", "session", "query_id", "epsilon", "delta",
                 "padded_rows", "outcome", "ms")


def sql_fingerprint(sql: Any) -> str | None:
    """The first 16 hex digits of the SQL text's SHA-256: equal queries match, the text stays out."""
    if not isinstance(sql, str):
        return None
    return hashlib.sha256(sql.encode("utf-8")).hexdigest()[:16]


def default_log_path(database: str) -> str:
    """Where ``dodb serve FILE`` logs by default: beside the database file."""
    return f"{database}.requests.jsonl"


class RequestLog:
    """Appends one JSON line per request to ``path`` (created with mode 0600), flushed at once."""

    def __init__(self, path: str):
        self.path = path
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._file = os.fdopen(fd, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def record(self, **fields: Any) -> None:
        unknown = set(fields) - set(LOGGED_FIELDS)
        if unknown:
            raise ValueError(f"not a request log field: {sorted(unknown)}")
        line = {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), **fields}
        text = json.dumps({k: line.get(k) for k in LOGGED_FIELDS})  # every field on every line, null if none
        with self._lock:
            if not self._file.closed:
                self._file.write(text + "\n")
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
