"""Releases charged to partitions P do not depend on units outside P (docs/design.md §Partitions)."""
from __future__ import annotations

import pytest

from dodb.audit.partitions import audit_partitions
from dodb.planner.partitions import partition_key
from tests.api.test_partitions import _db

CONFINED = [
    "SELECT c_mktsegment, count(*) FROM customer WHERE c_nationkey = 5 GROUP BY 1",
    "SELECT o_orderstatus, count(*) FROM orders JOIN customer ON o_custkey = c_custkey "
    "WHERE c_nationkey IN (5, 7) GROUP BY 1",
    "SELECT o_orderpriority, count(*) FROM orders WHERE o_custkey IN "
    "(SELECT c_custkey FROM customer WHERE c_nationkey = 7) GROUP BY 1",
]
# its first release (orders filtered on their own column) is computed before the nation predicate
BEFORE_PREDICATE = ("SELECT o_orderstatus, count(*) FROM orders JOIN customer ON o_custkey = c_custkey "
                    "WHERE c_nationkey = 5 AND o_totalprice > 1000 GROUP BY 1")


@pytest.fixture(scope="module")
def db():
    return _db(epsilon=100.0)


def test_confined_queries_do_not_see_units_of_other_partitions(db):
    found = audit_partitions(db, CONFINED, units=3)
    assert len(found) == 3 * len(CONFINED)
    assert all(f.ok for f in found), [f.difference for f in found if not f.ok]


def test_a_wrong_partition_charge_is_caught(db):
    """Plant the leak: claim the query depends on nation 5 only."""
    assert db.plan(BEFORE_PREDICATE, epsilon=1.0).partitions is None  # the planner charges all partitions
    found = audit_partitions(db, [BEFORE_PREDICATE], units=3,
                             planted=frozenset({partition_key("customer", "c_nationkey", 5)}))
    assert any(not f.ok for f in found)


# -- random tables: NULLs, duplicates, strings, NULL and empty partitions -------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import dodb  # noqa: E402
from dodb.compare import same_answer, snapshot  # noqa: E402

_rows = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 7)),            # person (NULL: a unit of its own)
                           st.sampled_from(["n", "s", "e", "w"]),               # region (fixed per person below)
                           st.one_of(st.none(), st.integers(-3, 3)),             # value
                           st.one_of(st.none(), st.sampled_from(["a", "bb", ""]))),
                 min_size=0, max_size=14)
_templates = [
    "SELECT tag, count(*), sum(v) FROM visits WHERE region {p} GROUP BY tag",
    "SELECT v, count(*) FROM visits WHERE region {p} AND v IS NOT NULL GROUP BY v",
    "SELECT DISTINCT tag FROM visits WHERE region {p}",
    "SELECT person, count(*) FROM visits WHERE region {p} GROUP BY person HAVING count(*) > 1",
]


@settings(max_examples=12)
@given(rows=_rows, template=st.sampled_from(_templates),
       regions=st.lists(st.sampled_from(["n", "s", "e", "w"]), min_size=1, max_size=2, unique=True))
def test_random_tables_answers_and_partition_views(rows, template, regions):
    home = {}
    data = [(p, home.setdefault(p, r) if p is not None else r, v, t) for p, r, v, t in rows]
    db = dodb.connect(":memory:", seed=5)
    db.con.execute("CREATE TABLE visits (person INTEGER, region VARCHAR, v INTEGER, tag VARCHAR)")
    if data:
        db.con.executemany("INSERT INTO visits VALUES (?, ?, ?, ?)", data)
    oracle = snapshot(db.con)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("visits", "person", max_contributions=14, widths={"region": 1, "tag": 2}, capacity=16,
               partition_by="region")
    pred = f"= '{regions[0]}'" if len(regions) == 1 else "IN (" + ", ".join(f"'{r}'" for r in regions) + ")"
    sql = template.format(p=pred)
    p = db.plan(sql, epsilon=1.0)
    assert p.partitions == frozenset(partition_key("visits", "region", r) for r in regions)
    assert same_answer(db.sql(sql, epsilon=1.0).arrow(), oracle.sql(sql).to_arrow_table())
    outside = [x for x in data if x[0] is not None and x[1] not in regions]
    if outside:  # a unit of another region: removing it changes nothing the query reveals
        found = audit_partitions(db, [sql], units=1)
        assert found and all(f.ok for f in found), [f.difference for f in found]
