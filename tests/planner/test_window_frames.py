"""MIN/MAX and FIRST/LAST/NTH_VALUE over RANGE-offset and GROUPS frames, and RANGE frames
with INTERVAL offsets over DATE/TIMESTAMP keys (docs/design.md §Window functions, frame
lookups): DuckDB's answers on private and public tables with NULLs, ties, DESC and empty
frames, refusals that charge nothing, and identical views on coupled neighbours."""
from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings, strategies as st

import dodb
from dodb.audit import audit
from dodb.compare import snapshot
from dodb.errors import DodbError

from ..audit.test_audit import _database
from ..operators.util import assert_same_rows


@pytest.fixture(scope="module")
def db():
    con = duckdb.connect()
    con.execute("CREATE TABLE ev (id INTEGER PRIMARY KEY, g INTEGER, d DATE, ts TIMESTAMP, v INTEGER, s VARCHAR, "
                "k INTEGER)")
    con.execute("INSERT INTO ev SELECT range, range % 3, CASE WHEN range % 17 = 5 THEN NULL ELSE DATE '2024-01-31' "
                "+ ((range * 7) % 60)::INTEGER END, CASE WHEN range % 19 = 3 THEN NULL ELSE TIMESTAMP "
                "'2024-02-28 22:00:00' + to_minutes(((range * 131) % 4000)::BIGINT) END, CASE WHEN range % 7 = 2 "
                "THEN NULL ELSE (range * 13) % 23 - 5 END, CASE WHEN range % 5 = 1 THEN NULL ELSE "
                "chr((97 + (range * 3) % 11)::INTEGER) END, CASE WHEN range % 11 = 4 THEN NULL ELSE range % 9 END "
                "FROM range(50)")
    con.execute("CREATE TABLE pub AS SELECT * FROM ev WHERE id % 2 = 0")
    con.execute("CREATE TABLE nothing (id INTEGER, d DATE, v INTEGER)")
    d = dodb.attach(con, seed=7, allow_insecure=True)
    d.oracle = snapshot(con)
    d.set_budget(epsilon=1e7, delta=0.5)
    d.protect("ev", "id", max_contributions=1, keys=[["id"]], widths={"s": 4})
    d.protect("nothing", "id", max_contributions=1)
    yield d
    d.close()


def _check(db, sql):
    got = db.sql(sql, epsilon=1.0, delta=1e-6).arrow()
    assert_same_rows(got, db.oracle.sql(sql).to_arrow_table())


QUERIES = [
    # MIN / MAX over RANGE offsets (ties, NULL keys, NULL values, DESC, empty frames)
    "SELECT id, min(v) OVER (ORDER BY k RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS a, "
    "max(v) OVER (PARTITION BY g ORDER BY k DESC NULLS FIRST RANGE BETWEEN 1 FOLLOWING AND 3 FOLLOWING) AS b FROM ev",
    "SELECT id, min(s) OVER (ORDER BY k RANGE BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING) AS a, "
    "max(s) OVER (ORDER BY k DESC RANGE BETWEEN 1 PRECEDING AND UNBOUNDED FOLLOWING) AS b FROM ev",
    "SELECT id, min(d) OVER (PARTITION BY g ORDER BY v RANGE BETWEEN 3 PRECEDING AND 3 FOLLOWING) AS a FROM pub",
    # MIN / MAX over GROUPS frames
    "SELECT id, max(v) OVER (PARTITION BY g ORDER BY k GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS a, "
    "min(ts) OVER (ORDER BY k DESC GROUPS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS b FROM ev",
    # FIRST / LAST / NTH_VALUE (a tie-free key: DuckDB's order of peers is its own)
    "SELECT id, first_value(v) OVER (ORDER BY id RANGE BETWEEN 2 PRECEDING AND 3 FOLLOWING) AS f, "
    "last_value(s) OVER (PARTITION BY g ORDER BY id DESC GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS l, "
    "nth_value(v, 2) OVER (ORDER BY id RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) AS n FROM ev",
    "SELECT id, first_value(v IGNORE NULLS) OVER (ORDER BY id RANGE BETWEEN 4 PRECEDING AND 2 PRECEDING) AS f, "
    "last_value(v IGNORE NULLS) OVER (ORDER BY id DESC RANGE BETWEEN 1 FOLLOWING AND 5 FOLLOWING) AS l FROM pub",
    "SELECT id, nth_value(s, 3) OVER (PARTITION BY g ORDER BY id GROUPS BETWEEN CURRENT ROW AND 4 FOLLOWING) AS n "
    "FROM ev",
    # INTERVAL offsets over DATE and TIMESTAMP keys, every aggregate
    "SELECT id, sum(v) OVER (ORDER BY d RANGE BETWEEN INTERVAL 2 DAY PRECEDING AND CURRENT ROW) AS w FROM ev",
    "SELECT id, min(v) OVER (PARTITION BY g ORDER BY d DESC RANGE BETWEEN INTERVAL 1 MONTH PRECEDING AND "
    "INTERVAL 3 DAYS FOLLOWING) AS w, max(s) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 36 HOUR PRECEDING AND "
    "INTERVAL 1 HOUR PRECEDING) AS x FROM ev",
    "SELECT id, count(*) OVER (ORDER BY ts NULLS FIRST RANGE BETWEEN INTERVAL 1 DAY FOLLOWING AND UNBOUNDED "
    "FOLLOWING) AS w, avg(v) OVER (ORDER BY d RANGE INTERVAL 1 WEEK PRECEDING) AS a FROM pub",
    "SELECT id, min(v) OVER (ORDER BY d RANGE BETWEEN INTERVAL 1 YEAR PRECEDING AND INTERVAL 1 MONTH PRECEDING) AS w, "
    "count(v) OVER (ORDER BY d DESC NULLS FIRST RANGE BETWEEN INTERVAL 1 MONTH FOLLOWING AND INTERVAL 2 MONTHS "
    "FOLLOWING) AS c FROM ev",
    "SELECT id, sum(v) OVER (PARTITION BY g ORDER BY ts DESC RANGE BETWEEN INTERVAL 90 MINUTE PRECEDING AND "
    "INTERVAL 30 SECOND FOLLOWING) AS w FROM ev",
    "SELECT id, first_value(id) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 2 HOUR PRECEDING AND CURRENT ROW) AS f, "
    "last_value(id) OVER (ORDER BY ts RANGE BETWEEN CURRENT ROW AND INTERVAL 5 HOUR FOLLOWING) AS l FROM ev",
    # numeric offsets over a DATE key: days (DuckDB's DATE ± INTEGER)
    "SELECT id, sum(v) OVER (ORDER BY d RANGE BETWEEN 3 PRECEDING AND 1 FOLLOWING) AS s, min(s) OVER (PARTITION BY g "
    "ORDER BY d DESC NULLS FIRST RANGE BETWEEN 7 PRECEDING AND 2 PRECEDING) AS m FROM ev",
    # empty inputs, filters before the window, QUALIFY
    "SELECT id, min(v) OVER (ORDER BY d RANGE INTERVAL 3 DAY PRECEDING) AS m FROM nothing",
    "SELECT id, max(v) OVER (ORDER BY k RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS m FROM ev WHERE id > 100",
    "SELECT id FROM ev WHERE v > 0 QUALIFY min(v) OVER (ORDER BY d RANGE INTERVAL 3 DAY PRECEDING) = v",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_answers_equal_duckdb(db, sql):
    _check(db, sql)


_FRAMES = ["RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING", "RANGE BETWEEN 1 PRECEDING AND CURRENT ROW",
           "RANGE BETWEEN UNBOUNDED PRECEDING AND 3 PRECEDING", "RANGE BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING",
           "RANGE BETWEEN 1 FOLLOWING AND 2 FOLLOWING", "RANGE 3 PRECEDING", "RANGE BETWEEN 0 PRECEDING AND 0 FOLLOWING",
           "GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING", "GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING",
           "GROUPS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING", "GROUPS BETWEEN 2 PRECEDING AND 1 PRECEDING"]
_INTERVALS = ["RANGE BETWEEN INTERVAL {a} PRECEDING AND CURRENT ROW",
              "RANGE BETWEEN INTERVAL {a} PRECEDING AND INTERVAL {b} FOLLOWING",
              "RANGE BETWEEN CURRENT ROW AND INTERVAL {b} FOLLOWING",
              "RANGE BETWEEN UNBOUNDED PRECEDING AND INTERVAL {a} PRECEDING",
              "RANGE BETWEEN INTERVAL {a} FOLLOWING AND UNBOUNDED FOLLOWING"]
_UNITS = ["DAY", "HOUR", "MINUTE", "WEEK", "MONTH"]


@st.composite
def frame_query(draw):
    func = draw(st.sampled_from(["min(v)", "max(v)", "min(s)", "max(d)", "first_value(v)", "last_value(s)",
                                 "nth_value(v, 2)", "first_value(v IGNORE NULLS)", "sum(v)", "avg(v)", "count(*)"]))
    part = draw(st.sampled_from(["", "g", "k IS NULL"]))
    if draw(st.booleans()):
        key = draw(st.sampled_from(["d", "ts"]))
        frame = draw(st.sampled_from(_INTERVALS)).format(
            a=f"{draw(st.integers(0, 40))} {draw(st.sampled_from(_UNITS))}",
            b=f"{draw(st.integers(0, 40))} {draw(st.sampled_from(_UNITS))}")
    else:
        key = draw(st.sampled_from(["k", "v", "id % 5", "d"]))
        frame = draw(st.sampled_from(_FRAMES))
    positional = func.startswith(("first", "last", "nth"))  # DuckDB orders peers its own way: no ties
    if positional and "INTERVAL" in frame:
        key = "ts"  # distinct where not NULL
    elif positional and frame.startswith("RANGE"):
        key = "id"
    order = key + draw(st.sampled_from(["", " DESC", " NULLS FIRST", " DESC NULLS FIRST"]))
    if positional and frame.startswith("GROUPS"):
        order += ", id"
    over = " ".join(x for x in [f"PARTITION BY {part}" if part else "", f"ORDER BY {order}", frame] if x)
    table = draw(st.sampled_from(["ev", "pub"]))
    where = draw(st.sampled_from(["", " WHERE v IS NOT NULL OR id % 2 = 0", " WHERE g = 1"]))
    if positional and key == "ts":
        where = " WHERE ts IS NOT NULL"
    return f"SELECT id, {func} OVER ({over}) AS w FROM {table}{where}"


@settings(max_examples=40, deadline=None)
@given(sql=frame_query())
def test_generated_frame_queries_equal_duckdb(db, sql):
    _check(db, sql)


@pytest.mark.parametrize("sql,construct", [
    ("SELECT min(v) OVER (ORDER BY k, id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM ev",
     "only one ORDER BY"),
    ("SELECT first_value(v) OVER (ORDER BY d GROUPS INTERVAL 1 DAY PRECEDING) FROM ev", "GROUPS frame with an INTERVAL"),
    ("SELECT sum(v) OVER (ORDER BY k RANGE INTERVAL 2 DAYS PRECEDING) FROM ev", "-(INTEGER, INTERVAL)"),
    ("SELECT sum(v) OVER (ORDER BY CAST(v AS DECIMAL(8, 2)) RANGE 2 PRECEDING) FROM ev",
     "offset over an ORDER BY key of type"),
    ("SELECT min(v) OVER (ORDER BY d RANGE BETWEEN INTERVAL 1 MONTH PRECEDING AND INTERVAL 20 DAYS PRECEDING) FROM ev",
     "start offset may follow its end"),
    ("SELECT min(v) OVER (ORDER BY d RANGE BETWEEN INTERVAL 3 DAY FOLLOWING AND INTERVAL 1 DAY FOLLOWING) FROM ev",
     "start offset may follow its end"),
    ("SELECT min(v) OVER (ORDER BY d RANGE BETWEEN INTERVAL '1 day 2 hours' PRECEDING AND CURRENT ROW) FROM ev",
     "INTERVAL <integer> <unit>"),
    ("SELECT min(v) OVER (ORDER BY d RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND 1 FOLLOWING) FROM ev",
     "mixing an INTERVAL and a numeric offset"),
])
def test_refused_naming_the_construct_charging_nothing(db, sql, construct):
    spent = db.budget["spent"]
    with pytest.raises(DodbError) as e:
        db.sql(sql, epsilon=1.0)
    assert construct.lower() in str(e.value).lower()
    assert db.budget["spent"] == spent


def test_window_frame_queries_have_identical_views_on_coupled_neighbours():
    queries = ["SELECT id, ward, min(age) OVER (PARTITION BY ward ORDER BY age RANGE BETWEEN 5 PRECEDING AND "
               "5 FOLLOWING) AS m, last_value(id) OVER (ORDER BY id GROUPS BETWEEN 1 PRECEDING AND 2 FOLLOWING) AS l "
               "FROM patients",
               "SELECT pid, max(amount) OVER (ORDER BY pid DESC RANGE BETWEEN 3 PRECEDING AND 1 PRECEDING) AS m "
               "FROM visits"]
    db = _database()
    try:
        report = audit(db, queries, pairs=2, seed=1)
        assert report.ok, "\n".join(report.lines())
    finally:
        db.close()


def test_infinite_and_extreme_dates_like_duckdb():
    """DuckDB: ±infinity plus or minus an offset is ±infinity (a peer group of its own); a
    finite DATE plus a number of days outside DATE's range raises."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, d DATE, ts TIMESTAMP, x INTEGER)")
    con.execute("INSERT INTO t VALUES (1, DATE 'infinity', TIMESTAMP 'infinity', 1), (2, DATE '2024-01-01', "
                "TIMESTAMP '2024-01-01 10:00', 2), (3, DATE '-infinity', TIMESTAMP '-infinity', 4), (4, NULL, NULL, 3), "
                "(5, DATE 'infinity', TIMESTAMP 'infinity', 7), (6, DATE '2024-01-02', TIMESTAMP '2024-01-01 11:00', 8), "
                "(7, DATE '5881580-07-08', NULL, 5)")
    d = dodb.attach(con, seed=7, allow_insecure=True)
    oracle = snapshot(con)
    d.set_budget(epsilon=1e7, delta=0.5)
    d.protect("t", "id", max_contributions=1, keys=[["id"]])
    try:
        for sql in ["SELECT id, sum(x) OVER (ORDER BY d RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND CURRENT ROW) AS s, "
                    "min(x) OVER (ORDER BY ts DESC RANGE BETWEEN INTERVAL 2 HOUR PRECEDING AND INTERVAL 1 MONTH "
                    "FOLLOWING) AS m FROM t WHERE id <> 7",
                    "SELECT id, count(*) OVER (ORDER BY d RANGE BETWEEN CURRENT ROW AND INTERVAL 1 YEAR FOLLOWING) AS s, "
                    "max(x) OVER (ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND INTERVAL 1 HOUR PRECEDING) AS m "
                    "FROM t WHERE id <> 7",
                    "SELECT id, sum(x) OVER (ORDER BY d DESC RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS s, "
                    "min(x) OVER (ORDER BY d RANGE BETWEEN 5 PRECEDING AND 2 FOLLOWING) AS m FROM t"]:
            got = d.sql(sql, epsilon=1.0, delta=1e-6).arrow()
            assert_same_rows(got, oracle.sql(sql).to_arrow_table())
        sql = "SELECT id, sum(x) OVER (ORDER BY d RANGE BETWEEN CURRENT ROW AND 3 FOLLOWING) AS s FROM t"
        with pytest.raises(duckdb.OutOfRangeException):  # 5881580-07-08 + 3 is not a DATE
            oracle.sql(sql).fetchall()
        with pytest.raises(DodbError, match="Out of Range.*RANGE frame bound.*DATE"):
            d.sql(sql, epsilon=1.0, delta=1e-6).arrow()
    finally:
        d.close()


@pytest.mark.parametrize("sql, fails", [
    ("SELECT id, sum(x) OVER (ORDER BY x RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING) AS s FROM t", True),
    ("SELECT id, count(*) OVER (ORDER BY s DESC RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) AS c FROM t", True),
    ("SELECT id, count(*) OVER (ORDER BY x RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS c FROM t WHERE id = 1", False),
    ("SELECT id, count(*) OVER (ORDER BY s RANGE BETWEEN CURRENT ROW AND CURRENT ROW) AS c FROM t", False),
])
def test_offsets_overflowing_a_narrow_integer_key_fail_like_duckdb(sql, fails):
    """DuckDB adds a RANGE offset in the ORDER BY key's own type: 2^31 - 1 + 5 overflows an
    INTEGER key (not INT64), and the query fails."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x INTEGER, s SMALLINT)")
    con.execute("INSERT INTO t VALUES (1, 1, 1), (2, 2147483647, -32768), (3, NULL, NULL), (4, 7, 32767)")
    d = dodb.attach(con, seed=7, allow_insecure=True)
    oracle = snapshot(con)
    d.set_budget(epsilon=1e7, delta=0.5)
    d.protect("t", "id", max_contributions=1, keys=[["id"]])
    try:
        if fails:
            with pytest.raises(duckdb.OutOfRangeException):
                oracle.sql(sql).fetchall()
            with pytest.raises(DodbError, match="Out of Range.*RANGE frame bound"):
                d.sql(sql, epsilon=1.0, delta=1e-6).arrow()
        else:
            assert_same_rows(d.sql(sql, epsilon=1.0, delta=1e-6).arrow(), oracle.sql(sql).to_arrow_table())
    finally:
        d.close()
