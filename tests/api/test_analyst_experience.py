"""The analyst's side (issue 14 item 8): Result in pandas/polars/DuckDB's printing, query
parameters bound as constants of the parsed query, plain and verbose privacy reports,
EXPLAIN's padding overhead, one default δ, and the budget plot."""
from __future__ import annotations

import datetime as dt
import decimal
import sys

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dodb
from dodb.cli import main
from dodb.compare import same_answer
from dodb.planner.overhead import padding_overhead

from ..operators.util import assert_same_rows


def _raw(con):
    con.execute("CREATE TABLE visits (id INTEGER, patient INTEGER, ward VARCHAR, cost DECIMAL(8,2), day DATE, "
                "score DOUBLE)")
    con.execute("INSERT INTO visits SELECT range, range % 17, CASE WHEN range % 7 = 0 THEN NULL ELSE "
                "chr(CAST(97 + range % 4 AS INTEGER)) || '''x' END, (range * 3.25) % 100, DATE '2024-01-01' + CAST(range % 30 AS INTEGER), "
                "(range % 11) / 4.0 FROM range(120)")


@pytest.fixture(scope="module")
def dbs():
    raw = duckdb.connect()
    _raw(raw)
    con = duckdb.connect()
    _raw(con)
    db = dodb.attach(con, seed=11)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("visits", "patient", max_contributions=8, widths={"ward": 4})
    return raw, db


GROUPED = "SELECT ward, count(*) AS n, sum(cost) AS c FROM visits WHERE score > 1 GROUP BY ward ORDER BY ward"
# COUNT(DISTINCT) sorts its own pass, so the filter still compacts and releases its size (two releases)
FILTERED = GROUPED.replace("count(*)", "count(DISTINCT cost)")


def test_result_as_polars_pandas_and_printed_like_duckdb(dbs, capsys):
    raw, db = dbs
    res = db.sql(GROUPED, epsilon=1.0)
    want = raw.sql(GROUPED).to_arrow_table()
    assert_same_rows(res.arrow(), want, ordered=True)
    pl = pytest.importorskip("polars")
    assert res.pl().equals(pl.from_arrow(res.arrow()))
    assert res.df().equals(raw.sql(GROUPED).df())
    res.show()
    shown = capsys.readouterr().out
    duckdb.connect().from_arrow(res.arrow()).show()
    assert shown == capsys.readouterr().out and "ward" in shown


@pytest.mark.parametrize("sql", [
    "SELECT 1, 1",
    "SELECT count(*), count(*) FROM visits",
    "SELECT ward AS a, patient AS a FROM visits WHERE id < 20 ORDER BY id",
    "SELECT v1.ward, v2.ward FROM visits v1 JOIN visits v2 ON v1.id = v2.id + 1 WHERE v1.id < 30 ORDER BY v1.id",
])
def test_fetchall_keeps_columns_that_share_a_name(dbs, sql):
    """``SELECT a, a`` has two columns: fetchall gives both, like DuckDB's (dicts of
    ``to_pylist`` would merge them), and the answer comparison sees both."""
    raw, db = dbs
    got = db.sql(sql, epsilon=1.0)
    want = raw.sql(sql).fetchall()
    assert got.fetchall() == want and len(want[0]) == 2


@pytest.mark.parametrize("sql", ["SELECT sum(patient) AS s, count(*) AS n, sum(cost) AS c FROM visits",
                                 "SELECT ward, sum(id) FROM visits GROUP BY ward ORDER BY ward"])
def test_fetchall_types_equal_duckdbs(dbs, sql):
    """sum() of integers is a HUGEINT: DuckDB's fetchall gives an int, not the Decimal of its
    Arrow type (decimal128(38, 0)); every value has DuckDB's Python type."""
    raw, db = dbs
    got, want = db.sql(sql, epsilon=1.0).fetchall(), raw.sql(sql).fetchall()
    assert got == want
    assert [[type(v) for v in r] for r in got] == [[type(v) for v in r] for r in want]


def test_dataframes_and_relation_api_like_duckdbs(dbs):
    """df() as DuckDB converts (nullable integers stay exact Int64, DATE datetime64), and the
    relation's shape, description and fetchnumpy()."""
    pytest.importorskip("pandas")
    raw, db = dbs
    sql = ("SELECT id, CASE WHEN id % 3 = 0 THEN NULL ELSE CAST(id AS BIGINT) * 76861433640456465 END AS big, "
           "day, ward, cost FROM visits WHERE id < 9 ORDER BY id")
    got, want = db.sql(sql, epsilon=1.0), raw.sql(sql)
    assert got.df().equals(want.df()) and got.fetchdf().dtypes.equals(want.df().dtypes)
    assert got.shape == want.shape and [d[0] for d in got.description] == [d[0] for d in want.description]
    assert [str(t) for t in got.types] == [str(t) for t in want.types]
    assert {k: v.tolist() for k, v in got.fetchnumpy().items()} == {k: v.tolist() for k, v in want.fetchnumpy().items()}


def test_answer_comparison_reads_every_column_of_a_repeated_name():
    a = pa.table([[1, 2], [5, 6]], names=["x", "x"])
    b = pa.table([[9, 9], [5, 6]], names=["x", "x"])
    assert same_answer(a, a) and not same_answer(a, b)


@pytest.mark.parametrize("module, method", [("pandas", "df"), ("polars", "pl")])
def test_missing_optional_library_is_a_clear_error(dbs, monkeypatch, module, method):
    _, db = dbs
    res = db.sql("SELECT count(*) FROM visits", epsilon=1.0)
    monkeypatch.setitem(sys.modules, module, None)   # import fails as if not installed
    with pytest.raises(dodb.DodbError, match=f"needs {module}: pip install"):
        getattr(res, method)()


@pytest.mark.parametrize("sql, params", [
    ("SELECT count(*) FROM visits WHERE ward = ? AND score > ?", ["a'x", 1.0]),
    ("SELECT count(*) FROM visits WHERE ward = $1 OR ward = $1", ["b'x"]),
    ("SELECT count(*) FROM visits WHERE day >= $start AND cost < $c", {"start": dt.date(2024, 1, 20),
                                                                        "c": decimal.Decimal("40.5")}),
    ("SELECT ward, count(*) FROM visits WHERE ward = ? OR ward IS NULL GROUP BY ward", ["x' OR '1'='1"]),
    ("SELECT count(*) FROM visits WHERE ward IS NOT DISTINCT FROM ?", [None]),
    ("SELECT ? AS a, ? AS b, count(*) AS n FROM visits WHERE id < ?", [True, "it's", 10]),
])
def test_parameters_bind_like_duckdb(dbs, sql, params):
    raw, db = dbs
    got = db.sql(sql, epsilon=1.0, params=params)
    assert_same_rows(got.arrow(), raw.sql(sql, params=params).to_arrow_table())


def test_parameters_are_constants_never_text(dbs):
    raw, db = dbs
    evil = "a'x' OR 1=1 --"
    sql = "SELECT ward, count(*) FROM visits WHERE ward = ? GROUP BY ward"
    res = db.sql(sql, epsilon=1.0, params=[evil])
    assert res.fetchall() == raw.execute(sql, [evil]).fetchall() == []
    # the ledger records the query as it ran, with the constant quoted by sqlglot
    ran = "SELECT ward, COUNT(*) FROM visits WHERE ward = 'a''x'' OR 1=1 --' GROUP BY ward"
    assert db.history()[-1]["sql"] == ran == res.privacy.sql


@pytest.mark.parametrize("sql, params, match", [
    ("SELECT count(*) FROM visits WHERE id = ?", [], r"no value for parameter\(s\) \$1"),
    ("SELECT count(*) FROM visits WHERE id = ?", [1, 2], r"parameter\(s\) \$2 are not used"),
    ("SELECT count(*) FROM visits WHERE id = $x", {"y": 1}, r"no value for parameter\(s\) \$x"),
    ("SELECT count(*) FROM visits WHERE id = ? AND id = $2", [1, 2], "mixes '\\?' with numbered"),
    ("SELECT count(*) FROM visits WHERE id = ?", [object()], "parameter of type object is not supported"),
    ("SELECT count(*) FROM visits WHERE id = ?", "1", "params must be a list/tuple"),
])
def test_bad_parameters_are_refused_before_any_charge(dbs, sql, params, match):
    _, db = dbs
    spent = db.budget["spent"]
    with pytest.raises(dodb.InvalidParameterError, match=match):
        db.sql(sql, epsilon=1.0, params=params)
    assert db.budget["spent"] == spent


def test_placeholder_without_params_names_the_fix(dbs):
    _, db = dbs
    with pytest.raises(dodb.UnsupportedQueryError, match="query parameter \\(pass values with params=\\)"):
        db.sql("SELECT count(*) FROM visits WHERE id = ?", epsilon=1.0)


@settings(max_examples=25)
@given(st.one_of(st.none(), st.integers(-2**62, 2**62), st.text(max_size=6), st.booleans(),
                 st.floats(allow_nan=False, allow_infinity=False, width=32),
                 st.dates(dt.date(1990, 1, 1), dt.date(2030, 1, 1))))
def test_random_parameter_values_match_duckdb(dbs, value):
    raw, db = dbs
    sql = "SELECT ? AS v, count(*) AS n FROM visits WHERE id < 3"
    got = db.sql(sql, epsilon=1.0, params=[value]).arrow()
    want = raw.sql(sql, params=[value]).to_arrow_table()
    assert got.to_pylist() == want.to_pylist()


def test_privacy_report_plain_by_default_theorems_when_verbose(dbs):
    _, db = dbs
    rep = db.sql(FILTERED, epsilon=1.0).privacy
    plain, verbose = str(rep), rep.verbose()
    assert "an observer of memory learned 2 padded size(s)" in plain
    assert "rows kept by Filter#" in plain and "groups made by Aggregate#" in plain
    assert "Thm" not in plain and "charged: ε=" in plain
    assert "[004 Thm 1.3]" in verbose and "004 Def 1.2" in verbose and "shift" in verbose
    nothing = db.sql("SELECT count(*) FROM visits", epsilon=1.0).privacy
    assert "revealed no new size" in str(nothing) and "charged: nothing" in str(nothing)


def test_explain_states_the_expected_padding_overhead(dbs):
    _, db = dbs
    p = db.plan(FILTERED, epsilon=1.0)
    text = p.explain()
    line = next(ln for ln in text.splitlines() if ln.startswith("padding: expected +"))
    over = padding_overhead(p.event_nodes)
    assert len(over) == 2 and f"+{sum(o.expected_dummies for o in over)} dummy rows" in line
    for o, (node, _, _, _, _, mech) in zip(over, p.event_nodes):
        assert o.expected_dummies <= o.bound and o.expected_dummies >= min(mech.shift, o.bound)
        assert o.worst_dummies == min(2 * o.expected_dummies, o.bound) or o.worst_dummies == o.bound
    assert db.explain(FILTERED, epsilon=1.0, as_dict=True)["padding"][0]["release"] == over[0].release
    # a smaller ε pads more
    small = db.plan(FILTERED, epsilon=0.05).event_nodes
    assert sum(e[5].shift for e in small) > sum(e[5].shift for e in p.event_nodes)
    assert sum(o.expected_dummies for o in padding_overhead(small)) >= sum(o.expected_dummies for o in over)
    assert "padding: none" in db.explain("SELECT count(*) FROM visits", epsilon=1.0)


def test_explain_and_sql_share_the_default_delta(dbs):
    _, db = dbs
    explained = db.explain(GROUPED, epsilon=1.0, as_dict=True)["delta"]
    ran = db.sql(GROUPED, epsilon=1.0).privacy.delta
    assert explained == ran == db.budget["default_delta"]


def test_budget_plot(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    path = str(tmp_path / "b.duckdb")
    db = dodb.connect(path)
    _raw(db.con)
    db.set_budget(epsilon=10.0, delta=1e-6)
    db.protect("visits", "patient", max_contributions=8, widths={"ward": 4})
    db.sql(GROUPED, epsilon=0.5)
    db.close()
    out = str(tmp_path / "spend.png")
    assert main(["budget", path, "--plot", out]) == 0
    assert "wrote" in capsys.readouterr().out
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["budget", path, "--plot", out]) == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err
