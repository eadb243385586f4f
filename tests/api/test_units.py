"""Privacy units on real-shaped data (docs/neighbours.md §Privacy units): orphan rows and
NULL unit keys are kept by default, answers equal DuckDB's, bounds count those units,
and the owner can refuse either case with an error that tells them apart."""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dodb
from dodb.datasets.flights import FLIGHTS_WIDTHS, generate_flights, protect_flights

from ..operators.util import assert_same_rows

ANALYST_QUERIES = [
    "SELECT carrier, count(*) AS n FROM flights GROUP BY carrier",
    "SELECT count(*) FROM flights",
    "SELECT count(*), count(tailnum), count(DISTINCT tailnum) FROM flights",
    "SELECT count(*) FROM flights WHERE tailnum IS NULL",
    "SELECT f.carrier, count(*) AS n FROM flights f JOIN planes p ON f.tailnum = p.tailnum GROUP BY 1",
    "SELECT p.manufacturer, count(*) AS n, avg(f.dep_delay) AS d FROM flights f JOIN planes p "
    "ON f.tailnum = p.tailnum GROUP BY 1",
    "SELECT f.id, p.year FROM flights f LEFT JOIN planes p ON f.tailnum = p.tailnum",
    "SELECT count(*) FROM flights f LEFT JOIN planes p ON f.tailnum = p.tailnum WHERE p.tailnum IS NULL",
    "SELECT count(*) FROM flights f WHERE NOT EXISTS (SELECT 1 FROM planes p WHERE p.tailnum = f.tailnum)",
    "SELECT count(*) FROM flights f WHERE EXISTS (SELECT 1 FROM planes p WHERE p.tailnum = f.tailnum)",
    "SELECT count(*) FROM flights WHERE tailnum IN (SELECT tailnum FROM planes)",
    "SELECT count(*) FROM planes p WHERE NOT EXISTS (SELECT 1 FROM flights f WHERE f.tailnum = p.tailnum)",
    "SELECT tailnum, count(*) AS n FROM flights GROUP BY tailnum",
    "SELECT origin, count(*) AS n FROM flights WHERE dep_delay > 60 GROUP BY origin",
]


@pytest.fixture(scope="module")
def flights():
    raw = duckdb.connect()
    counts = generate_flights(raw)
    con = duckdb.connect()
    generate_flights(con)
    db = dodb.attach(con, seed=5)
    db.set_budget(epsilon=1e6, delta=0.5)
    out = protect_flights(db)
    return raw, db, counts, out


def test_flights_protect_through_the_parent_with_orphans_and_nulls(flights):
    raw, db, counts, out = flights
    assert counts["orphans"] > 0 and counts["null"] > 0          # both kinds are in the data
    assert out.rows == counts["flights"]                        # no row was dropped
    info = db.catalog.table("flights")
    assert info.parent == ("planes", "tailnum") and info.policy == {"orphans": "keep", "null_units": "keep"}
    assert db.catalog.stability("flights") == 12                # 12 flights per aircraft, 1 aircraft per unit
    real = db.con.execute("SELECT count(*) FROM dodb_private.flights WHERE __dodb_real").fetchall()[0][0]
    assert real == counts["flights"]


@pytest.mark.parametrize("sql", ANALYST_QUERIES)
def test_analyst_queries_equal_duckdb(flights, sql):
    raw, db, _, _ = flights
    assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), raw.sql(sql).to_arrow_table())


def _fresh(**kw):
    con = duckdb.connect()
    counts = generate_flights(con, **kw)
    db = dodb.attach(con, seed=7)
    db.set_budget(epsilon=100.0, delta=1e-4)
    return db, counts


@pytest.mark.parametrize("orphans, null_units, says, not_says", [
    ("refuse", "keep", ["96 rows name a planes.tailnum that has no row in 'planes' (orphans='refuse'",
                        "25 rows have a NULL 'tailnum' (kept)"], ["null_units='refuse'"]),
    ("keep", "refuse", ["25 rows have a NULL 'tailnum' (null_units='refuse'", "96 rows name a planes.tailnum "
                        "that has no row in 'planes' (kept)"], ["orphans='refuse'"]),
    ("refuse", "refuse", ["25 rows have a NULL 'tailnum' (null_units='refuse'", "and 96 rows name a "
                          "planes.tailnum that has no row in 'planes' (orphans='refuse'"], ["(kept)"]),
])
def test_refusing_orphans_or_null_units_tells_the_cases_apart(orphans, null_units, says, not_says):
    db, counts = _fresh()
    assert (counts["orphans"], counts["null"]) == (96, 25)
    db.protect("planes", "tailnum", max_contributions=1, keys=[["tailnum"]], widths=FLIGHTS_WIDTHS["planes"])
    spent = db.budget["spent"]
    with pytest.raises(dodb.CatalogError) as e:
        db.protect("flights", "tailnum", parent=("planes", "tailnum"), max_contributions=12,
                   widths=FLIGHTS_WIDTHS["flights"], orphans=orphans, null_units=null_units)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("'flights': ")
    assert all(s in msg for s in says) and not any(s in msg for s in not_says), msg
    assert db.budget["spent"] == spent                          # refused before anything was charged
    assert not db.catalog.table("flights").private              # and nothing was stored
    assert db.con.execute("SELECT count(*) FROM flights").fetchall() == [(counts["flights"],)]


def test_refusal_only_where_the_case_occurs():
    db, _ = _fresh(missing=0, null_tailnums=0)
    protect_flights(db, orphans="refuse", null_units="refuse")  # neither kind: nothing to refuse
    assert db.catalog.table("flights").policy == {"orphans": "refuse", "null_units": "refuse"}


def test_bad_policy_names_are_refused():
    db, _ = _fresh()
    with pytest.raises(dodb.CatalogError, match="orphans must be one of"):
        protect_flights(db, orphans="drop")


def test_contribution_bound_counts_orphan_units_and_null_rows():
    """An orphan tail number is one unit: its flights count against max_contributions.
    NULL tail numbers are a unit each, so any number of them fits a bound of 1."""
    con = duckdb.connect()
    con.execute("CREATE TABLE planes AS SELECT 'N' || range AS tailnum FROM range(3)")
    con.execute("CREATE TABLE flights AS SELECT range AS id, CASE WHEN range < 4 THEN 'N0' WHEN range < 7 "
                "THEN 'Z9' ELSE NULL END AS tailnum FROM range(20)")
    db = dodb.attach(con, seed=1)
    db.set_budget(epsilon=100.0, delta=1e-4)
    db.protect("planes", "tailnum", max_contributions=1, keys=[["tailnum"]], widths={"tailnum": 4})
    with pytest.raises(dodb.CatalogError, match="a privacy unit has 4 rows, more than max_contributions=2"):
        db.protect("flights", "tailnum", parent=("planes", "tailnum"), max_contributions=2, widths={"tailnum": 4})
    con.execute("DELETE FROM flights WHERE id = 3")               # 'N0' now has 3 flights, orphan 'Z9' has 3
    with pytest.raises(dodb.CatalogError, match="a privacy unit has 3 rows"):
        db.protect("flights", "tailnum", parent=("planes", "tailnum"), max_contributions=2, widths={"tailnum": 4})
    con.execute("DELETE FROM flights WHERE id IN (2, 6)")         # 2 and 2; 13 NULL rows
    db.protect("flights", "tailnum", parent=("planes", "tailnum"), max_contributions=2, widths={"tailnum": 4})
    # later loads are checked the same way: a third flight of the orphan unit is refused
    with pytest.raises(dodb.CatalogError, match="a privacy unit has 3 rows"):
        db.insert("flights", pa.table({"id": pa.array([100], pa.int64()), "tailnum": ["Z9"]}))
    db.insert("flights", pa.table({"id": pa.array([101, 102], pa.int64()), "tailnum": [None, None]}))
    assert db.sql("SELECT count(*) FROM flights WHERE tailnum IS NULL", epsilon=1.0).fetchall() == [(15,)]


def test_direct_unit_with_null_keys():
    con = duckdb.connect()
    con.execute("CREATE TABLE sales AS SELECT range AS id, CASE WHEN range % 5 = 0 THEN NULL ELSE range % 7 END "
                "AS customer, range % 3 AS store FROM range(50)")
    db = dodb.attach(con, seed=1)
    db.set_budget(epsilon=100.0, delta=1e-4)
    with pytest.raises(dodb.CatalogError, match="10 rows have a NULL 'customer' \\(null_units='refuse'"):
        db.protect("sales", "customer", max_contributions=6, null_units="refuse")
    db.protect("sales", "customer", max_contributions=6)
    got = db.sql("SELECT store, count(*), count(customer) FROM sales GROUP BY store ORDER BY store", epsilon=1.0)
    assert got.fetchall() == [(0, 17, 13), (1, 17, 14), (2, 16, 13)]


def test_orphan_policy_holds_when_the_parent_changes():
    db, _ = _fresh(missing=0)
    protect_flights(db, orphans="refuse")
    spent = db.budget["spent"]
    fewer = pa.table({"tailnum": ["N100XX"], "year": pa.array([2000], pa.int32()), "manufacturer": ["A"],
                      "model": ["M"], "seats": pa.array([10], pa.int32())})
    with pytest.raises(dodb.CatalogError, match=r"would leave \d+ rows of 'flights' naming a planes.tailnum that "
                                                r"has no row in 'planes' \('flights' has orphans='refuse'\)"):
        db.replace_data("planes", fewer)
    assert db.budget["spent"] == spent
    with pytest.raises(dodb.CatalogError, match="1 rows name a planes.tailnum that has no row"):
        db.insert("flights", pa.table({"id": pa.array([9999], pa.int32()), "month": pa.array([1], pa.int32()),
                                       "carrier": ["AA"], "tailnum": ["N777QQ"], "origin": ["EWR"],
                                       "dest": ["JFK"], "dep_delay": pa.array([1], pa.int32()),
                                       "distance": pa.array([100], pa.int32())}))


@st.composite
def _fleet(draw):
    planes = draw(st.lists(st.sampled_from(["A", "B", "C", "D", "E"]), unique=True, max_size=5))
    tails = st.sampled_from(["A", "B", "C", "D", "E", "X", "Y"]) | st.none()
    n = draw(st.integers(0, 24))
    flights = [(i, draw(tails), draw(st.sampled_from(["AA", "UA", None])), draw(st.integers(0, 9) | st.none()))
               for i in range(n)]
    return planes, flights


@settings(max_examples=8)
@given(_fleet())
def test_random_fleets_answer_like_duckdb(fleet):
    planes, flights = fleet
    per = {}
    for _, t, _, _ in flights:
        if t is not None:
            per[t] = per.get(t, 0) + 1
    ddl = [("CREATE TABLE planes (tailnum VARCHAR, seats INTEGER)",
            "INSERT INTO planes VALUES (?, ?)", [(t, i) for i, t in enumerate(planes)]),
           ("CREATE TABLE flights (id INTEGER, tailnum VARCHAR, carrier VARCHAR, delay INTEGER)",
            "INSERT INTO flights VALUES (?, ?, ?, ?)", flights)]
    raw, con = duckdb.connect(), duckdb.connect()
    for c in (raw, con):
        for create, insert, rows in ddl:
            c.execute(create)
            if rows:
                c.executemany(insert, rows)
    db = dodb.attach(con, seed=2)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("planes", "tailnum", max_contributions=1, keys=[["tailnum"]], widths={"tailnum": 1})
    db.protect("flights", "tailnum", parent=("planes", "tailnum"), max_contributions=max(per.values(), default=1),
               widths={"tailnum": 1, "carrier": 2})
    for sql in ["SELECT carrier, count(*), sum(delay) FROM flights GROUP BY carrier",
                "SELECT f.id, p.seats FROM flights f JOIN planes p ON f.tailnum = p.tailnum",
                "SELECT count(*) FROM flights f WHERE NOT EXISTS (SELECT 1 FROM planes p WHERE p.tailnum = f.tailnum)"]:
        assert_same_rows(db.sql(sql, epsilon=1.0).arrow(), raw.sql(sql).to_arrow_table())
