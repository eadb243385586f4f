"""The catalog-driven differential test (tests/functions/catalog.py; issue 30): every call of
DuckDB's deterministic scalar functions over the stored types, against a private table of
extreme rows, is answered as DuckDB answers or refused by name — never wrong, never an error
where DuckDB answers (or the reverse).  docs/function_coverage.md is its full table."""
from __future__ import annotations

import duckdb
import pytest

from tests.functions import catalog

KNOWN_WRONG: set[str] = set()  # calls dodb is known to answer wrongly (none today): listed, never silent


@pytest.fixture(scope="module")
def outcomes():
    return catalog.run()


def test_no_wrong_answers_and_no_error_mismatches(outcomes):
    bad = [f"{o.status}: {o.call.sql} — {o.detail}" for o in outcomes
           if o.status in ("wrong", "error") and o.call.sql not in KNOWN_WRONG]
    assert not bad, "\n".join(bad[:20])
    fixed = KNOWN_WRONG - {o.call.sql for o in outcomes if o.status in ("wrong", "error")}
    assert not fixed, f"now right, remove from KNOWN_WRONG: {sorted(fixed)}"


def test_the_catalog_is_read_and_counted(outcomes):
    """The sweep covers the catalog (hundreds of functions) and the ok calls include every family."""
    names = {o.call.function for o in outcomes if o.status == "ok"}
    assert len(outcomes) > 800 and len({o.call.function for o in outcomes}) > 300
    assert {"+", "abs", "sqrt", "year", "upper", "substring", "date_trunc", "strftime", "ln"} <= names


@pytest.mark.parametrize("plant", ["infinity", "unit", "cast infinity", "interval infinity"])
def test_a_planted_wrong_answer_is_caught(plant, monkeypatch):
    """Bugs this sweep found, planted back: ±infinity dates read as finite dates by YEAR, a
    DATE_DIFF unit taken from a column name, and ±infinity through a cast between DATE and
    TIMESTAMP or through interval arithmetic read as a finite value."""
    t, pt = catalog.table()
    con = duckdb.connect()
    con.register("t", t)
    if plant in ("cast infinity", "interval infinity"):
        from dodb.operators.expressions import dates
        monkeypatch.setattr(dates, "keep_infinities", lambda src, src_kind, res, to_kind: res)
        sql = "CAST(ts AS DATE)" if plant == "cast infinity" else "ts - INTERVAL '90 minutes'"
        assert catalog.classify(catalog.Call("x", "x", sql), t, pt, con).status == "wrong"
    elif plant == "infinity":
        from dodb.operators.expressions import functions
        monkeypatch.setattr(functions, "_finite", lambda v: v.valid)
        call = catalog.Call("year", "year(DATE)", "year(dt)")
        assert catalog.classify(call, t, pt, con).status == "wrong"
    else:
        monkeypatch.setattr(catalog, "check_unit_arguments", lambda sql: None)
        call = catalog.Call("date_diff", "date_diff(VARCHAR, DATE, DATE)",
                            "date_diff(s, DATE '1995-05-17', DATE '1995-05-17')")
        assert catalog.classify(call, t, pt, con).status == "error"
