"""The coupled-neighbour audit (docs/design.md §Audit): DO plans give identical views on
coupled neighbours, and every leak class planted into the engine is caught."""
from __future__ import annotations

import random
import subprocess
import sys

import duckdb
import numpy as np
import pytest

import dodb
from dodb.audit import AuditError, audit
from dodb.operators.context import ExecContext
from dodb.planner import execute as execute_mod
from dodb.planner.logical import upper_rows, walk

from .planted import plant_data_sized_buffer, plant_data_sized_peak, plant_magnitude_branch, plant_one_host_allocation

QUERIES = [
    "SELECT count(*) FROM patients",
    # COUNT(DISTINCT) sorts its own pass: the filter compacts and releases a size that moves
    # with the neighbour (the planted tests below need such a release)
    "SELECT ward, count(DISTINCT age), sum(age) FROM patients WHERE age > 30 GROUP BY ward",
    "SELECT w.name, count(*) FROM visits v JOIN patients p ON v.pid = p.id JOIN wards w ON p.ward = w.ward "
    "WHERE v.amount > 10 GROUP BY w.name",
    # grouped over the scan sorted at the scan (planner/presort.py)
    "SELECT ward, count(*), sum(age) FROM patients WHERE age > 30 GROUP BY ward",
    # grouped by the join's key and columns of its unique side: no sort (planner/presort.py)
    "SELECT p.id, p.ward, count(*), sum(v.amount) FROM visits v JOIN patients p ON v.pid = p.id GROUP BY p.id, p.ward",
]


def _database(neighbour: str = "add_remove", capacity_delta: float | None = 0.005) -> dodb.Database:
    con = duckdb.connect()
    con.execute("CREATE TABLE patients (id INTEGER PRIMARY KEY, ward INTEGER NOT NULL, age INTEGER)")
    con.execute("INSERT INTO patients SELECT range, range % 4, CASE WHEN range % 9 = 0 THEN NULL "
                "ELSE 20 + (range * 7) % 50 END FROM range(48)")
    con.execute("CREATE TABLE visits (pid INTEGER, amount INTEGER)")
    con.execute("INSERT INTO visits SELECT (range * 5) % 48, range % 37 FROM range(90) WHERE (range * 5) % 48 % 3 <> 0 "
                "OR range < 48")
    con.execute("CREATE TABLE wards AS SELECT range AS ward, 'w' || range AS name FROM range(4)")
    db = dodb.attach(con, seed=3, neighbour=neighbour)
    db.set_budget(epsilon=1e6, delta=0.5)
    # Capacities released at δ=0.005 (the old default query δ).  With capacities drawn at
    # the new default (δ/3/10,000 ≈ 1.7e-5) this audit flags q3's 'Aggregate by [w.name]'
    # (traced peak 7 vs 5 × 4 KiB between coupled neighbours), on main's engine as well:
    # reported for the operators' owners, not hidden by the serve branch.
    db.protect("patients", "id", max_contributions=1, keys=[["id"]], delta=capacity_delta)
    n = con.execute("SELECT max(c) FROM (SELECT count(*) c FROM visits GROUP BY pid)").fetchall()[0]
    db.protect("visits", "pid", parent=("patients", "id"), max_contributions=int(n[0]) if n[0] else 1,
               delta=capacity_delta)
    return db


@pytest.fixture(scope="module")
def db():
    return _database()


def test_do_plans_have_identical_views_on_coupled_neighbours(db):
    spent = db.budget["spent"]
    before = db.con.execute("SELECT * FROM dodb_private.patients ORDER BY ALL").fetchall()
    report = audit(db, QUERIES, pairs=2, seed=1)
    assert report.ok, "\n".join(report.lines())
    assert report.lines()[-1] == "audit: 10 of 10 neighbour pairs identical"
    assert all(q.releases > 0 for q in report.queries[1:])  # the filtered queries released padded sizes
    # the audit restores the data and charges nothing
    assert db.con.execute("SELECT * FROM dodb_private.patients ORDER BY ALL").fetchall() == before
    assert db.budget["spent"] == spent
    assert db.sql("SELECT count(*) FROM patients", epsilon=1.0).arrow().to_pylist() == [{"count_star()": 48}]


def test_audit_with_capacities_at_the_default_delta():
    """Once flagged q3's Aggregate (a traced peak 7 vs 5 x 4 KiB): automatic garbage
    collection landing in one run and not the other; the recorder now holds it off."""
    report = audit(_database(capacity_delta=None), QUERIES, pairs=2, seed=1)
    assert report.ok, "\n".join(report.lines())


def test_replace_neighbours():
    report = audit(_database("replace"), QUERIES[:2], pairs=2, seed=2)
    assert report.ok, "\n".join(report.lines())


def test_replace_neighbours_with_extreme_values():
    """Every other replace neighbour holds values the data never had; the views stay identical."""
    from dodb.audit.neighbour import Neighbourhood, extreme_values

    db = _database("replace")
    report = audit(db, QUERIES[1:], pairs=4, seed=2)
    assert report.ok, "\n".join(report.lines())
    assert [p.extreme for p in report.queries[0].pairs] == [False, True, False, True]
    nb = Neighbourhood.read(db.con, db.catalog)
    seen: set = set()
    for k, u in enumerate(nb.root_units()[:8]):  # the data's ages are 20..69 or NULL
        st = nb.replaced(u, random.Random(k), extreme=True)
        seen |= {a for a in st["patients"].values("age") if a is not None}
        assert st["patients"].values("id") != nb.states["patients"].values("id")  # a fresh unit key
    assert seen & {-(2 ** 31), 2 ** 31 - 1}
    assert {int(x) for x in extreme_values(nb.states["visits"].columns["amount"])[:2]} == {-(2 ** 31), 2 ** 31 - 1}


def test_a_value_dependent_branch_is_caught_only_with_extreme_values(monkeypatch):
    """A branch taken on large values: the copied units (values the data had) miss it, the
    extreme-value neighbours catch it."""
    db = _database("replace")
    plant_magnitude_branch(monkeypatch)
    report = audit(db, ["SELECT v.pid, sum(v.amount) FROM visits v GROUP BY v.pid"], pairs=6, seed=4)
    pairs = report.queries[0].pairs
    assert all(p.ok for p in pairs if not p.extreme), "\n".join(report.lines())
    assert any(not p.ok for p in pairs if p.extreme), "\n".join(report.lines())


def test_plain_mode_is_told_apart(db):
    report = audit(db, QUERIES[1:2], pairs=3, mode="plain")
    assert not report.ok and report.identical < 3, "\n".join(report.lines())


# -- planted leaks: each must be caught ---------------------------------------------------------

def test_planted_exact_size_release_is_caught(db, monkeypatch):
    """A release charged as usual whose operator then pads to the true count (v1's exact sizes)."""
    orig = ExecContext.release

    def exact(self, operator, name, true_values, *args, **kwargs):
        orig(self, operator, name, true_values, *args, **kwargs)
        vals = np.asarray(true_values, dtype=np.int64)
        for v in vals.tolist():
            self.trace.leak(f"{operator}:{name}:exact", v)
        return vals

    monkeypatch.setattr(ExecContext, "release", exact)
    report = audit(db, QUERIES[1:2], pairs=2)
    assert report.identical == 0, "\n".join(report.lines())


def test_planted_undercharged_release_is_caught(db, monkeypatch):
    """A release whose values move by more than the sensitivity it was charged for."""
    orig = ExecContext.release

    def undercharged(self, *args, **kwargs):
        out = orig(self, *args, **kwargs)
        if self.true_log:
            op, name, s, vals = self.true_log[-1]
            self.true_log[-1] = (op, name, 0 if s else s, vals)  # the charge claims the values cannot move
        return out

    monkeypatch.setattr(ExecContext, "release", undercharged)
    report = audit(db, QUERIES[1:2], pairs=3)
    assert report.identical < 3 and "charged sensitivity" in "\n".join(report.lines())


def test_planted_positional_bins_after_a_sort_are_caught(db, monkeypatch):
    """A filter that bins by position on rows a group-by has sorted (HAVING): one unit's
    removal can drop a group and shift every later group across bins, so the bin counts
    move by more than charged."""
    from dodb.operators.context import OpResult

    orig = execute_mod.filter_table

    def positional(table, mask, **kw):
        kw["bin_size"] = 4
        res = orig(table.with_arrays(table.arrays(), aligned=True), mask, **kw)  # bins as if aligned
        return OpResult(res.table.with_arrays(res.table.arrays(), aligned=table.aligned), res.leaks, res.trace)

    monkeypatch.setattr(execute_mod, "filter_table", positional)
    sql = "SELECT age, count(*) FROM patients GROUP BY age HAVING age % 3 = 0"
    report = audit(db, [sql], pairs=3)
    assert report.identical < 3 and "charged sensitivity" in "\n".join(report.lines()), "\n".join(report.lines())
    monkeypatch.undo()
    assert audit(db, [sql], pairs=3).ok  # the real filter on a sorted output: one total, no bins


def test_planted_data_sized_buffer_is_caught(db, monkeypatch):
    """An operator that keeps a buffer sized by its real rows (v1's Arrow string buffers)."""
    plant_data_sized_buffer(monkeypatch)
    report = audit(db, QUERIES[:1], pairs=2)
    assert report.identical == 0 and "numpy" in "\n".join(report.lines()), "\n".join(report.lines())


def test_planted_data_sized_peak_is_caught(db, monkeypatch):
    """A transient Python buffer sized by the real rows: only the traced peak differs, and it
    differs again when the pair is measured again (view.peak_only)."""
    plant_data_sized_peak(monkeypatch)
    report = audit(db, QUERIES[1:2], pairs=2)
    assert report.identical == 0 and "peak" in "\n".join(report.lines()), "\n".join(report.lines())


def test_a_peak_moved_once_by_the_host_is_measured_again(db, monkeypatch):
    """A one-off allocation from outside the query (a host thread's) moves one run's peak; the
    pair is measured again and is identical.  Without the second measurement it is reported."""
    plant_one_host_allocation(monkeypatch)
    report = audit(db, QUERIES[1:2], pairs=2)
    assert report.ok, "\n".join(report.lines())
    from dodb.audit import run as run_mod
    plant_one_host_allocation(monkeypatch)
    monkeypatch.setattr(run_mod, "peak_only", lambda a, b: False)
    report = audit(db, QUERIES[1:2], pairs=2)
    assert not report.ok and "peak" in "\n".join(report.lines()), "\n".join(report.lines())


def test_planted_strip_inside_the_engine_is_caught(db, monkeypatch):
    """The engine strips dummies before the answer leaves it (v1's exact answer size)."""
    from dodb.planner import plan as plan_mod
    from dodb.wire import REAL, PaddedAnswer

    orig = plan_mod.QueryPlan.execute

    def stripped(self, *args, **kwargs):
        out = orig(self, *args, **kwargs)
        return PaddedAnswer(out.table.filter(out.table.column(REAL)), out.status)

    monkeypatch.setattr(plan_mod.QueryPlan, "execute", stripped)
    report = audit(db, ["SELECT id, ward FROM patients WHERE ward >= 0"], pairs=2)  # every unit is in the answer
    assert report.identical == 0 and "answer" in "\n".join(report.lines()), "\n".join(report.lines())


def test_planted_value_dependent_sampler_is_caught(db, monkeypatch):
    """A sampler whose amount of work depends on the value it is given (here: the true size)."""
    orig = ExecContext.release

    def loops(self, operator, name, true_values, *args, **kwargs):
        for v in np.asarray(true_values).tolist():
            self.rng.getrandbits(64 * (1 + int(v) % 7))
        return orig(self, operator, name, true_values, *args, **kwargs)

    monkeypatch.setattr(ExecContext, "release", loops)
    report = audit(db, QUERIES[1:2], pairs=3)
    assert report.identical < 3 and "random" in "\n".join(report.lines()), "\n".join(report.lines())


def test_bad_arguments_are_dodb_errors(db):
    with pytest.raises(AuditError, match="no queries"):
        audit(db, [])
    with pytest.raises(AuditError, match="pairs"):
        audit(db, QUERIES[:1], pairs=0)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dodb.cli", "audit", *args], capture_output=True, text=True,
                          env={"DODB_ALLOW_SEED": "1", "PATH": "/usr/bin:/bin"}, timeout=600)


def test_cli_audit():
    r = _cli("--scale", "0.001", "--pairs", "1", "SELECT count(*) FROM customer",
             "SELECT c_nationkey, count(*) FROM customer WHERE c_acctbal > 0 GROUP BY 1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "audit: 2 of 2 neighbour pairs identical"
    r = _cli("--scale", "0.001", "--pairs", "1", "--tpch", "6,14", "SELECT count(*) FROM customer")
    assert r.returncode == 0, r.stdout + r.stderr
    # named by position for SQL given inline, by TPC-H number for --tpch
    assert [ln.split()[1] for ln in r.stdout.strip().splitlines()[:3]] == ["q1:", "q6:", "q14:"], r.stdout
    r = _cli("--scale", "0.001", "--pairs", "1", "--mode", "plain", "SELECT count(*) FROM customer")
    assert r.returncode == 2 and "--allow-insecure" in r.stderr and "Traceback" not in r.stderr
    r = _cli("--scale", "0.001", "--pairs", "1", "--mode", "plain", "--allow-insecure",
             "SELECT c_nationkey, count(*) FROM customer WHERE c_acctbal > 0 GROUP BY 1")
    assert r.returncode == 1 and "audit: 0 of 1" in r.stdout, r.stdout + r.stderr


# -- expressions over private rows (docs/design.md §Expressions) ---------------------------------

@pytest.fixture(scope="module")
def tpch_db():
    from dodb.datasets import generate_tpch, protect_tpch
    from dodb.oblivious.rng import seeded_mode

    with seeded_mode():
        d = dodb.connect(seed=0)
        generate_tpch(d.con, 0.002)
        d.set_budget(epsilon=1e9, delta=0.5)
        protect_tpch(d)
    yield d
    d.close()


def test_expression_heavy_tpch_queries_have_identical_views(tpch_db):
    """TPC-H Q13 (NOT LIKE on a string column, a LEFT join, two group-bys) and Q14 (CASE,
    LIKE, decimal arithmetic): the evaluator's work and buffers depend on public sizes only,
    and DuckDB is never handed a private batch."""
    from dodb.datasets import tpch_query

    report = audit(tpch_db, [tpch_query(13), tpch_query(14)], pairs=2, seed=1)
    assert report.ok, "\n".join(report.lines())


def test_planted_duckdb_evaluation_of_private_rows_is_caught(tpch_db, monkeypatch):
    """The old path — private batches handed to DuckDB (``register __dodb_batch``), whose
    Arrow string buffers are sized by the data — differs between coupled neighbours."""
    import importlib

    from dodb.datasets import tpch_query

    project_mod = importlib.import_module("dodb.operators.project")
    monkeypatch.setattr(project_mod, "_oblivious", lambda table, ctx: False)
    report = audit(tpch_db, [tpch_query(13)], pairs=2, seed=1)
    text = "\n".join(report.lines())
    # numpy's allocations already differ (the batch's strings are decoded into data-sized buffers)
    assert report.identical < 2 and "numpy allocation" in text, text
    # and without the allocation records, the record of DuckDB's calls differs
    report = audit(tpch_db, [tpch_query(13)], pairs=2, seed=1, allocations=False)
    text = "\n".join(report.lines())
    assert report.identical < 2 and "duckdb" in text and "__dodb_batch" in text, text


WINDOW_QUERIES = [
    "SELECT id, ward, rank() OVER (PARTITION BY ward ORDER BY age DESC) AS r FROM patients",
    "SELECT * FROM (SELECT id, ward, row_number() OVER (PARTITION BY ward ORDER BY age, id) AS rn FROM patients) t "
    "WHERE rn <= 2",
    "SELECT ward, count(*) AS n, sum(count(*)) OVER (ORDER BY ward) AS cum FROM patients GROUP BY ward "
    "QUALIFY rank() OVER (ORDER BY count(*) DESC) <= 3",
    "SELECT pid, lag(amount, 1, 0) OVER (PARTITION BY pid ORDER BY amount) AS prev, "
    "sum(amount) OVER (ORDER BY pid, amount ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s FROM visits",
]


def test_window_queries_have_identical_views_on_coupled_neighbours(db):
    report = audit(db, WINDOW_QUERIES, pairs=2, seed=1)
    assert report.ok, "\n".join(report.lines())


LIST_QUERIES = [  # docs/design.md §list: the slots are public (R = degree bound or padded input)
    "SELECT ward, list(age ORDER BY id) FILTER (WHERE age > 30) AS ages, count(*) AS n FROM patients GROUP BY ward",
    "SELECT array_agg(amount ORDER BY amount, pid) AS a FROM visits WHERE amount > 20",
]


def test_list_queries_have_identical_views_on_coupled_neighbours(db):
    report = audit(db, LIST_QUERIES, pairs=2, seed=1)
    assert report.ok, "\n".join(report.lines())


def test_planted_undercharged_window_is_caught(db, monkeypatch):
    """A window charged with its input's stability: one unit's removal renumbers every later
    row, so a filter on the row numbers moves by far more than charged."""
    from dodb.planner import windows

    sql = "SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM patients) t WHERE rn = id + 1"
    monkeypatch.setattr(windows, "_stability", lambda builder, child, specs, order_free: child.stability)
    report = audit(db, [sql], pairs=2, seed=1)
    assert report.identical < 2 and "charged sensitivity" in "\n".join(report.lines()), "\n".join(report.lines())
    monkeypatch.undo()
    assert audit(db, [sql], pairs=2, seed=1).ok


@pytest.mark.parametrize("neighbour", ["add_remove", "replace"])
def test_top_k_per_partition_is_charged_for_the_touched_partitions_only(neighbour):
    """On rows in their slots with a declared bound on rows per ward, a top-k per ward is
    charged 2·s·d, below the padded size, and the values still move within that charge."""
    con = duckdb.connect()
    con.execute("CREATE TABLE patients (id INTEGER PRIMARY KEY, ward INTEGER NOT NULL, age INTEGER)")
    con.execute("INSERT INTO patients SELECT range, range % 8, CASE WHEN range % 9 = 0 THEN NULL "
                "ELSE 20 + (range * 7) % 50 END FROM range(64)")
    db = dodb.attach(con, seed=3, neighbour=neighbour)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("patients", "id", max_contributions=1, keys=[["id"]], max_degree={"ward": 8}, delta=0.005)
    sql = ("SELECT id, ward, rn FROM (SELECT id, ward, row_number() OVER (PARTITION BY ward ORDER BY age DESC) AS rn "
           "FROM patients) t WHERE rn <= 2")
    plan = db.plan(sql, epsilon=1.0)
    window = next(n for n in walk(plan.root) if n.kind == "Window")
    assert window.stability == 2 * 1 * 8 < upper_rows(window)
    report = audit(db, [sql, sql.replace("row_number()", "rank()")], pairs=3, seed=2)
    assert report.ok, "\n".join(report.lines())


def test_planted_degree_bound_on_the_null_partition_is_caught(monkeypatch):
    """Declared degrees do not count NULLs, but NULL keys form one partition: a window that
    trusted the degree of a nullable column would be undercharged there."""
    from dodb.planner import group_bounds

    con = duckdb.connect()
    con.execute("CREATE TABLE patients (id INTEGER PRIMARY KEY, ward INTEGER)")
    con.execute("INSERT INTO patients SELECT range, CASE WHEN range % 4 = 0 THEN range % 8 END FROM range(64)")
    db = dodb.attach(con, seed=3)
    db.set_budget(epsilon=1e6, delta=0.5)
    db.protect("patients", "id", max_contributions=1, keys=[["id"]], max_degree={"ward": 8}, delta=0.005)
    # in the NULL partition (ids not divisible by 4) rn = id - id // 4: removing one row there
    # renumbers, and fails, every later row of it
    sql = ("SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY ward ORDER BY id) AS rn FROM patients) t "
           "WHERE rn = id - id // 4")
    assert audit(db, [sql], pairs=3, seed=2).ok  # charged the padded size: the NULL partition is unbounded
    monkeypatch.setattr(group_bounds, "column_not_null", lambda builder, node, col: True)
    report = audit(db, [sql], pairs=3, seed=2)
    assert report.identical < 3 and "charged sensitivity" in "\n".join(report.lines()), "\n".join(report.lines())


@pytest.mark.parametrize("say", ["warning", "log", "stderr"])
def test_planted_data_dependent_message_is_caught(db, monkeypatch, say):
    """A warning, a log line or stderr text that depends on private values (issue 28
    finding 2) reaches the watched host's stderr or log: the audit compares them."""
    import logging
    import warnings

    orig = execute_mod.Executor._dispatch

    def chatty(self, node, inputs, ctx, eps, delta):
        out = orig(self, node, inputs, ctx, eps, delta)
        if int(np.count_nonzero(out.is_real)) % 2:   # one patient fewer flips the parity
            if say == "warning":
                warnings.warn("odd", RuntimeWarning)
            elif say == "log":
                logging.getLogger("dodb.planted").warning("odd")
            else:
                sys.stderr.write("odd\n")
        return out

    monkeypatch.setattr(execute_mod.Executor, "_dispatch", chatty)
    report = audit(db, ["SELECT ward, count(*) FROM patients GROUP BY ward"], pairs=3, allocations=False)
    assert report.identical < 3 and "messages" in "\n".join(report.lines()), "\n".join(report.lines())


def test_floating_point_events_on_private_values_stay_silent(db):
    """An overflow in a variance over private values warned on stderr in some runs only
    (RuntimeWarning: overflow encountered in multiply); execution runs under
    np.errstate(all='ignore') and the answer is DuckDB's."""
    import warnings

    sql = "SELECT var_samp(age * 1e306), stddev_pop(age * 1e200), avg(age * 1e308) FROM patients WHERE age > 0"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        db.sql(sql, epsilon=1.0).arrow()
    assert audit(db, [sql], pairs=3, allocations=False).ok


def test_planted_transient_arrow_allocation_is_caught(db, monkeypatch):
    """16 KiB of Arrow's pool per real row, freed before the operator returns (issue 28
    finding 3: the pool was read only when a node ended)."""
    import pyarrow as pa

    orig = execute_mod.Executor._dispatch

    def transient(self, node, inputs, ctx, eps, delta):
        out = orig(self, node, inputs, ctx, eps, delta)
        buf = pa.allocate_buffer(16384 * int(np.count_nonzero(out.is_real)) + 1)
        del buf
        return out

    monkeypatch.setattr(execute_mod.Executor, "_dispatch", transient)
    report = audit(db, ["SELECT ward, count(*) FROM patients GROUP BY ward"], pairs=3)
    assert report.identical < 3 and "arrow_allocated" in "\n".join(report.lines()), "\n".join(report.lines())


def _plant_scratch_per_real_row(monkeypatch) -> None:
    """A 64-byte numpy scratch array per real row of every operator's output, freed at once
    (issue 28 finding 3: tracemalloc's live blocks and its 4 KiB-granule peak miss it)."""
    orig = execute_mod.Executor._dispatch

    def scratch(self, node, inputs, ctx, eps, delta):
        out = orig(self, node, inputs, ctx, eps, delta)
        for _ in range(int(np.count_nonzero(out.is_real))):
            np.empty(8, dtype=np.int64)
        return out

    monkeypatch.setattr(execute_mod.Executor, "_dispatch", scratch)


def test_planted_transient_numpy_allocation_per_row_is_caught(db, monkeypatch):
    from dodb.audit import allocations

    _plant_scratch_per_real_row(monkeypatch)
    sql = ["SELECT ward, count(*) FROM patients WHERE age > 30 GROUP BY ward"]
    report = audit(db, sql, pairs=3)
    text = "\n".join(report.lines())
    assert report.identical < 3 and "numpy allocation" in text, text
    # without numpy's allocator replaced, the rest of the view misses it (what the review found)
    monkeypatch.setattr(allocations, "available", lambda: False)
    assert audit(db, sql, pairs=3).ok


def test_numpy_allocations_are_recorded_in_order_on_this_thread_only():
    import threading

    from dodb.audit.allocations import recording

    with recording() as log:
        np.empty(3, dtype=np.int64)
        np.zeros((2, 5), dtype=np.int32)
        np.empty(7, dtype=np.uint8).astype(np.int16)
        worker = threading.Thread(target=lambda: np.empty(1000))
        worker.start()
        worker.join()
    assert log.take() == (24, 40, 7, 14)
    assert log.take() == ()
    with recording() as outer:
        with recording() as inner:
            np.empty(2)
        np.empty(4)
    assert inner.take() == (16,) and outer.take() == (32,)
    a = np.arange(5)  # the default allocator is back
    from numpy._core.multiarray import get_handler_name

    assert get_handler_name(a) == "default_allocator"
