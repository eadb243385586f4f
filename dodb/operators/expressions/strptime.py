"""``strptime(s, format)`` and ``try_strptime``: text read as a TIMESTAMP under a constant
format, as DuckDB's ``StrpTimeFormat::Parse`` reads it (docs/design.md §Expressions, text
read as dates).

The public format becomes a sequence of *elements*: a run of white space (matches one or
more white-space bytes), a literal byte, a number of at most a fixed count of digits
(``%Y`` 4, ``%m %d %H %I %M %S %y`` 2, ``%j`` 3, ``%f`` 6 and ``%g`` 3 padded on the right),
a name from a list (``%b %B`` months, ``%a %A`` week days, any ASCII case) and ``%p``.  Each
row is read by an automaton whose state is the element it is in: every byte column of
the public width is visited, and within a column every element in order, so a byte that
ends a number (or a run of spaces) is handed to the next element in the same column —
DuckDB's greedy reading, with no branch on a byte.  Leading and trailing white space is
skipped, and ``infinity``, ``-infinity`` and ``epoch`` (any case) are read first, as
DuckDB does.  A text the format does not read is an error under ``strptime``
(Invalid Input) and NULL under ``try_strptime``; a date that does not exist (February 30)
likewise (Conversion Error).  ``%j`` gives the date unless ``%m`` or ``%d`` is present.

Refused (public, by the format): ``%z %Z`` (a TIMESTAMPTZ), ``%n`` (nanoseconds), the week
numbers ``%U %W %V %G %u %w``, ``%c %x %X`` and a list of formats.

>>> [e.kind for e in compile_format("%Y-%m %p")]
['num', 'char', 'num', 'space', 'ampm']
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from sqlglot import exp

from . import dates, strings
from .functions import ANON, handles
from .numeric import Unsupported
from .value import Val
from ...oblivious.select import select

__all__ = ["compile_format", "parse_timestamps", "Element"]

_SPACES = (0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D)  # C's isspace
_SPACE_TEXT = " \t\n\v\f\r"
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
# %code: (field, digits, smallest, largest, right padding to this many digits (0: none))
_NUMBERS = {"Y": ("year", 4, 0, 9999, 0), "y": ("year2", 2, 0, 99, 0), "m": ("month", 2, 1, 12, 0),
            "d": ("day", 2, 1, 31, 0), "H": ("hour", 2, 0, 23, 0), "I": ("hour", 2, 1, 12, 0),
            "M": ("minute", 2, 0, 59, 0), "S": ("second", 2, 0, 59, 0), "j": ("yearday", 3, 1, 366, 0),
            "f": ("micro", 6, 0, 999999, 6), "g": ("milli", 3, 0, 999, 3)}
_NAMES = {"b": ("month", tuple(m[:3] for m in _MONTHS)), "B": ("month", _MONTHS),
          "a": ("weekday", tuple(d[:3] for d in _DAYS)), "A": ("weekday", _DAYS)}
_FIELDS = ("year", "month", "day", "hour", "minute", "second", "micro", "yearday", "weekday", "ampm")
PARSE_ERROR = "Invalid Input Error: Could not parse string according to format specifier"
DATE_ERROR = "Conversion Error: Date out of range"
TS_INFINITY = (1 << 63) - 1


@dataclass(frozen=True)
class Element:
    """One step of a format: ``space``, ``char`` (``byte``), ``num`` (``field``, ``digits``,
    ``lo``..``hi``, ``pad``), ``names`` (``field``, ``names``) or ``ampm``."""
    kind: str
    byte: int = 0
    field: str = ""
    digits: int = 0
    lo: int = 0
    hi: int = 0
    pad: int = 0
    names: tuple[bytes, ...] = ()


def compile_format(fmt: str) -> list[Element]:
    """The elements of a DuckDB strptime format (public); :class:`Unsupported` for what dodb
    does not read."""
    out: list[Element] = []
    for code, ch in re.findall(r"%(-?.)|(.)", fmt, re.S):  # the public format, token by token
        if not code:
            if ch in _SPACE_TEXT:
                if not out or out[-1].kind != "space":  # lint: public the format (a run of spaces is one element)
                    out.append(Element("space"))
            else:
                out += [Element("char", byte=b) for b in ch.encode()]
            continue
        base = code.lstrip("-")  # %-d: the unpadded form, read the same way
        if code == "%":
            out.append(Element("char", byte=0x25))
        elif base in _NUMBERS and (code == base or base in "mdHIMSjy"):
            field, digits, lo, hi, pad = _NUMBERS.get(base)
            out.append(Element("num", field=field, digits=digits, lo=lo, hi=hi, pad=pad))
        elif code in _NAMES:
            field, names = _NAMES.get(code)
            out.append(Element("names", field=field, names=tuple(n.encode() for n in names)))
        elif code == "p":
            out.append(Element("ampm"))
        else:
            raise Unsupported(f"STRPTIME format %{code}")
    if not out:
        raise Unsupported("STRPTIME with an empty format")
    return out


def _lower(c: np.ndarray) -> np.ndarray:
    """ASCII lower case (C's tolower), every byte through the same arithmetic."""
    return c + 32 * ((c >= 0x41) & (c <= 0x5A))


def _is_space(c: np.ndarray) -> np.ndarray:
    out = np.zeros(c.shape, dtype=bool)
    for s in _SPACES:
        out = out | (c == s)
    return out


def _specials(mat: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, a special word, a special word with trailing characters): ``infinity``,
    ``-infinity`` and ``epoch`` (any case) after leading white space, only white space after."""
    left, left_len = strings.trim(mat, lengths, list(_SPACES), left=True, right=False)
    n, w = left.shape
    value = np.zeros(n, dtype=np.int64)
    word = np.zeros(n, dtype=bool)
    junk = np.zeros(n, dtype=bool)
    for text, v in ((b"infinity", TS_INFINITY), (b"-infinity", -TS_INFINITY), (b"epoch", 0)):
        if len(text) > w:  # lint: public widths
            continue
        hit = left_len >= len(text)
        for k, b in enumerate(text):
            hit = hit & (_lower(left[:, k].astype(np.int64)) == b)
        rest = np.ones(n, dtype=bool)
        for k in range(len(text), w):
            rest = rest & ((k >= left_len) | _is_space(left[:, k].astype(np.int64)))
        value = select(hit, v, value)
        word = word | (hit & rest)
        junk = junk | (hit & ~rest)
    return value, word, junk


class _Reader:
    """The automaton's whole-column state: the element each row is in (0 leading space,
    1..E the elements, E + 1 trailing space, E + 2 failed), digits or bytes read in the
    element, the number read so far, the names still possible, and the fields."""

    def __init__(self, elements: list[Element], n: int):
        self.el = elements
        self.done, self.failed = len(elements) + 1, len(elements) + 2
        self.state = np.zeros(n, dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)
        self.number = np.zeros(n, dtype=np.int64)
        self.alive = np.zeros(n, dtype=np.int64)  # bit k: name k still matches
        for k in _FIELDS:  # the fields read so far, DuckDB's defaults: 1900-01-01 00:00:00
            setattr(self, k, np.full(n, {"year": 1900, "month": 1, "day": 1}.get(k, 0), dtype=np.int64))

    def _advance(self, mask: np.ndarray, to) -> None:
        self.state = select(mask, to, self.state)
        self.count = select(mask, 0, self.count)
        self.number = select(mask, 0, self.number)

    def _finish_number(self, mask: np.ndarray, e: Element, index: int) -> None:
        """Rows of ``mask`` end the number of element ``index``: stored, or failed out of range."""
        number = self.number
        for k in range(e.digits):  # %f/%g: the digits read are padded on the right
            number = select(mask & (self.count <= k) & (k < e.pad), number * 10, number)
        ok = (number >= e.lo) & (number <= e.hi) & (self.count > 0)
        field = {"year2": "year", "milli": "micro"}.get(e.field, e.field)
        value = select(number >= 69, 1900 + number, 2000 + number) if e.field == "year2" else \
            number * 1000 if e.field == "milli" else number
        setattr(self, field, select(mask & ok, value, getattr(self, field)))
        self._advance(mask & ok, index + 1)
        self._advance(mask & ~ok, self.failed)

    def step(self, c: np.ndarray, live: np.ndarray) -> None:
        """Read byte column ``c`` (rows where ``live``)."""
        pending = live.copy()  # the byte is not yet consumed by an element
        digit = (c >= 0x30) & (c <= 0x39)
        space = _is_space(c)
        low = _lower(c)
        at = pending & (self.state == 0)  # leading space
        pending = pending & ~(at & space)
        self._advance(at & ~space, 1)
        for index, e in enumerate(self.el, start=1):
            at = pending & (self.state == index)
            if e.kind == "space":
                more = at & space
                ends, wrong = at & ~space & (self.count > 0), at & ~space & (self.count == 0)
                self.count = select(more, self.count + 1, self.count)
                self._advance(ends, index + 1)  # the byte stays pending: the next element reads it
                self._advance(wrong, self.failed)
                pending = pending & ~(more | wrong)
            elif e.kind == "char":
                self._advance(at & (c == e.byte), index + 1)
                self._advance(at & (c != e.byte), self.failed)
                pending = pending & ~at
            elif e.kind == "num":
                take = at & digit & (self.count < e.digits)
                self.number = select(take, self.number * 10 + (c - 0x30), self.number)
                self.count = select(take, self.count + 1, self.count)
                full = take & (self.count == e.digits)
                self._finish_number(full, e, index)
                ended = at & ~take  # a byte that is no digit ends the number; the next element reads it
                self._finish_number(ended, e, index)
                pending = pending & ~take & ~(ended & (self.state == self.failed))
            elif e.kind == "names":
                self._names(at, low, e, index)
                pending = pending & ~at
            else:  # ampm
                first = at & (self.count == 0)
                self.ampm = select(first & (low == 0x61), 1, select(first & (low == 0x70), 2, self.ampm))
                self.count = select(first & ((low == 0x61) | (low == 0x70)), 1, self.count)
                self._advance(first & (low != 0x61) & (low != 0x70), self.failed)
                second = at & ~first
                self._advance(second & (low == 0x6D), index + 1)
                self._advance(second & (low != 0x6D), self.failed)
                pending = pending & ~at
        at = pending & (self.state == self.done)
        self._advance(at & ~space, self.failed)

    def _names(self, at: np.ndarray, low: np.ndarray, e: Element, index: int) -> None:
        """One byte of a name (no name of a list is a prefix of another, so the first that
        ends is DuckDB's match)."""
        alive = select(self.count == 0, (1 << len(e.names)) - 1, self.alive)
        matched = np.full(at.shape, -1, dtype=np.int64)
        still = np.zeros(at.shape, dtype=np.int64)
        for k, name in enumerate(e.names):
            same = np.zeros(at.shape, dtype=bool)
            for p, b in enumerate(name):
                same = same | ((self.count == p) & (low == b))
            on = ((alive >> k) & 1).astype(bool) & same
            matched = select(on & (self.count + 1 == len(name)), k, matched)
            still = still | (on.astype(np.int64) << k)
        ends = at & (matched >= 0)
        setattr(self, e.field, select(ends, matched + 1, getattr(self, e.field)))
        self.alive = select(at, still, self.alive)
        self.count = select(at, self.count + 1, self.count)
        self._advance(ends, index + 1)
        self._advance(at & ~ends & (still == 0), self.failed)

    def finish(self) -> np.ndarray:
        """After the last byte: a number or a run of spaces in progress ends; read iff past
        the last element."""
        for index, e in enumerate(self.el, start=1):
            at = self.state == index
            if e.kind == "num":
                self._finish_number(at & (self.count > 0), e, index)
            elif e.kind == "space":
                self._advance(at & (self.count > 0), index + 1)
        return self.state == self.done


def parse_timestamps(mat: np.ndarray, lengths: np.ndarray, elements: list[Element]) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(µs since 1970, not read, no such date) per row."""
    n, w = mat.shape
    lengths = np.asarray(lengths, dtype=np.int64)
    r = _Reader(elements, n)
    for j in range(w):  # every byte column of the public width
        r.step(mat[:, j].astype(np.int64), j < lengths)
    read = r.finish()
    hour, year = r.hour, r.year
    read = read & ~((r.ampm > 0) & (hour > 12))
    hour = select((r.ampm == 1) & (hour == 12), 0, select((r.ampm == 2) & (hour != 12), hour + 12, hour))
    kinds = {e.field for e in elements if e.kind == "num"}  # %b does not take the date from %j, %m does
    if "yearday" in kinds and not kinds & {"month", "day"}:  # lint: public the format
        leap = dates.is_leap(year)
        read = read & ((r.yearday <= 365) | leap)
        days = dates.days_from_civil(year, np.ones(n, np.int64), np.ones(n, np.int64)) + r.yearday - 1
        exists = np.ones(n, dtype=bool)
    else:
        month = np.clip(r.month, 1, 12)
        exists = r.day <= dates.month_days(year, month)
        days = dates.days_from_civil(year, month, np.clip(r.day, 1, 31))
    us = days * dates.US_PER_DAY + ((hour * 60 + r.minute) * 60 + r.second) * 1_000_000 + r.micro
    value, word, junk = _specials(mat, lengths)
    read = (read & ~junk) | word
    exists = exists | word
    return select(word, value, select(read & exists, us, 0)), ~read, read & ~exists


def _strptime(ev, node, text: exp.Expression, fmt_node: exp.Expression, try_: bool) -> Val:
    if isinstance(fmt_node, exp.Array):
        raise Unsupported("STRPTIME with a list of formats")
    fmt = ev.literal(fmt_node, "STRPTIME")
    v = ev.ev(text)
    rt = ev.type_of(node)
    if fmt is None:  # a NULL format: NULL on every row, as in DuckDB
        return ev.null_of(rt, v.err)
    if rt.kind != "ts" or v.type.kind != "str":  # lint: public types only
        raise Unsupported(f"STRPTIME of {v.type} giving {rt}")
    us, unread, no_date = parse_timestamps(v.data, v.lengths, compile_format(str(fmt)))
    valid, err = v.valid, v.err
    if try_:
        valid = valid & ~unread & ~no_date
    else:
        err = np.maximum(err, ev.fail(unread & valid, PARSE_ERROR))
        err = np.maximum(err, ev.fail(no_date & valid, DATE_ERROR))
    return Val(rt, select(valid, us, 0), valid, err)


@handles(exp.StrToTime)
def _ev_strptime(ev, node):
    """``strptime(s, format)``: an error on a row the format does not read."""
    if set(k for k, a in node.args.items() if a is not None) - {"this", "format"}:  # lint: public the query's shape
        raise Unsupported("STRPTIME with these arguments")
    return _strptime(ev, node, node.this, node.args.get("format"), try_=False)


def _ev_try_strptime(ev, node):
    """``try_strptime(s, format)``: NULL on a row the format does not read."""
    args = node.expressions
    if len(args) != 2:
        raise Unsupported(f"TRY_STRPTIME with {len(args)} arguments")
    return _strptime(ev, node, args[0], args[1], try_=True)


ANON["TRY_STRPTIME"] = _ev_try_strptime
