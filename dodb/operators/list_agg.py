"""``list(x [ORDER BY …])`` / ``array_agg`` on the group-by's sorted runs (docs/design.md §list).

A list result is a fixed-shape :class:`ListColumn`: per row ``R`` element slots (values
``(n, R)``, ``(n, R, 2)`` for decimals, ``(n, R, w)`` bytes for strings), an element
validity mask (a NULL element stays in the list, as DuckDB keeps it), element byte lengths
for strings and the element count.  ``R`` is public: the planner's degree bound of the
group key, else the padded input size, never more than the padded ``n``.  As for
string_agg (§string_agg) every row takes the ``R`` rows ending at it by fixed-stride
shifts, a slot is present if its row is in the same run, real and passes the FILTER; then
:func:`compact_slots` moves the present slots to the front of each row in ``log2 R``
fixed shift rounds.  The run's last row holds the group's list; a group with no present
element gives NULL.  Without GROUP BY only the last slot's list of ``n`` slots is built.
The access pattern depends on ``n``, ``R`` and the element shape only.  The list is an
output column only: the analyst's side (``dodb.wire``) turns it into an Arrow list.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import UnsupportedQueryError
from .table import Column
from ..oblivious.select import select

__all__ = ["ListColumn", "MAX_LIST_BYTES", "MAX_LIST_CELLS", "check_list_agg", "list_agg", "compact_slots",
           "slot_bytes"]

MAX_LIST_BYTES = 1 << 20   # bytes of one list value (R slots × element bytes)
MAX_LIST_CELLS = 1 << 23   # slot bytes over all rows of one GROUP BY


@dataclass
class ListColumn(Column):
    """A list per row in ``R`` fixed slots (docs/design.md §list): ``values`` the elements,
    ``valid`` the list is not NULL, ``count`` its length, ``elem_valid`` the non-NULL
    elements, ``elem_lengths`` string elements' byte lengths (None for other types)."""

    count: np.ndarray | None = None
    elem_valid: np.ndarray | None = None
    elem_lengths: np.ndarray | None = None

    @property
    def element(self) -> Column:
        """The elements as one column of ``n·R`` rows (row-major)."""
        n, r = self.elem_valid.shape
        vals = self.values.reshape((n * r,) + self.values.shape[2:])
        lens = None if self.elem_lengths is None else self.elem_lengths.reshape(n * r)
        return Column(self.type.value_type, vals, self.elem_valid.reshape(n * r), lens)

    @property
    def slots(self) -> int:
        return int(self.elem_valid.shape[1])

    def arrays(self) -> list[np.ndarray]:
        out = [self.values, self.valid, self.count, self.elem_valid]
        if self.elem_lengths is not None:
            out.append(self.elem_lengths)
        return out

    def with_arrays(self, arrays) -> "ListColumn":
        return ListColumn(self.type, arrays[0], arrays[1], None, arrays[2], arrays[3],
                          arrays[4] if self.elem_lengths is not None else None)

    def n_arrays(self) -> int:
        return 5 if self.elem_lengths is not None else 4

    def to_arrow(self, keep: np.ndarray | None = None) -> pa.Array:
        """Arrow ``list`` of the rows where ``keep`` (trusted side: the dummies are dropped)."""
        c = self if keep is None else self.with_arrays([a[keep] for a in self.arrays()])  # lint: public trusted side
        n, r = c.elem_valid.shape
        count = select(c.valid, c.count, 0).astype(np.int64)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(count, out=offsets[1:])
        used = (np.arange(r)[None, :] < count[:, None]).reshape(n * r)
        items = c.element.to_arrow(used)
        validity = pa.array(c.valid).buffers()[1] if (~c.valid).any() else None  # lint: public trusted side
        return pa.ListArray.from_buffers(pa.list_(items.type), n, [validity, pa.py_buffer(offsets.tobytes())],
                                         null_count=int((~c.valid).sum()), children=[items])


def slot_bytes(col: Column) -> int:
    """Bytes one element slot takes: the value, its validity, its length (strings)."""
    per = int(np.prod(col.values.shape[1:], dtype=np.int64)) * col.values.dtype.itemsize
    return per + 1 + (4 if col.is_string else 0)


def check_list_agg(rows: int, total: int, b: int, grouped: bool) -> None:
    """Refuse (before admission: the plan's dry run calls this) a bound above the limits."""
    size = max(1, rows) * b
    if size > MAX_LIST_BYTES:
        raise UnsupportedQueryError(
            f"list/array_agg: its result's public bound is {rows} elements per group × {b} bytes = {size} "
            f"bytes, above the limit of {MAX_LIST_BYTES} bytes; declare max_degree (or keys) for the group key "
            "in protect(), filter the rows first, or shorten the values (e.g. substring(x, 1, k))")
    cells = size * total if grouped else total * b
    if cells > MAX_LIST_CELLS:
        raise UnsupportedQueryError(
            f"list/array_agg: {total} padded rows × {size}-byte lists (≤{rows} elements per group of {b} bytes) "
            f"need {cells} bytes of buffer, above {MAX_LIST_CELLS}; declare a smaller max_degree (or keys) for "
            "the group key in protect(), filter the rows first, or shorten the values (e.g. substring(x, 1, k))")


def _shift_slots(a: np.ndarray, k: int) -> np.ndarray:
    """Slots moved ``k`` to the left along axis 1 (zero fill): ``out[:, j] = a[:, j + k]``."""
    out = np.zeros_like(a)
    r = a.shape[1]
    if k < r:
        out[:, : r - k] = a[:, k:]
    return out


def _bcast(mask: np.ndarray, a: np.ndarray) -> np.ndarray:
    return mask.reshape(mask.shape + (1,) * (a.ndim - mask.ndim))


def compact_slots(keep: np.ndarray, payload: list[np.ndarray]) -> list[np.ndarray]:
    """Kept slots (axis 1) moved to the front of each row, in order, in ``log2 R`` fixed
    shift rounds (as ``strings.compact``, one slot a unit); dropped slots become zeros."""
    r = keep.shape[1]
    dropped = ~keep
    d = select(keep, np.cumsum(dropped, axis=1) - dropped, 0)
    xs = [select(_bcast(keep, p), p, np.zeros(1, dtype=p.dtype)) for p in payload]
    k = 1
    while k < r:
        move = keep & ((d & k) != 0)
        stay = keep & ~move
        xs = [select(_bcast(stay, x), x, _shift_slots(select(_bcast(move, x), x, np.zeros(1, dtype=x.dtype)), k))
              for x in xs]
        d = select(stay, d, 0) + _shift_slots(select(move, d, 0), k)
        keep = stay | _shift_slots(move, k)
        k <<= 1
    return xs


def _lanes(col: Column) -> list[np.ndarray]:
    out = [col.values, col.valid]
    if col.is_string:
        out.append(col.lengths.astype(np.int32))
    return out


def list_agg(kern, col: Column, include: np.ndarray | None, rows: int, total: int, grouped: bool,
             real: np.ndarray, starts: np.ndarray) -> ListColumn:
    """The runs' lists (on each run's last row; NULL when no element is included).
    ``include``: the FILTER's per-row result (None: every row)."""
    n = real.shape[0]
    check_list_agg(rows, total, slot_bytes(col), grouped)
    inc = real if include is None else real & include
    count = kern.seg_prefix(inc, starts, "count")      # included rows so far in the run (inclusive)
    typ = pa.list_(col.type)
    lanes = _lanes(col)
    if not grouped:
        present = inc.reshape(1, n)
        moved = compact_slots(present, [a.reshape((1,) + a.shape) for a in lanes])
        last = count[n - 1:] if n else np.zeros(1, dtype=np.int64)
        valid = np.broadcast_to(last > 0, (n,)).copy()
        out = [np.broadcast_to(m, (n,) + m.shape[1:]) for m in moved]
        return ListColumn(typ, out[0], valid, None, np.broadcast_to(last, (n,)).copy(), out[1],
                          out[2] if col.is_string else None)
    r = max(1, min(rows, n))
    gid = np.cumsum(starts)
    cand = [np.zeros((n, r) + a.shape[1:], dtype=a.dtype) for a in lanes]
    present = np.zeros((n, r), dtype=bool)
    for k in range(r):                      # slot k holds row i − d, d = r − 1 − k (a fixed stride)
        d = r - 1 - k
        if d >= n:
            continue
        same = np.zeros(n, dtype=bool)
        same[d:] = gid[d:] == gid[: n - d]
        for c, a in zip(cand, lanes):
            c[d:, k] = a[: n - d]
        present[d:, k] = inc[: n - d]
        present[:, k] = present[:, k] & same
    moved = compact_slots(present, cand)
    count = np.minimum(count, r)            # a sound bound never clips (the clip is public)
    return ListColumn(typ, moved[0], count > 0, None, count, moved[1], moved[2] if col.is_string else None)
