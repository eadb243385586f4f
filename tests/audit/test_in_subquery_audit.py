"""The coupled-neighbour audit (docs/design.md §Audit) over the plan shapes of correlated
``[NOT] IN`` (a semi / anti join whose condition holds NOT IN's ``y IS NULL OR x IS NULL``),
correlated quantified comparisons (one grouped LEFT JOIN of state, MIN and MAX), ``= ALL`` /
``<> ANY`` (one-row summaries) and IN / NOT IN / EXISTS as values (a ``y = x`` count LEFT
JOINed on ``x`` and the state): identical views on coupled neighbours, nothing charged."""
from __future__ import annotations

from dodb.audit import audit

from .test_audit import _database

QUERIES = [
    "SELECT id FROM patients p WHERE p.age NOT IN (SELECT v.amount FROM visits v WHERE v.pid = p.id)",
    "SELECT count(*) FROM patients p WHERE p.ward IN (SELECT v.amount FROM visits v, patients q "
    "WHERE v.pid = q.id AND q.age = p.age)",
    "SELECT id FROM patients p WHERE p.age > ALL (SELECT v.amount FROM visits v WHERE v.pid = p.id)",
    "SELECT id FROM patients p WHERE p.ward = ALL (SELECT v.amount FROM visits v WHERE v.amount < 4)",
    "SELECT id, p.age IN (SELECT v.amount + 20 FROM visits v WHERE v.pid = p.id) AS f, "
    "p.ward NOT IN (SELECT v.amount FROM visits v) AS g FROM patients p",
    "SELECT id FROM patients p WHERE NOT (p.age <> ANY (SELECT v.amount FROM visits v WHERE v.pid = p.id))",
]


def test_in_subquery_plans_have_identical_views_on_coupled_neighbours():
    db = _database()
    spent = db.budget["spent"]
    report = audit(db, QUERIES, pairs=2, seed=4)
    assert report.ok, "\n".join(report.lines())
    assert report.lines()[-1] == f"audit: {2 * len(QUERIES)} of {2 * len(QUERIES)} neighbour pairs identical"
    assert all(q.releases > 0 for q in report.queries)
    assert db.budget["spent"] == spent
