"""``current_date`` and ``current_timestamp`` as the constants DuckDB makes of them, and
``age(x)`` as ``age(today, x)`` (docs/design.md §Expressions, The current moment).

DuckDB gives both the value of its transaction's start, the same on every row and in every
part of the query (``current_date`` in the session's ``TimeZone``; one-argument ``age`` counts
from midnight of the start's date in UTC, whatever the zone).  dodb asks DuckDB for
both once per query — a fresh transaction on a cursor of the scratch connection set to the
session's zone — and writes them into the parsed query as a DATE and a TIMESTAMPTZ constant
before anything is planned or cached, so a cached plan or binding is keyed by the value
(tomorrow's query is another query).  The time is public: no row is read.

>>> pin(sqlglot.parse_one("SELECT d < current_date", read="duckdb"), Now(20000, 0)).sql("duckdb")
"SELECT d < CAST('2024-10-04' AS DATE)"
"""
from __future__ import annotations

import datetime as dt
import re
from typing import NamedTuple

import sqlglot  # noqa: F401  (the doctest)
from sqlglot import exp

from ...duckcalls import scratch

__all__ = ["Now", "mentions_now", "read_now", "pin", "pinned"]

# the spellings sqlglot reads as these two nodes (``today()`` is DuckDB's current_date)
_WORDS = re.compile(r"\b(current_date|current_timestamp|today)\b|\bage\s*\(", re.IGNORECASE)
_EPOCH = dt.datetime(1970, 1, 1)


class Now(NamedTuple):
    """The query's date (days since 1970) and instant (µs since 1970 UTC)."""
    days: int
    micros: int

    def key(self, sql: str) -> tuple:
        """The values the text may use (a cache key: a query that only needs today's date is
        the same query all day)."""
        low = sql.lower()
        return (self.days if re.search(r"\b(current_date|today)\b", low) else None,
                self.micros if "current_timestamp" in low else None,
                self.micros // 86_400_000_000 if re.search(r"\bage\s*\(", low) else None)


def mentions_now(sql: str) -> bool:
    """Whether the text may name the current date or time (a word in a string literal too: then
    a query is only keyed by the time for nothing)."""
    return _WORDS.search(sql) is not None


def read_now(zone: str) -> Now:
    """DuckDB's ``current_date`` (in ``zone``) and ``current_timestamp`` of a new transaction."""
    con = scratch().cursor()
    try:
        con.execute("SET TimeZone = ?", [zone])
        days, micros = con.execute("SELECT CAST(current_date - DATE '1970-01-01' AS BIGINT), "
                                   "epoch_us(current_timestamp)").fetchone()
    finally:
        con.close()
    return Now(int(days), int(micros))


def _constant(node: exp.Expression, now: Now) -> exp.Expression | None:
    if isinstance(node, exp.CurrentDate) and not node.args:
        text = (_EPOCH + dt.timedelta(days=now.days)).strftime("%Y-%m-%d")
        return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("DATE"))
    if isinstance(node, exp.CurrentTimestamp) and not any(node.args.values()):  # lint: public the parse tree
        text = (_EPOCH + dt.timedelta(microseconds=now.micros)).strftime("%Y-%m-%d %H:%M:%S.%f+00")
        return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("TIMESTAMPTZ"))
    if isinstance(node, exp.Anonymous) and node.name.upper() == "AGE" and len(node.expressions) == 1:
        text = (_EPOCH + dt.timedelta(days=now.micros // 86_400_000_000)).strftime("%Y-%m-%d")
        start = exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("TIMESTAMP"))
        return exp.Anonymous(this="age", expressions=[start, node.expressions[0]])
    return None


def pin(tree: exp.Expression, now: Now) -> exp.Expression:
    """``tree`` with every ``current_date``/``current_timestamp`` node replaced by ``now``'s
    constant and ``age(x)`` by ``age(today's UTC midnight, x)`` (in place; the returned tree is the root)."""
    for node in list(tree.find_all(exp.CurrentDate, exp.CurrentTimestamp, exp.Anonymous)):
        new = _constant(node, now)
        if new is None:
            continue
        if node is tree:
            return new
        node.replace(new)
    return tree


def pinned(sqls: dict[str, str], zone: str) -> dict[str, str]:
    """``sqls`` with the current date and time written in as constants (one reading for all)."""
    if not any(mentions_now(s) for s in sqls.values()):  # lint: public the query text
        return sqls
    now = read_now(zone)
    return {k: pin(sqlglot.parse_one(s, read="duckdb"), now).sql(dialect="duckdb") if mentions_now(s) else s
            for k, s in sqls.items()}
