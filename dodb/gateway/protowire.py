"""A small, exact protobuf wire codec for the Flight SQL messages the gateway reads and writes.

Flight SQL (``format/FlightSql.proto`` in apache/arrow) wraps its commands in
``google.protobuf.Any``.  The gateway needs a dozen flat messages — strings, bytes,
bools, integers and repeated scalars, no nesting beyond ``Any`` — so it carries this
codec instead of a protobuf dependency.  It follows the encoding spec
(https://protobuf.dev/programming-guides/encoding/): a field is a varint key
``(number << 3) | wire_type``; wire type 0 is a varint, 1 a little-endian 64-bit
word, 2 a length-delimited payload, 5 a 32-bit word.  Unknown fields are skipped (as
protobuf does); repeated scalars are read packed or unpacked and written packed (the
proto3 default).  proto3 semantics: a plain scalar at its default value is not written;
a field declared ``optional`` is written whenever it is set (not ``None``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ProtoError", "encode_varint", "decode_varint", "encode", "decode", "pack_any", "unpack_any",
           "MESSAGES", "TYPE_PREFIX"]

TYPE_PREFIX = "type.googleapis.com/arrow.flight.protocol.sql."
_MAX_VARINT_BYTES = 10


class ProtoError(ValueError):
    """Bytes that are not a well-formed protobuf message of the expected type."""


@dataclass(frozen=True)
class Field:
    number: int
    name: str
    kind: str            # 'string', 'bytes', 'bool', 'uint32', 'int32', 'int64', 'uint64'
    repeated: bool = False
    optional: bool = False  # proto3 'optional': presence is tracked, so a default value is still written


def _f(number: int, name: str, kind: str, **kw: bool) -> Field:
    return Field(number, name, kind, **kw)


# The messages of FlightSql.proto the gateway handles (field numbers and types as declared there).
MESSAGES: dict[str, tuple[Field, ...]] = {
    "google.protobuf.Any": (_f(1, "type_url", "string"), _f(2, "value", "bytes")),
    "CommandGetSqlInfo": (_f(1, "info", "uint32", repeated=True),),
    "CommandGetXdbcTypeInfo": (_f(1, "data_type", "int32", optional=True),),
    "CommandGetCatalogs": (),
    "CommandGetDbSchemas": (_f(1, "catalog", "string", optional=True),
                            _f(2, "db_schema_filter_pattern", "string", optional=True)),
    "CommandGetTables": (_f(1, "catalog", "string", optional=True),
                         _f(2, "db_schema_filter_pattern", "string", optional=True),
                         _f(3, "table_name_filter_pattern", "string", optional=True),
                         _f(4, "table_types", "string", repeated=True),
                         _f(5, "include_schema", "bool")),
    "CommandGetTableTypes": (),
    "CommandGetPrimaryKeys": (_f(1, "catalog", "string", optional=True), _f(2, "db_schema", "string", optional=True),
                              _f(3, "table", "string")),
    "CommandGetExportedKeys": (_f(1, "catalog", "string", optional=True), _f(2, "db_schema", "string", optional=True),
                               _f(3, "table", "string")),
    "CommandGetImportedKeys": (_f(1, "catalog", "string", optional=True), _f(2, "db_schema", "string", optional=True),
                               _f(3, "table", "string")),
    "CommandStatementQuery": (_f(1, "query", "string"), _f(2, "transaction_id", "bytes", optional=True)),
    "CommandStatementUpdate": (_f(1, "query", "string"), _f(2, "transaction_id", "bytes", optional=True)),
    "CommandPreparedStatementQuery": (_f(1, "prepared_statement_handle", "bytes"),),
    "CommandPreparedStatementUpdate": (_f(1, "prepared_statement_handle", "bytes"),),
    "TicketStatementQuery": (_f(1, "statement_handle", "bytes"),),
    "ActionCreatePreparedStatementRequest": (_f(1, "query", "string"),
                                             _f(2, "transaction_id", "bytes", optional=True)),
    "ActionCreatePreparedStatementResult": (_f(1, "prepared_statement_handle", "bytes"),
                                            _f(2, "dataset_schema", "bytes"), _f(3, "parameter_schema", "bytes"),
                                            _f(4, "is_update", "bool", optional=True)),
    "ActionClosePreparedStatementRequest": (_f(1, "prepared_statement_handle", "bytes"),),
    "DoPutPreparedStatementResult": (_f(1, "prepared_statement_handle", "bytes", optional=True),),
    "DoPutUpdateResult": (_f(1, "record_count", "int64"),),
}

_VARINT_KINDS = {"bool", "uint32", "int32", "int64", "uint64"}


# -- varints -------------------------------------------------------------------------------------
def encode_varint(value: int) -> bytes:
    """``value`` (0 <= value < 2**64; negative int32/int64 as their 64-bit two's complement) as a varint."""
    if value < 0:
        value += 1 << 64
    if not 0 <= value < 1 << 64:
        raise ProtoError(f"varint out of range: {value}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def decode_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    result = shift = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise ProtoError("truncated varint")
        byte = data[pos + i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if result >= 1 << 64:
                raise ProtoError("varint longer than 64 bits")
            return result, pos + i + 1
        shift += 7
    raise ProtoError("varint longer than 10 bytes")


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _scalar(kind: str, raw: int) -> Any:
    if kind == "bool":
        return raw != 0
    if kind == "uint32":
        return raw & 0xFFFFFFFF
    if kind == "int32":
        return _signed(raw, 32)  # protobuf sign-extends int32 to 64 bits on the wire; truncation undoes it
    if kind == "int64":
        return _signed(raw, 64)
    return raw


# -- messages ------------------------------------------------------------------------------------
def _key(number: int, wire_type: int) -> bytes:
    return encode_varint(number << 3 | wire_type)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _key(number, 2) + encode_varint(len(payload)) + payload


def encode(message: str, values: dict[str, Any]) -> bytes:
    """``values`` (field name -> value) as the wire bytes of ``message`` (fields in number order)."""
    spec = MESSAGES[message]
    unknown = set(values) - {f.name for f in spec}
    if unknown:
        raise ProtoError(f"{message} has no field(s) {sorted(unknown)}")
    out = bytearray()
    for f in spec:
        v = values.get(f.name)
        if v is None:
            continue
        if f.repeated:
            if not v:
                continue
            if f.kind in _VARINT_KINDS:  # packed
                out += _length_delimited(f.number, b"".join(encode_varint(int(x)) for x in v))
            else:
                for x in v:
                    out += _length_delimited(f.number, x.encode("utf-8") if f.kind == "string" else bytes(x))
            continue
        if f.kind in _VARINT_KINDS:
            iv = int(bool(v)) if f.kind == "bool" else int(v)
            if iv or f.optional:
                out += _key(f.number, 0) + encode_varint(iv)
        else:
            b = v.encode("utf-8") if f.kind == "string" else bytes(v)
            if b or f.optional:
                out += _length_delimited(f.number, b)
    return bytes(out)


def decode(message: str, data: bytes) -> dict[str, Any]:
    """The fields of ``message`` in ``data``: every declared field, absent ones as their
    proto3 default (``None`` for an unset ``optional`` field, ``[]`` for a repeated one)."""
    spec = {f.number: f for f in MESSAGES[message]}
    out: dict[str, Any] = {}
    for f in spec.values():
        if f.repeated:
            out[f.name] = []
        elif f.optional:
            out[f.name] = None
        else:
            out[f.name] = {"string": "", "bytes": b"", "bool": False}.get(f.kind, 0)
    data = bytes(data)
    pos = 0
    while pos < len(data):
        key, pos = decode_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise ProtoError("field number 0")
        if wire_type == 0:
            raw, pos = decode_varint(data, pos)
            payload = None
        elif wire_type == 1:
            if pos + 8 > len(data):
                raise ProtoError("truncated 64-bit field")
            raw, payload, pos = int.from_bytes(data[pos:pos + 8], "little"), None, pos + 8
        elif wire_type == 5:
            if pos + 4 > len(data):
                raise ProtoError("truncated 32-bit field")
            raw, payload, pos = int.from_bytes(data[pos:pos + 4], "little"), None, pos + 4
        elif wire_type == 2:
            size, pos = decode_varint(data, pos)
            if pos + size > len(data):
                raise ProtoError("truncated length-delimited field")
            raw, payload, pos = None, data[pos:pos + size], pos + size
        else:
            raise ProtoError(f"unsupported wire type {wire_type}")  # 3/4: groups, deprecated and unused here
        f = spec.get(number)
        if f is None:
            continue  # an unknown field (a newer protocol version): skipped, as protobuf does
        if f.kind in _VARINT_KINDS:
            if wire_type == 0:
                vals = [_scalar(f.kind, raw)]
            elif wire_type == 2 and f.repeated:  # packed
                vals, p = [], 0
                while p < len(payload):
                    r, p = decode_varint(payload, p)
                    vals.append(_scalar(f.kind, r))
            else:
                raise ProtoError(f"{message}.{f.name}: wire type {wire_type} for a {f.kind}")
        else:
            if wire_type != 2:
                raise ProtoError(f"{message}.{f.name}: wire type {wire_type} for a {f.kind}")
            if f.kind == "string":
                try:
                    vals = [payload.decode("utf-8")]
                except UnicodeDecodeError:
                    raise ProtoError(f"{message}.{f.name}: invalid UTF-8") from None
            else:
                vals = [payload]
        if f.repeated:
            out[f.name].extend(vals)
        else:
            out[f.name] = vals[-1]  # the last value wins for a non-repeated field
    return out


# -- google.protobuf.Any -------------------------------------------------------------------------
def pack_any(message: str, values: dict[str, Any]) -> bytes:
    """``message`` wrapped in ``google.protobuf.Any`` with its Flight SQL type URL."""
    return encode("google.protobuf.Any", {"type_url": TYPE_PREFIX + message, "value": encode(message, values)})


def unpack_any(data: bytes) -> tuple[str, bytes]:
    """``(type_url, value)`` of an ``Any``; refuses bytes that do not carry a type URL."""
    a = decode("google.protobuf.Any", data)
    if not a["type_url"]:
        raise ProtoError("not a google.protobuf.Any message (no type URL)")
    return a["type_url"], a["value"]


def message_name(type_url: str) -> str:
    """The short name of a Flight SQL message from its type URL (the URL itself for any other package)."""
    return type_url[len(TYPE_PREFIX):] if type_url.startswith(TYPE_PREFIX) else type_url
