"""dodb's SQL functions (``SELECT dodb_budget_remaining()``), shared by every Database on one DuckDB instance.

DuckDB keeps scalar functions per database *instance*, and every connection to one file
in a process shares the instance (docs/design.md §Concurrency).  So the functions are
registered once per instance, answer from whichever dodb ``Database`` on it is still
open (all of them read the same ledger), and are removed when the last one closes.
A function's Python callable belongs to the connection that created it, so when that
Database closes first the functions move to another open one.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable

import duckdb

from .accountant import BudgetNotSetError, Ledger

__all__ = ["FUNCTIONS", "register", "unregister", "instance_key"]

FUNCTIONS: dict[str, tuple[str, int]] = {
    "dodb_budget_epsilon": ("budget", 0),
    "dodb_budget_spent": ("spent", 0),
    "dodb_budget_remaining": ("remaining", 0),
    "dodb_budget_remaining_delta": ("remaining", 1),
}

_lock = threading.Lock()
_live: dict[tuple, list[Any]] = {}  # instance key -> [(owner, Ledger on its own cursor, cursor, con)]; [0] hosts


def instance_key(con: duckdb.DuckDBPyConnection, ledger: Ledger) -> tuple:
    """Identify the DuckDB instance behind ``con``: its file, or an id kept in an in-memory one."""
    cur = con.cursor()
    try:
        path = cur.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    finally:
        cur.close()
    if path and path[0][0]:
        return ("file", os.path.realpath(path[0][0]))
    return ("memory", ledger.instance_id())


def _answer(key: tuple, part: str, i: int) -> float:
    with _lock:
        entries = list(_live.get(key, ()))
    for _, ledger, _, _ in entries:
        try:
            st = ledger.status()
        except BudgetNotSetError:
            return float("nan")
        except duckdb.ConnectionException:
            continue  # that session is closing: ask the next one
        return float(tuple(st[part])[i])
    return float("nan")


def _make(key: tuple, part: str, i: int) -> Callable[[], float]:
    return lambda: _answer(key, part, i)


def _create(con: duckdb.DuckDBPyConnection, key: tuple) -> None:
    for name, (part, i) in FUNCTIONS.items():
        try:
            con.remove_function(name)  # left by a dodb session that did not close
        except duckdb.Error:
            pass
        con.create_function(name, _make(key, part, i), [], "DOUBLE", side_effects=True)


def _remove(con: duckdb.DuckDBPyConnection) -> None:
    for name in FUNCTIONS:
        try:
            con.remove_function(name)
        except duckdb.Error:
            pass


def register(con: duckdb.DuckDBPyConnection, key: tuple, owner: object) -> None:
    """Register the functions on ``con``'s instance (once) and add ``owner`` as a live reader."""
    cur = con.cursor()
    entry = (owner, Ledger(cur, create=False), cur, con)  # the owner's Ledger made the tables
    with _lock:
        first = key not in _live
        _live.setdefault(key, []).append(entry)
        if first:
            _create(con, key)


def unregister(con: duckdb.DuckDBPyConnection, key: tuple, owner: object) -> None:
    """Drop ``owner``; if it hosted the functions they move to another open Database,
    and the last one removes them."""
    with _lock:
        entries = _live.get(key, [])
        hosted = bool(entries) and entries[0][0] is owner
        mine = [e for e in entries if e[0] is owner]
        rest = [e for e in entries if e[0] is not owner]
        if rest:
            _live[key] = rest
        else:
            _live.pop(key, None)
        if hosted:
            _remove(con)
            if rest:
                _create(rest[0][3], key)
    for _, _, cur, _ in mine:
        try:
            cur.close()
        except duckdb.Error:
            pass
