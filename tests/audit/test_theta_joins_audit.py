"""Coupled-neighbour audit (docs/design.md §Audit) of the joins of issue 14 item 4: an
inequality join (oblivious cross product + filter), an expression equi-join and a FULL
OUTER JOIN give identical views on coupled neighbours; an under-stated cross-join
stability is caught."""
from __future__ import annotations

from dodb.audit import audit

from .test_audit import _database

QUERIES = [
    "SELECT v.pid, w.name FROM visits v, wards w WHERE v.amount < w.ward * 10",
    "SELECT p.id, v.pid FROM patients p, visits v WHERE p.age BETWEEN v.amount - 5 AND v.amount + 5",
    "SELECT p.id, w.name FROM patients p, wards w WHERE p.ward + 1 = w.ward",
    "SELECT p.id, v.amount FROM patients p FULL JOIN visits v ON p.age = v.amount",
    "SELECT w.name, count(*) FROM wards w FULL JOIN patients p ON w.ward = p.ward GROUP BY w.name",
]


def test_theta_and_full_joins_have_identical_views_on_coupled_neighbours():
    db = _database()
    report = audit(db, QUERIES, pairs=2, seed=4)
    assert report.ok, "\n".join(report.lines())
    assert all(q.releases > 0 for q in report.queries), "\n".join(report.lines())


def test_replace_neighbours():
    report = audit(_database("replace"), [QUERIES[1], QUERIES[3]], pairs=2, seed=5)
    assert report.ok, "\n".join(report.lines())


def test_understated_cross_join_stability_is_caught(monkeypatch):
    """Charging a cross product as if a unit's rows met one row of the other side only."""
    from dodb.planner import theta_joins

    monkeypatch.setattr(theta_joins, "cross_stability", lambda s_l, s_r, n_l, n_r: max(s_l, s_r))
    report = audit(_database(), QUERIES[1:2], pairs=3, seed=6)
    assert not report.ok and "charged sensitivity" in "\n".join(report.lines()), "\n".join(report.lines())
