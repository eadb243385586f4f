"""Functional dependencies from declared keys and UNION ALL discriminators (docs/design.md
§Degrees from structure, dodb/planner/degrees.py ``fd_unique``, ``union_unique``).

TPC-DS Q4/Q11/Q74 build ``year_total``: per-channel GROUP BYs over customer ⋈ sales, grouped
by the customer's business key and the columns it determines, with a literal ``sale_type``,
UNION ALLed, then self-joined on the key with ``sale_type`` and the year fixed.  Here: the
bounds are inferred where they hold, NOT inferred in near misses (a non-key column, branches
sharing a literal, an OR filter, a projection that changes the key, the NULL-filled side of a
LEFT join), a planted unsound rule is caught by the DuckDB comparison, and the answers equal
DuckDB's on tables with NULLs."""
from __future__ import annotations

import duckdb
import pytest

import dodb
from dodb.compare import snapshot
from dodb.planner.degrees import fd_unique, union_unique
from dodb.planner.logical import Aggregate, Join, SetOp, walk

from ..operators.util import assert_same_rows


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    # code: a second key (unique, one NULL); name: not a key (repeats); region with NULLs.
    # Codes 'k0'…'k14' and 'K0'…'K14' differ only in case (upper(code) merges them).
    con.execute("CREATE TABLE cust (id INTEGER, code VARCHAR, name VARCHAR, region VARCHAR)")
    con.execute("INSERT INTO cust SELECT range, CASE WHEN range = 3 THEN NULL WHEN range < 15 THEN 'k' || range "
                "ELSE 'K' || (range - 15) END, 'n' || (range % 6), "
                "CASE WHEN range % 5 = 0 THEN NULL ELSE 'r' || (range % 3) END FROM range(30)")
    # sales: cid 30..32 name no customer (orphans: a LEFT join NULL-fills their customer columns)
    con.execute("CREATE TABLE sales (cid INTEGER, yr INTEGER, amt INTEGER)")
    con.execute("INSERT INTO sales SELECT range % 33, CASE WHEN range % 13 = 0 THEN NULL ELSE 2000 + range % 3 END, "
                "range % 17 FROM range(200)")
    con.execute("CREATE TABLE web (cid INTEGER, yr INTEGER, amt INTEGER)")
    con.execute("INSERT INTO web SELECT (range * 7) % 31, 2000 + range % 2, range % 11 FROM range(90)")
    d = dodb.attach(con, seed=11, allow_insecure=True)
    d.oracle = snapshot(con)
    d.set_budget(epsilon=1e6, delta=0.5)
    d.protect("cust", "id", max_contributions=1, keys=[["id"], ["code"]], widths={"code": 3, "name": 2, "region": 2})
    for t in ("sales", "web"):
        n = con.execute(f"SELECT max(c) FROM (SELECT count(*) c FROM {t} GROUP BY cid)").fetchall()[0][0]
        d.protect(t, "cid", parent=("cust", "id"), max_contributions=int(n))
    yield d
    d.close()


def _branch(table: str, tag: str, keys: str = "c.code, c.name, c.region", src: str | None = None) -> str:
    src = src or f"cust c JOIN {table} s ON c.id = s.cid"
    return (f"SELECT {keys.replace('c.code', 'c.code AS cid_')}, s.yr AS y, sum(s.amt) AS tot, {tag} AS t "
            f"FROM {src} GROUP BY {keys}, s.yr")


def _year_total(tags=("'s'", "'w'"), **kw) -> str:
    return ("WITH yt AS (" + _branch("sales", tags[0], **kw) + " UNION ALL " + _branch("web", tags[1], **kw)
            + (" UNION ALL " + _branch("sales", tags[2], **kw) if len(tags) > 2 else "") + ") ")


def _self_join(tags=("'s'", "'w'"), on="cid_", where=None, **kw) -> str:
    where = where or f"a.t = {tags[0]} AND a.y = 2000 AND b.t = {tags[1]} AND b.y = 2001"
    return _year_total(tags, **kw) + f"SELECT a.{on}, a.tot, b.tot FROM yt a JOIN yt b ON a.{on} = b.{on} WHERE {where}"


def _top_join(db, sql: str) -> Join:
    plan = db.plan(sql, epsilon=1.0, delta=1e-6)
    return [n for n in walk(plan.root) if isinstance(n, Join) and n.how == "inner"][-1]


def _check(db, sql: str) -> None:
    res = db.sql(sql, epsilon=1.0)
    assert_same_rows(res.arrow(), db.oracle.sql(sql).to_arrow_table())


def _unique_one(j: Join) -> bool:
    return (j.left_degree, j.right_degree) == (1, 1) and "unique key" in j.describe()


# -- inferred where they hold ---------------------------------------------------------------------

def test_group_by_a_key_and_what_it_determines_is_unique_on_the_key(db):
    sql = ("WITH g AS (SELECT c.code, c.name, c.region, s.yr, sum(s.amt) AS tot FROM cust c JOIN sales s "
           "ON c.id = s.cid GROUP BY c.code, c.name, c.region, s.yr) "
           "SELECT a.code, a.tot, b.tot FROM g a JOIN g b ON a.code = b.code WHERE a.yr = 2000 AND b.yr = 2001")
    plan = db.plan(sql, epsilon=1.0, delta=1e-6)
    agg = next(n for n in walk(plan.root) if isinstance(n, Aggregate))
    assert frozenset({"c.code", "s.yr"}) in agg.unique
    j = _top_join(db, sql)
    assert _unique_one(j) and "unique key (a.code)" in j.describe()
    assert j.stability <= j.left.stability + j.right.stability  # (a key of the unit: along its path, even less)
    _check(db, sql)


@pytest.mark.parametrize("tags", [("'s'", "'w'"), ("'s'", "'w'", "'c'"), ("1", "2"), ("1", "2", "-3")])
def test_union_all_with_a_literal_discriminator_like_tpcds_q4(db, tags):
    sql = _self_join(tags)
    plan = db.plan(sql, epsilon=1.0, delta=1e-6)
    top_union = [n for n in walk(plan.root) if isinstance(n, SetOp)][-1]
    assert any(len(u) == 3 for u in top_union.unique), top_union.unique  # (cid_, y, t)
    assert _unique_one(_top_join(db, sql))
    _check(db, sql)


def test_left_join_keeps_the_preserved_sides_dependencies(db):
    # cust on the preserved side: its rows are real cust rows, so code still determines them
    sql = _self_join(src="cust c LEFT JOIN sales s ON c.id = s.cid")
    assert _unique_one(_top_join(db, sql))
    _check(db, sql)


# -- NOT inferred in near misses -------------------------------------------------------------------

@pytest.mark.parametrize("case, sql", [
    # name is not a key: two customers share a name
    ("non-key column", _self_join(keys="c.name, c.region", on="name")),
    # both branches project 's': a row of either may have t = 's'
    ("shared literal", _self_join(tags=("'s'", "'s'"))),
    # 's' and 'S' are distinct strings, but not distinct case-folded: no discriminator claimed
    ("case-folded literal", _self_join(tags=("'s'", "'S'"))),
    # different kinds: no single literal type
    ("mixed kinds", _self_join(tags=("'1'", "2"), where="a.t = '1' AND a.y = 2000 AND b.t = '2' AND b.y = 2001")),
    # an OR fixes nothing
    ("or filter", _self_join(where="(a.t = 's' OR a.t = 'w') AND a.y = 2000 AND b.t = 'w' AND b.y = 2001")),
    ("inequality", _self_join(where="a.t > 'r' AND a.y = 2000 AND b.t = 'w' AND b.y = 2001")),
    # the derived table replaces code by upper(code), which merges 'k1' and 'K1': no key left
    ("projection changes the key", _self_join(
        src="(SELECT upper(code) AS code, name, region, id FROM cust) c JOIN sales s ON c.id = s.cid")),
    # the derived table drops the key column, keeping what it determined
    ("projection drops the key", _self_join(
        keys="c.name, c.region", on="name",
        src="(SELECT name, region, id FROM cust) c JOIN sales s ON c.id = s.cid")),
    # cust NULL-filled for orphan sales (cid 30..32) while customer 3's real row has code NULL
    # with a name: (code NULL, year) has two groups, so code does not determine name
    ("left join null-fills the key's side", _self_join(src="sales s LEFT JOIN cust c ON s.cid = c.id")),
])
def test_near_misses_are_not_unique(db, case, sql):
    j = _top_join(db, sql)  # the left side always misses (the right may not: OR, inequality)
    assert j.left_degree != 1, (case, j.describe())
    assert "left bound is a unique key" not in j.describe()
    _check(db, sql)


def test_the_left_join_near_miss_really_has_two_groups_per_key(db):
    sql = ("SELECT count(*) FROM (SELECT c.code, c.name, s.yr FROM sales s LEFT JOIN cust c ON s.cid = c.id "
           "GROUP BY c.code, c.name, s.yr) WHERE code IS NULL AND yr = 2000")
    assert db.oracle.sql(sql).fetchall()[0][0] == 2


def test_rules_on_their_own():
    fds = [(frozenset({"id"}), frozenset({"id", "name"}))]
    assert fd_unique(["name", "yr"], fds) == []                    # the key is not grouped on
    assert fd_unique(["id", "yr"], fds) == []                      # nothing to remove
    lits = {"t": frozenset({("text", "s")})}
    other = {"t": frozenset({("text", "w"), ("text", "S")})}
    assert union_unique([frozenset({"id"})], [frozenset({"id"})], lits, other, ["id", "t"], ["id", "t"]) == []
    assert union_unique([frozenset({"id"})], [], lits, {"t": frozenset({("text", "w")})}, ["id", "t"], ["id", "t"]) == []


def test_planted_unsound_dependency_gives_a_wrong_answer_that_the_oracle_catches(db, monkeypatch):
    """Guards the guard: a rule that took the first group key as determining the others
    (name, which repeats) would claim degree 1 on name; the join keeps one partner per key and
    drops real rows, and comparing with DuckDB fails."""
    from dodb.planner import aggregation

    def first_key_determines_all(keys, fds):
        return [frozenset({keys[0], keys[-1]})] if len(keys) > 2 else []

    sql = _self_join(keys="c.name, c.region", on="name")
    monkeypatch.setattr(aggregation, "fd_unique", first_key_determines_all)
    assert _top_join(db, sql).left_degree == 1
    with pytest.raises(AssertionError, match="row counts differ"):
        _check(db, sql)
    monkeypatch.undo()
    assert _top_join(db, sql).left_degree != 1
    _check(db, sql)


def test_planted_unsound_discriminator_gives_a_wrong_answer_that_the_oracle_catches(db, monkeypatch):
    """A union rule that took a literal shared by both branches as telling them apart would
    claim (cid_, y, t) unique; a customer with store and web sales in one year then has two
    rows, the join keeps one, and comparing with DuckDB fails."""
    from dodb.planner import degrees

    sql = _self_join(tags=("'s'", "'s'"), where="a.t = 's' AND a.y = 2000 AND b.t = 's' AND b.y = 2001")
    monkeypatch.setattr(degrees, "_distinct_values", lambda a, b: True)
    assert _top_join(db, sql).left_degree == 1
    with pytest.raises(AssertionError, match="row counts differ"):
        _check(db, sql)
    monkeypatch.undo()
    assert _top_join(db, sql).left_degree != 1
    _check(db, sql)
