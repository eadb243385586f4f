"""The gateway's protobuf codec against bytes computed by hand from the encoding spec
(https://protobuf.dev/programming-guides/encoding/) and FlightSql.proto's field numbers."""
from __future__ import annotations

import pytest

from dodb.gateway import protowire as pw

URL = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"


@pytest.mark.parametrize("value, raw", [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"), (500, b"\xf4\x03"),
    (2**64 - 1, b"\xff" * 9 + b"\x01"), (-1, b"\xff" * 9 + b"\x01"),
])
def test_varints(value, raw):
    assert pw.encode_varint(value) == raw
    assert pw.decode_varint(raw + b"tail", 0) == (value % 2**64, len(raw))


def test_bad_varints():
    with pytest.raises(pw.ProtoError, match="truncated"):
        pw.decode_varint(b"\x80\x80", 0)
    with pytest.raises(pw.ProtoError, match="10 bytes"):
        pw.decode_varint(b"\xff" * 11, 0)
    with pytest.raises(pw.ProtoError, match="64 bits"):
        pw.decode_varint(b"\xff" * 9 + b"\x7f", 0)
    with pytest.raises(pw.ProtoError):
        pw.encode_varint(2**64)


def test_statement_query_in_any():
    inner = b"\x0a\x08SELECT 1"  # field 1, wire type 2 (key 0x0a), 8 bytes
    assert len(URL) == 67
    raw = b"\x0a\x43" + URL + b"\x12\x0a" + inner  # Any: type_url (field 1), value (field 2, 0x12)
    assert pw.encode("CommandStatementQuery", {"query": "SELECT 1"}) == inner
    assert pw.pack_any("CommandStatementQuery", {"query": "SELECT 1"}) == raw
    url, value = pw.unpack_any(raw)
    assert url == URL.decode() and pw.message_name(url) == "CommandStatementQuery"
    assert pw.decode("CommandStatementQuery", value) == {"query": "SELECT 1", "transaction_id": None}


def test_repeated_packed_and_unpacked():
    assert pw.encode("CommandGetSqlInfo", {"info": [0, 1, 3]}) == b"\x0a\x03\x00\x01\x03"  # packed
    assert pw.decode("CommandGetSqlInfo", b"\x0a\x03\x00\x01\x03") == {"info": [0, 1, 3]}
    assert pw.decode("CommandGetSqlInfo", b"\x08\x00\x08\x01\x08\x03") == {"info": [0, 1, 3]}  # unpacked
    assert pw.decode("CommandGetSqlInfo", b"\x0a\x02\xf4\x03\x08\x01") == {"info": [500, 1]}  # both, in order
    assert pw.decode("CommandGetSqlInfo", b"") == {"info": []}


def test_get_tables_strings_and_bool():
    raw = b"\x1a\x02t%\x22\x05TABLE\x22\x04VIEW\x28\x01"
    values = {"table_name_filter_pattern": "t%", "table_types": ["TABLE", "VIEW"], "include_schema": True}
    assert pw.encode("CommandGetTables", values) == raw
    assert pw.decode("CommandGetTables", raw) == {"catalog": None, "db_schema_filter_pattern": None, **values}
    assert pw.encode("CommandGetTables", {"include_schema": False}) == b""  # proto3: a default is not written


def test_optional_presence():
    assert pw.decode("CommandGetDbSchemas", b"\x0a\x00")["catalog"] == ""  # set to "" is not unset
    assert pw.decode("CommandGetDbSchemas", b"")["catalog"] is None
    res = {"prepared_statement_handle": b"h", "dataset_schema": b"", "parameter_schema": b"", "is_update": False}
    assert pw.encode("ActionCreatePreparedStatementResult", res) == b"\x0a\x01h\x20\x00"  # optional bool written
    assert pw.encode("DoPutPreparedStatementResult", {"prepared_statement_handle": b""}) == b"\x0a\x00"


def test_negative_int32():
    raw = b"\x08" + b"\xfb" + b"\xff" * 8 + b"\x01"  # int32 -5 is sign-extended to 10 bytes
    assert pw.encode("CommandGetXdbcTypeInfo", {"data_type": -5}) == raw
    assert pw.decode("CommandGetXdbcTypeInfo", raw) == {"data_type": -5}


def test_unknown_fields_are_skipped():
    raw = (b"\x0a\x01a" + b"\x78\x05" + b"\x81\x01" + bytes(8) + b"\x8a\x01\x02zz" + b"\x95\x01" + bytes(4)
           + b"\x0a\x01b")  # fields 15 (varint), 16 (fixed64), 17 (bytes), 18 (fixed32), then field 1 again
    assert pw.decode("CommandStatementQuery", raw)["query"] == "b"  # the last value wins


@pytest.mark.parametrize("raw, match", [
    (b"\x0a\x05ab", "truncated length"), (b"\x0b", "wire type 3"), (b"\x0a\x02\xff\xfe", "UTF-8"),
    (b"\x08\x01", "wire type 0"), (b"\x00", "field number 0"), (b"\x81\x01\x00", "truncated 64-bit"),
])
def test_malformed(raw, match):
    with pytest.raises(pw.ProtoError, match=match):
        pw.decode("CommandStatementQuery", raw)


def test_not_an_any_and_unknown_field_names():
    with pytest.raises(pw.ProtoError, match="type URL"):
        pw.unpack_any(b"\x12\x00")  # a value and no type URL
    with pytest.raises(pw.ProtoError):
        pw.unpack_any(b"SELECT 1")  # plain text is not protobuf (wire type 3 at the first byte)
    with pytest.raises(pw.ProtoError, match="no field"):
        pw.encode("CommandStatementQuery", {"sql": "x"})
