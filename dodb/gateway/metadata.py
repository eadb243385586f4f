"""The gateway's metadata answers: SQL info, catalogs, schemas, tables, table types, and
the ``dodb_last_report`` table (docs/served.md §The gateway).

Every answer here is built from public facts only: the engine's table listing (the
``tables`` action: names, protection, privacy unit, public capacity, column types) and
the privacy report the analyst already received.  Schemas follow FlightSql.proto.
"""
from __future__ import annotations

import re
import threading
from typing import Any

import pyarrow as pa

__all__ = ["SQL_INFO_SCHEMA", "CATALOGS_SCHEMA", "DB_SCHEMAS_SCHEMA", "TABLE_TYPES_SCHEMA", "tables_schema",
           "REPORT_TABLE", "REPORT_SCHEMA", "TABLE_TYPES", "sql_info", "catalogs", "db_schemas", "tables",
           "table_types", "report_table", "arrow_types"]

REPORT_TABLE = "dodb_last_report"
PRIVATE, PUBLIC, VIEW, SYSTEM = "PRIVATE TABLE", "PUBLIC TABLE", "VIEW", "SYSTEM TABLE"
TABLE_TYPES = sorted([PRIVATE, PUBLIC, VIEW, SYSTEM])

# -- schemas (FlightSql.proto) ---------------------------------------------------------------
_INFO_VALUE = pa.dense_union([
    pa.field("string_value", pa.string()), pa.field("bool_value", pa.bool_()),
    pa.field("bigint_value", pa.int64()), pa.field("int32_bitmask", pa.int32()),
    pa.field("string_list", pa.list_(pa.field("item", pa.string()))),
    pa.field("int32_to_int32_list_map", pa.map_(pa.int32(), pa.list_(pa.field("item", pa.int32())))),
], type_codes=[0, 1, 2, 3, 4, 5])
SQL_INFO_SCHEMA = pa.schema([pa.field("info_name", pa.uint32(), nullable=False), pa.field("value", _INFO_VALUE,
                                                                                         nullable=False)])
CATALOGS_SCHEMA = pa.schema([pa.field("catalog_name", pa.string(), nullable=False)])
DB_SCHEMAS_SCHEMA = pa.schema([pa.field("catalog_name", pa.string()),
                               pa.field("db_schema_name", pa.string(), nullable=False)])
TABLE_TYPES_SCHEMA = pa.schema([pa.field("table_type", pa.string(), nullable=False)])


def tables_schema(include_schema: bool) -> pa.Schema:
    fields = [pa.field("catalog_name", pa.string()), pa.field("db_schema_name", pa.string()),
              pa.field("table_name", pa.string(), nullable=False), pa.field("table_type", pa.string(), nullable=False)]
    if include_schema:
        fields.append(pa.field("table_schema", pa.binary(), nullable=False))
    return pa.schema(fields)


# -- SQL info --------------------------------------------------------------------------------
_STRING, _BOOL, _BIGINT, _INT32 = 0, 1, 2, 3


def _info_values(version: str) -> dict[int, tuple[int, Any]]:
    return {
        0: (_STRING, "dodb gateway"),                  # FLIGHT_SQL_SERVER_NAME
        1: (_STRING, version),                         # FLIGHT_SQL_SERVER_VERSION
        2: (_STRING, pa.__version__),                  # FLIGHT_SQL_SERVER_ARROW_VERSION
        3: (_BOOL, True),                              # FLIGHT_SQL_SERVER_READ_ONLY: queries only
        4: (_BOOL, True),                              # FLIGHT_SQL_SERVER_SQL
        5: (_BOOL, False),                             # FLIGHT_SQL_SERVER_SUBSTRAIT
        8: (_INT32, 0),                                # FLIGHT_SQL_SERVER_TRANSACTION: NONE
        9: (_BOOL, False),                             # FLIGHT_SQL_SERVER_CANCEL
        10: (_BOOL, False),                            # FLIGHT_SQL_SERVER_BULK_INGESTION
        500: (_BOOL, False), 501: (_BOOL, False), 502: (_BOOL, False),  # SQL_DDL_CATALOG/SCHEMA/TABLE
        504: (_STRING, '"'),                           # SQL_IDENTIFIER_QUOTE_CHAR
        563: (_BOOL, False),                           # SQL_TRANSACTIONS_SUPPORTED
    }


def sql_info(requested: list[int], version: str) -> pa.Table:
    """The ``CommandGetSqlInfo`` answer: the requested ids this gateway knows (all if none)."""
    values = _info_values(version)
    ids = [i for i in (requested or sorted(values)) if i in values]
    codes = [values[i][0] for i in ids]
    children: list[list[Any]] = [[] for _ in range(6)]
    offsets = []
    for i in ids:
        code, v = values[i]
        offsets.append(len(children[code]))
        children[code].append(v)
    arrays = [pa.array(c, type=f.type) for c, f in zip(children, _INFO_VALUE)]
    union = pa.UnionArray.from_dense(pa.array(codes, type=pa.int8()), pa.array(offsets, type=pa.int32()), arrays,
                                     [f.name for f in _INFO_VALUE], list(_INFO_VALUE.type_codes))
    return pa.Table.from_arrays([pa.array(ids, type=pa.uint32()), union], schema=SQL_INFO_SCHEMA)


# -- catalog listing -------------------------------------------------------------------------
def like(pattern: str | None) -> re.Pattern | None:
    """A Flight SQL filter pattern (``%`` any substring, ``_`` one character, ``\\`` escapes) as a regex."""
    if pattern is None:
        return None
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _matches(rx: re.Pattern | None, value: str) -> bool:
    return rx is None or rx.fullmatch(value) is not None


def catalogs(listing: dict[str, Any]) -> pa.Table:
    return pa.table({"catalog_name": [listing["database"]]}, schema=CATALOGS_SCHEMA)


def db_schemas(listing: dict[str, Any], catalog: str | None, pattern: str | None) -> pa.Table:
    rows = []
    if catalog is None or catalog == listing["database"]:
        if _matches(like(pattern), listing["schema"]):
            rows.append((listing["database"], listing["schema"]))
    return pa.table({"catalog_name": [r[0] for r in rows], "db_schema_name": [r[1] for r in rows]},
                    schema=DB_SCHEMAS_SCHEMA)


def table_type(t: dict[str, Any]) -> str:
    if t["kind"] == "view":
        return VIEW
    return PRIVATE if t["protection"] == "private" else PUBLIC


class TypeMapper:
    """DuckDB type names -> the Arrow types DuckDB itself gives them (asked of an empty,
    in-memory DuckDB on the analyst's side: no data, only ``CAST(NULL AS type)``)."""

    _SAFE = re.compile(r"^[A-Za-z0-9_ ,()\[\]\"]+$")  # a type name, nothing that could end the expression

    def __init__(self) -> None:
        self._cache: dict[str, pa.DataType] = {}
        self._lock = threading.Lock()
        self._con = None

    def __call__(self, names: list[str]) -> list[pa.DataType]:
        with self._lock:
            missing = [n for n in dict.fromkeys(names) if n not in self._cache]
            for n in missing:
                self._cache[n] = self._ask(n)
            return [self._cache[n] for n in names]

    def _ask(self, name: str) -> pa.DataType:
        import duckdb

        if not self._SAFE.match(name) or name.count("(") != name.count(")"):
            return pa.string()
        if self._con is None:
            self._con = duckdb.connect(":memory:")
        try:
            return self._con.sql(f"SELECT CAST(NULL AS {name}) AS c LIMIT 0").to_arrow_table().schema.field(0).type
        except duckdb.Error:
            return pa.string()  # a type this DuckDB does not know: its name stays in TYPE_NAME


arrow_types = TypeMapper()


def table_arrow_schema(listing: dict[str, Any], t: dict[str, Any]) -> pa.Schema:
    """One table's Arrow schema with Flight SQL's column metadata and dodb's protection facts."""
    cols = t["columns"]
    types = arrow_types([c["type"] for c in cols])
    remark = (f"private table: privacy unit {' -> '.join(t['unit'] or [])}, capacity {t['capacity']}"
              if t["protection"] == "private" else "public table")
    fields = [pa.field(c["name"], ty, nullable=bool(c["nullable"]), metadata={
        "ARROW:FLIGHT:SQL:CATALOG_NAME": listing["database"], "ARROW:FLIGHT:SQL:DB_SCHEMA_NAME": listing["schema"],
        "ARROW:FLIGHT:SQL:TABLE_NAME": t["name"], "ARROW:FLIGHT:SQL:TYPE_NAME": c["type"],
        "ARROW:FLIGHT:SQL:IS_READ_ONLY": "1", "ARROW:FLIGHT:SQL:REMARKS": remark}) for c, ty in zip(cols, types)]
    meta = {"dodb.protection": t["protection"], "dodb.table_type": table_type(t)}
    if t["protection"] == "private":
        meta.update({"dodb.unit": " -> ".join(t["unit"] or []), "dodb.capacity": str(t["capacity"])})
    return pa.schema(fields, metadata=meta)


def tables(listing: dict[str, Any], cmd: dict[str, Any]) -> pa.Table:
    """The ``CommandGetTables`` answer (ordered by name), ``dodb_last_report`` included as a SYSTEM TABLE."""
    db, schema = listing["database"], listing["schema"]
    if cmd["catalog"] is not None and cmd["catalog"] != db:
        entries: list[dict[str, Any]] = []
    elif not _matches(like(cmd["db_schema_filter_pattern"]), schema):
        entries = []
    else:
        report = {"name": REPORT_TABLE, "kind": "system", "protection": "public", "columns": None}
        entries = [t for t in listing["tables"] + [report] if _matches(like(cmd["table_name_filter_pattern"]), t["name"])]
    wanted = set(cmd["table_types"] or [])
    rows = []
    for t in sorted(entries, key=lambda t: t["name"]):
        kind = SYSTEM if t["kind"] == "system" else table_type(t)
        if wanted and kind not in wanted:
            continue
        row = [db, schema, t["name"], kind]
        if cmd["include_schema"]:
            s = REPORT_SCHEMA if t["kind"] == "system" else table_arrow_schema(listing, t)
            row.append(s.serialize().to_pybytes())
        rows.append(row)
    out = tables_schema(bool(cmd["include_schema"]))
    return pa.Table.from_arrays([pa.array([r[i] for r in rows], type=f.type) for i, f in enumerate(out)], schema=out)


def table_types() -> pa.Table:
    return pa.table({"table_type": TABLE_TYPES}, schema=TABLE_TYPES_SCHEMA)


# -- the privacy report of the last query, as a table ------------------------------------------
REPORT_SCHEMA = pa.schema([
    ("query_id", pa.int64()), ("sql", pa.string()), ("mode", pa.string()),
    ("requested_epsilon", pa.float64()), ("requested_delta", pa.float64()),
    ("charged_epsilon", pa.float64()), ("charged_delta", pa.float64()), ("composition", pa.string()),
    ("spent_epsilon", pa.float64()), ("spent_delta", pa.float64()),
    ("remaining_epsilon", pa.float64()), ("remaining_delta", pa.float64()),
    ("operator", pa.string()), ("release", pa.string()), ("sensitivity", pa.int64()),
    ("release_epsilon", pa.float64()), ("release_delta", pa.float64()), ("padded_size", pa.int64()),
], metadata={"dodb.description": "the privacy report of the gateway's last query: one row per size released "
                                 "to an observer of memory (one row with no operator if it released none)"})


def _seen_size(op: dict[str, Any]) -> int | None:
    """The padded size the observer saw for one release: the noisy size, or the operator's
    public bound when the draw was above it (``padded``); the sum over a binned release."""
    if op.get("padded") is not None:
        return int(op["padded"])
    v = op.get("value")
    if isinstance(v, list):
        return int(sum(v)) if v else None
    return int(v) if isinstance(v, (int, float)) else None


def report_table(report) -> pa.Table:
    """``dodb_last_report``: the report of the last query answered through this gateway
    (:class:`~dodb.result.PrivacyReport`), one row per release; no rows before any query."""
    if report is None:
        return REPORT_SCHEMA.empty_table()
    spent = report.spent or (None, None)
    remaining = report.remaining or (None, None)
    head = [report.query_id, report.sql, report.mode, report.epsilon, report.delta, report.charged_epsilon,
            report.charged_delta, report.chosen, spent[0], spent[1], remaining[0], remaining[1]]
    ops = report.operators or [None]
    rows = [head + ([None] * 6 if op is None else
                    [op.get("operator"), op.get("release"), op.get("sensitivity"), op.get("epsilon"),
                     op.get("delta"), _seen_size(op)]) for op in ops]
    return pa.Table.from_arrays([pa.array([r[i] for r in rows], type=f.type) for i, f in enumerate(REPORT_SCHEMA)],
                                schema=REPORT_SCHEMA)
