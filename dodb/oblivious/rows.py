"""Row layouts: payload columns as ``uint64`` words.

``pack_rows`` folds many payload columns into one ``(n, W)`` matrix of ``W`` words per
row, so narrow columns (flags, 32-bit values) share words and a network moves ``W``
words per row instead of one array per column.  ``word_columns`` turns an array into
``(words, m)`` — one contiguous array per word — the layout in which a vectorised pass
walks long runs (a row-major ``(n, W)`` block gives numpy inner loops of only ``W``).
Both are fixed reinterpretations of bytes: the layout depends only on dtypes and
widths, never on the data.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["RowLayout", "pack_rows", "unpack_rows", "row_bytes", "word_columns", "from_word_columns",
           "word_block", "fill_word_block", "block_words", "from_word_block", "row_words"]


@dataclass(frozen=True)
class RowLayout:
    dtypes: tuple
    shapes: tuple  # per array: trailing shape
    offsets: tuple  # byte offset of each array inside a row
    sizes: tuple  # bytes per row of each array
    width: int  # uint64 words per row


def row_bytes(a: np.ndarray) -> int:
    """Bytes one row of ``a`` (first axis = rows) occupies."""
    return int(a.dtype.itemsize * int(np.prod(a.shape[1:], dtype=np.int64)))


def row_words(a: np.ndarray) -> np.ndarray:
    """The rows of ``a`` as ``(n, k)`` ``uint64`` words (row bytes zero-padded to whole words)."""
    n, nbytes = int(a.shape[0]), row_bytes(a)
    k = -(-nbytes // 8)
    if not n or not nbytes:
        return np.zeros((n, k), dtype=np.uint64)
    flat = np.ascontiguousarray(a).reshape(n, nbytes // a.dtype.itemsize)
    if nbytes == 8 * k:
        return flat.view(np.uint64)  # whole words already: a view, no copy
    raw = np.empty((n, 8 * k), dtype=np.uint8)
    raw[:, nbytes:] = 0
    raw[:, :nbytes] = flat.view(np.uint8)
    return raw.view(np.uint64)


def word_columns(a: np.ndarray, m: int) -> np.ndarray:
    """The rows of ``a`` as ``(words, m)`` ``uint64`` (row bytes and rows ``n..m`` zero-padded)."""
    n = int(a.shape[0])
    rw = row_words(a)
    out = np.empty((rw.shape[1], m), dtype=np.uint64)
    out[:, n:] = 0
    for j in range(rw.shape[1]):  # one strided column at a time: far faster than a transposed copy
        out[j, :n] = rw[:, j]
    return out


def from_word_columns(words: np.ndarray, like: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`word_columns` for the first ``n`` rows, with ``like``'s dtype and shape."""
    k = int(words.shape[0])
    rows = np.empty((n, k), dtype=np.uint64)
    for j in range(k):
        rows[:, j] = words[j, :n]
    nbytes = row_bytes(like)
    if nbytes == 8 * k and n:
        return rows.view(like.dtype).reshape((n,) + like.shape[1:])
    body = np.ascontiguousarray(rows.view(np.uint8)[:, :nbytes])
    return body.view(like.dtype).reshape((n,) + like.shape[1:])


def _simple(a: np.ndarray) -> bool:
    """1-D numbers/bools of at most 8 bytes: one word per row by plain widening (no byte copy)."""
    return a.ndim == 1 and a.dtype.kind in "biuf" and a.dtype.itemsize in (1, 2, 4, 8)


def block_widths(arrays: Sequence[np.ndarray]) -> list[int]:
    """Words per row each array takes in :func:`word_block` (a function of dtypes and shapes)."""
    return [1 if _simple(a) else -(-row_bytes(a) // 8) for a in arrays]


def block_words(arrays: Sequence[np.ndarray]) -> int:
    """Rows of the :func:`word_block` of ``arrays``."""
    return sum(block_widths(arrays))


def word_block(arrays: Sequence[np.ndarray], m: int) -> tuple[np.ndarray, list[int]]:
    """Every array's :func:`word_columns` stacked into one ``(W, m)`` block, and each one's word count.

    Same bytes as ``word_columns`` (little-endian words); 1-D arrays of at most 8 bytes per
    row take a direct widening copy instead of the byte-level path.
    """
    out = np.empty((block_words(arrays), m), dtype=np.uint64)
    return out, fill_word_block(arrays, out)


def fill_word_block(arrays: Sequence[np.ndarray], out: np.ndarray) -> list[int]:
    """:func:`word_block` into ``out``, a ``(block_words(arrays), m)`` ``uint64`` array (e.g.
    rows of a larger block); returns each array's word count."""
    widths = block_widths(arrays)
    w = 0
    for a, k in zip(arrays, widths):
        n = int(a.shape[0])
        out[w:w + k, n:] = 0
        if _simple(a):
            out[w:w + 1, :n] = np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")
        else:
            rw = row_words(a)
            for j in range(k):
                out[w + j:w + j + 1, :n] = rw[:, j]
        w += k
    return widths


def from_word_block(block: np.ndarray, likes: Sequence[np.ndarray], widths: Sequence[int], n: int) -> list[np.ndarray]:
    """Inverse of :func:`word_block` for the first ``n`` rows (fresh arrays shaped like ``likes``)."""
    out, w = [], 0
    for a, k in zip(likes, widths):
        if _simple(a):
            out.append(block[w:w + 1, :n][0].astype(f"u{a.dtype.itemsize}").view(a.dtype))
        else:
            out.append(from_word_columns(block[w:w + k], a, n))
        w += k
    return out


def pack_rows(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, RowLayout]:
    """Pack ``arrays`` (same first axis) into an ``(n, W)`` ``uint64`` matrix."""
    n = int(arrays[0].shape[0])
    sizes = [row_bytes(a) for a in arrays]
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
