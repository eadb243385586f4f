"""The coupled-neighbour audit over joins whose degree bound was inferred from plan
structure (docs/design.md §Degrees from structure): GROUP BY keys fixed by equality
filters, ROW_NUMBER with its partition, ROW_NUMBER shifted by an integer (``rn - 1``), and
a GROUP BY whose keys are all fixed (one row, broadcast), and a composite unique key carried
to a public column through a join on a unique key, and a computed key over an INTERSECT with
a public side, and a GROUP BY on a declared key and the columns it determines, UNION ALLed
with a literal discriminator (TPC-DS Q4's year_total).  The bound is used (degree 1, hence a small
stability) and coupled neighbours still give identical views."""
from __future__ import annotations

import pytest

from dodb.audit import audit
from dodb.planner.logical import Aggregate, CrossOne, Join, walk

from .test_audit import _database

QUERIES = [
    # grouped by (ward, m), m fixed on each side: unique on ward
    "WITH g AS (SELECT p.ward, v.amount % 3 AS m, count(*) AS c, sum(v.amount) AS s FROM visits v "
    "JOIN patients p ON v.pid = p.id GROUP BY p.ward, v.amount % 3) "
    "SELECT a.ward, a.c, b.s FROM g a JOIN g b ON a.ward = b.ward WHERE a.m = 0 AND b.m = 1",
    # (ward, rn) unique for ROW_NUMBER, rn fixed on each side: unique on ward
    "WITH w AS (SELECT ward, age, row_number() OVER (PARTITION BY ward ORDER BY id) AS rn FROM patients) "
    "SELECT a.ward, a.age, b.age FROM w a JOIN w b ON a.ward = b.ward WHERE a.rn = 1 AND b.rn = 2",
    # (ward, rn) unique, and rn - 1 is one-to-one on rn: the key (ward, rn - 1) is unique too
    "WITH w AS (SELECT ward, age, row_number() OVER (PARTITION BY ward ORDER BY id) AS rn FROM patients) "
    "SELECT a.ward, a.age, b.age FROM w a JOIN w b ON a.ward = b.ward AND a.rn = b.rn - 1",
]
# (ward, m) unique; joined to wards (unique on ward, one ward per name) it bounds (name, m)
# by a degree (not a unique set, so EXPLAIN names no unique key)
THROUGH_KEY = ("WITH g AS (SELECT p.ward, v.amount % 3 AS m, sum(v.amount) AS s FROM visits v "
               "JOIN patients p ON v.pid = p.id GROUP BY p.ward, v.amount % 3), "
               "y AS (SELECT wards.name, g.m, g.s FROM g JOIN wards ON g.ward = wards.ward) "
               "SELECT a.name, a.s, b.s FROM y a JOIN y b ON a.name = b.name AND a.m = b.m - 1")
# distinct and a subset of wards: at most 2 wards per ward // 2 (counted on public data)
INTERSECTED = ("SELECT p.id, p.age, v.ward FROM patients p "
               "JOIN (SELECT ward FROM wards INTERSECT SELECT ward FROM patients) v ON p.age % 2 = v.ward // 2")
# a GROUP BY whose only key the WHERE fixes: one row at most, broadcast to every row (CrossOne)
ONE_ROW = ("SELECT p.ward, p.age FROM patients p WHERE p.age > 0.01 * "
           "(SELECT sum(v.amount) FROM visits v WHERE v.amount = 5 GROUP BY v.amount)")

# TPC-DS Q4's year_total: grouped by (id, ward, age, m), id a declared key determining ward and
# age, so unique on (id, m); the two branches told apart by the literal t; t and m fixed on
# each side: unique on id (docs/design.md §Degrees from structure, functional dependencies)
YEAR_TOTAL = ("WITH y AS (SELECT p.id, p.ward, p.age, v.amount % 2 AS m, sum(v.amount) AS s, 'a' AS t "
              "FROM visits v JOIN patients p ON v.pid = p.id GROUP BY p.id, p.ward, p.age, v.amount % 2 "
              "UNION ALL SELECT p.id, p.ward, p.age, v.amount % 2 AS m, count(*) AS s, 'b' AS t "
              "FROM visits v JOIN patients p ON v.pid = p.id GROUP BY p.id, p.ward, p.age, v.amount % 2) "
              "SELECT a.id, a.ward, a.s, b.s FROM y a JOIN y b ON a.id = b.id "
              "WHERE a.t = 'a' AND a.m = 0 AND b.t = 'b' AND b.m = 1")


@pytest.fixture(scope="module")
def db():
    return _database()


@pytest.mark.parametrize("sql", QUERIES)
def test_inferred_degree_is_used(db, sql):
    plan = db.plan(sql, epsilon=1.0, delta=1e-6)
    top = [n for n in walk(plan.root) if isinstance(n, Join)][-1]
    assert (top.left_degree, top.right_degree) == (1, 1), top.describe()
    assert "unique key" in top.describe()
    assert top.stability == top.left.stability + top.right.stability


def test_degree_through_a_unique_key_is_used(db):
    plan = db.plan(THROUGH_KEY, epsilon=1.0, delta=1e-6)
    top = [n for n in walk(plan.root) if isinstance(n, Join)][-1]
    assert (top.left_degree, top.right_degree) == (1, 1), top.describe()
    assert top.stability == top.left.stability + top.right.stability


def test_intersect_degree_is_used(db):
    plan = db.plan(INTERSECTED, epsilon=1.0, delta=1e-6)
    top = [n for n in walk(plan.root) if isinstance(n, Join)][-1]
    assert top.right_degree == 2, top.describe()


def test_key_dependency_and_union_discriminator_are_used(db):
    plan = db.plan(YEAR_TOTAL, epsilon=1.0, delta=1e-6)
    top = [n for n in walk(plan.root) if isinstance(n, Join)][-1]
    assert (top.left_degree, top.right_degree) == (1, 1), top.describe()
    assert "unique key (a.id)" in top.describe() and "unique key (b.id)" in top.describe()


def test_one_row_group_is_broadcast(db):
    plan = db.plan(ONE_ROW, epsilon=1.0, delta=1e-6)
    assert any(isinstance(n, CrossOne) for n in walk(plan.root))
    assert any(isinstance(n, Aggregate) and n.keys and n.one_row for n in walk(plan.root))


def test_coupled_neighbours_identical_with_inferred_degrees(db):
    report = audit(db, QUERIES + [THROUGH_KEY, INTERSECTED, ONE_ROW, YEAR_TOTAL], pairs=2, seed=4)
    assert report.ok, "\n".join(report.lines())
    assert all(q.releases > 0 for q in report.queries)

