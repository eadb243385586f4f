import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import duckdb
import pytest

from dodb.accountant import (
    BudgetExceededError,
    BudgetNotSetError,
    Ledger,
    LedgerError,
    NotApplicableError,
    PrivacyEvent,
)
from dodb.oblivious.noise import ShiftedTruncatedDiscreteLaplace


@pytest.fixture
def con():
    c = duckdb.connect()
    yield c
    c.close()


def padding_query(eps=0.1, ops=2):
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(eps, 1e-9, 1)
    return PrivacyEvent.compose([PrivacyEvent.padding(m, 1, operator=f"op#{i}") for i in range(ops)])


def count(con, table="ledger"):
    return con.execute(f"SELECT count(*) FROM dodb_meta.{table}").fetchall()[0][0]


def test_tables_live_in_the_dataset_database(con):
    Ledger(con)
    names = {r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'dodb_meta'").fetchall()}
    assert names == {"budget", "ledger", "ledger_cost", "settings", "owner_actions", "ledger_scoped_cost",
                     "analyst_sessions"}


@pytest.mark.parametrize("eps,delta,msg", [
    (0.0, 1e-6, "epsilon"), (-1.0, 1e-6, "epsilon"), (float("nan"), 1e-6, "NaN"), (float("inf"), 1e-6, "finite"),
    (1.0, 0.0, "delta"), (1.0, 1.0, "delta"), (1.0, -1e-9, "delta"), (1.0, float("nan"), "NaN"),
])
def test_set_budget_validation(con, eps, delta, msg):
    led = Ledger(con)
    with pytest.raises(ValueError, match=msg):
        led.set_budget(eps, delta)
    assert led.budget is None


def test_admit_before_budget_charges_nothing(con):
    led = Ledger(con)
    with pytest.raises(BudgetNotSetError):
        led.admit(padding_query())
    assert count(con) == 0


def test_admit_charges_before_execution_and_records_outcome(con):
    led = Ledger(con)
    led.set_budget(1.0, 1e-6, filter="basic")
    ch = led.admit(padding_query(), sql="SELECT count(*) FROM t WHERE x > 3", operators=["filter#1", "join#2"])
    row = led.history()[0]
    assert row["status"] == "charged" and row["sql"].startswith("SELECT count")
    assert row["operators"] == ["filter#1", "join#2"]
    assert row["epsilon"] == pytest.approx(0.2) and row["method"] == ch.method
    assert row["bounds"][ch.method]["chosen"] is True
    assert set(row["bounds"]) >= {"basic", "advanced", "optimal", "renyi", "gaussian", "pld"}
    assert row["event"]["kind"] == "composed"
    ch.complete()
    assert led.history()[0]["status"] == "completed"
    # a failure after execution started keeps the charge
    with pytest.raises(RuntimeError):
        with led.admit(padding_query(), sql="q2") as ch2:
            raise RuntimeError("executor crashed")
    rows = led.history()
    assert [r["status"] for r in rows] == ["completed", "failed"]
    assert "executor crashed" in rows[1]["error"] and ch2.status == "failed"
    assert led.totals()["epsilon"] == pytest.approx(0.4)


def test_exceeding_raises_and_charges_nothing(con):
    led = Ledger(con)
    led.set_budget(0.5, 1e-6, filter="basic")
    led.admit(padding_query(0.1))  # 0.2
    led.admit(padding_query(0.1))  # 0.4
    before = (count(con), count(con, "ledger_cost"), led.totals())
    with pytest.raises(BudgetExceededError) as ei:
        led.admit(padding_query(0.1))
    err = ei.value
    assert err.requested.epsilon == pytest.approx(0.2)
    assert err.spent.epsilon == pytest.approx(0.4)
    assert err.remaining.epsilon == pytest.approx(0.1)
    assert err.remaining.delta > 0 and "nothing was charged" in str(err)
    assert (count(con), count(con, "ledger_cost"), led.totals()) == before
    led.admit(padding_query(0.05))  # a smaller query still fits
    assert led.spent().epsilon == pytest.approx(0.5)


def test_planning_errors_never_charge(con):
    led = Ledger(con)
    led.set_budget(1.0, 1e-6)
    with pytest.raises(ValueError, match="method"):
        led.admit(padding_query(), method="magic")
    with pytest.raises(NotApplicableError):  # Rényi curve has no exact pmf for the PLD
        led.admit(PrivacyEvent.zcdp(0.01), method="pld", delta=1e-7)
    with pytest.raises(ValueError, match="delta"):
        led.admit(padding_query(), delta=1.5)
    with pytest.raises(ValueError, match="no privacy events"):
        led.admit(PrivacyEvent.compose([]))
    assert count(con) == 0 and count(con, "ledger_cost") == 0


def test_method_choice_and_explicit_delta(con):
    led = Ledger(con)
    led.set_budget(10.0, 1e-5, filter="basic")
    q = PrivacyEvent.self_compose(PrivacyEvent.generic(0.1), 100)
    ch_basic = led.admit(q, method="basic")
    assert ch_basic.epsilon == pytest.approx(10.0) and ch_basic.method == "basic"
    led.set_budget(100.0, 1e-3, filter="basic")
    ch = led.admit(q, delta=1e-5)  # best: KOV / PLD at the query's delta
    assert ch.epsilon == pytest.approx(4.3068, abs=1e-3) and ch.delta == 1e-5
    assert ch.method in ("optimal", "pld")
    assert "*" in ch.report.explain()


def test_filter_cannot_change_after_charges(con):
    led = Ledger(con)
    led.set_budget(1.0, 1e-6, filter="renyi")
    led.set_budget(1.0, 1e-6, filter="basic")  # fine while nothing is charged
    led.admit(padding_query())
    with pytest.raises(LedgerError, match="cannot change the filter"):
        led.set_budget(1.0, 1e-6, filter="renyi")
    info = led.set_budget(2.0, 1e-6)  # raising the budget (a policy decision) keeps the filter
    assert info.epsilon == 2.0 and info.filter == "basic"
    assert led.remaining().epsilon == pytest.approx(1.8)


def test_sql_text_is_bound_not_pasted(con):
    led = Ledger(con)
    led.set_budget(1.0, 1e-6)
    evil = "x'); DROP TABLE dodb_meta.ledger; --"
    led.admit(padding_query(), sql=evil, operators=["o'; DELETE FROM dodb_meta.budget; --"], session="s'1")
    rows = led.history()
    assert rows[0]["sql"] == evil and rows[0]["session"] == "s'1"
    assert led.budget is not None and count(con) == 1
    with pytest.raises(ValueError, match="identifier"):
        Ledger(con, schema="meta; DROP TABLE x")


def test_sessions_share_one_ledger_and_databases_do_not(con):
    a, b = Ledger(con, session="alice"), Ledger(con, session="bob")
    a.set_budget(0.5, 1e-6, filter="basic")
    a.admit(padding_query())
    b.admit(padding_query())
    with pytest.raises(BudgetExceededError):
        a.admit(padding_query())
    assert {r["session"] for r in b.history()} == {"alice", "bob"}
    other = duckdb.connect()
    assert Ledger(other).budget is None  # a different in-memory database
    other.close()


def test_persisted_in_the_database_file(tmp_path):
    path = str(tmp_path / "data.duckdb")
    c = duckdb.connect(path)
    c.execute("CREATE TABLE t AS SELECT range AS x FROM range(10)")
    led = Ledger(c)
    led.set_budget(1.0, 1e-6, filter="best")
    led.admit(padding_query(), sql="q1").complete()
    spent = led.spent()
    c.close()
    c2 = duckdb.connect(path)
    led2 = Ledger(c2)
    assert led2.budget.filter == "best" and led2.budget.epsilon == 1.0
    assert [r["sql"] for r in led2.history()] == ["q1"]
    assert led2.spent() == spent
    st = led2.status()
    assert set(st["parts"]) == {"basic", "advanced", "renyi"}
    assert st["remaining"].epsilon == pytest.approx(1.0 - spent.epsilon)
    c2.close()


@pytest.mark.parametrize("filt", ["basic", "best"])
def test_concurrent_admits_never_overspend(con, filt):
    """Many threads, each with its own Ledger object on the shared database: the
    number admitted equals what one sequential analyst gets, never more."""
    budget_eps = 3.0
    q = PrivacyEvent.generic(0.1)
    seq = duckdb.connect()
    ref = Ledger(seq)
    ref.set_budget(budget_eps, 1e-6, filter=filt)
    n_seq = 0
    while True:
        try:
            ref.admit(q)
            n_seq += 1
        except BudgetExceededError:
            break
    seq.close()

    Ledger(con).set_budget(budget_eps, 1e-6, filter=filt)
    counts, errors = [], []

    shared = Ledger(con)  # half the threads share one Ledger object, half have their own

    def work(own: bool):
        led = Ledger(con) if own else shared
        n = 0
        try:
            while True:
                try:
                    led.admit(q)
                    n += 1
                except BudgetExceededError:
                    break
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        counts.append(n)

    threads = [threading.Thread(target=work, args=(i % 2 == 0,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(counts) == n_seq == count(con)
    led = Ledger(con)
    tot = led.totals()
    assert tot["epsilon"] == pytest.approx(0.1 * n_seq)
    assert led.budget.version == 1 + n_seq  # one set_budget plus one bump per charge
    if filt == "basic":
        assert n_seq == 30 and tot["epsilon"] <= budget_eps * (1 + 1e-12)


CHILD = textwrap.dedent("""
    import sys, time, duckdb
    import dodb.accountant.ledger as L
    from dodb.accountant import Ledger, PrivacyEvent
    path, hang_at = sys.argv[1], int(sys.argv[2])

    class SlowCharge(L.Charge):
        def __init__(self, *args, **kwargs):
            # built inside the transaction, after the rows were inserted, before COMMIT
            super().__init__(*args, **kwargs)
            if self.query_id == hang_at:
                print("in-transaction", flush=True)
                time.sleep(60)

    L.Charge = SlowCharge
    con = duckdb.connect(path)
    led = Ledger(con, session="child")
    if led.budget is None:
        led.set_budget(1e6, 0.5, filter="best")
    ev = PrivacyEvent.compose([PrivacyEvent.generic(0.01), PrivacyEvent.generic(0.02)])
    while True:
        ch = led.admit(ev, sql="q")
        print(ch.query_id, flush=True)
        ch.complete()
""")


@pytest.mark.parametrize("hang_at", [0, 7])
def test_sigkill_leaves_a_consistent_ledger(tmp_path, hang_at):
    """Kill the process (SIGKILL) in a tight admit loop, or inside an open charge
    transaction; reopening the file must show whole charges only."""
    path = str(tmp_path / "crash.duckdb")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.Popen([sys.executable, str(script), path, str(hang_at)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    committed = 0
    deadline = time.time() + 30
    try:
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.strip() == "in-transaction":
                break
            committed = int(line)
            if hang_at == 0 and committed >= 25:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert committed >= (6 if hang_at else 25), proc.stderr.read()

    con = duckdb.connect(path)
    led = Ledger(con)
    n = count(con)
    assert n >= committed
    if hang_at:
        assert n == hang_at - 1  # the half-done charge is absent, not half-present
    # every charge is whole: its cost rows, the version bump, the totals
    per_query = con.execute("SELECT count(DISTINCT coord) FROM dodb_meta.ledger_cost").fetchall()[0][0]
    assert count(con, "ledger_cost") == n * per_query
    assert con.execute("SELECT count(*) FROM dodb_meta.ledger l "
                       "WHERE NOT EXISTS (SELECT 1 FROM dodb_meta.ledger_cost c WHERE c.query_id = l.query_id)"
                       ).fetchall()[0][0] == 0
    assert led.budget.version == 1 + n
    tot = led.totals()
    assert tot["coordinates"]["basic.eps"] == pytest.approx(tot["epsilon"], rel=1e-12)
    assert tot["epsilon"] == pytest.approx(0.03 * n, rel=1e-9)
    # the ledger keeps working after the crash
    led.admit(PrivacyEvent.generic(0.01))
    assert count(con) == n + 1
    con.close()


def test_preview_reports_without_charging(con):
    led = Ledger(con)
    led.set_budget(0.3, 1e-6, filter="basic")
    p = led.preview(padding_query())
    assert p["admissible"] and p["requested"].epsilon == pytest.approx(0.2)
    assert p["remaining"].epsilon == pytest.approx(0.3) and count(con) == 0
    assert "privacy composition" in p["report"].explain()
    led.admit(padding_query())
    p2 = led.preview(padding_query())
    assert not p2["admissible"] and p2["spent"].epsilon == pytest.approx(0.2)
    with pytest.raises(BudgetExceededError):
        led.admit(padding_query())
    assert count(con) == 1


# -- results are always fully consumed (DuckDB 2.0: no statement while one is unfinished) --

def test_connection_usable_right_after_every_ledger_call(con):
    led = Ledger(con)
    assert con.execute("SELECT 1").fetchall() == [(1,)]
    steps = [
        lambda: led.set_budget(1.0, 1e-5),
        lambda: led.budget,
        lambda: led.preview(padding_query()),
        lambda: led.admit(padding_query(), sql="SELECT 1").complete(),
        lambda: led.history(),
        lambda: led.totals(),
        lambda: led.status(),
        lambda: led.spent(),
    ]
    for step in steps:
        step()
        assert con.execute("SELECT 1").fetchall() == [(1,)]
        cur = con.cursor()
        assert cur.execute("SELECT 2").fetchall() == [(2,)]
        cur.close()
    with pytest.raises(BudgetExceededError):
        led.admit(padding_query(0.6))
    assert con.execute("SELECT 1").fetchall() == [(1,)]


def test_admit_interleaved_with_user_queries_on_the_same_connection(con):
    con.execute("CREATE TABLE t AS SELECT range AS x FROM range(20000)").fetchall()
    led = Ledger(con)
    led.set_budget(2.0, 1e-5, filter="basic")
    # a user result left half-read across an admit is neither disturbed nor blocking
    res = con.execute("SELECT x FROM t ORDER BY x")
    head = res.fetchmany(5)
    led.admit(PrivacyEvent.generic(0.1), sql="q0")
    assert [r[0] for r in head] + [r[0] for r in res.fetchall()] == list(range(20000))
    for i in range(1, 6):
        assert con.execute("SELECT count(*) FROM t WHERE x BETWEEN 0 AND ?", [i * 100 - 1]).fetchall() == [(i * 100,)]
        with led.admit(PrivacyEvent.generic(0.1), sql=f"q{i}"):
            con.execute("INSERT INTO t VALUES (?)", [-i]).fetchall()
        assert con.execute("SELECT min(x) FROM t").fetchall() == [(-i,)]
        assert count(con) == i + 1
    assert [r["status"] for r in led.history()] == ["charged"] + ["completed"] * 5
    assert led.totals()["epsilon"] == pytest.approx(0.6)
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(20005,)]


def test_accountant_never_leaves_a_result_open():
    """Static check: no fetchone(), and every execute()/executemany() result in the
    accountant is drained with fetchall() (directly or through ledger._run)."""
    import ast
    import pathlib

    import dodb.accountant as pkg
    for path in pathlib.Path(pkg.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            name = node.func.attr
            assert name != "fetchone", f"{path.name}:{node.lineno} uses fetchone()"
            if name not in ("execute", "executemany"):
                continue
            up, func = parents.get(node), node
            while func is not None and not isinstance(func, ast.FunctionDef):
                func = parents.get(func)
            if isinstance(up, ast.Attribute) and up.attr == "fetchall":
                continue
            if func is not None and func.name == "_run":
                continue
            if isinstance(up, ast.Assign) and len(up.targets) == 1 and isinstance(up.targets[0], ast.Name):
                var = up.targets[0].id
                drained = any(isinstance(n, ast.Attribute) and n.attr == "fetchall" and isinstance(n.value, ast.Name)
                              and n.value.id == var for n in ast.walk(func))
                if drained:
                    continue
            raise AssertionError(f"{path.name}:{node.lineno}: {name}() result is not consumed with fetchall()")
