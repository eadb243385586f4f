"""The coupled-neighbour audit on units without a parent row (docs/neighbours.md §Privacy
units): removing an orphan unit (a tail number the ``planes`` registry lacks) or a
NULL-key unit (a flight with no tail number) leaves the view unchanged, and a catalog
that undercounts what such a unit owns is caught."""
from __future__ import annotations

import duckdb
import pytest

import dodb
from dodb.audit import AuditError, audit
from dodb.audit.neighbour import Neighbourhood
from dodb.datasets.flights import generate_flights, protect_flights
from dodb.planner.catalog import Catalog

QUERIES = [
    "SELECT carrier, count(*) FROM flights WHERE dep_delay > 10 GROUP BY carrier",
    "SELECT p.manufacturer, count(*), sum(f.distance) FROM flights f JOIN planes p ON f.tailnum = p.tailnum "
    "GROUP BY 1",
    "SELECT count(*) FROM flights f WHERE NOT EXISTS (SELECT 1 FROM planes p WHERE p.tailnum = f.tailnum)",
    "SELECT carrier FROM flights WHERE tailnum NOT IN (SELECT tailnum FROM planes)",   # NULL semantics
]


def _flights_db(neighbour: str = "add_remove") -> dodb.Database:
    con = duckdb.connect()
    generate_flights(con, planes=12, missing=5, flights=120, null_tailnums=10, max_flights=8)
    db = dodb.attach(con, seed=3, neighbour=neighbour)
    db.set_budget(epsilon=1e6, delta=0.5)
    protect_flights(db, max_flights=8)
    return db


def _units(db: dodb.Database) -> tuple[tuple, tuple]:
    """The orphan unit owning most flights, and one NULL-key unit."""
    units = Neighbourhood.read(db.con, db.catalog).root_units()   # busiest first
    orphan = next(u for u in units if u[0] == "orphan")
    null = next(u for u in units if u[0] == "null")
    return orphan, null


@pytest.fixture(scope="module")
def db():
    return _flights_db()


def test_orphan_and_null_units_are_units_of_their_own(db):
    nb = Neighbourhood.read(db.con, db.catalog)
    flights = nb.units["flights"]
    tails = nb.states["flights"].values("tailnum")
    registered = {t for t in nb.states["planes"].values("tailnum") if t is not None}
    for u, t, real in zip(flights, tails, nb.states["flights"].is_real):
        if not real:
            assert u is None
        elif t is None:
            assert u[0] == "null" and sum(x == u for x in flights) == 1   # a unit of its own
        elif t in registered:
            assert u == ("unit", t)                                        # the plane's unit
        else:
            assert u == ("orphan", "planes", t)                            # the unit its key names
    orphan, _ = _units(db)
    assert 1 < sum(x == orphan for x in flights) <= 8                      # an orphan unit owns several flights


def test_removing_an_orphan_or_a_null_unit_leaves_the_view_unchanged(db):
    orphan, null = _units(db)
    report = audit(db, QUERIES, units=[orphan, null], seed=1)
    assert report.ok, "\n".join(report.lines())
    assert report.lines()[-1] == "audit: 8 of 8 neighbour pairs identical"
    assert [p.unit for p in report.queries[0].pairs] == [orphan, null]


def test_replacing_an_orphan_unit_and_a_null_unit():
    """Replace copies another unit's rows under fresh integer keys (string tail numbers
    cannot be made fresh), so this runs on integer aircraft ids."""
    con = duckdb.connect()
    con.execute("CREATE TABLE planes AS SELECT range AS id, range % 3 AS maker FROM range(10)")
    con.execute("CREATE TABLE flights AS SELECT range AS fid, CASE WHEN range % 11 = 0 THEN NULL ELSE "
                "range % 14 END AS plane, range % 4 AS carrier, range % 50 AS delay FROM range(60)")
    db = dodb.attach(con, seed=3, neighbour="replace")
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("planes", "id", max_contributions=1, keys=[["id"]])
    db.protect("flights", "plane", parent=("planes", "id"), max_contributions=5, keys=[["fid"]])
    units = Neighbourhood.read(db.con, db.catalog).root_units()
    orphan = next(u for u in units if u[0] == "orphan")          # planes 10..13 fly but are not registered
    null = next(u for u in units if u[0] == "null")
    queries = ["SELECT carrier, count(*) FROM flights WHERE delay > 10 GROUP BY carrier",
               "SELECT p.maker, count(*) FROM flights f JOIN planes p ON f.plane = p.id GROUP BY 1"]
    report = audit(db, queries, units=[orphan, null], seed=2)
    assert report.ok, "\n".join(report.lines())


def test_unknown_units_are_refused(db):
    with pytest.raises(AuditError, match="no row belongs"):
        audit(db, QUERIES[:1], units=[("orphan", "planes", "N000XX")])


def test_undercounting_an_orphan_unit_is_caught(db, monkeypatch):
    """Planted: a catalog that says one unit owns one flight (as if an orphan tail number
    were not one unit).  Removing the orphan unit moves the filter's count by more than
    the charged sensitivity, and the audit says so."""
    orphan, _ = _units(db)
    real = Catalog.stability
    monkeypatch.setattr(Catalog, "stability", lambda self, name, _seen=(): 1 if name == "flights"
                        else real(self, name, _seen))
    report = audit(db, ["SELECT id, carrier FROM flights WHERE distance > 0"], units=[orphan], seed=1)
    assert not report.ok
    assert "charged sensitivity 1" in report.lines()[0]
