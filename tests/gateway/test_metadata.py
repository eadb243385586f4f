"""The gateway's metadata tables in isolation: Flight SQL's schemas, filter patterns, the report table."""
from __future__ import annotations

import pyarrow as pa

from dodb.gateway import metadata as md
from dodb.result import PrivacyReport

LISTING = {"database": "tour", "schema": "main", "tables": [
    {"name": "orders", "kind": "table", "protection": "private", "unit": ["orders", "customer"],
     "privacy_unit": "o_custkey", "capacity": 15300, "capacity_source": "dp",
     "columns": [{"name": "o_orderkey", "type": "BIGINT", "nullable": False},
                 {"name": "o_totalprice", "type": "DECIMAL(15,2)", "nullable": True},
                 {"name": "o_orderdate", "type": "DATE", "nullable": True}]},
    {"name": "nation", "kind": "table", "protection": "public", "unit": None, "privacy_unit": None, "capacity": None,
     "capacity_source": None, "columns": [{"name": "n_name", "type": "VARCHAR", "nullable": True}]},
    {"name": "v", "kind": "view", "protection": "public", "unit": None, "privacy_unit": None, "capacity": None,
     "capacity_source": None, "columns": [{"name": "x", "type": "STRUCT(a INTEGER)", "nullable": True}]},
]}


def _cmd(**kw):
    base = {"catalog": None, "db_schema_filter_pattern": None, "table_name_filter_pattern": None, "table_types": [],
            "include_schema": False}
    return {**base, **kw}


def test_like_patterns():
    assert md.like("line%").fullmatch("lineitem") and not md.like("line%").fullmatch("xlineitem")
    assert md.like("n_tion").fullmatch("nation") and not md.like("n_tion").fullmatch("nattion")
    assert md.like(r"a\_b").fullmatch("a_b") and not md.like(r"a\_b").fullmatch("axb")
    assert md.like("a.b").fullmatch("a.b") and not md.like("a.b").fullmatch("axb")  # regex characters are literal
    assert md.like(None) is None


def test_sql_info_is_a_dense_union_per_flight_sql():
    t = md.sql_info([0, 3, 504, 9999], "1.2.3")
    assert t.schema == md.SQL_INFO_SCHEMA
    assert t.column("info_name").to_pylist() == [0, 3, 504]  # unknown ids are left out
    assert t.column("value").to_pylist() == ["dodb gateway", True, '"']
    assert t.column("value").type.type_codes == [0, 1, 2, 3, 4, 5]
    assert md.sql_info([], "1").num_rows == len(md._info_values("1"))  # none asked: all


def test_tables_types_filters_and_schemas():
    t = md.tables(LISTING, _cmd())
    assert t.column("table_name").to_pylist() == ["dodb_last_report", "nation", "orders", "v"]
    assert t.column("table_type").to_pylist() == ["SYSTEM TABLE", "PUBLIC TABLE", "PRIVATE TABLE", "VIEW"]
    assert md.tables(LISTING, _cmd(table_types=["PRIVATE TABLE"])).column("table_name").to_pylist() == ["orders"]
    assert md.tables(LISTING, _cmd(catalog="other")).num_rows == 0
    assert md.tables(LISTING, _cmd(db_schema_filter_pattern="m%")).num_rows == 4
    with_schema = md.tables(LISTING, _cmd(table_name_filter_pattern="o%", include_schema=True))
    assert with_schema.schema == md.tables_schema(True)
    s = pa.ipc.read_schema(pa.py_buffer(with_schema.column("table_schema")[0].as_py()))
    assert s.types == [pa.int64(), pa.decimal128(15, 2), pa.date32()]
    assert not s.field("o_orderkey").nullable and s.field("o_totalprice").nullable
    assert s.metadata[b"dodb.unit"] == b"orders -> customer" and s.metadata[b"dodb.capacity"] == b"15300"
    assert s.field("o_totalprice").metadata[b"ARROW:FLIGHT:SQL:TYPE_NAME"] == b"DECIMAL(15,2)"
    v = md.tables(LISTING, _cmd(table_name_filter_pattern="v", include_schema=True))
    assert pa.ipc.read_schema(pa.py_buffer(v.column("table_schema")[0].as_py())).field("x").type == \
        pa.struct([("a", pa.int32())])
    assert md.db_schemas(LISTING, "tour", "x%").num_rows == 0 and md.db_schemas(LISTING, None, None).num_rows == 1


def test_type_mapper_never_runs_more_than_a_type():
    assert md.arrow_types(["VARCHAR); SELECT 1; --", "NO_SUCH_TYPE"]) == [pa.string(), pa.string()]


def _report(operators):
    return PrivacyReport(sql="SELECT 1", mode="do", epsilon=0.5, delta=1e-9, operators=operators, composition={},
                         chosen="basic", charged_epsilon=0.5, charged_delta=1e-9, query_id=7, spent=(1.0, 2e-9),
                         remaining=(9.0, 8e-9))


def test_report_table():
    assert md.report_table(None).num_rows == 0 and md.report_table(None).schema == md.REPORT_SCHEMA
    ops = [{"operator": "Aggregate#2", "release": "groups", "sensitivity": 1, "epsilon": 0.25, "delta": 0,
            "value": 42, "padded": None},
           {"operator": "Filter#3", "release": "rows", "sensitivity": 2, "epsilon": 0.25, "delta": 0,
            "value": [5, 6], "padded": None},
           {"operator": "Join#4", "release": "rows", "sensitivity": 1, "epsilon": 0.0, "delta": 0,
            "value": 900, "padded": 512}]
    t = md.report_table(_report(ops)).to_pylist()
    assert [r["padded_size"] for r in t] == [42, 11, 512]  # the cap when the draw was above it; bins summed
    assert {r["query_id"] for r in t} == {7} and t[0]["remaining_epsilon"] == 9.0
    none = md.report_table(_report([])).to_pylist()
    assert len(none) == 1 and none[0]["operator"] is None and none[0]["charged_epsilon"] == 0.5
