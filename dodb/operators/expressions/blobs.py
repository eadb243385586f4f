"""``encode(s)`` — a BLOB of a string's UTF-8 bytes — read by ``octet_length`` and
``to_base64``/``base64`` (docs/design.md §Expressions).

dodb has no BLOB lanes: ``encode`` is the identity on the bytes of a VARCHAR, so these two
take the string's own lanes when their argument is ``encode(text)``, and refuse any other
BLOB (a BLOB column, a cast, ``encode`` on its own).  Base64 reads every 3-byte group of
the public width and writes its 4 characters, so the result's width is ``4·⌈w/3⌉``; the
characters are made by arithmetic on the 6-bit values, not a table look-up, and ``=``
pads the row's last group by comparing byte positions with the row's length.

>>> to_base64(np.frombuffer(b"Man\\x00", np.uint8).reshape(1, 4), np.array([2]))[0].tobytes()
b'TWE=\\x00\\x00\\x00\\x00'
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from .functions import ANON, handles
from .numeric import Unsupported
from .text import string_value
from .value import Val
from ...oblivious.select import floor_div, select

__all__ = ["to_base64"]


def _encoded(ev, node) -> Val:
    """The string whose bytes ``node`` (``encode(text)``) is."""
    arg = node.expressions[0] if isinstance(node, exp.Anonymous) and len(node.expressions) == 1 else node.this
    while isinstance(arg, exp.Paren):
        arg = arg.this
    if not isinstance(arg, exp.Encode) or str(arg.args.get("charset").name).lower() not in ("utf-8", "utf8"):
        raise Unsupported("a BLOB other than encode(text)")
    return string_value(ev, arg.this)


def _sextet_chars(x: np.ndarray) -> np.ndarray:
    """Base64's character for each 6-bit value: A–Z, a–z, 0–9, +, /."""
    x = x.astype(np.int64)
    return select(x < 26, x + 65, select(x < 52, x + 71, select(x < 62, x - 4, select(x == 62, 43, 47))))


def to_base64(mat: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 4·⌈w/3⌉)`` base64 text (``=`` padded) and its lengths, of byte rows."""
    n, w = mat.shape
    groups = max(1, -(-w // 3))
    out = np.zeros((n, 4 * groups), dtype=np.uint8)
    for g in range(groups):  # public loop over the width's groups
        b = []
        for j in range(3):
            col = mat[:, 3 * g + j] if 3 * g + j < w else np.zeros(n, np.uint8)  # lint: public offsets
            b.append(select(3 * g + j < lengths, col, 0).astype(np.int64))
        sextets = [b[0] >> 2, ((b[0] & 3) << 4) | (b[1] >> 4), ((b[1] & 15) << 2) | (b[2] >> 6), b[2] & 63]
        rest = lengths - 3 * g  # bytes of this row from the group on
        for k, x in enumerate(sextets):
            ch = select(rest * 4 > 3 * k, _sextet_chars(x), 61)  # '=' past the group's last byte
            out[:, 4 * g + k] = select(rest > 0, ch, 0)  # lint: public offsets
    return out, 4 * -floor_div(-lengths, 3)  # whole groups of 3 bytes, rounded up


def _octet_length(ev, node):
    v = _encoded(ev, node)
    return Val(ev.type_of(node), v.lengths.astype(np.int64), v.valid, v.err)


@handles(exp.ToBase64)
def _ev_to_base64(ev, node):
    v = _encoded(ev, node)
    mat, lengths = to_base64(v.data, v.lengths)
    return Val(ev.type_of(node), mat, v.valid, v.err, lengths.astype(np.int64))


ANON["OCTET_LENGTH"] = _octet_length
ANON["BASE64"] = ANON["TO_BASE64"] = _ev_to_base64
