"""An unfetched DuckDB result on the owner's connection never makes loading fail (issue 30 item 4).

DuckDB 2.0 refuses every statement on a connection that still holds an unfinished result;
protect, insert and replace_data read on cursors of their own, so the owner's pending
result neither blocks them nor is consumed by them.
"""
from __future__ import annotations

import pyarrow as pa

import dodb


def test_loading_works_beside_an_unfetched_result():
    db = dodb.connect(seed=1)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 5 AS g FROM range(100)")
    db.con.execute("CREATE TABLE extra AS SELECT 100 + range AS id, range % 5 AS g FROM range(10)")
    db.set_budget(epsilon=50.0, delta=1e-5)
    pending = db.con.execute("SELECT id FROM extra ORDER BY id")  # left unfetched by the owner
    db.protect("t", privacy_unit="id", max_contributions=1)
    db.insert("t", "extra")
    db.replace_data("t", pa.table({"id": pa.array(range(50), pa.int64()), "g": pa.array([1] * 50, pa.int64())}))
    assert pending.fetchall() == [(100 + i,) for i in range(10)]  # the owner's result is still whole
    got = db.sql("SELECT g, count(*) AS n FROM t GROUP BY g", epsilon=1.0).fetchall()
    assert got == [(1, 50)]
    db.close()
