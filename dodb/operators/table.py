"""Padded tables: the relation passed between DO operators (docs/design.md §Operators and stability).

A :class:`PaddedTable` holds every column as fixed-width numpy *lanes* (so the oblivious
kernels can move rows without data-dependent layouts), a boolean ``is_real`` marking the
real rows among dummies, its public padded length, and its ``stability``: how many of its
rows can change when one privacy unit changes.

Conversion from Arrow (:func:`from_arrow`) is the storage boundary: variable-length
strings become fixed-width byte blocks whose width is the column's maximum byte length
(or a declared width).  That width, like the padded row count of a private base table,
is public by convention and is part of the plan.  Conversion back
(:meth:`PaddedTable.to_arrow`) drops the dummies; it happens only at the trusted boundary
or when handing whole columns to the expression evaluator.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DodbError
from ..oblivious.select import select

__all__ = ["Column", "PaddedTable", "from_arrow", "column_from_arrow", "concat_tables", "UnsupportedTypeError", "read_only"]


class UnsupportedTypeError(DodbError, TypeError):
    """A column type the padded representation cannot hold (a user error: refused before admission)."""


@dataclass
class Column:
    """One column as fixed-width lanes.

    ``values``: ``(n,)`` numbers/booleans/dates, ``(n, 2)`` ``uint64`` for decimal128
    (little-endian low, high words; column-major where dodb builds them, so that each word
    is one contiguous lane the kernels read without a copy) and for an INTERVAL (Arrow's month_day_nano words), ``(n, w)`` ``uint8`` for strings/binary.
    ``valid``: ``False`` for SQL NULL.  ``lengths``: byte lengths of strings.
    """

    type: pa.DataType
    values: np.ndarray
    valid: np.ndarray
    lengths: np.ndarray | None = None
    # a DECIMAL(38, 0) lane that is DuckDB's HUGEINT (SUM of integers, a cast to HUGEINT): the
    # same words, but expressions over it bind with integer semantics (``//``, overflow, casts)
    huge: bool = field(default=False, kw_only=True)

    @property
    def width(self) -> int:
        """Public byte width of a string column (0 for other types)."""
        return int(self.values.shape[1]) if self.is_string else 0

    @property
    def is_string(self) -> bool:
        return self.lengths is not None

    @property
    def is_decimal(self) -> bool:
        return pa.types.is_decimal(self.type)

    @property
    def _narrow_decimal(self) -> bool:
        """A DECIMAL of at most 18 digits: by its type every value fits in the low word of
        its ``(n, 2)`` words, so the high word is the low word's sign extension."""
        return pa.types.is_decimal(self.type) and self.type.precision <= 18

    def arrays(self) -> list[np.ndarray]:
        """The lanes operators move (sort, compact, expand …) and hand back to :meth:`with_arrays`.

        A narrow DECIMAL travels as its low word only (half the bytes through every
        network); the choice depends on the column's type, never on its values.
        """
        narrow = self._narrow_decimal and self.values.ndim == 2
        values = self.values[:, 0] if narrow else self.values  # a view: no copy
        out = [values, self.valid]
        if self.lengths is not None:
            out.append(self.lengths)
        return out

    def with_arrays(self, arrays: Sequence[np.ndarray]) -> "Column":
        values = arrays[0]
        if values.ndim == 1 and self._narrow_decimal:
            if self._is_low_view(values):  # handed back untouched: keep the words as they are
                values = self.values
            else:
                low = np.asarray(values, dtype=np.uint64)
                values = np.empty((low.shape[0], 2), dtype=np.uint64, order="F")  # each word contiguous
                values[:, 0] = low
                values[:, 1] = (low.view(np.int64) >> np.int64(63)).view(np.uint64)
        return Column(self.type, values, arrays[1], arrays[2] if self.lengths is not None else None, huge=self.huge)

    def _is_low_view(self, a: np.ndarray) -> bool:
        """Whether ``a`` is exactly ``self.values[:, 0]`` (same memory, shape and stride)."""
        v = self.values
        return v.ndim == 2 and a.shape == (v.shape[0],) and a.dtype == v.dtype and \
            a.strides == (v.strides[0],) and (v.shape[0] == 0 or a.ctypes.data == v.ctypes.data)

    def n_arrays(self) -> int:
        return 3 if self.lengths is not None else 2

    def take_slice(self, start: int, stop: int) -> "Column":
        return self.with_arrays([a[start:stop] for a in self.arrays()])

    def to_arrow(self, keep: np.ndarray | None = None) -> pa.Array:
        """Arrow array of the rows where ``keep`` (all rows if ``None``)."""
        cols = self if keep is None else self.with_arrays([a[keep] for a in self.arrays()])
        return _column_to_arrow(cols)

    def __reduce__(self):
        """Pickled — sent to another process: a cluster's blocks — as its lanes, so a narrow
        DECIMAL crosses the network as its low word only (docs/distributed.md §Exchange log)."""
        return (_column_of_lanes, (self.type, self.huge, self.lengths is not None,
                                  [np.ascontiguousarray(a) for a in self.arrays()]))


def _column_of_lanes(type_: pa.DataType, huge: bool, string: bool, lanes: list[np.ndarray]) -> Column:
    """The column :meth:`Column.__reduce__` sent (the lanes' owner rebuilds the high words)."""
    empty = np.zeros((0, 2), dtype=np.uint64)
    shell = Column(type_, empty, np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int32) if string else None, huge=huge)
    return shell.with_arrays(lanes)


def _fixed_width_numpy(arr: pa.Array, dtype: np.dtype) -> np.ndarray:
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(len(arr), dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=len(arr) + arr.offset)[arr.offset:].copy()


def _valid_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)


_NUMPY_OF = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
    pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
    pa.float32(): np.float32, pa.float64(): np.float64, pa.float16(): np.float16,
    pa.date32(): np.int32, pa.date64(): np.int64,
}


def _physical_dtype(t: pa.DataType) -> np.dtype | None:
    if t in _NUMPY_OF:
        return np.dtype(_NUMPY_OF[t])
    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return np.dtype(np.int64)
    if pa.types.is_time32(t):
        return np.dtype(np.int32)
    return None


def _is_interval(t: pa.DataType) -> bool:
    """DuckDB's INTERVAL as Arrow exports it: (months int32, days int32, nanoseconds int64)."""
    return t == pa.month_day_nano_interval()


def column_from_arrow(arr: pa.Array | pa.ChunkedArray, width: int | None = None) -> Column:
    """Convert an Arrow array to lanes.  ``width``: declared string width (bytes)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    t = arr.type
    n = len(arr)
    if pa.types.is_dictionary(t):
        return column_from_arrow(arr.cast(t.value_type), width)
    valid = _valid_mask(arr)
    if pa.types.is_null(t):
        return Column(t, np.zeros(n, dtype=np.int8), valid)
    if pa.types.is_boolean(t):
        vals = np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)
        return Column(t, vals, valid)
    dt = _physical_dtype(t)
    if dt is not None:
        vals = _fixed_width_numpy(arr, dt)
        return Column(t, select(valid, vals, np.zeros(1, dtype=dt)), valid)
    if pa.types.is_decimal128(t) or _is_interval(t):  # two 64-bit words a value (an INTERVAL: months and
        buf = arr.buffers()[1]                          # days as int32s, then the nanoseconds)
        words = np.frombuffer(buf, dtype=np.uint64, count=2 * (n + arr.offset))[2 * arr.offset:].reshape(n, 2)
        # a DECIMAL's low and high words each contiguous (column-major): kernels read them with no copy
        words = np.array(words, order="F" if pa.types.is_decimal128(t) else "C")
        words[~valid] = 0
        return Column(t, words, valid)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        off_dtype = np.int64 if (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) else np.int32
        offsets = np.frombuffer(arr.buffers()[1], dtype=off_dtype, count=n + 1 + arr.offset)[arr.offset:].astype(np.int64)
        data_buf = arr.buffers()[2]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        lengths = select(valid, np.diff(offsets), 0)
        w = int(lengths.max()) if n else 0
        if width is not None:
            if w > width:
                raise ValueError(f"string longer than its declared width {width}")
            w = int(width)
        w = max(w, 1)
        pos = offsets[:-1, None] + np.arange(w)[None, :]
        inside = np.arange(w)[None, :] < lengths[:, None]
        mat = np.zeros((n, w), dtype=np.uint8)
        if data.size:
            mat = select(inside, data[np.minimum(pos, data.size - 1)], 0).astype(np.uint8)
        return Column(pa.string() if "string" in str(t) else pa.binary(), mat, valid, lengths.astype(np.int32))
    raise UnsupportedTypeError(f"column type {t} is not supported by dodb operators")


def _column_to_arrow(c: Column) -> pa.Array:
    t = c.type
    n = int(c.valid.shape[0])
    mask = ~c.valid
    if pa.types.is_null(t):
        return pa.nulls(n)
    if pa.types.is_boolean(t):
        return pa.array(c.values, type=t, mask=mask)
    if pa.types.is_decimal128(t) or _is_interval(t):
        words = np.ascontiguousarray(c.values, dtype=np.uint64)
        validity = pa.array(c.valid).buffers()[1] if mask.any() else None
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(words.tobytes())], null_count=int(mask.sum()))
    if c.lengths is not None:
        lengths = select(c.valid, c.lengths, 0).astype(np.int64)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        inside = np.arange(c.values.shape[1])[None, :] < lengths[:, None]
        data = c.values[inside]
        validity = pa.array(c.valid).buffers()[1] if mask.any() else None
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.tobytes())],
                                     null_count=int(mask.sum()))
    dt = _physical_dtype(t)
    if dt is None:
        raise UnsupportedTypeError(f"column type {t} is not supported by dodb operators")
    storage = pa.array(np.ascontiguousarray(c.values, dtype=dt), mask=mask)
    if storage.type == t:
        return storage
    return pa.Array.from_buffers(t, n, storage.buffers(), null_count=storage.null_count)


@dataclass
class PaddedTable:
    """Columns as lanes + ``is_real`` + public padded length + stability.

    ``aligned``: the rows sit in the slots of a canonical base table (scan, then only
    row-wise operators: projections, marks, lookups), so the coupled neighbour has the
    same rows in the same slots.  Only such layouts may release positional counts
    (docs/neighbours.md §Positional releases); every other operator output is not aligned.
    """

    names: list[str]
    columns: list[Column]
    is_real: np.ndarray
    stability: int = 0
    meta: dict = field(default_factory=dict)
    aligned: bool = False

    def __post_init__(self) -> None:
        if len(self.names) != len(self.columns):
            raise ValueError("names and columns differ in length")
        self.is_real = np.asarray(self.is_real, dtype=bool)
        for c in self.columns:
            if c.valid.shape[0] != self.is_real.shape[0]:
                raise ValueError("all columns must have the padded length")

    @property
    def padded_size(self) -> int:
        return int(self.is_real.shape[0])

    def __len__(self) -> int:
        return self.padded_size

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(nm, c.type) for nm, c in zip(self.names, self.columns)])

    def column(self, name: str) -> Column:
        try:
            return self.columns[self.names.index(name)]
        except ValueError:
            raise KeyError(f"no column {name!r}; columns are {self.names}") from None

    # -- payload plumbing for kernels -------------------------------------------------
    def arrays(self) -> list[np.ndarray]:
        """All lanes plus ``is_real`` last, in a fixed order (kernel payload)."""
        out: list[np.ndarray] = []
        for c in self.columns:
            out.extend(c.arrays())
        out.append(self.is_real)
        return out

    def with_arrays(self, arrays: Sequence[np.ndarray], stability: int | None = None,
                    aligned: bool = False) -> "PaddedTable":
        """The same columns with new lanes; ``aligned`` only if every row stayed in its slot."""
        cols, i = [], 0
        for c in self.columns:
            k = c.n_arrays()
            cols.append(c.with_arrays(arrays[i:i + k]))
            i += k
        return PaddedTable(list(self.names), cols, arrays[i],
                           self.stability if stability is None else stability, dict(self.meta), aligned)

    def slice(self, start: int, stop: int) -> "PaddedTable":
        return self.with_arrays([a[start:stop] for a in self.arrays()])

    def select(self, names: Iterable[str], rename: Sequence[str] | None = None) -> "PaddedTable":
        names = list(names)
        cols = [self.column(nm) for nm in names]
        return PaddedTable(list(rename) if rename else names, cols, self.is_real, self.stability, dict(self.meta),
                           self.aligned)

    def with_stability(self, s: int) -> "PaddedTable":
        return replace(self, stability=int(s))

    # -- conversion -------------------------------------------------------------------
    def to_arrow(self, include_dummies: bool = False) -> pa.Table:
        """Real rows as an Arrow table (the trusted boundary drops the dummies)."""
        keep = None if include_dummies else self.is_real
        return pa.table([c.to_arrow(keep) for c in self.columns], schema=self.schema) if self.columns else \
            pa.table({"__rows": pa.nulls(int(self.is_real.sum()) if keep is not None else self.padded_size)}).drop(["__rows"])

    @property
    def real_count(self) -> int:
        """Number of real rows (trusted side only: never released by an operator)."""
        return int(self.is_real.sum())


def from_arrow(table: pa.Table, stability: int = 0, widths: dict[str, int] | None = None,
               is_real: np.ndarray | None = None) -> PaddedTable:
    """A padded table holding every row of ``table`` as real (unless ``is_real`` is given)."""
    widths = widths or {}
    cols = [column_from_arrow(table.column(i), widths.get(nm)) for i, nm in enumerate(table.column_names)]
    real = np.ones(table.num_rows, dtype=bool) if is_real is None else np.asarray(is_real, dtype=bool)
    return PaddedTable(list(table.column_names), cols, real, stability)


def _pad_string(c: Column, w: int) -> Column:
    if c.values.shape[1] == w:
        return c
    vals = np.zeros((c.values.shape[0], w), dtype=np.uint8)
    vals[:, : c.values.shape[1]] = c.values
    return Column(c.type, vals, c.valid, c.lengths)


def unify_columns(cols: Sequence[Column]) -> list[Column]:
    """Bring same-typed columns to one layout (common string width, common decimal scale)."""
    if cols and cols[0].is_string:
        w = max(c.width for c in cols)
        return [_pad_string(c, w) for c in cols]
    return list(cols)


def concat_tables(tables: Sequence[PaddedTable], stability: int | None = None) -> PaddedTable:
    """Vertical concatenation (UNION ALL): sizes add, which are public."""
    first = tables[0]
    cols = []
    for j in range(len(first.columns)):
        parts = unify_columns([t.columns[j] for t in tables])
        arrays = [np.concatenate([p.arrays()[k] for p in parts]) for k in range(parts[0].n_arrays())]
        cols.append(parts[0].with_arrays(arrays))
    real = np.concatenate([t.is_real for t in tables])
    s = sum(t.stability for t in tables) if stability is None else stability
    return PaddedTable(list(first.names), cols, real, s, dict(first.meta))


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of a kept array, which is made read-only itself (the slot cache and
    the sorted join sides it keeps: docs/design.md §Slot cache).  No operator writes its
    inputs; one that did would raise instead of changing what later queries read."""
    a.flags.writeable = False
    return a.view()
