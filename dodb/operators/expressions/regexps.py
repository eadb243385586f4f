"""Handlers of the regular-expression functions: ``regexp_matches`` and ``~`` (a match
anywhere), ``regexp_full_match`` and ``SIMILAR TO`` (the whole string), with a constant
pattern (docs/design.md §Expressions, regular expressions; the automaton: :mod:`.regex`);
``regexp_extract`` and ``regexp_replace`` (RE2's leftmost-first match and groups:
:mod:`.regex_search`).

A NULL pattern gives NULL on every row; a pattern outside the supported syntax, options,
or a pattern per row are refused with the reason.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from sqlglot import exp

from .functions import handles
from .numeric import Unsupported
from .regex import Automaton, RegexRefused, compile_regex, regex_match
from .regex_search import OrderedAutomaton, compile_ordered, extract_group, parse_rewrite, replace_matches
from .text import _str
from .value import Val

__all__: list[str] = []


@lru_cache(maxsize=256)
def _automaton(pattern: str) -> Automaton:
    return compile_regex(pattern)


def _predicate(ev, node, what: str, full: bool) -> Val:
    v = _str(ev, node.this)
    if node.args.get("flag") is not None or node.args.get("escape") is not None:
        raise Unsupported(f"{what} with options")
    pattern = ev.literal(node.expression, what)
    if pattern is None:  # a NULL pattern: NULL on every row
        return Val(ev.type_of(node), np.zeros(v.n, bool), np.zeros(v.n, bool), v.err)
    try:
        auto = _automaton(str(pattern))
    except RegexRefused as e:
        raise Unsupported(f"{what}: {e}") from None
    return Val(ev.type_of(node), regex_match(v.data, v.lengths, auto, full=full), v.valid, v.err)


handles(exp.RegexpLike)(lambda ev, node: _predicate(ev, node, "REGEXP_MATCHES", full=False))
handles(exp.RegexpFullMatch)(lambda ev, node: _predicate(ev, node, "REGEXP_FULL_MATCH", full=True))
handles(exp.SimilarTo)(lambda ev, node: _predicate(ev, node, "SIMILAR TO", full=True))


@lru_cache(maxsize=256)
def _ordered(pattern: str) -> OrderedAutomaton:
    return compile_ordered(pattern)


def _search_pattern(ev, node, what: str) -> tuple[Val, OrderedAutomaton | None]:
    """The string argument and the automaton of the constant pattern (None: a NULL pattern)."""
    v = _str(ev, node.this)
    pattern = ev.literal(node.expression, what)
    if pattern is None:
        return v, None
    try:
        return v, _ordered(str(pattern))
    except RegexRefused as e:
        raise Unsupported(f"{what}: {e}") from None


def _nulls(ev, node, v: Val) -> Val:
    return Val(ev.type_of(node), np.zeros((v.n, 1), np.uint8), np.zeros(v.n, bool), v.err, np.zeros(v.n, np.int64))


@handles(exp.RegexpExtract)
def _ev_regexp_extract(ev, node):
    """``regexp_extract(s, pattern[, group])``: the group of RE2's leftmost-first match, '' if none."""
    if node.args.get("parameters") is not None or node.args.get("position") is not None \
            or node.args.get("occurrence") is not None:
        raise Unsupported("REGEXP_EXTRACT with options")
    group_node = node.args.get("group")
    group = 0 if group_node is None else ev.literal(group_node, "REGEXP_EXTRACT")
    if group is None or isinstance(group, bool) or not isinstance(group, int) or not 0 <= group <= 9:
        raise Unsupported("REGEXP_EXTRACT with a group that is not a constant from 0 to 9")
    v, auto = _search_pattern(ev, node, "REGEXP_EXTRACT")
    if auto is None:
        return _nulls(ev, node, v)
    mat, lengths = extract_group(v.data, v.lengths, auto, group)
    return Val(ev.type_of(node), mat, v.valid, v.err, lengths)


@handles(exp.RegexpReplace)
def _ev_regexp_replace(ev, node):
    """``regexp_replace(s, pattern, replacement[, 'g'])``: RE2's ``Replace`` / ``GlobalReplace``."""
    for arg in ("position", "occurrence"):
        if node.args.get(arg) is not None:
            raise Unsupported("REGEXP_REPLACE with a position or an occurrence")
    options = "" if node.args.get("modifiers") is None else ev.literal(node.args["modifiers"], "REGEXP_REPLACE")
    if options is None or str(options) not in ("", "g"):
        raise Unsupported("REGEXP_REPLACE with options other than 'g'")
    v, auto = _search_pattern(ev, node, "REGEXP_REPLACE")
    rewrite = ev.literal(node.args.get("replacement"), "REGEXP_REPLACE")
    if auto is None or rewrite is None:
        return _nulls(ev, node, v)
    try:
        pieces = parse_rewrite(str(rewrite).encode(), auto.groups)
    except RegexRefused as e:
        raise Unsupported(f"REGEXP_REPLACE: {e}") from None
    mat, lengths, _ = replace_matches(v.data, v.lengths, auto, pieces, everywhere=str(options) == "g")
    return Val(ev.type_of(node), mat, v.valid, v.err, lengths)
