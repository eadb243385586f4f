"""Row packing: many payload columns as one fixed-width ``uint64`` row matrix.

Moving rows through a network column by column costs one vectorised pass (and one
Python call) per column per stage; packing all columns into a single ``(n, W)`` matrix
moves a whole row with one pass.  Packing is a fixed reinterpretation of bytes — the
layout depends only on the column dtypes and widths, never on the data.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["RowLayout", "pack_rows", "unpack_rows"]


@dataclass(frozen=True)
class RowLayout:
    dtypes: tuple
    shapes: tuple  # per array: trailing shape
    offsets: tuple  # byte offset of each array inside a row
    sizes: tuple  # bytes per row of each array
    width: int  # uint64 words per row


def pack_rows(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, RowLayout]:
    """Pack ``arrays`` (same first axis) into an ``(n, W)`` ``uint64`` matrix."""
    n = int(arrays[0].shape[0])
    sizes = [int(a.dtype.itemsize * int(np.prod(a.shape[1:], dtype=np.int64))) for a in arrays]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
    total = offsets[-1]
    width = max(1, -(-total // 8))
    out = np.zeros((n, width * 8), dtype=np.uint8)
    for a, off, size in zip(arrays, offsets, sizes):
        out[:, off:off + size] = np.ascontiguousarray(a).view(np.uint8).reshape(n, size)
    layout = RowLayout(tuple(a.dtype for a in arrays), tuple(a.shape[1:] for a in arrays),
                       tuple(offsets[:-1]), tuple(sizes), width)
    return out.view(np.uint64), layout


def unpack_rows(matrix: np.ndarray, layout: RowLayout) -> list[np.ndarray]:
    """Inverse of :func:`pack_rows` (copies each column out)."""
    n = int(matrix.shape[0])
    raw = np.ascontiguousarray(matrix).view(np.uint8).reshape(n, layout.width * 8)
    out = []
    for dt, shape, off, size in zip(layout.dtypes, layout.shapes, layout.offsets, layout.sizes):
        col = raw[:, off:off + size].copy()
        out.append(col.view(dt).reshape((n,) + tuple(shape)))
    return out
