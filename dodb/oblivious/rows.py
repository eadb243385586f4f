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

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

__all__ = ["RowLayout", "pack_rows", "unpack_rows", "row_bytes", "word_columns", "from_word_columns",
           "word_block", "fill_word_block", "block_words", "block_layout", "BlockLayout", "from_word_block",
           "row_words"]


@dataclass(frozen=True)
class RowLayout:
    dtypes: tuple
    shapes: tuple  # per array: trailing shape
    offsets: tuple  # byte offset of each array inside a row
    sizes: tuple  # bytes per row of each array
    width: int  # uint64 words per row


def row_bytes(a: np.ndarray) -> int:
    """Bytes one row of ``a`` (first axis = rows) occupies."""
    return a.dtype.itemsize * math.prod(a.shape[1:])  # plain ints: called per array per pass


def row_words(a: np.ndarray) -> np.ndarray:
    """The rows of ``a`` as ``(n, k)`` ``uint64`` words (row bytes zero-padded to whole words)."""
    n, nbytes = int(a.shape[0]), row_bytes(a)
    k = -(-nbytes // 8)
    if not n or not nbytes:
        return np.zeros((n, k), dtype=np.uint64)
    if a.ndim == 2 and a.dtype.itemsize == 8:  # whole words in any layout (a column-major DECIMAL): no copy
        return a.view(np.uint64)
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


def _narrow(a: np.ndarray) -> bool:
    """An array of 1, 2 or 4 bytes a row (a bool, a narrow number, a one-byte string block):
    it shares a word with others."""
    return row_bytes(a) in (1, 2, 4)


def _field(a: np.ndarray) -> np.ndarray:
    """A narrow array's rows as one unsigned number each (its row bytes, reinterpreted)."""
    n, rb = int(a.shape[0]), row_bytes(a)
    return np.ascontiguousarray(a).view(np.uint8).reshape(n, rb).view(f"u{rb}").reshape(n)


def _from_field(v: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_field`: unsigned numbers back to rows shaped like ``like``."""
    n, rb = int(v.shape[0]), row_bytes(like)
    v = np.ascontiguousarray(v.astype(f"u{rb}", copy=False))
    return v.view(np.uint8).reshape(n, rb).view(like.dtype).reshape((n,) + like.shape[1:])


_LITTLE = sys.byteorder == "little"


def _lanes_of(row: np.ndarray, rb: int) -> np.ndarray:
    """A contiguous ``uint64`` row of ``n`` words as ``(n, 8 // rb)`` lanes of ``rb`` bytes: on a
    little-endian machine the field at bit shift ``s`` (a multiple of ``8·rb``) is lane
    ``s // (8·rb)``, so a field is read or written with one strided pass, no shifts."""
    return row.view(f"u{rb}").reshape(int(row.shape[0]), 8 // rb)


@dataclass(frozen=True)
class BlockLayout:
    """Where each array of a :func:`word_block` sits: per array ``(first word, bit shift,
    words, shared)`` — ``shared`` marks a narrow field OR-ed into a word with others — and
    the block's words."""
    places: tuple
    words: int


def block_layout(arrays: Sequence[np.ndarray]) -> BlockLayout:
    """The word block's layout, a function of dtypes and shapes alone (never of the data).

    An array of 8 bytes a row takes one word, a wider or multi-dimensional one its row
    bytes in whole words; narrow 1-D fields (bools, 8–32-bit numbers) share words, widest
    first, each at a shift of a multiple of its own width — so a bool costs a byte of a
    word, not a word, in every pass that moves rows.
    """
    return _layout_of(tuple((a.dtype, a.shape[1:]) for a in arrays))


@lru_cache(maxsize=4096)
def _layout_of(signature: tuple) -> BlockLayout:
    """:func:`block_layout` from each array's ``(dtype, trailing shape)``: every pass that moves
    rows asks for it, so it is computed once per signature (it reads nothing else)."""
    likes = [np.empty((0,) + shape, dtype=dtype) for dtype, shape in signature]
    places: list = [None] * len(likes)
    w = 0
    for i, a in enumerate(likes):
        if not _narrow(a):
            k = 1 if _simple(a) else -(-row_bytes(a) // 8)
            places[i] = (w, 0, k, False)
            w += k
    used: list[int] = []  # bits filled in each shared word; widest first, so next fit is first fit
    narrow = [i for i, a in enumerate(likes) if _narrow(a)]
    for i in sorted(narrow, key=lambda i: -row_bytes(likes[i])):  # lint: public dtypes only
        bits = 8 * row_bytes(likes[i])
        if not used or used[-1] + bits > 64:  # lint: public dtype widths only
            used.append(0)
        places[i] = (w + len(used) - 1, used[-1], 1, True)
        used[-1] += bits
    return BlockLayout(tuple(places), w + len(used))


def block_words(arrays: Sequence[np.ndarray]) -> int:
    """Rows of the :func:`word_block` of ``arrays``."""
    return block_layout(arrays).words


def word_block(arrays: Sequence[np.ndarray], m: int) -> tuple[np.ndarray, BlockLayout]:
    """Every array's words stacked into one ``(W, m)`` block (rows ``n..m`` zero), and its layout.

    Wide arrays are their :func:`word_columns` (little-endian words); 1-D arrays of 8 bytes
    a row take a direct widening copy, narrower ones share words (:func:`block_layout`).
    """
    out = np.empty((block_words(arrays), m), dtype=np.uint64)
    return out, fill_word_block(arrays, out)


def fill_word_block(arrays: Sequence[np.ndarray], out: np.ndarray) -> BlockLayout:
    """:func:`word_block` into ``out``, a ``(block_words(arrays), m)`` ``uint64`` array (e.g.
    rows of a larger block); returns the layout :func:`from_word_block` reads back."""
    layout = block_layout(arrays)
    first = min((w for w, _, _, shared in layout.places if shared), default=layout.words)
    # the shared words come last; their fields are OR-ed in
    out[first:layout.words] = 0  # lint: public a slice of the layout (dtypes only)
    for a, (w, shift, k, shared) in zip(arrays, layout.places):
        n = int(a.shape[0])
        if shared:
            v = _field(a)
            if _LITTLE:  # written into its lane of the (zeroed) word: one strided pass
                rb = row_bytes(a)
                lane = shift // (8 * rb)
                _lanes_of(out[w:w + 1, :n][0], rb)[:, lane:lane + 1] = v[:, None]
            elif shift == 0:
                out[w:w + 1, :n] = out[w:w + 1, :n] | v
            else:
                wide = v.astype(np.uint64)
                wide <<= np.uint64(shift)
                out[w:w + 1, :n] = out[w:w + 1, :n] | wide
            continue
        out[w:w + k, n:] = 0
        if _simple(a):
            out[w:w + 1, :n] = np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")
        else:
            rw = row_words(a)
            for j in range(k):
                out[w + j:w + j + 1, :n] = rw[:, j]
    return layout


def from_word_block(block: np.ndarray, likes: Sequence[np.ndarray], layout: BlockLayout,
                    n: int) -> list[np.ndarray]:
    """Inverse of :func:`word_block` for the first ``n`` rows, shaped like ``likes``.

    An array of one 8-byte word a row comes back as a view of its row of ``block`` (no
    copy: the block is the caller's own, and each array has rows of its own, so writing
    one never touches another); the others are fresh arrays."""
    out = []
    for a, (w, shift, k, shared) in zip(likes, layout.places):
        if shared:
            row = block[w:w + 1, :n][0]
            if _LITTLE:
                rb = row_bytes(a)
                lane = shift // (8 * rb)
                out.append(_from_field(_lanes_of(np.ascontiguousarray(row), rb)[:, lane:lane + 1][:, 0], a))
            else:
                out.append(_from_field(row >> np.uint64(shift) if shift else row, a))
        elif _simple(a):  # 8 bytes a row (narrower ones share words)
            out.append(block[w:w + 1, :n][0].view(a.dtype))
        else:
            out.append(from_word_columns(block[w:w + k], a, n))
    return out


def _grain(offset: int, size: int) -> int:
    """The widest word (8, 4, 2 or 1 bytes) that both a field's offset and its size are whole
    multiples of: the field is copied in words of that width (numpy copies a strided column of
    wide words many times faster than one of bytes)."""
    for g in (8, 4, 2):
        if offset % g == 0 and size % g == 0:
            return g
    return 1


def _rows_per_tile(width: int) -> int:
    """Rows of a ``width``-word matrix in about 4 MiB (a public function of the layout; of
    the tile sizes tried, 64 KiB to 4 MiB, the largest copied fastest on a 600k-row test)."""
    return max(64, 524288 // max(1, width))


def pack_rows(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, RowLayout]:
    """Pack ``arrays`` (same first axis) into an ``(n, W)`` ``uint64`` matrix.

    Fields are laid out widest element first (a stable order of the dtypes alone), so each
    sits on a boundary of its own element width and is copied in words of that width."""
    n = int(arrays[0].shape[0])
    sizes = [row_bytes(a) for a in arrays]
    order = sorted(range(len(arrays)), key=lambda i: -arrays[i].dtype.itemsize)  # lint: public dtypes only
    offsets = [0] * len(arrays)
    at = 0
    for i in order:
        offsets[i] = at  # lint: public dtypes only
        at += sizes[i]
    width = max(1, -(-at // 8))
    out = np.empty((n, width * 8), dtype=np.uint8)
    out[:, at:] = 0
    fields = []
    for a, off, size in zip(arrays, offsets, sizes):
        if size:
            g = _grain(off, size)
            src = np.ascontiguousarray(a).view(np.uint8).reshape(n, size).view(f"u{g}")
            fields.append((src, out.view(f"u{g}")[:, off // g:(off + size) // g]))
    step = _rows_per_tile(width)
    for lo in range(0, n, step):  # a tile of rows stays in cache while every field is written into it
        for src, dst in fields:
            dst[lo:lo + step] = src[lo:lo + step]
    layout = RowLayout(tuple(a.dtype for a in arrays), tuple(a.shape[1:] for a in arrays),
                       tuple(offsets), tuple(sizes), width)
    return out.view(np.uint64), layout


def unpack_rows(matrix: np.ndarray, layout: RowLayout) -> list[np.ndarray]:
    """Inverse of :func:`pack_rows` (copies each column out)."""
    n = int(matrix.shape[0])
    raw = np.ascontiguousarray(matrix).view(np.uint8).reshape(n, layout.width * 8)
    fields, out = [], []
    for dt, shape, off, size in zip(layout.dtypes, layout.shapes, layout.offsets, layout.sizes):
        g = _grain(off, size)
        col = np.empty((n, size // g), dtype=f"u{g}")
        fields.append((raw.view(f"u{g}")[:, off // g:(off + size) // g], col))
        out.append(col.view(np.uint8).view(dt).reshape((n,) + tuple(shape)))
    step = _rows_per_tile(layout.width)
    for lo in range(0, n, step):  # as in pack_rows: one tile of the matrix in cache at a time
        for src, dst in fields:
            dst[lo:lo + step] = src[lo:lo + step]
    return out
