"""CONCAT_WS, TRANSLATE, REVERSE, HEX/TO_HEX, FACTORIAL, ROUND_EVEN and DATE_ADD (docs/design.md
§Expressions; issue 30's top-200 list), each read off DuckDB before it was written.

Every one is whole-column work over every slot: characters are decoded to code points at
their start bytes and encoded back with a keep mask (``strings.decode``/``encode``), so a
per-row difference in content moves values, never the work.

>>> _hex_digits(np.array([255, 0, -1], dtype=np.int64))[1].tolist()
[2, 1, 16]
"""
from __future__ import annotations

import math

import numpy as np
from sqlglot import exp

from . import dates, functions, int128 as i128, strings
from .functions import ANON, handles
from .numeric import Unsupported
from .text import concat_parts, concat_vals, constant_text, string_value
from .types import parse_type
from .value import constant
from .value import Val
from ...oblivious.select import floor_div, select

__all__: list[str] = []


@handles(exp.ConcatWs)
def _ev_concat_ws(ev, node):
    """CONCAT_WS(sep, a, b, …): the non-NULL arguments joined by ``sep``; NULL where sep is."""
    args = list(node.expressions)
    if len(args) < 2:
        raise Unsupported("CONCAT_WS with these arguments")
    sep = ev.literal(args[0], "CONCAT_WS")
    rt = ev.type_of(node)
    if sep is None:  # a NULL separator: NULL on every row
        return ev.null_of(rt, np.maximum.reduce([ev.ev(a).err for a in args[1:]]))
    sep_b = str(sep).encode()
    parts, seen = [], None
    err = None
    for a in args[1:]:
        mat, lengths, real, e = concat_parts(ev, [a], skip_nulls=False)  # real: the argument is not NULL
        err = e if err is None else np.maximum(err, e)
        if seen is not None:  # a separator before this part where it and an earlier one are there
            use = real & seen
            smat = np.broadcast_to(np.frombuffer(sep_b or b"\0", dtype=np.uint8), (real.shape[0], max(1, len(sep_b))))
            parts.append((np.ascontiguousarray(smat), select(use, len(sep_b), 0)))
            seen = seen | real
        else:
            seen = real.copy()
        parts.append((mat, select(real, lengths, 0)))
    mat, lengths = strings.concat(parts)
    return Val(rt, mat, np.ones(mat.shape[0], dtype=bool), err, lengths.astype(np.int64))


@handles(exp.Translate)
def _ev_translate(ev, node):
    """TRANSLATE(s, from, to): each character of ``from`` becomes the one at its place in
    ``to``, or is dropped past its end (the first occurrence in ``from`` wins)."""
    v = string_value(ev, node.this)
    src = constant_text(ev, node.args.get("from_"), "TRANSLATE").decode()
    dst = constant_text(ev, node.args.get("to"), "TRANSLATE").decode()
    cp, starts = strings.decode(v.data, v.lengths)
    out, keep, done = cp.copy(), starts.copy(), np.zeros(cp.shape, dtype=bool)
    for k, ch in enumerate(src):  # the public mapping, one character at a time
        hit = starts & (cp == ord(ch)) & ~done
        if k < len(dst):  # lint: public mapping
            out = select(hit, ord(dst[k]), out)
        else:
            keep = keep & ~hit
        done = done | hit
    width = v.width * max(1, max((len(c.encode()) for c in dst), default=1))
    mat, lengths = strings.encode(out, keep, max(1, width))
    return Val(ev.type_of(node), mat, v.valid, v.err, lengths.astype(np.int64))


@handles(exp.Reverse)
def _ev_reverse(ev, node):
    """REVERSE(s) by characters: the code points at the start bytes, the byte axis reversed (a
    fixed permutation of the public width), encoded back and compacted."""
    v = string_value(ev, node.this)
    cp, starts = strings.decode(v.data, v.lengths)
    mat, lengths = strings.encode(cp[:, ::-1], starts[:, ::-1], v.width)
    return Val(ev.type_of(node), mat, v.valid, v.err, lengths.astype(np.int64))


_NIBBLES = 16


def _hex_digits(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Upper-case hex of each 64-bit pattern without leading zeros: ``(n, 16)`` text, lengths."""
    u = x.view(np.uint64)
    nib = np.stack([((u >> np.uint64(4 * (15 - j))) & np.uint64(15)).astype(np.int64) for j in range(_NIBBLES)], axis=1)
    text = (nib + 48 + (nib > 9) * 7).astype(np.uint8)              # '0'-'9', 'A'-'F' by arithmetic
    lead = np.cumsum(nib != 0, axis=1) == 0                          # the leading zero nibbles
    lead[:, -1] = False                                              # '0' keeps one digit
    out, lengths = strings.compact(text, ~lead)
    return out, lengths


@handles(exp.Hex)
def _ev_hex(ev, node):
    """HEX / TO_HEX: an integer's two's complement (BIGINT width) without leading zeros, or a
    string's bytes, upper case."""
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if v.type.kind == "int":
        mat, lengths = _hex_digits(np.asarray(v.data, dtype=np.int64))
        return Val(rt, mat, v.valid, v.err, lengths.astype(np.int64))
    if v.type.kind == "str":
        b = v.data.astype(np.int64)
        hexed = np.empty((v.n, 2 * v.width), dtype=np.uint8)
        hexed[:, 0::2] = (b >> 4) + 48 + ((b >> 4) > 9) * 7
        hexed[:, 1::2] = (b & 15) + 48 + ((b & 15) > 9) * 7
        return Val(rt, hexed, v.valid, v.err, 2 * v.lengths.astype(np.int64))
    raise Unsupported(f"HEX of {v.type}")


_FACTORIALS = [math.factorial(k) for k in range(34)]  # 34! is past HUGEINT


@handles(exp.Factorial)
def _ev_factorial(ev, node):
    """FACTORIAL(n) as HUGEINT: each of the 34 representable values selected by a mask."""
    v = ev.ev(node.this)
    rt = ev.type_of(node)
    if v.type.kind != "int" or rt.kind != "dec" or not rt.huge:
        raise Unsupported(f"FACTORIAL of {v.type}")
    x = np.asarray(v.data, dtype=np.int64)
    out = i128.const(0, v.n)
    for k, f in enumerate(_FACTORIALS):  # every constant over every row
        out = i128.where(x == k, i128.const(f, v.n), out)
    err = np.maximum(v.err, ev.fail((x < 0) & v.valid, "Out of Range Error: factorial of a negative number is undefined"))
    err = np.maximum(err, ev.fail((x >= len(_FACTORIALS)) & v.valid, "Out of Range Error: Value out of range"))
    return Val(rt, out, v.valid, err)


def _round_even(ev, node):
    """ROUND_EVEN / ROUNDBANKERS(x, places): to the nearest, ties to even (DECIMAL)."""
    args = node.expressions
    if len(args) != 2:
        raise Unsupported("ROUND_EVEN with these arguments")
    v = ev.ev(args[0])
    places = ev.literal(args[1], "ROUND_EVEN")
    rt = ev.type_of(node)
    if v.type.kind == "int" and rt.kind == "int":
        return Val(rt, v.data, v.valid, v.err)
    if v.type.kind != "dec" or rt.kind != "dec" or places is None or rt.scale != max(0, min(int(places), v.type.scale)):
        raise Unsupported(f"ROUND_EVEN of {v.type} giving {rt}")
    return Val(rt, i128.div_pow10(v.data, v.type.scale - rt.scale, "half_even"), v.valid, v.err)


ANON["ROUND_EVEN"] = ANON["ROUNDBANKERS"] = _round_even


@handles(exp.DateAdd)
def _ev_date_add(ev, node):
    """DATE_ADD(x, INTERVAL …): ``x + INTERVAL …`` (functions.interval_arith)."""
    if not functions.is_interval(node.expression) or node.args.get("unit") is not None:
        raise Unsupported("DATE_ADD with these arguments")
    return functions.shift_by_interval(ev, node.this, node.expression, 1, ev.type_of(node))


@handles(exp.SplitPart)
def _ev_split_part(ev, node):
    """SPLIT_PART(s, sep, k): the k-th part (from the end for k < 0; '' for 0 or past the
    parts); an empty separator splits into characters.  Separators are taken left to right
    without overlap by one pass over the byte positions (the same steps for every row)."""
    v = string_value(ev, node.this)
    sep = constant_text(ev, node.args.get("delimiter"), "SPLIT_PART")
    k = ev.literal(node.args.get("part_index"), "SPLIT_PART")
    rt = ev.type_of(node)
    if k is None:
        return ev.null_of(rt, v.err)
    k, w = int(k), v.width
    pos = np.arange(w)[None, :]
    inside = pos < v.lengths[:, None]
    if not sep:  # characters
        idx = strings.char_index(v.data, v.lengths)
        count = strings.char_count(v.data, v.lengths)
        want = (k - 1) if k > 0 else (count + k)[:, None]
        keep = inside & (idx == want) & (k != 0)
    else:
        hits = strings.find(v.data, v.lengths, sep)
        taken = strings.non_overlapping(hits, len(sep))
        ends = np.cumsum(taken, axis=1)                    # separators starting at or before j
        in_sep = np.zeros_like(hits)
        for t in range(len(sep)):
            in_sep = in_sep | strings.shift_right(taken, t)
        part = ends - in_sep.astype(np.int64)              # separators wholly before byte j
        total = ends[:, -1:] + 1
        want = (k - 1) if k > 0 else total + k
        keep = inside & ~in_sep & (part == want) & (k != 0)
    mat, lengths = strings.compact(v.data, keep)
    return Val(rt, mat, v.valid, v.err, lengths)


@handles(exp.Glob)
def _ev_glob(ev, node):
    """GLOB with a constant pattern of ``*`` and ``?``: LIKE with ``%`` and ``_`` (a pattern
    with a class ``[…]`` or a literal ``%``/``_`` is refused)."""
    from .text import like_rows
    v = string_value(ev, node.this)
    pattern = ev.literal(node.expression, "GLOB")
    if pattern is None:
        return Val(ev.type_of(node), np.zeros(v.n, bool), np.zeros(v.n, bool), v.err)
    pat = str(pattern)
    if any(c in pat for c in "[%_\\"):  # lint: public pattern
        raise Unsupported("GLOB with a character class or a literal % or _")
    return Val(ev.type_of(node), like_rows(v, pat.replace("*", "%").replace("?", "_")), v.valid, v.err)


def _format_pieces(fmt: str, printf: bool) -> list[tuple[str, str]]:
    """The public format as ``("text", literal)`` and ``("arg", kind)`` pieces (``kind``: ``"{}"``,
    ``"s"`` or ``"d"``); any other specifier is refused."""
    pieces, i, lit = [], 0, ""
    while i < len(fmt):  # the format is a constant of the query
        two = fmt[i:i + 2]
        if (not printf and two in ("{{", "}}")) or (printf and two == "%%"):
            lit, i = lit + two[0], i + 2
        elif (not printf and two == "{}") or (printf and two in ("%s", "%d")):
            pieces += [("text", lit), ("arg", two[1] if printf else two)]
            lit, i = "", i + 2
        elif fmt[i] in ("{}" if not printf else "%"):  # lint: public the query's format
            raise Unsupported(f"{'PRINTF' if printf else 'FORMAT'} specifier at {fmt[i:i + 4]!r}")
        else:
            lit, i = lit + fmt[i], i + 1  # lint: public the query's format
    return pieces + [("text", lit)]


def _format(printf: bool):
    """FORMAT('{}…', …) / PRINTF('%s %d …', …) with a constant format: the literal pieces and
    the arguments as text, concatenated; NULL if an argument is (DuckDB)."""
    what = "PRINTF" if printf else "FORMAT"

    def handler(ev, node):
        args = list(node.expressions) if isinstance(node, exp.Anonymous) else [node.this] + list(node.expressions)
        fmt = ev.literal(args[0], what)
        rt = ev.type_of(node)
        if fmt is None:
            return ev.null_of(rt, ev.ev(args[0]).err)
        pieces = _format_pieces(str(fmt), printf)
        slots = [kind for tag, kind in pieces if tag == "arg"]
        if len(slots) != len(args) - 1:
            raise Unsupported(f"{what} with {len(args) - 1} arguments for {len(slots)} specifiers")
        values, parts = iter(args[1:]), []
        n = ev.ev(args[0]).n
        for tag, text in pieces:
            if tag == "text":
                if text:
                    parts.append(constant(parse_type("VARCHAR"), text, n))
                continue
            arg = ev.ev(next(values))
            if text == "d" and arg.type.kind != "int":
                raise Unsupported("PRINTF %d of a non-integer")
            if arg.type.kind in ("dec", "float"):  # DuckDB formats these as doubles (fmt's shortest form)
                raise Unsupported(f"{what} of {arg.type}")
            parts.append(arg)
        mat, lengths, valid, err = concat_vals(ev, parts or [constant(parse_type("VARCHAR"), "", n)], skip_nulls=False)
        return Val(rt, mat, valid, err, lengths.astype(np.int64))
    return handler


handles(exp.Format)(_format(False))
ANON["PRINTF"] = _format(True)


@handles(exp.Levenshtein)
def _ev_levenshtein(ev, node):
    """LEVENSHTEIN(a, b) in characters: the full edit-distance table over both public widths
    for every row, each row's answer picked by masks at its own lengths."""
    a, b = string_value(ev, node.this), string_value(ev, node.expression)
    costs = [node.args.get(k) for k in ("ins_cost", "del_cost", "sub_cost", "max_dist")]
    if costs.count(None) != len(costs):  # lint: public the query's shape
        raise Unsupported("LEVENSHTEIN with costs")
    ca, la = strings.code_point_rows(a.data, a.lengths)
    cb, lb = strings.code_point_rows(b.data, b.lengths)
    n, wa, wb = a.n, ca.shape[1], cb.shape[1]
    prev = np.tile(np.arange(wb + 1, dtype=np.int64), (n, 1))
    pick = np.arange(wb + 1)[None, :] == lb[:, None]
    res = (prev * pick).sum(axis=1) * (la == 0)
    for i in range(1, wa + 1):
        cur = np.empty_like(prev)
        cur[:, 0] = i
        for j in range(1, wb + 1):
            same = ca[:, i - 1:i].reshape(n) == cb[:, j - 1:j].reshape(n)
            cur[:, j] = np.minimum(np.minimum(prev[:, j] + 1, cur[:, j - 1] + 1), prev[:, j - 1] + ~same)
        res = res + (cur * pick).sum(axis=1) * (la == i)
        prev = cur
    return Val(ev.type_of(node), res, a.valid & b.valid, np.maximum(a.err, b.err))


_SUB_UNITS = {"microsecond": 1, "millisecond": 1000, "second": 10 ** 6, "minute": 60 * 10 ** 6,
              "hour": 3600 * 10 ** 6, "day": 86_400 * 10 ** 6, "week": 7 * 86_400 * 10 ** 6}
_MONTH_UNITS = {"month": 1, "quarter": 3, "year": 12, "decade": 120, "century": 1200, "millennium": 12000}


def _complete_months(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Whole months from ``start`` to ``end`` (µs, ``start <= end``), as DuckDB's DATE_SUB counts
    them: a start day past the end month's last day counts as that last day when the end is
    on it, then the age in months (a day or a time of day short of a month is no month)."""
    sd, st = dates.split_ts(start)
    ed, et = dates.split_ts(end)
    y1, m1, d1 = dates.civil(ed)
    y2, m2, d2 = dates.civil(sd)
    end_days = dates.month_days(y1, m1)
    d2 = select((d1 == end_days) & (d2 > end_days), end_days, d2)
    dd = d1 - d2 - (et < st)                                # a time of day short borrows a day
    first = dd < 0                                          # borrow the days of start's month
    dd = dd + select(first, dates.month_days(y2, m2), 0)
    second = first & (dd < 0)                               # and, rarely, of the next one
    return (y1 - y2) * 12 + (m1 - m2) - first - second


def _date_sub(ev, node):
    """DATE_SUB('unit', start, end): the number of complete units from start to end (negative
    when end is earlier); NULL on ±infinity."""
    args = node.expressions
    if len(args) != 3:
        raise Unsupported("DATE_SUB with these arguments")
    unit = ev.literal(args[0], "DATE_SUB")
    a, b = ev.ev(args[1]), ev.ev(args[2])
    rt = ev.type_of(node)
    if unit is None or {a.type.kind, b.type.kind} - {"date", "ts"} or rt.kind != "int":  # lint: public types
        raise Unsupported(f"DATE_SUB of {a.type} and {b.type}")
    unit = functions.unit_name(str(unit))
    valid = a.valid & b.valid & dates.finite(a.data, a.type.kind) & dates.finite(b.data, b.type.kind)
    (sa, bad_a), (sb, bad_b) = dates.to_us(a.data, a.type.kind), dates.to_us(b.data, b.type.kind)
    sa, sb = select(valid, sa, 0), select(valid, sb, 0)
    lo, hi = np.minimum(sa, sb), np.maximum(sa, sb)
    sign = select(sb < sa, -1, 1)
    if unit in _SUB_UNITS:
        res = floor_div(hi - lo, _SUB_UNITS.get(unit))  # lint: public unit
    elif unit in _MONTH_UNITS:
        res = floor_div(_complete_months(lo, hi), _MONTH_UNITS.get(unit))
    else:
        raise Unsupported(f"DATE_SUB unit {unit}")
    err = np.maximum(np.maximum(a.err, b.err), ev.fail((bad_a | bad_b) & valid, "Conversion Error: Date and time "
                                                                                    "not in timestamp range"))
    return Val(rt, sign * res, valid, err)


ANON["DATE_SUB"] = ANON["DATESUB"] = _date_sub
