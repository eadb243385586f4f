"""The coupled-neighbour audit over joins whose degree bound was inferred from plan
structure (docs/design.md §Degrees from structure): GROUP BY keys fixed by equality
filters, ROW_NUMBER with its partition.  The bound is used (degree 1, hence a small
stability) and coupled neighbours still give identical views."""
from __future__ import annotations

import pytest

from dodb.audit import audit
from dodb.planner.logical import Join, walk

from .test_audit import _database

QUERIES = [
    # grouped by (ward, m), m fixed on each side: unique on ward
    "WITH g AS (SELECT p.ward, v.amount % 3 AS m, count(*) AS c, sum(v.amount) AS s FROM visits v "
    "JOIN patients p ON v.pid = p.id GROUP BY p.ward, v.amount % 3) "
    "SELECT a.ward, a.c, b.s FROM g a JOIN g b ON a.ward = b.ward WHERE a.m = 0 AND b.m = 1",
    # (ward, rn) unique for ROW_NUMBER, rn fixed on each side: unique on ward
    "WITH w AS (SELECT ward, age, row_number() OVER (PARTITION BY ward ORDER BY id) AS rn FROM patients) "
    "SELECT a.ward, a.age, b.age FROM w a JOIN w b ON a.ward = b.ward WHERE a.rn = 1 AND b.rn = 2",
]


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


def test_coupled_neighbours_identical_with_inferred_degrees(db):
    report = audit(db, QUERIES, pairs=2, seed=4)
    assert report.ok, "\n".join(report.lines())
    assert all(q.releases > 0 for q in report.queries)

