"""``dodb gateway`` end to end: an ADBC Flight SQL client (this process) -> ``dodb gateway``
(a subprocess) -> ``dodb serve`` (another subprocess) over a small protected TPC-H sample,
answers compared with DuckDB's on the same data (docs/served.md §The gateway).

One module-scoped pair of servers on loopback, port 0; both are stopped (then killed) by
the fixture, and every wait has a timeout."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import threading
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.flight as flight
import pytest

adbc = pytest.importorskip("adbc_driver_flightsql.dbapi")

import dodb  # noqa: E402
from dodb.compare import same_answer, snapshot  # noqa: E402
from dodb.datasets import generate_tpch, protect_tpch, tpch_query  # noqa: E402
from dodb.gateway import protowire as pw  # noqa: E402

from ..cli_run import run_cli  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
EPSILON = 0.5
# the README tour's queries and the demo's TPC-H queries: (sql, ordered)
TOUR = [("SELECT o_orderpriority, count(*) AS n FROM orders GROUP BY 1 ORDER BY 1", True),
        ("SELECT c_mktsegment, count(*) AS n FROM customer GROUP BY 1 ORDER BY 1", True),
        ("SELECT count(*) AS n FROM lineitem WHERE l_quantity > 45", False),
        ("SELECT n_name, count(*) AS n FROM nation GROUP BY 1 ORDER BY 1", True),  # public tables only
        (tpch_query(1), True), (tpch_query(3), True), (tpch_query(13), True)]
BY_PRIORITY = "SELECT count(*) AS n FROM orders WHERE o_orderpriority = ?"


def _first_line(proc: subprocess.Popen, timeout: float = 180.0) -> str:
    """The process's first stdout line, or a failure with its stderr (never waits forever)."""
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not box or not box[0]:
        proc.kill()
        pytest.fail(f"{proc.args[2:4]} did not start: {proc.stderr.read()[-2000:]}")
    return box[0]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    d = tmp_path_factory.mktemp("gateway")
    path = str(d / "tour.duckdb")
    db = dodb.connect(path)
    generate_tpch(db.con, 0.01)
    oracle = snapshot(db.con)  # DuckDB on the raw data, taken before protecting
    db.set_budget(epsilon=100.0, delta=1e-5)
    protect_tpch(db)
    db.close()
    added = run_cli("token", "add", path, "alice", cwd=d)
    assert added.returncode == 0, added.stderr
    token = added.stdout.splitlines()[-1].strip()  # the new token is stdout's last line
    assert token.startswith("dodb_")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs: list[subprocess.Popen] = []
    try:
        engine = subprocess.Popen([sys.executable, "-m", "dodb", "serve", path, "--port", "0"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        procs.append(engine)
        engine_at = _first_line(engine).split(" at ", 1)[1].split()[0]
        gateway = subprocess.Popen([sys.executable, "-m", "dodb", "gateway", "--engine", engine_at, "--token", token,
                                    "--port", "0", "--epsilon", str(EPSILON)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env)
        procs.append(gateway)
        line = _first_line(gateway)
        assert f"ε={EPSILON:g}" in line
        at = line.split("gateway at ", 1)[1].split()[0]
        assert at.startswith("grpc://127.0.0.1:")  # loopback by default
        conn = adbc.connect(at, autocommit=True)
        try:
            yield SimpleNamespace(conn=conn, oracle=oracle, engine=engine_at, gateway=at, token=token)
        finally:
            conn.close()
    finally:
        for p in reversed(procs):
            _stop(p)
        oracle.close()


def _want(stack, sql: str, params=None) -> pa.Table:
    return stack.oracle.sql(sql, params=params or None).to_arrow_table()


def test_tour_queries_through_adbc_equal_duckdb(stack):
    with stack.conn.cursor() as cur:
        for i, (sql, ordered) in enumerate(TOUR):
            cur.execute(sql)
            want = _want(stack, sql)
            assert [c[0] for c in cur.description] == want.column_names
            if i % 2:  # both ways of reading an answer: DB-API rows and Arrow
                got = cur.fetch_arrow_table()
                assert same_answer(got, want, ordered=ordered), sql
            else:
                rows = cur.fetchall()
                assert same_answer(pa.Table.from_pylist([dict(zip(want.column_names, r)) for r in rows],
                                                        schema=want.schema) if rows else want.schema.empty_table(),
                                   want, ordered=ordered), sql
    with dodb.connect(stack.engine, token=stack.token) as remote:  # each query charged the gateway's ε at most
        charged = [h for h in remote.history()]
        assert len(charged) >= 5 and all(h["epsilon"] <= EPSILON + 1e-9 for h in charged)


def test_a_statement_query_without_prepare(stack):
    """``CommandStatementQuery`` (the DB-API cursor prepares; the plain ADBC statement does not)."""
    import adbc_driver_manager

    stmt = adbc_driver_manager.AdbcStatement(stack.conn.adbc_connection)
    try:
        sql = TOUR[0][0]
        stmt.set_sql_query(sql)
        handle, _ = stmt.execute_query()
        got = pa.RecordBatchReader._import_from_c(handle.address).read_all()
        assert same_answer(got, _want(stack, sql), ordered=True)
    finally:
        stmt.close()


def test_prepared_statement_with_parameters(stack):
    with stack.conn.cursor() as cur:
        for value in ("1-URGENT", "5-LOW"):  # one prepared statement, bound twice (DoPut), run twice
            cur.execute(BY_PRIORITY, (value,))
            assert cur.fetchall() == stack.oracle.execute(BY_PRIORITY, [value]).fetchall()
        cur.execute(BY_PRIORITY, ("2-HIGH",))
        assert same_answer(cur.fetch_arrow_table(), _want(stack, BY_PRIORITY, ["2-HIGH"]))
        cur.execute(BY_PRIORITY, ("x' OR 1=1; --",))
        assert cur.fetchall() == [(0,)]  # a value, never SQL text
        named = "SELECT count(*) AS n FROM orders WHERE o_orderpriority = $p AND o_totalprice > $t"
        # the Flight SQL driver has no bind-by-name option: Arrow data whose columns name the parameters
        cur.execute(named, pa.record_batch({"t": [1000.0], "p": ["1-URGENT"]}))
        assert cur.fetchall() == stack.oracle.execute(
            "SELECT count(*) AS n FROM orders WHERE o_orderpriority = ? AND o_totalprice > ?", ["1-URGENT", 1000.0]
        ).fetchall()
        cur.adbc_prepare("SELECT count(*) AS n FROM orders WHERE o_totalprice > $2 AND o_orderpriority <> $1")
        params = cur.adbc_statement.get_parameter_schema()
        assert pa.Schema._import_from_c(params.address).names == ["1", "2"]
        with pytest.raises(adbc.Error) as e:
            cur.execute("SELECT count(*) AS n FROM orders WHERE o_totalprice > ? AND o_orderpriority <> $2", (1, "x"))
        _one_line_error(e.value, "mixes '?' with numbered")


def test_catalog_listing(stack):
    conn = stack.conn
    objects = conn.adbc_get_objects(depth="all").read_all().to_pylist()
    assert [c["catalog_name"] for c in objects] == ["tour"]
    (schema,) = objects[0]["catalog_db_schemas"]
    assert schema["db_schema_name"] == "main"
    kinds = {t["table_name"]: t["table_type"] for t in schema["db_schema_tables"]}
    assert {k: v for k, v in kinds.items() if v == "PRIVATE TABLE"}.keys() == {"customer", "orders", "lineitem"}
    assert {k for k, v in kinds.items() if v == "PUBLIC TABLE"} == {"part", "partsupp", "supplier", "nation", "region"}
    assert kinds["dodb_last_report"] == "SYSTEM TABLE" and len(kinds) == 9
    columns = {t["table_name"]: [c["column_name"] for c in t["table_columns"]] for t in schema["db_schema_tables"]}
    assert columns["customer"][:2] == ["c_custkey", "c_name"] and "padded_size" in columns["dodb_last_report"]
    filtered = conn.adbc_get_objects(depth="tables", table_name_filter="line%").read_all().to_pylist()
    assert [t["table_name"] for t in filtered[0]["catalog_db_schemas"][0]["db_schema_tables"]] == ["lineitem"]
    private = conn.adbc_get_objects(depth="tables", table_types_filter=["PRIVATE TABLE"]).read_all().to_pylist()
    assert sorted(t["table_name"] for t in private[0]["catalog_db_schemas"][0]["db_schema_tables"]) == \
        ["customer", "lineitem", "orders"]
    customer = conn.adbc_get_table_schema("customer")
    want = stack.oracle.sql("SELECT * FROM customer LIMIT 0").to_arrow_table().schema
    assert customer.names == want.names and customer.types == want.types
    assert customer.metadata[b"dodb.protection"] == b"private" and customer.metadata[b"dodb.unit"] == b"customer"
    assert int(customer.metadata[b"dodb.capacity"]) >= 1500  # the public capacity, never the row count
    assert b"private table" in customer.field("c_name").metadata[b"ARROW:FLIGHT:SQL:REMARKS"]
    assert conn.adbc_get_table_schema("nation").metadata[b"dodb.protection"] == b"public"
    assert conn.adbc_get_table_types() == ["PRIVATE TABLE", "PUBLIC TABLE", "SYSTEM TABLE", "VIEW"]
    info = conn.adbc_get_info()
    assert info["vendor_name"] == "dodb gateway" and info["vendor_version"] == dodb.__version__


def test_the_last_report_is_a_table(stack):
    with stack.conn.cursor() as cur:
        sql = "SELECT o_orderstatus, count(*) AS n FROM orders GROUP BY 1"
        cur.execute(sql)
        assert same_answer(cur.fetch_arrow_table(), _want(stack, sql))
        cur.execute("SELECT query_id, sql, charged_epsilon, operator, release, padded_size FROM dodb_last_report")
        rows = cur.fetch_arrow_table().to_pylist()
        assert rows and all(r["sql"] == sql and r["charged_epsilon"] <= EPSILON + 1e-9 for r in rows)
        assert any(r["operator"].startswith("Aggregate") and r["padded_size"] >= 3 for r in rows)
        with dodb.connect(stack.engine, token=stack.token) as remote:
            last = remote.history()[-1]
        assert rows[0]["query_id"] == last["query_id"] and last["sql"] == sql
        cur.execute("SELECT sum(release_epsilon) AS e FROM dodb_last_report")  # any SQL over the report
        assert cur.fetchall()[0][0] > 0
        with pytest.raises(adbc.Error, match="dodb_last_report is the gateway's own table"):
            cur.execute("SELECT * FROM dodb_last_report, orders")
        with dodb.connect(stack.engine, token=stack.token) as remote:
            assert remote.history()[-1]["query_id"] == last["query_id"]  # report queries charge nothing


def _one_line_error(exc: BaseException, *fragments: str) -> str:
    msg = str(exc)
    assert "Traceback" not in msg and "\n" not in msg, msg
    for f in fragments:
        assert f in msg, msg
    return msg


def test_engine_errors_arrive_as_one_line(stack):
    with stack.conn.cursor() as cur:
        with pytest.raises(adbc.Error) as e:
            cur.execute("SELEC o_orderkey FROM orders")
        _one_line_error(e.value, "dodb: ", "syntax error")
        with pytest.raises(adbc.Error) as e:
            cur.execute("SELECT count(*) FROM no_such_table")
        _one_line_error(e.value, "dodb: ", "no_such_table")
        with pytest.raises(adbc.Error) as e:
            cur.execute("DROP TABLE orders")
        _one_line_error(e.value, "dodb: ")
        cur.execute("SELECT 1 AS one")  # the connection still works
        assert cur.fetchall() == [(1,)]


def test_over_budget_is_one_line(stack):
    """A second gateway (in this process) whose per-query δ is more than the budget's filter
    gives one query (the engine refuses it before running; nothing is charged)."""
    from dodb.gateway.server import open_gateway

    with dodb.connect(stack.engine, token=stack.token) as remote:
        before = remote.budget["spent"]
    gw = open_gateway(stack.engine, stack.token, epsilon=0.5, delta=5e-6)
    runner = threading.Thread(target=gw.serve, daemon=True)
    runner.start()
    try:
        with adbc.connect(gw.location, autocommit=True) as conn, conn.cursor() as cur:
            with pytest.raises(adbc.Error) as e:
                cur.execute(TOUR[0][0])
            _one_line_error(e.value, "dodb: ", "δ ran out")
            cur.execute("SELECT count(*) AS n FROM nation")  # public tables only: charged nothing, answered
            assert cur.fetchall() == [(25,)]
    finally:
        gw.close()
        runner.join(30)
    with dodb.connect(stack.engine, token=stack.token) as remote:
        assert remote.budget["spent"] == before


def test_unsupported_commands_are_clean_errors(stack):
    with stack.conn.cursor() as cur:
        with pytest.raises(adbc.Error) as e:
            cur.adbc_ingest("orders", pa.table({"o_orderkey": [1]}), mode="append")
        _one_line_error(e.value, "not supported by dodb gateway: CommandStatementIngest")
    client = flight.FlightClient(stack.gateway)
    try:
        for message in ("CommandGetPrimaryKeys", "CommandGetXdbcTypeInfo"):
            cmd = flight.FlightDescriptor.for_command(pw.pack_any(message, {}))
            with pytest.raises(flight.FlightServerError) as e:
                client.get_flight_info(cmd)
            _one_line_error(e.value, f"not supported by dodb gateway: {message}")
        with pytest.raises(flight.FlightServerError, match="not a Flight SQL command"):
            client.get_flight_info(flight.FlightDescriptor.for_command(b"SELECT 1"))
        with pytest.raises(flight.FlightServerError, match="not supported by dodb gateway: action BeginTransaction"):
            list(client.do_action(flight.Action("BeginTransaction", b"")))
        stale = pw.pack_any("TicketStatementQuery", {"statement_handle": b"0" * 16})
        with pytest.raises(flight.FlightServerError, match="already fetched or has expired"):
            client.do_get(flight.Ticket(stale)).read_all()
        sql = flight.FlightDescriptor.for_command(pw.pack_any("CommandStatementQuery", {"query": "SELECT 2 AS two"}))
        assert client.get_schema(sql).schema.names == ["two"]  # from the plan: nothing runs
        assert list(client.list_flights()) == []
    finally:
        client.close()


def test_gateway_cli_refuses_bad_starts(tmp_path):
    out = run_cli("gateway", "--engine", "grpc://127.0.0.1:1", "--token", "dodb_x", "--epsilon", "1",
                  "--host", "0.0.0.0", "--port", "0", cwd=tmp_path)
    assert out.returncode == 2 and "warning: the gateway listens on 0.0.0.0" in out.stderr
    assert "cannot reach a dodb server" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("gateway", "--engine", "grpc://127.0.0.1:1", "--token", "dodb_x", cwd=tmp_path)
    assert out.returncode == 2 and "--epsilon" in out.stderr  # ε must be given
    out = run_cli("gateway", "--engine", "http://x", "--token", "dodb_x", "--epsilon", "1", cwd=tmp_path)
    assert out.returncode == 2 and "grpc://HOST:PORT" in out.stderr
