"""Quote the analyst's own SQL in an error (issue 14 item 7).

An :class:`~dodb.errors.UnsupportedQueryError` names the construct as dodb sees it and
the parser's position (``line L, col C``, C the last character of the token there).
This adds the text the analyst wrote at that position, so the message shows the
construct as written — not sqlglot's regenerated SQL.
"""
from __future__ import annotations

import re

from ..errors import UnsupportedQueryError

__all__ = ["quote_source"]

_POS = re.compile(r"line (\d+), col (\d+)")
_WORD = re.compile(r"[\w$\"]")


def quote_source(err: UnsupportedQueryError, sql: str, width: int = 60) -> UnsupportedQueryError:
    """``err`` with the analyst's text at its position appended (unchanged if there is none)."""
    m = _POS.fullmatch(err.position or "")
    if m is None or not isinstance(sql, str):
        return err
    lines = sql.splitlines()
    line_no, col = int(m.group(1)), int(m.group(2))
    if not 1 <= line_no <= len(lines):
        return err
    line = lines[line_no - 1]
    start = min(max(col - 1, 0), len(line))
    while start > 0 and _WORD.match(line[start - 1]):   # back to the start of the token
        start -= 1
    text = " ".join(line[start:].split())
    if not text:
        return err
    snippet = text if len(text) <= width else text[:width].rstrip() + " …"
    out = UnsupportedQueryError(err.construct, f"line {line_no}, col {start + 1}: {snippet!r}")
    out.__cause__ = err.__cause__
    return out
