"""An ε above the sampler's per-release cap is refused before anything is charged, never
silently charged less (issue 29)."""
from __future__ import annotations

import pytest

import dodb
from dodb.oblivious.noise import MAX_RELEASE_EPSILON

from ..cli_run import run_cli


def test_an_epsilon_above_the_cap_is_refused_before_anything_is_charged():
    """ε above the sampler's cap is refused, not silently charged as 40 (issue 29: asking for
    1e9 answered 'requests ε=40'); the refusal is one line and names the cap."""
    db = dodb.connect(seed=1)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(30)")
    db.set_budget(epsilon=1e12, delta=1e-6)
    db.protect("t", "id", max_contributions=1, capacity=40)
    for eps in (1e9, MAX_RELEASE_EPSILON * 1.01):
        with pytest.raises(dodb.InvalidParameterError) as e:
            db.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=eps)
        msg = str(e.value)
        assert "\n" not in msg and f"ask for at most {MAX_RELEASE_EPSILON:g}; nothing was charged" in msg
        assert db.budget["spent"][0] == 0 and db.history() == []
    with pytest.raises(dodb.InvalidParameterError, match="at most 40"):
        db.explain("SELECT g, count(*) FROM t GROUP BY g", epsilon=1e9)
    at_cap = db.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=MAX_RELEASE_EPSILON).privacy
    assert at_cap.charged_epsilon == pytest.approx(MAX_RELEASE_EPSILON, rel=1e-3)  # the ε asked is what is charged
    db.close()


def test_an_owner_release_above_the_cap_is_refused_before_anything_is_charged():
    db = dodb.connect(seed=1)
    db.con.execute("CREATE TABLE t AS SELECT range AS id FROM range(30)")
    db.set_budget(epsilon=1e12, delta=1e-6)
    with pytest.raises(dodb.InvalidParameterError, match="at most 40"):
        db.protect("t", "id", max_contributions=1, epsilon=1e6)
    assert db.history() == [] and not db.catalog.table("t").private
    db.close()


def test_the_cli_refuses_an_epsilon_above_the_cap(tmp_path):
    db = dodb.connect(str(tmp_path / "c.duckdb"))
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(30)")
    db.set_budget(epsilon=1e12, delta=1e-6)
    db.protect("t", "id", max_contributions=1, capacity=40)
    db.close()
    r = run_cli("query", "c.duckdb", "SELECT g, count(*) FROM t GROUP BY g", "--epsilon", "1e9", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "ask for at most 40" in r.stderr


def test_version_and_a_query_needs_its_epsilon(tmp_path):
    """ε is never silently 1.0 on a query that charges (issue 29): it must be given."""
    r = run_cli("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"dodb {dodb.__version__}"
    r = run_cli("query", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "required" in r.stdout and f"at most {MAX_RELEASE_EPSILON:g}" in r.stdout
    r = run_cli("query", "x.duckdb", "SELECT 1", cwd=tmp_path)
    assert r.returncode == 2 and "Missing option '--epsilon'" in r.stderr


def test_the_cli_help_states_the_cap_the_sampler_uses():
    from dodb.cli import _cap

    assert _cap() == MAX_RELEASE_EPSILON  # the help hard-codes it to stay light: it must not drift


def test_a_release_above_what_its_input_holds_is_shown_as_the_size_seen():
    """The report shows the size an observer sees: a noisy count drawn above the node's
    public bound (its padded input) is cut to that bound (issue 29: 'groups made by
    Aggregate: 1,496,779' for a 60k-row table)."""
    db = dodb.connect(seed=3)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(30)")
    db.set_budget(epsilon=10.0, delta=1e-3)
    db.protect("t", "id", max_contributions=1, capacity=40)
    rep = db.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=0.01).privacy
    (op,) = rep.operators
    assert op["value"] > 40 and op["padded"] == 40  # ε = 0.01: the shift alone is far above 40 slots
    assert "groups made by Aggregate" in str(rep) and ": 40 (the noise drew" in str(rep)
    db.close()


def test_a_node_with_two_releases_shows_its_output_size_as_padded():
    """A LEFT join releases its output size and its bin counts; the output size an observer
    sees is the padded one (TPC-H Q13 said 'rows out of Join: 19963' for a join padded to
    15,813), while the bin counts stay as drawn."""
    db = dodb.connect(seed=5)
    db.con.execute("CREATE TABLE c AS SELECT range AS id FROM range(20)")
    db.con.execute("CREATE TABLE o AS SELECT range AS oid, range % 20 AS cid FROM range(60)")
    db.set_budget(epsilon=10, delta=1e-3)
    db.protect("c", "id", max_contributions=1, capacity=24, keys=[["id"]])
    db.protect("o", "cid", parent=("c", "id"), max_contributions=4, capacity=64)
    rep = db.sql("SELECT c.id, count(o.oid) FROM c LEFT JOIN o ON c.id = o.cid GROUP BY c.id", epsilon=0.05).privacy
    join = {op["release"]: op for op in rep.operators if op["operator"].startswith("Join")}
    assert set(join) == {"output_size", "bin_counts"}
    size = join["output_size"]
    assert size["value"] > 88 and size["padded"] == 88  # ε = 0.05: the draw is far above the 24 + 64 slots
    assert join["bin_counts"]["padded"] is None
    assert f"rows out of {size['operator']}: 88 (the noise drew {size['value']}" in str(rep)
    db.close()
