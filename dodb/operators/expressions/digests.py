"""MD5 and SHA-256 of strings, obliviously (docs/design.md §Expressions; issue 30's hashing).

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
from ...oblivious.select import floor_div, select

__all__ = ["md5_hex", "md5_words", "sha256_hex", "sha256_words"]

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


def _padded_blocks(mat: np.ndarray, lengths: np.ndarray, big_endian: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Every row's message padded as MD5 and SHA-256 pad it (0x80, zeros, the bit length in
    the last 8 bytes of its own last block) to the block count the width needs: ``(n, 16·B)``
    uint32 words, each row's last block index, ``B``."""
    n, w = mat.shape
    blocks = (w + 8) // 64 + 1                                  # enough for the widest row
    size = 64 * blocks
    lengths = lengths.astype(np.int64)
    pos = np.arange(size, dtype=np.int64)[None, :]
    msg = np.zeros((n, size), dtype=np.uint8)
    msg[:, :w] = mat
    msg = select(pos < lengths[:, None], msg, np.uint8(0))
    msg = select(pos == lengths[:, None], np.uint8(0x80), msg)
    last = floor_div(lengths + 8, 64)                            # each row's final block
    bits = (lengths * 8).astype(np.uint64)
    field = pos - (last[:, None] * 64 + 56)                      # 0..7 inside the length field
    inside = (field >= 0) & (field < 8)
    place = 7 - np.clip(field, 0, 7) if big_endian else np.clip(field, 0, 7)
    byte = ((bits[:, None] >> (place * 8).astype(np.uint64)) & np.uint64(0xFF)).astype(np.uint8)
    msg = select(inside, byte, msg)
    words = np.ascontiguousarray(msg).view(">u4" if big_endian else "<u4").astype(np.uint32)
    return words, last, blocks


def _digest_words(mat: np.ndarray, lengths: np.ndarray, init: tuple, block, big_endian: bool) -> np.ndarray:
    """Every block of every row through ``block(state, words) -> state``; each row's state after
    its own last block (``(n, len(init))`` uint32)."""
    n = mat.shape[0]
    words, last, blocks = _padded_blocks(mat, lengths, big_endian)
    with np.errstate(over="ignore"):
        state = tuple(np.full(n, v, dtype=np.uint32) for v in init)
        out = np.zeros((n, len(init)), dtype=np.uint32)
        for k in range(blocks):                                  # every block of every row
            state = block(state, words[:, 16 * k:16 * k + 16])
            out = select((last == k)[:, None], np.stack(state, axis=1), out)
    return out


def _md5_block(state: tuple, block: np.ndarray) -> tuple:
    return tuple(x + y for x, y in zip(state, _compress(state, block)))


def md5_words(mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(n, 4)`` uint32: each row's MD5 state words (the digest, little-endian)."""
    return _digest_words(mat, lengths, _INIT, _md5_block, big_endian=False)


_SHA_K = [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
          0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
          0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
          0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
          0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
          0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
          0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
          0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]
_SHA_INIT = (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)


def _rotr(x: np.ndarray, c: int) -> np.ndarray:
    return (x >> np.uint32(c)) | (x << np.uint32(32 - c))


def _sha256_block(state: tuple, block: np.ndarray) -> tuple:
    """One 64-byte block of every row (``block``: ``(n, 16)`` big-endian uint32 words)."""
    w = [block[:, t:t + 1].reshape(-1) for t in range(16)]
    for t in range(16, 64):
        s0 = _rotr(w[t - 15], 7) ^ _rotr(w[t - 15], 18) ^ (w[t - 15] >> np.uint32(3))
        s1 = _rotr(w[t - 2], 17) ^ _rotr(w[t - 2], 19) ^ (w[t - 2] >> np.uint32(10))
        w.append(w[t - 16] + s0 + w[t - 7] + s1)
    a, b, c, d, e, f, g, h = state
    for t in range(64):
        t1 = h + (_rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)) + ((e & f) ^ (~e & g)) + np.uint32(_SHA_K[t]) + w[t]
        t2 = (_rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))
        a, b, c, d, e, f, g, h = t1 + t2, a, b, c, d + t1, e, f, g
    return tuple(x + y for x, y in zip(state, (a, b, c, d, e, f, g, h)))


def sha256_words(mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(n, 8)`` uint32: each row's SHA-256 (FIPS 180-4), the digest's big-endian words."""
    return _digest_words(mat, lengths, _SHA_INIT, _sha256_block, big_endian=True)


def _hex_text(digest: np.ndarray) -> np.ndarray:
    """Lower-case hex of digest bytes ``(n, k)``: ``(n, 2k)`` text."""
    hexed = np.empty((digest.shape[0], 2 * digest.shape[1]), dtype=np.uint8)
    hexed[:, 0::2] = _hex_digit(digest >> 4)
    hexed[:, 1::2] = _hex_digit(digest & 0x0F)
    return hexed


def md5_hex(mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(n, 32)`` uint8: each row's MD5 as lower-case hex text."""
    return _hex_text(md5_words(mat, lengths).astype("<u4").view(np.uint8).reshape(-1, 16))


def sha256_hex(mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(n, 64)`` uint8: each row's SHA-256 as lower-case hex text."""
    return _hex_text(sha256_words(mat, lengths).astype(">u4").view(np.uint8).reshape(-1, 32))


def _hex_digit(nibble: np.ndarray) -> np.ndarray:
    """'0'-'9', 'a'-'f' by arithmetic (no table look-up by value)."""
    return (nibble + 48 + (nibble > 9) * 39).astype(np.uint8)


@handles(exp.MD5)
def _ev_md5(ev, node) -> Val:
    """``md5(s)``: 32 lower-case hex characters."""
    if node.expressions:
        raise Unsupported("MD5 with these arguments")
    return _digest(ev, node, md5_hex, "MD5")


@handles(exp.SHA2)
def _ev_sha256(ev, node) -> Val:
    """``sha256(s)``: 64 lower-case hex characters (SHA-2 of other lengths is refused)."""
    length = node.args.get("length")
    if length is not None and not (isinstance(length, exp.Literal) and str(length.this) == "256"):
        raise Unsupported("SHA2 of a length other than 256")
    return _digest(ev, node, sha256_hex, "SHA256")


def _digest(ev, node, fn, what: str) -> Val:
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if v.type.kind != "str" or rt.kind != "str":
        raise Unsupported(f"{what} of {v.type}")
    text = fn(v.data, v.lengths)
    return Val(rt, text, v.valid, v.err, np.full(v.n, text.shape[1], dtype=np.int64))

