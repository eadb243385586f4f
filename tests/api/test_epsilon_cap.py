"""An ε above the per-release cap is said, not silently charged less (issue 29)."""
from __future__ import annotations

import dodb
from dodb.oblivious.noise import MAX_RELEASE_EPSILON

from ..cli_run import run_cli


def test_a_capped_epsilon_is_said_in_the_report():
    db = dodb.connect(seed=1)
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(30)")
    db.set_budget(epsilon=1e12, delta=1e-6)
    db.protect("t", "id", max_contributions=1, capacity=40)
    big = db.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=1e9).privacy
    assert big.charged_epsilon <= MAX_RELEASE_EPSILON < big.epsilon
    for text in (str(big), big.verbose()):
        assert f"capped at {MAX_RELEASE_EPSILON:g}" in text and "asked for ε=1e+09" in text
    small = db.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=1.0).privacy
    assert small.capped_note() is None and "capped" not in str(small)
    db.close()


def test_version_and_a_query_needs_its_epsilon(tmp_path):
    """ε is never silently 1.0 on a query that charges (issue 29): it must be given."""
    r = run_cli("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"dodb {dodb.__version__}"
    r = run_cli("query", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "required" in r.stdout and f"at most {MAX_RELEASE_EPSILON:g}" in r.stdout
    r = run_cli("query", "x.duckdb", "SELECT 1", cwd=tmp_path)
    assert r.returncode == 2 and "required: --epsilon" in r.stderr


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


def test_a_refused_epsilon_above_the_cap_names_the_cap():
    """Asking ε=1e9 of a budget of 10 is refused as 'requests ε=40': the refusal says why."""
    import pytest

    db = dodb.connect()
    db.con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(30)")
    db.set_budget(epsilon=10, delta=1e-6)
    db.protect("t", "id", max_contributions=1, capacity=40)
    with pytest.raises(dodb.BudgetExceededError) as e:
        db.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=1e9)
    msg = str(e.value)
    assert f"asked ε=1e+09, and each release's ε is capped at {MAX_RELEASE_EPSILON:g}; nothing was charged" in msg
    assert "the charges so far sum to" in msg and db.budget["spent"][0] == 0
    with pytest.raises(dodb.BudgetExceededError) as e:
        db.sql("SELECT g, count(*) FROM t GROUP BY g", epsilon=20)  # below the cap: no word of it
    assert "capped" not in str(e.value)
    db.close()
