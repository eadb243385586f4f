"""The coupled-neighbour audit (docs/design.md §Audit) over subqueries planned by
``rules/unnest_exists.py`` and ``rules/correlated_count.py``: EXISTS / NOT EXISTS over a join
(a DISTINCT derived relation, then a semi/anti join), EXISTS OR EXISTS (a UNION), and a
correlated COUNT (GROUP BY + LEFT JOIN), a correlated plain value (``rules/correlated_value.py``) and
a private scalar subquery (a ScalarRow) give
identical views on coupled neighbours."""
from __future__ import annotations

from dodb.audit import audit

from .test_audit import _database

QUERIES = [
    "SELECT ward, count(*) FROM patients p WHERE EXISTS (SELECT * FROM visits v, wards w, patients q "
    "WHERE v.pid = q.id AND q.ward = w.ward AND w.name = 'w2' AND v.pid = p.id) GROUP BY ward",
    "SELECT count(*) FROM patients p WHERE NOT EXISTS (SELECT * FROM visits v, patients q "
    "WHERE v.pid = q.id AND q.ward = p.ward AND v.amount > 30)",
    "SELECT id FROM patients p WHERE EXISTS (SELECT * FROM visits v, patients q WHERE v.pid = q.id "
    "AND q.id = p.id AND q.age > 40) OR EXISTS (SELECT * FROM visits v WHERE v.pid = p.id AND v.amount < 3)",
    "SELECT id FROM patients p WHERE (SELECT count(*) FROM visits v WHERE v.pid = p.id AND v.amount > 5) > 1",
    # a private scalar source through a ScalarRow (one row, or DuckDB's error in the status)
    "SELECT count(*) FROM visits WHERE amount > (SELECT age FROM patients WHERE id < 1)",
    # a correlated plain value with DuckDB's row check (rules/correlated_value.py)
    "SELECT pid, (SELECT age FROM patients q WHERE q.id = v.pid) AS age FROM visits v WHERE amount > 10",
]


def test_subquery_plans_have_identical_views_on_coupled_neighbours():
    db = _database()
    spent = db.budget["spent"]
    report = audit(db, QUERIES, pairs=2, seed=2)
    assert report.ok, "\n".join(report.lines())
    assert report.lines()[-1] == "audit: 12 of 12 neighbour pairs identical"
    assert all(q.releases > 0 for q in report.queries)   # every query released padded sizes
    assert db.budget["spent"] == spent
