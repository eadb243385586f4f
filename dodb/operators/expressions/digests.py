"""MD5 of strings, obliviously (docs/design.md §Expressions; issue 30's hashing).

Every row is padded to the same number of 64-byte blocks — the most a string of the column's
public width needs — and every block is compressed for every row; a row's digest is the
state after its own last block, selected with a mask.  The message bytes, the 0x80 marker
and the bit length are placed by comparisons of byte positions with the row's length, so
the work and the access pattern depend on the width and the row count alone (RFC 1321,
whole-column uint32 arithmetic).

>>> import numpy as np
>>> mat = np.frombuffer(b"abc\\x00", dtype=np.uint8).reshape(1, 4)
>>> md5_hex(mat, np.array([3]))[0].tobytes().decode()
'900150983cd24fb0d6963f7d28e17f72'
"""
from __future__ import annotations

import math

import numpy as np
from sqlglot import exp

from .functions import handles
from .numeric import Unsupported
from .value import Val

__all__ = ["md5_hex", "md5_words"]

_S = [7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4
_K = [int(abs(math.sin(i + 1)) * 2 ** 32) & 0xFFFFFFFF for i in range(64)]
_INIT = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)


def _rotl(x: np.ndarray, c: int) -> np.ndarray:
    return (x << np.uint32(c)) | (x >> np.uint32(32 - c))


def _compress(state: tuple, block: np.ndarray) -> tuple:
    """One 64-byte block of every row (``block``: ``(n, 16)`` little-endian uint32 words)."""
    a, b, c, d = state
    for i in range(64):  # the round number is public: the same rounds for every row
        if i < 16:  # lint: public round number
            f, g = (b & c) | (~b & d), i
        elif i < 32:  # lint: public round number
            f, g = (d & b) | (~d & c), (5 * i + 1) % 16
        elif i < 48:  # lint: public round number
            f, g = b ^ c ^ d, (3 * i + 5) % 16
        else:
            f, g = c ^ (b | ~d), (7 * i) % 16
        f = f + a + np.uint32(_K[i]) + block[:, g:g + 1].reshape(-1)
        a, d, c = d, c, b
        b = b + _rotl(f, _S[i])
    return a, b, c, d


def md5_words(mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(n, 4)`` uint32: each row's MD5 state words (the digest, little-endian)."""
    n, w = mat.shape
    blocks = (w + 8) // 64 + 1                                  # enough for the widest row
    size = 64 * blocks
    lengths = lengths.astype(np.int64)
    pos = np.arange(size, dtype=np.int64)[None, :]
    msg = np.zeros((n, size), dtype=np.uint8)
    msg[:, :w] = mat
    msg = np.where(pos < lengths[:, None], msg, np.uint8(0))
    msg = np.where(pos == lengths[:, None], np.uint8(0x80), msg)
    last = (lengths + 8) // 64                                   # each row's final block
    bits = (lengths * 8).astype(np.uint64)
    field = pos - (last[:, None] * 64 + 56)                      # 0..7 inside the length field
    inside = (field >= 0) & (field < 8)
    shift = (np.clip(field, 0, 7) * 8).astype(np.uint64)
    byte = ((bits[:, None] >> shift) & np.uint64(0xFF)).astype(np.uint8)
    msg = np.where(inside, byte, msg)
    words = np.ascontiguousarray(msg).view("<u4").astype(np.uint32)
    with np.errstate(over="ignore"):
        state = tuple(np.full(n, v, dtype=np.uint32) for v in _INIT)
        out = np.zeros((n, 4), dtype=np.uint32)
        for k in range(blocks):                                  # every block of every row
            a, b, c, d = _compress(state, words[:, 16 * k:16 * k + 16])
            state = (state[0] + a, state[1] + b, state[2] + c, state[3] + d)
            mine = (last == k)[:, None]
            out = np.where(mine, np.stack(state, axis=1), out)
    return out


def md5_hex(mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(n, 32)`` uint8: each row's MD5 as lower-case hex text."""
    digest = md5_words(mat, lengths).astype("<u4").view(np.uint8).reshape(-1, 16)
    hexed = np.empty((digest.shape[0], 32), dtype=np.uint8)
    hexed[:, 0::2] = _hex_digit(digest >> 4)
    hexed[:, 1::2] = _hex_digit(digest & 0x0F)
    return hexed


def _hex_digit(nibble: np.ndarray) -> np.ndarray:
    """'0'-'9', 'a'-'f' by arithmetic (no table look-up by value)."""
    return (nibble + 48 + (nibble > 9) * 39).astype(np.uint8)


@handles(exp.MD5)
def _ev_md5(ev, node) -> Val:
    """``md5(s)``: 32 lower-case hex characters."""
    if node.expressions:
        raise Unsupported("MD5 with these arguments")
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if v.type.kind != "str" or rt.kind != "str":
        raise Unsupported(f"MD5 of {v.type}")
    return Val(rt, md5_hex(v.data, v.lengths), v.valid, v.err, np.full(v.n, 32, dtype=np.int64))

