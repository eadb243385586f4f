"""The session time zone expressions are planned and run under (docs/design.md §Expressions,
TIMESTAMPTZ): a public setting, read with the catalog; no other expression module imported."""
from __future__ import annotations

import functools
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

__all__ = ["current_zone", "using_zone"]

_ZONE: ContextVar[str | None] = ContextVar("dodb_time_zone", default=None)


@functools.lru_cache(maxsize=1)
def _default_zone() -> str:
    """A new DuckDB connection's ``TimeZone`` (the machine's zone): the zone of a connection
    that did not set one, used where no catalog said (direct calls of the evaluator)."""
    import duckdb

    return str(duckdb.connect().execute("SELECT current_setting('TimeZone')").fetchone()[0])


def current_zone() -> str:
    """The session's ``TimeZone`` (:func:`using_zone`; else a new connection's default)."""
    zone = _ZONE.get()
    return _default_zone() if zone is None else zone


@contextmanager
def using_zone(zone: str) -> Iterator[None]:
    """Plan and run expressions under the session's ``TimeZone`` setting ``zone``."""
    token = _ZONE.set(zone)
    try:
        yield
    finally:
        _ZONE.reset(token)
