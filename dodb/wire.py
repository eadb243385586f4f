"""The padded answer: what leaves the engine, and how the analyst's side reads it.

The engine never strips dummies (docs/threat-model.md §Where the answer leaves the
engine).  Its output is a :class:`PaddedAnswer`: an Arrow table of the answer **padded to
its charged noisy size** in a fixed-width encoding whose buffer sizes depend only on
the padded size and the public widths —

* ``dodb:real_row``: which rows are real (the dummies hold plausible values: a consumer
  that ignores this lane reads wrong numbers);
* per answer column ``i``: ``c{i}`` holding the values with no nulls (strings and blobs
  as ``fixed_size_binary(width)``), ``c{i}:valid`` (False = SQL NULL) and, for strings,
  ``c{i}:len`` (byte length); a list (docs/design.md §list) as its ``R`` element slots in
  one ``fixed_size_binary``, ``c{i}:count``, ``c{i}:ev`` (element validity) and, for
  string elements, ``c{i}:el`` (element byte lengths);

plus a fixed-size ``status`` word: 0, or the code of a runtime error a real row raised
(raised on the analyst's side, never branched on in the engine).  The schema metadata
holds the display names and DuckDB types, which are public (the plan).

:func:`decode` runs on the analyst's side — in the ``Result`` object in-process, in the
client in served mode: it drops the dummies, rebuilds strings and NULLs, and casts to
DuckDB's result types.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
import pyarrow as pa

from .errors import DodbError
from .operators.list_agg import ListColumn
from .operators.table import Column, PaddedTable

__all__ = ["PaddedAnswer", "encode", "decode", "QueryRuntimeError", "REAL"]

REAL = "dodb:real_row"  # the validity lane: True for a real row, False for a dummy (which holds plausible values)
_META = b"dodb"


class QueryRuntimeError(DodbError):
    """A real row made an expression fail (e.g. an integer overflow), as DuckDB would raise."""


@dataclass
class PaddedAnswer:
    """The engine's output: the padded table and the query's fixed-size status word."""

    table: pa.Table
    status: np.ndarray  # (1,) int64

    @property
    def padded_size(self) -> int:
        return self.table.num_rows

    @property
    def names(self) -> list[str]:
        return json.loads(self.table.schema.metadata[_META])["names"]

    @property
    def types(self) -> list[str] | None:
        return json.loads(self.table.schema.metadata[_META])["types"]


def _fixed(values: np.ndarray) -> pa.Array:
    n, w = values.shape
    return pa.Array.from_buffers(pa.binary(w), n, [None, pa.py_buffer(np.ascontiguousarray(values).tobytes())])


def _values(c: Column) -> pa.Array:
    if c.is_string:
        return _fixed(c.values)
    return Column(c.type, c.values, np.ones(c.valid.shape[0], dtype=bool), None).to_arrow()


def encode(t: PaddedTable, columns: list[str], names: list[str], types: list[str] | None,
           status: int | np.ndarray = 0, messages: Mapping[int, str] | None = None) -> PaddedAnswer:
    """The padded answer of ``t``'s ``columns`` (in order), shown as ``names``.

    ``messages``: the message of every status code the plan's expressions can set (public,
    fixed by the plan), so that the analyst's side — another process in served mode —
    names the error."""
    arrays, fields = [pa.array(np.asarray(t.is_real, dtype=bool))], [REAL]
    kinds, lists = [], {}
    for i, name in enumerate(columns):
        c = t.column(name)
        if isinstance(c, ListColumn):
            arrays += _list_lanes(c)
            fields += [f"c{i}", f"c{i}:valid", f"c{i}:count", f"c{i}:ev"] + ([f"c{i}:el"] if c.elem_lengths is not None
                                                                              else [])
            lists[str(i)] = _list_meta(c)
            kinds.append(str(c.type))
            continue
        arrays += [_values(c), pa.array(np.asarray(c.valid, dtype=bool))]
        fields += [f"c{i}", f"c{i}:valid"]
        if c.is_string:
            arrays.append(pa.array(np.asarray(c.lengths, dtype=np.int32)))
            fields.append(f"c{i}:len")
        kinds.append(str(c.type))
    meta = {"names": list(names), "types": list(types) if types else None, "kinds": kinds, "lists": lists,
            "errors": {str(int(k)): str(v) for k, v in sorted((messages or {}).items())}}
    table = pa.Table.from_arrays(arrays, names=fields).replace_schema_metadata({_META: json.dumps(meta).encode()})
    word = np.zeros(1, dtype=np.int64) + np.asarray(status, dtype=np.int64).reshape(-1)[:1]
    return PaddedAnswer(table, word)


def _strings(values: pa.Array, lengths: np.ndarray, valid: np.ndarray, typ: pa.DataType) -> pa.Array:
    n = len(values)
    w = values.type.byte_width
    mat = np.frombuffer(values.buffers()[1], dtype=np.uint8, count=n * w).reshape(n, w) if n and w else \
        np.zeros((n, max(w, 0)), np.uint8)
    col = Column(typ, mat, valid, lengths.astype(np.int32))
    return col.to_arrow()


def _list_lanes(c: ListColumn) -> list[pa.Array]:
    """A list column's lanes as fixed-size rows: public sizes ``n``, ``R`` and the element shape."""
    n, r = c.elem_valid.shape

    def flat(a: np.ndarray) -> pa.Array:
        a = np.ascontiguousarray(a)
        return _fixed(a.view(np.uint8).reshape(n, a.dtype.itemsize * int(np.prod(a.shape[1:], dtype=np.int64))))
    out = [flat(c.values), pa.array(np.asarray(c.valid, dtype=bool)), pa.array(np.asarray(c.count, dtype=np.int32)),
           flat(np.asarray(c.elem_valid, dtype=np.uint8))]
    if c.elem_lengths is not None:
        out.append(flat(np.asarray(c.elem_lengths, dtype=np.int32)))
    return out


def _list_meta(c: ListColumn) -> dict:
    elem = pa.schema([pa.field("e", c.type.value_type)]).serialize().to_pybytes()
    return {"elem": base64.b64encode(elem).decode(), "dtype": c.values.dtype.str, "shape": list(c.values.shape[1:]),
            "strings": c.elem_lengths is not None}


def _list_array(keep: pa.Table, i: int, info: dict, valid: np.ndarray) -> pa.Array:
    """Analyst side: the real rows' lists rebuilt from their fixed-size lanes."""
    elem = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(info["elem"]))).field("e").type
    shape, n = tuple(info["shape"]), keep.num_rows

    def raw(name, dtype, tail):
        a = keep.column(name).combine_chunks()
        if not n:
            return np.zeros((0,) + tail, dtype=dtype)
        return np.frombuffer(a.buffers()[1], dtype=np.uint8, count=n * a.type.byte_width).view(dtype).reshape(
            (n,) + tail).copy()

    count = np.asarray(keep.column(f"c{i}:count").to_numpy(zero_copy_only=False), dtype=np.int64)
    col = ListColumn(pa.list_(elem), raw(f"c{i}", np.dtype(info["dtype"]), shape), valid, None, count,
                     raw(f"c{i}:ev", np.uint8, shape[:1]).astype(bool),
                     raw(f"c{i}:el", np.int32, shape[:1]) if info["strings"] else None)
    return col.to_arrow()


def decode(answer: PaddedAnswer, error_message: Callable[[int], str] | None = None,
           cast: Callable[[pa.Table, list[str] | None], pa.Table] | None = None) -> pa.Table:
    """The exact answer: real rows only, strings and NULLs rebuilt, cast to DuckDB's types.

    Analyst side only.  Raises :class:`QueryRuntimeError` if the status word is set.
    """
    code = int(answer.status[0])
    t = answer.table
    meta = json.loads(t.schema.metadata[_META])
    if code:
        from .operators.aggregate import STATUS_MESSAGES

        known = (meta.get("errors") or {}).get(str(code)) or STATUS_MESSAGES.get(code)
        raise QueryRuntimeError(known or (error_message(code) if error_message else f"query failed (error code {code})"))
    real = np.asarray(t.column(REAL).to_numpy(zero_copy_only=False), dtype=bool)
    keep = t.filter(pa.array(real))
    out = []
    for i, kind in enumerate(meta["kinds"]):
        vals = keep.column(f"c{i}").combine_chunks()
        valid = np.asarray(keep.column(f"c{i}:valid").to_numpy(zero_copy_only=False), dtype=bool)
        if str(i) in (meta.get("lists") or {}):
            out.append(_list_array(keep, i, meta["lists"][str(i)], valid))
        elif pa.types.is_null(vals.type):
            out.append(pa.nulls(len(vals)))
        elif f"c{i}:len" in keep.column_names:
            lengths = np.asarray(keep.column(f"c{i}:len").to_numpy(zero_copy_only=False))
            typ = pa.string() if kind in ("string", "large_string") else pa.binary()
            out.append(_strings(vals, lengths, valid, typ))
        else:
            out.append(pa.Array.from_buffers(vals.type, len(vals), [pa.array(valid).buffers()[1]] + vals.buffers()[1:],
                                             null_count=int((~valid).sum())) if len(vals) else vals)
    table = pa.Table.from_arrays(out, names=meta["names"]) if out else pa.table({})
    return cast(table, meta["types"]) if cast is not None else table
