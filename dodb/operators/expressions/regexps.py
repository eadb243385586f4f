"""Handlers of the regular-expression predicates: ``regexp_matches`` and ``~`` (a match
anywhere), ``regexp_full_match`` and ``SIMILAR TO`` (the whole string), with a constant
pattern (docs/design.md §Expressions, regular expressions; the automaton: :mod:`.regex`).

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
