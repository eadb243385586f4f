"""String function handlers (LIKE, SUBSTRING, concatenation, case mapping, trimming …).
See docs/design.md §Expressions.

Patterns, positions, counts and fill strings must be constants (public); the value
being transformed is a whole column of fixed-width lanes (:mod:`.strings`).
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from . import casemap, strings
from .functions import ANON, handles
from .numeric import Unsupported
from .value import Val
from ...oblivious.select import any_along, select

__all__: list[str] = []


def _str(ev, node) -> Val:
    v = ev.ev(node)
    if v.type.kind == "null":
        return Val(ev.type_of(node) if ev.type_of(node).kind == "str" else v.type, np.zeros((v.n, 1), np.uint8),
                   v.valid, v.err, np.zeros(v.n, dtype=np.int64))
    if v.type.kind != "str":
        raise Unsupported(f"string function on {v.type}")
    return v


def _text(ev, node, what: str) -> bytes:
    val = ev.literal(node, what)
    if val is None:
        raise Unsupported(f"{what} with a NULL argument")
    return str(val).encode()


def _out(ev, node, v: Val, mat: np.ndarray, lengths: np.ndarray, width: int | None = None) -> Val:
    if width is not None:
        mat = mat[:, :width] if mat.shape[1] >= width else np.pad(mat, ((0, 0), (0, width - mat.shape[1])))
    return Val(ev.type_of(node), mat, v.valid, v.err, lengths)


def _bool(ev, node, v: Val, res: np.ndarray) -> Val:
    return Val(ev.type_of(node), res, v.valid, v.err)


@handles(exp.Like, exp.ILike)
def _ev_like(ev, node):
    if node.args.get("escape") is not None:
        raise Unsupported("LIKE … ESCAPE")
    v = _str(ev, node.this)
    const = ev.p.consts.get(id(node.expression))
    if const is None and isinstance(node, exp.Like):  # a pattern per row: LIKE in characters
        pv = _str(ev, node.expression)
        res = strings.like_each(v.data, v.lengths, pv.data, pv.lengths)
        res = ~res if node.args.get("negate") else res
        return Val(ev.type_of(node), res, v.valid & pv.valid, np.maximum(v.err, pv.err))
    pattern = ev.literal(node.expression, "LIKE")
    if pattern is None:
        return Val(ev.type_of(node), np.zeros(v.n, bool), np.zeros(v.n, bool), v.err)
    pat = str(pattern)
    mat, lengths = v.data, v.lengths
    if isinstance(node, exp.ILike):  # DuckDB: lower(string) LIKE lower(pattern)
        mat, lengths = casemap.case_map(mat, lengths, upper=False)
        pat = ev.p.lowered.get(pat, None)
        if pat is None:
            raise Unsupported("ILIKE pattern")
    res = strings.like(mat, lengths, pat.encode())
    if node.args.get("negate"):
        res = ~res
    return _bool(ev, node, v, res)


@handles(exp.Escape)
def _ev_like_escape(ev, node):
    """``s [NOT] LIKE pattern ESCAPE 'c'``: the byte after ``c`` is a literal (a one-byte escape)."""
    like = node.this
    if not isinstance(like, exp.Like):
        raise Unsupported("ESCAPE outside LIKE")
    v = _str(ev, like.this)
    pattern = ev.literal(like.expression, "LIKE")
    escape = ev.literal(node.expression, "ESCAPE")
    if pattern is None or escape is None:
        return Val(ev.type_of(node), np.zeros(v.n, bool), np.zeros(v.n, bool), v.err)
    esc = str(escape).encode()
    if len(esc) != 1:
        raise Unsupported("LIKE … ESCAPE with an escape that is not one byte")
    try:
        res = strings.like(v.data, v.lengths, str(pattern).encode(), esc)
    except ValueError as e:
        raise Unsupported(str(e)) from None
    return _bool(ev, node, v, ~res if like.args.get("negate") else res)


def like_rows(v: Val, pattern: str) -> np.ndarray:
    """Each row of a string value LIKE the constant ``pattern`` (GLOB's translation)."""
    return strings.like(v.data, v.lengths, pattern.encode())


def _hits(ev, v: Val, needle_node: exp.Expression, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where the needle occurs in each row (``strings.find``), the needle's length per row, and
    the validity and error codes with the needle's: a constant needle, or a column or
    expression — each row's own needle (``strings.find_each``)."""
    const = ev.p.consts.get(id(needle_node))
    if const is not None and const.error is None and const.value is not None:  # a NULL one: per row, all NULL
        needle = _text(ev, needle_node, what)
        return (strings.find(v.data, v.lengths, needle), np.full(v.n, len(needle), dtype=np.int64), v.valid, v.err)
    nv = _str(ev, needle_node)
    hits = strings.find_each(v.data, v.lengths, nv.data, nv.lengths)
    return hits, nv.lengths.astype(np.int64), v.valid & nv.valid, np.maximum(v.err, nv.err)


def _affix(ev, node, where: str, this: exp.Expression, needle_node: exp.Expression) -> Val:
    """STARTS_WITH/PREFIX (``where='start'``), ENDS_WITH/SUFFIX ('end'), CONTAINS ('any')."""
    v = _str(ev, this)
    hits, nlen, valid, err = _hits(ev, v, needle_node, where.upper())
    empty = nlen == 0
    if where == "start":
        res = hits[:, :1].reshape(v.n) | empty
    elif where == "end":
        pos = v.lengths - nlen
        res = any_along(hits & (np.arange(v.width)[None, :] == pos[:, None]), 1) | (empty & (pos >= 0))
    else:
        res = any_along(hits, 1) | empty
    return Val(ev.type_of(node), res, valid, err)


@handles(exp.StartsWith, exp.EndsWith, exp.Contains)
def _ev_contains(ev, node):
    where = "start" if isinstance(node, exp.StartsWith) else "end" if isinstance(node, exp.EndsWith) else "any"
    return _affix(ev, node, where, node.this, node.expression)


def _anon_affix(where: str):
    def handler(ev, node):
        if len(node.expressions) != 2:
            raise Unsupported(f"{str(node.this).upper()} with these arguments")
        return _affix(ev, node, where, node.expressions[0], node.expressions[1])
    return handler


ANON["PREFIX"], ANON["SUFFIX"] = _anon_affix("start"), _anon_affix("end")


@handles(exp.StrPosition)
def _ev_strpos(ev, node):
    if node.args.get("position") is not None or node.args.get("occurrence") is not None:
        raise Unsupported("STRPOS with a position")
    v = _str(ev, node.this)
    hits, nlen, valid, err = _hits(ev, v, node.args.get("substr"), "STRPOS")
    first = strings.first_match(hits)
    idx = strings.char_index(v.data, v.lengths)
    pos = select(first, idx + 1, 0).sum(axis=1)
    pos = select(nlen == 0, 1, pos)  # an empty needle is found at the first character
    return Val(ev.type_of(node), pos.astype(np.int64), valid, err)


@handles(exp.Length)
def _ev_length(ev, node):
    if isinstance(node.this, exp.Split):  # len(string_split(s, sep)): a list's length, no list made
        return _split_count(ev, node, node.this)
    v = _str(ev, node.this)
    return Val(ev.type_of(node), strings.char_count(v.data, v.lengths), v.valid, v.err)


@handles(exp.ArraySize)
def _ev_array_size(ev, node):
    if not isinstance(node.this, exp.Split) or node.expression is not None:
        raise Unsupported("the length of a list other than string_split(s, separator)")
    return _split_count(ev, node, node.this)


def _split_count(ev, node, split: exp.Split) -> Val:
    """The number of parts ``string_split(s, sep)`` makes (docs/design.md §Expressions): the
    separators DuckDB takes (left to right, without overlap) + 1; an empty separator splits
    into characters (none for ''); a constant separator only."""
    v = _str(ev, split.this)
    sep = _text(ev, split.expression, "STRING_SPLIT")
    if not sep:
        count = strings.char_count(v.data, v.lengths)
    else:
        taken = strings.non_overlapping(strings.find(v.data, v.lengths, sep), len(sep))
        count = taken.sum(axis=1, dtype=np.int64) + 1
    return Val(ev.type_of(node), np.asarray(count, dtype=np.int64), v.valid, v.err)


def _byte_length(factor: int):
    """STRLEN / OCTET_LENGTH (bytes) and BIT_LENGTH (bits) of a string: its public-width row's length."""
    def handler(ev, node):
        arg = node.this if node.this is not None and not isinstance(node, exp.Anonymous) else node.expressions[0]
        v = _str(ev, arg)
        return Val(ev.type_of(node), v.lengths.astype(np.int64) * factor, v.valid, v.err)
    return handler


def _first_code_point(empty: int):
    """ASCII (``empty`` 0) / UNICODE and ORD (``empty`` −1): the first character's code point."""
    def handler(ev, node):
        arg = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
        v = _str(ev, arg)
        cp, _ = strings.decode(v.data, v.lengths)
        first = cp[:, :1].reshape(v.n)
        return Val(ev.type_of(node), select(v.lengths > 0, first, empty).astype(np.int64), v.valid, v.err)
    return handler


handles(exp.Ascii)(_first_code_point(0))
handles(exp.Unicode)(_first_code_point(-1))
ANON["ORD"] = _first_code_point(-1)


@handles(exp.Chr)
def _ev_chr(ev, node):
    """CHR(code): the one-character string; an error for a code that is no code point."""
    if len(node.expressions) != 1 or node.args.get("charset"):
        raise Unsupported("CHR with these arguments")
    v = ev.ev(node.expressions[0])
    if v.type.kind != "int":
        raise Unsupported(f"CHR of {v.type}")
    code = np.asarray(v.data, dtype=np.int64)
    bad = ((code < 0) | (code > 0x10FFFF) | ((code >= 0xD800) & (code <= 0xDFFF))) & v.valid
    cp = select(bad, 0, code)
    mat, lengths = strings.encode(cp[:, None], np.ones((v.n, 1), dtype=bool), 4)
    err = np.maximum(v.err, ev.fail(bad, "Invalid Input Error: Invalid UTF8 Codepoint"))
    return Val(ev.type_of(node), mat, v.valid, err, lengths.astype(np.int64))


ANON["STRLEN"] = _byte_length(1)
handles(exp.BitLength)(_byte_length(8))


@handles(exp.Upper, exp.Lower)
def _ev_case(ev, node):
    v = _str(ev, node.this)
    mat, lengths = casemap.case_map(v.data, v.lengths, upper=isinstance(node, exp.Upper))
    return _out(ev, node, v, mat, lengths)


@handles(exp.Trim)
def _ev_trim(ev, node):
    v = _str(ev, node.this)
    chars = node.args.get("expression")
    text = " " if chars is None else ev.literal(chars, "TRIM")
    if text is None or node.args.get("collation") is not None:
        raise Unsupported("TRIM with these arguments")
    pos = (node.args.get("position") or "BOTH").upper()
    cps = list(dict.fromkeys(ord(c) for c in str(text)))
    mat, lengths = strings.trim(v.data, v.lengths, cps, left=pos in ("BOTH", "LEADING"),
                                right=pos in ("BOTH", "TRAILING"))
    return _out(ev, node, v, mat, lengths)


def _int_arg(ev, node, what: str) -> int:
    val = ev.literal(node, what)
    if val is None or isinstance(val, bool):
        raise Unsupported(f"{what} with a NULL or non-integer argument")
    return int(val)


_SUBSTRING_LIMIT = 4294967295


def _small_constant(ev, node) -> bool:
    """A constant integer within DuckDB's SUBSTRING range (the fixed-window path); anything
    else — a column, an expression, NULL, an out-of-range value — takes the per-row path."""
    entry = ev.p.consts.get(id(node)) if node is not None else None
    if entry is None or entry.error is not None:
        return False
    v = entry.value
    return isinstance(v, int) and not isinstance(v, bool) and -_SUBSTRING_LIMIT - 1 <= v <= _SUBSTRING_LIMIT


def _int_rows(ev, node, what: str) -> Val:
    """A BIGINT argument that may differ per row (a column or an expression)."""
    val = ev.ev(node)
    if val.type.kind == "null":  # an untyped NULL: NULL on every row
        return Val(val.type, np.zeros(val.n, dtype=np.int64), np.zeros(val.n, dtype=bool), val.err)
    if val.type.kind != "int":
        raise Unsupported(f"{what} with a {val.type} argument")
    return Val(val.type, val.data.astype(np.int64), val.valid, val.err)


def _substring_rows(ev, node, v: Val, start, length_node) -> Val:
    """SUBSTRING with a per-row offset or length: the same window as the constant case,
    computed element-wise on every row; a value outside DuckDB's supported range is a per-row
    error where DuckDB evaluates the call (no NULL argument)."""
    off = _int_rows(ev, start, "SUBSTRING")
    ln = None if length_node is None else _int_rows(ev, length_node, "SUBSTRING")
    valid = v.valid & off.valid & (True if ln is None else ln.valid)
    err = np.maximum(v.err, off.err) if ln is None else np.maximum(np.maximum(v.err, off.err), ln.err)
    lo_lim, hi_lim = -_SUBSTRING_LIMIT - 1, _SUBSTRING_LIMIT
    checks = [(off.data > hi_lim, f"offset outside of supported range (> {hi_lim})"),
              (off.data < lo_lim, f"offset outside of supported range (< {lo_lim})")]
    if ln is not None:
        checks += [(ln.data > hi_lim, f"length outside of supported range (> {hi_lim})"),
                   (ln.data < lo_lim, f"length outside of supported range (< {lo_lim})")]
    for bad, what in checks:
        err = np.maximum(err, ev.fail(bad & valid, f"Out of Range Error: Substring {what}"))
    o = np.clip(off.data, lo_lim, hi_lim)  # in range now: the sums below stay far inside int64
    size = strings.char_count(v.data, v.lengths)
    p = select(o >= 0, o, size + (o + 1))
    if ln is None:
        lo, hi = p, size + 1
    else:
        k = np.clip(ln.data, lo_lim, hi_lim)
        lo, hi = select(k >= 0, p, p + k), select(k >= 0, p + k, p)
    mat, lengths = strings.keep_chars(v.data, v.lengths, np.maximum(lo - 1, 0), np.minimum(hi - 1, size))
    width = v.width
    if length_node is not None and _small_constant(ev, length_node):
        width = max(1, min(v.width, 4 * abs(int(ev.literal(length_node, "SUBSTRING")))))
    out = _out(ev, node, v, mat, lengths, width)
    out.valid, out.err = valid, err
    return out


@handles(exp.Substring)
def _ev_substring(ev, node):
    v = _str(ev, node.this)
    length_node = node.args.get("length")
    if not _small_constant(ev, node.args.get("start")) or (length_node is not None
                                                          and not _small_constant(ev, length_node)):
        return _substring_rows(ev, node, v, node.args.get("start"), length_node)
    offset = _int_arg(ev, node.args.get("start"), "SUBSTRING")
    length = None if length_node is None else _int_arg(ev, length_node, "SUBSTRING")
    size = strings.char_count(v.data, v.lengths)
    # DuckDB's window: 1-based position p (from the end for a negative offset), characters
    # p .. p+length-1 (p+length .. p-1 for a negative length), cut to 1 .. size
    p = np.full(v.n, offset, dtype=np.int64) if offset >= 0 else size + (offset + 1)
    if length is None:
        lo, hi = p, size + 1
    elif length >= 0:
        lo, hi = p, p + length
    else:
        lo, hi = p + length, p
    first, stop = np.maximum(lo - 1, 0), np.minimum(hi - 1, size)
    mat, lengths = strings.keep_chars(v.data, v.lengths, first, stop)
    width = v.width if length is None else max(1, min(v.width, 4 * abs(length)))
    return _out(ev, node, v, mat, lengths, width)


def _left_right_rows(ev, node, v: Val) -> Val:
    """LEFT/RIGHT with a per-row count: the constant case's window, element-wise; LEFT of more
    than 2^32 − 1 characters is DuckDB's SUBSTRING length error (RIGHT has none)."""
    kv = _int_rows(ev, node.expression, node.sql_name())
    valid, err = v.valid & kv.valid, np.maximum(v.err, kv.err)
    k = np.clip(kv.data, -_SUBSTRING_LIMIT - 1, _SUBSTRING_LIMIT + 1)
    size = strings.char_count(v.data, v.lengths)
    if isinstance(node, exp.Left):
        err = np.maximum(err, ev.fail((kv.data > _SUBSTRING_LIMIT) & valid, "Out of Range Error: Substring length "
                                      f"outside of supported range (> {_SUBSTRING_LIMIT})"))
        first, stop = np.zeros(v.n, dtype=np.int64), select(k >= 0, np.minimum(size, k), np.maximum(size + k, 0))
    else:
        first, stop = select(k >= 0, np.maximum(size - k, 0), np.minimum(size, -k)), size
    mat, lengths = strings.keep_chars(v.data, v.lengths, first, stop)
    out = _out(ev, node, v, mat, lengths, v.width)
    out.valid, out.err = valid, err
    return out


@handles(exp.Left, exp.Right)
def _ev_left_right(ev, node):
    v = _str(ev, node.this)
    if not _small_constant(ev, node.expression):
        return _left_right_rows(ev, node, v)
    k = _int_arg(ev, node.expression, node.sql_name())
    size = strings.char_count(v.data, v.lengths)
    zero = np.zeros(v.n, dtype=np.int64)
    if isinstance(node, exp.Left):
        first, stop = zero, (np.minimum(size, k) if k >= 0 else np.maximum(size + k, 0))
    else:
        first, stop = (np.maximum(size - k, 0) if k >= 0 else np.minimum(size, -k)), size
    mat, lengths = strings.keep_chars(v.data, v.lengths, first, stop)
    width = v.width if k < 0 else max(1, min(v.width, 4 * k))
    return _out(ev, node, v, mat, lengths, width)


def _concat_parts(ev, args, skip_nulls: bool):
    return _concat_vals(ev, [ev.ev(a) for a in args], skip_nulls)


def _concat_vals(ev, vals: list, skip_nulls: bool):
    """The values as text (cast to VARCHAR), concatenated; NULL if any is unless ``skip_nulls``."""
    from .casts import cast
    from .types import parse_type
    texts = []
    for v in vals:
        if v.type.kind == "null":
            v = Val(parse_type("VARCHAR"), np.zeros((v.n, 1), np.uint8), v.valid, v.err, np.zeros(v.n, np.int64))
        elif v.type.kind != "str":
            v = cast(ev, v, parse_type("VARCHAR"), try_=False)
        texts.append(v)
    vals = texts
    parts = [(v.data, select(v.valid, v.lengths, 0)) for v in vals]
    mat, lengths = strings.concat(parts)
    valid = np.ones(vals[0].n, dtype=bool)
    err = np.zeros(vals[0].n, dtype=np.int32)
    for v in vals:
        if not skip_nulls:
            valid = valid & v.valid
        err = np.maximum(err, v.err)
    return mat, lengths, valid, err


@handles(exp.DPipe)
def _ev_dpipe(ev, node):
    mat, lengths, valid, err = _concat_parts(ev, [node.this, node.expression], skip_nulls=False)
    return Val(ev.type_of(node), mat, valid, err, lengths)


@handles(exp.Concat)
def _ev_concat(ev, node):
    mat, lengths, valid, err = _concat_parts(ev, list(node.expressions), skip_nulls=True)
    return Val(ev.type_of(node), mat, valid, err, lengths)


@handles(exp.Pad)
def _ev_pad(ev, node):
    v = _str(ev, node.this)
    count = _int_arg(ev, node.expression, "LPAD/RPAD")
    fill = _text(ev, node.args.get("fill_pattern"), "LPAD/RPAD") if node.args.get("fill_pattern") is not None else b" "
    if not fill:
        raise Unsupported("LPAD/RPAD with an empty fill")
    mat, lengths = strings.pad(v.data, v.lengths, count, fill, left=bool(node.args.get("is_left")))
    width = max(1, max(0, count) * max(4, len(fill)))
    return _out(ev, node, v, mat, lengths, min(mat.shape[1], width))


@handles(exp.Repeat)
def _ev_repeat(ev, node):
    v = _str(ev, node.this)
    k = _int_arg(ev, node.args.get("times"), "REPEAT")
    mat, lengths = strings.repeat(v.data, v.lengths, k)
    return _out(ev, node, v, mat, lengths)


@handles(exp.Replace)
def _ev_replace(ev, node):
    v = _str(ev, node.this)
    const = ev.p.consts.get(id(node.expression))
    if const is None or (const.error is None and const.value is None):  # an ``old`` per row (or NULL)
        ov = _str(ev, node.expression)
        new = _text(ev, node.args.get("replacement"), "REPLACE")
        mat, lengths = strings.replace_each(v.data, v.lengths, ov.data, ov.lengths, new)
        return Val(ev.type_of(node), mat, v.valid & ov.valid, np.maximum(v.err, ov.err), lengths)
    old = _text(ev, node.expression, "REPLACE")
    new = _text(ev, node.args.get("replacement"), "REPLACE")
    if not old:
        return v
    mat, lengths = strings.replace(v.data, v.lengths, old, new)
    w = v.width
    bound = w if len(new) <= len(old) else (w // len(old)) * len(new) + w % len(old)
    return _out(ev, node, v, mat, lengths, max(1, bound))


# shared with the other function modules (more_functions.py)
string_value, constant_text, concat_parts, concat_vals = _str, _text, _concat_parts, _concat_vals
