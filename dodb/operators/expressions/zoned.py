"""TIMESTAMP WITH TIME ZONE values and the session's time zone (docs/design.md §Expressions,
TIMESTAMPTZ).

A TIMESTAMPTZ is an instant: int64 microseconds since 1970-01-01 UTC, the lane of a
TIMESTAMP, ±infinity included.  Comparing two of them, ``epoch`` and ``to_timestamp`` do
not depend on a time zone.  A cast to or from TIMESTAMP, DATE or VARCHAR, a comparison with
a TIMESTAMP or DATE (DuckDB casts that side to TIMESTAMPTZ) and a TIMESTAMPTZ constant
written without an offset do: DuckDB reads them in the session's ``TimeZone`` through ICU.
dodb evaluates them only when that zone is UTC, where each is the TIMESTAMP operation on the
same lane (checked against DuckDB over its whole range); in another zone they are refused.

The zone is the analyst's connection's setting, a public fact read with the catalog on every
plan (``planner/catalog.py``) and set here for the planning (:func:`using_zone`); dodb's own
scratch connection is pinned to UTC (``duckcalls.scratch``).
"""
from __future__ import annotations

from .numeric import Unsupported
from .types import parse_type
from .value import Val
from .zone_setting import current_zone, using_zone

__all__ = ["using_zone", "current_zone", "is_utc", "require_utc", "as_timestamp", "TIMESTAMP"]

# ICU's names of UTC itself (not of zones that merely have no offset today)
_UTC = {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Universal", "Etc/Universal", "Zulu", "Etc/Zulu", "GMT", "Etc/GMT",
        "GMT0", "Etc/GMT0", "GMT+0", "GMT-0", "Etc/GMT+0", "Etc/GMT-0", "Greenwich", "Etc/Greenwich"}
TIMESTAMP = parse_type("TIMESTAMP")


def is_utc(zone: str) -> bool:
    """Whether ``zone`` names UTC."""
    return zone in _UTC


def require_utc(what: str) -> None:
    """Refuse ``what`` (a zone-dependent operation) unless the session's zone is UTC."""
    zone = current_zone()
    if not is_utc(zone):
        raise Unsupported(f"{what} in time zone {zone} (DuckDB's answer depends on the session's "
                          f"TimeZone; dodb evaluates it only with TimeZone = 'UTC')")


def as_timestamp(v: Val) -> Val:
    """A TIMESTAMPTZ's lane seen as a TIMESTAMP (the UTC wall clock, or an instant for the
    zone-free functions); any other value unchanged."""
    if v.type.kind != "tstz":
        return v
    return Val(TIMESTAMP, v.data, v.valid, v.err)
