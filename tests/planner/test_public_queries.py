"""Queries over public tables only run in DuckDB (docs/design.md §Public queries).

The statement is the guarded tree (views expanded, CTEs renamed, tables qualified), and
only when no base table it reads — through subqueries, CTEs and views too — is private.
"""
from __future__ import annotations

import pytest

from dodb.datasets import tpch_query
from dodb.errors import DodbError

from ..operators.util import assert_same_rows
from ..tpch_fixture import tpch_database


@pytest.fixture(scope="module")
def db():
    views = ["CREATE VIEW nation_names AS SELECT n_name FROM nation",
             "CREATE VIEW big_customers AS SELECT c_custkey FROM customer WHERE c_acctbal > 0"]

    def prepare(con):
        for v in views:
            con.execute(v)

    d = tpch_database(0.002, budget=1e6, prepare=prepare)
    for v in views:
        d.oracle.execute(v)
    d.catalog.refresh()
    yield d
    d.close()


PUBLIC = [
    tpch_query(2), tpch_query(11), tpch_query(16),
    "SELECT n_name, count(*) AS k FROM nation JOIN region ON n_regionkey = r_regionkey GROUP BY ALL ORDER BY 1",
    "WITH customer AS (SELECT * FROM nation) SELECT n_name FROM customer ORDER BY n_name LIMIT 3",
    "SELECT * FROM nation_names ORDER BY n_name",
    "SELECT s_name FROM supplier WHERE s_nationkey IN (SELECT n_nationkey FROM nation WHERE n_name LIKE 'A%') "
    "ORDER BY s_name",
]

PRIVATE = [
    "SELECT count(*) FROM customer",
    "SELECT n_name FROM nation WHERE n_nationkey IN (SELECT c_nationkey FROM customer) ORDER BY 1",
    "SELECT count(*) FROM big_customers",
    "WITH x AS (SELECT o_custkey FROM orders) SELECT count(*) FROM nation, x WHERE n_nationkey = 1",
]


@pytest.mark.parametrize("sql", PUBLIC)
def test_public_query_runs_in_duckdb_and_equals_it(db, sql):
    p = db.plan(sql, epsilon=1.0, delta=1e-6)
    assert p.public_sql is not None and not p.events
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    want = db.oracle.sql(sql).to_arrow_table()
    assert res.arrow().column_names == want.column_names
    assert res.arrow().schema.types == want.schema.types
    assert_same_rows(res.arrow(), want, ordered="ORDER BY" in sql.upper())
    assert res.privacy.charged_epsilon == 0


@pytest.mark.parametrize("sql", PRIVATE)
def test_a_query_reaching_a_private_table_never_takes_the_public_path(db, sql):
    p = db.plan(sql, epsilon=1.0, delta=1e-6)
    assert p.public_sql is None


def test_the_statement_is_built_from_the_guarded_tree(db):
    p = db.plan("WITH customer AS (SELECT * FROM nation) SELECT n_name FROM customer", epsilon=1.0, delta=1e-6)
    assert "dodb_private" not in p.public_sql and "dodb_shadow" not in p.public_sql
    assert '"customer"' not in p.public_sql.replace(" ", "")  # the CTE was renamed by the guard
    v = db.plan("SELECT * FROM nation_names", epsilon=1.0, delta=1e-6)
    assert "(SELECT" in v.public_sql and ".nation_names" not in v.public_sql  # the view was expanded


def test_public_runtime_error_is_duckdbs_and_charges_nothing(db):
    before = db.ledger.status()["spent"]
    sql = "SELECT n_nationkey // (n_nationkey - n_nationkey) AS x FROM nation"
    with pytest.raises(DodbError) as got:
        db.sql(sql, epsilon=1.0, delta=1e-6).arrow()
    with pytest.raises(Exception) as want:
        db.oracle.sql(sql).fetchall()
    assert str(want.value).splitlines()[0] in str(got.value)
    assert db.ledger.status()["spent"] == before


def test_operator_path_still_answers_with_a_context(db):
    """The audit and trace tools pass their own context: the operators run, same answer."""
    from dodb.oblivious.rng import new_rng
    from dodb.operators import ExecContext
    from dodb.planner.plan import QueryPlan

    sql = tpch_query(11)
    p = db.plan(sql, epsilon=1.0, delta=1e-6)
    padded = p.execute(ctx=ExecContext(mode="do", rng=new_rng(1)))
    assert p.stats  # operators ran
    assert_same_rows(QueryPlan.answer(padded), db.oracle.sql(sql).to_arrow_table(), ordered=True)


@pytest.mark.parametrize("sql", PUBLIC[:4])
def test_running_a_public_query_builds_no_operators_until_asked(db, sql):
    """db.sql leaves a public query to DuckDB without building its operator plan; EXPLAIN,
    ``plan.root`` or the operator path build it then, the same plan ``db.plan`` gives."""
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert res.plan.build_later is not None and res.plan.__dict__["root"] is None
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table(), ordered="ORDER BY" in sql.upper())
    assert res.privacy.charged_epsilon == 0 and res.privacy.tables == []
    text = res.explain()  # builds the operators now
    assert res.plan.build_later is None and res.plan.root is not None
    assert text.splitlines()[1:] == db.plan(sql, epsilon=1.0, delta=1e-6).explain().splitlines()[1:]


def test_lazy_public_plan_falls_back_to_operators_when_duckdb_answer_cannot_be_held(db, monkeypatch):
    """If the padded representation cannot hold DuckDB's answer, the operators are built and run."""
    from dodb.planner import plan as plan_module

    def refuse(*_a, **_k):
        raise TypeError("a type the lanes do not hold")

    monkeypatch.setattr(plan_module, "from_arrow", refuse)
    sql = PUBLIC[3]
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert res.plan.build_later is None and res.plan.stats  # the operators ran
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table(), ordered=True)


def test_public_query_the_operators_cannot_plan_still_runs_in_duckdb(db):
    """Nothing private is involved, so the operators' limits do not apply: DuckDB answers,
    and the plan is the one DuckDBQuery node (db.plan still names what the operators lack)."""
    from dodb.errors import UnsupportedQueryError
    from dodb.planner.logical import DuckDBQuery, Scan, walk

    sql = "SELECT n_regionkey, sum(DISTINCT n_nationkey) AS s FROM nation GROUP BY n_regionkey"
    with pytest.raises(UnsupportedQueryError):
        db.plan(sql, epsilon=1.0, delta=1e-6)
    res = db.sql(sql, epsilon=1.0, delta=1e-6)
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table())
    nodes = list(walk(res.plan.root))
    assert len(nodes) == 1 and isinstance(nodes[0], DuckDBQuery) and not any(isinstance(n, Scan) for n in nodes)
    assert "DuckDBQuery" in res.explain() and "releases nothing" in res.explain()
    assert res.privacy.charged_epsilon == 0


def test_public_query_needing_the_operators_names_why_it_cannot(db, monkeypatch):
    """The fallback (DuckDB's answer cannot be held) needs the operators: their error, nothing charged."""
    from dodb.planner import plan as plan_module

    monkeypatch.setattr(plan_module, "from_arrow", lambda *_a, **_k: (_ for _ in ()).throw(TypeError("lanes")))
    before = db.ledger.status()["spent"]
    with pytest.raises(DodbError, match="DISTINCT inside SUM"):
        db.sql("SELECT sum(DISTINCT n_nationkey) FROM nation", epsilon=1.0, delta=1e-6)
    assert db.ledger.status()["spent"] == before
