"""ORDER BY an output's position when output names repeat (``SELECT a.id, b.id … ORDER BY
1, 2``): sqlglot keeps the ordinal there, and dodb sorted by the constant 1 instead of
the first output (found by tests/planner/test_presort.py)."""
from __future__ import annotations

import pytest

import dodb
from dodb.compare import snapshot


@pytest.fixture(scope="module")
def db():
    db = dodb.connect(seed=3, allow_insecure=True)
    db.con.execute("CREATE TABLE a AS SELECT i AS id, (i * 7) % 11 AS k, i % 3 AS f FROM range(40) t(i)")
    db.con.execute("CREATE TABLE b AS SELECT i AS id, (i * 5) % 13 AS k FROM range(12) t(i)")
    db.oracle = snapshot(db.con)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("a", "id", max_contributions=1, max_degree={"k": None})
    db.protect("b", "id", max_contributions=1, max_degree={"k": None})
    yield db
    db.close()


@pytest.mark.parametrize("sql", [
    "SELECT a.id, b.id FROM a JOIN b ON a.k = b.k WHERE a.f = 1 ORDER BY 1, 2",
    "SELECT a.id, b.id FROM a JOIN b ON a.k = b.k WHERE a.f = 1 ORDER BY 2 DESC, 1",
    "SELECT b.k, a.k FROM a JOIN b ON a.id = b.id ORDER BY 2, 1 LIMIT 5",
    "SELECT DISTINCT a.k, b.k FROM a JOIN b ON a.id = b.id ORDER BY 2, 1",
    "SELECT a.id, b.id, a.k FROM a JOIN b ON a.k = b.k ORDER BY 3, 1, 2",
    "SELECT a.k, count(*) FROM a GROUP BY 1 ORDER BY 2 DESC, 1",
])
@pytest.mark.parametrize("mode", ["do", "plain"])
def test_order_by_position_with_repeated_output_names(db, sql, mode):
    assert db.sql(sql, epsilon=1.0, mode=mode).fetchall() == db.oracle.sql(sql).fetchall()
