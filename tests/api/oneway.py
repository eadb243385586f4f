"""Helpers for the one-way-in tests: watch every statement dodb sends to the database.

:func:`watch` wraps the session's connection (and every cursor made from it) so that
each SQL statement is recorded; :func:`private_reads` then asks DuckDB (``EXPLAIN``, which
resolves views, macros and table functions) which tables each statement scans.  A
statement that scans dodb's slot arrays (``dodb_private``) other than dodb's own full slot
read (:func:`dodb.storage.canonical.read_slots`) read private rows outside the DO path.
"""
from __future__ import annotations

import json
import re

import duckdb

import dodb

__all__ = ["watch", "private_reads", "ask", "SLOT_READ"]

# read_slots: SELECT "__dodb_slot", "__dodb_real", <columns> FROM "dodb_private"."t" — no predicate
# dodb's slot read (LIMIT 0 is allowed too: such a statement reads no row)
SLOT_READ = re.compile(r'^SELECT "__dodb_slot", "__dodb_real"(, "[^"]+")* FROM ("[^"]+"\.)?"dodb_private"\."[^"]+"'
                       r'( LIMIT 0)?$')


class _Spy:
    """Delegates to a DuckDB connection, recording the SQL of execute/sql/query calls."""

    def __init__(self, con, log: list[str]):
        self._con = con
        self._log = log

    def execute(self, sql, parameters=None, *args, **kwargs):
        self._log.append((str(sql), parameters))
        return self._con.execute(sql, parameters, *args, **kwargs)

    def sql(self, sql, *args, **kwargs):
        self._log.append((str(sql), kwargs.get("params")))
        return self._con.sql(sql, *args, **kwargs)

    query = sql

    def cursor(self):
        return _Spy(self._con.cursor(), self._log)

    def __getattr__(self, name):
        return getattr(self._con, name)


def watch(db: dodb.Database) -> list[tuple]:
    """Record every statement ``db`` sends through its connection from now on."""
    log: list[tuple] = []  # (sql, parameters)
    spy = _Spy(db.con, log)
    db.con = spy
    db.catalog.con = spy
    return log


def _scans(con, sql: str, parameters) -> set[str]:
    """Fully qualified tables ``sql`` scans, as DuckDB plans it (views and macros resolved)."""
    cur = con.cursor()
    try:
        # the unoptimised logical plan too: the optimiser answers count(*) from statistics
        cur.execute("SET explain_output = 'all'")
        plans = [json.loads(r[1]) for r in cur.execute("EXPLAIN (FORMAT json) " + sql, parameters).fetchall()]
    finally:
        cur.close()
    out: set[str] = set()

    def walk(node):
        table = (node.get("extra_info") or {}).get("Table")
        if table:
            out.add(table)
        for child in node.get("children", []):
            walk(child)

    for plan in plans:
        for root in plan:
            walk(root)
    return out


def private_reads(db: dodb.Database, log: list[tuple]) -> list[str]:
    """Statements in ``log`` that scan a slot array other than through dodb's full slot read."""
    con = db.con._con if isinstance(db.con, _Spy) else db.con
    bad = []
    for sql, parameters in log:
        text = sql.strip()
        head = text.split(None, 1)[0].upper() if text else ""
        if head == "DESCRIBE":  # binds only; what it binds must not reach private slots either
            text, head = text.split(None, 1)[1], "SELECT"
        if head not in ("SELECT", "WITH", "FROM") or SLOT_READ.match(text):
            continue
        try:
            scanned = _scans(con, text, parameters)
        except duckdb.Error:  # a statement DuckDB cannot bind read nothing
            continue
        if any(t.split(".")[-2:-1] == ["dodb_private"] for t in scanned):
            bad.append(sql)
    return bad


def ask(db: dodb.Database, sql: str, epsilon: float = 0.5, delta: float = 1e-6):
    """Run ``sql``; returns ``(result or error, spent before, spent after, history grew by)``.

    A small explicit δ keeps hundreds of queries inside the dataset's δ budget.
    """
    before, hist = db.budget["spent"], len(db.history())
    try:
        out = db.sql(sql, epsilon=epsilon, delta=delta)
    except Exception as e:  # noqa: BLE001 - the tests look at the error's class
        out = e
    return out, before, db.budget["spent"], len(db.history()) - hist
