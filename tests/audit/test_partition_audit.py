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
