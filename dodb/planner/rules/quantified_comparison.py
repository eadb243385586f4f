"""``x <op> ALL / ANY (S)``, uncorrelated or correlated by equalities, with SQL's NULL semantics.

``x > ALL (S)`` is TRUE over an empty ``S``; FALSE when some ``s`` has ``x <= s`` (that is,
``x <= max(S)``); otherwise NULL when ``x`` is NULL or ``S`` holds a NULL; else TRUE.
``x > ANY (S)`` is FALSE over an empty ``S``; TRUE when ``x > min(S)``; otherwise NULL when
``x`` is NULL or ``S`` holds a NULL; else FALSE.  ``x = ALL (S)`` is FALSE when some non-NULL
``s`` differs from ``x``, that is ``x <> min(S) OR x <> max(S)``, and ``x <> ANY (S)`` is TRUE
then (it is ``NOT (x = ALL (S))``); their other cases are those of ``> ALL`` / ``> ANY``.  Each
reads one-row summaries of ``S``: its state (0 empty, 1 no NULL, 2 a NULL, as for NOT IN,
docs/design.md §NOT IN and NULLs) and its max and / or min, as scalar subqueries.  A subquery
correlated by ``outer = inner`` equalities becomes one scalar subquery whose value is the whole
CASE over ``x`` and the aggregates; ``rules/correlated_count.py`` makes it one per-group
LEFT JOIN (an absent group reads counts 0, so state 0: the empty set's answer).
``= ANY`` is IN and ``<> ALL`` is NOT IN (``rules/unnest_exists.py``, ``rules/in_values.py``).

Example:
    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT a FROM t WHERE a > ALL (SELECT b FROM u)")
    >>> print(quantified_comparison(q).sql())  # doctest: +NORMALIZE_WHITESPACE
    SELECT a FROM t WHERE (CASE WHEN a <= (SELECT MAX(b) AS _s FROM u) THEN FALSE ELSE CASE (SELECT CASE
    WHEN COUNT(*) = 0 THEN 0 WHEN COUNT(*) = COUNT(b) THEN 1 ELSE 2 END AS _s FROM u) WHEN 0 THEN TRUE WHEN 2 THEN NULL
    ELSE CASE WHEN a IS NULL THEN NULL ELSE TRUE END END END)
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import UnsupportedQueryError
from ..exprs import row_level
from ...sqlpos import position_of
from .unnest_exists import (_aliases, _equality_keys, _inner_aliases, _rename_alias, _simple_subquery, _sources,
                            _split_correlation)

__all__ = ["quantified_comparison"]

# comparison -> (summary for ALL, the comparison that falsifies ALL / satisfies ANY)
_ALL = {exp.GT: (exp.Max, exp.LTE), exp.GTE: (exp.Max, exp.LT), exp.LT: (exp.Min, exp.GTE),
        exp.LTE: (exp.Min, exp.GT)}
_ANY = {exp.GT: exp.Min, exp.GTE: exp.Min, exp.LT: exp.Max, exp.LTE: exp.Max}


def summary(sub: exp.Select, agg: exp.Expression) -> exp.Subquery:
    """``(SELECT agg FROM … WHERE …)`` over ``sub``'s relation."""
    body = sub.copy()
    body.set("expressions", [exp.alias_(agg, "_s")])  # a public sub-plan's column needs a name
    return exp.Subquery(this=body)


def state(sub: exp.Select, v: exp.Expression) -> exp.Subquery:
    """0 when ``S`` is empty, 1 when it holds no NULL, 2 when it holds one."""
    count_all = exp.Count(this=exp.Star())
    return summary(sub, exp.Case(
        ifs=[exp.If(this=exp.EQ(this=count_all, expression=exp.Literal.number(0)), true=exp.Literal.number(0)),
             exp.If(this=exp.EQ(this=count_all.copy(), expression=exp.Count(this=v.copy())),
                    true=exp.Literal.number(1))],
        default=exp.Literal.number(2)))


def three_valued(x: exp.Expression, decisive: exp.Expression, st: exp.Expression, on_decisive: bool,
                 on_empty: bool) -> exp.Case:
    """``decisive`` gives ``on_decisive``; else an empty ``S`` gives ``on_empty``, a NULL in ``S`` or
    a NULL ``x`` gives NULL, and anything else ``not on_decisive``.  ``st`` (the state) is read once."""
    b = lambda v: exp.true() if v else exp.false()  # noqa: E731
    rest = exp.Case(ifs=[exp.If(this=exp.Is(this=x.copy(), expression=exp.Null()), true=exp.Null())],
                    default=b(not on_decisive))
    by_state = exp.Case(this=st, ifs=[exp.If(this=exp.Literal.number(0), true=b(on_empty)),
                                      exp.If(this=exp.Literal.number(2), true=exp.Null())], default=rest)
    return exp.Case(ifs=[exp.If(this=decisive, true=b(on_decisive))], default=by_state)


def summary_source(sub: exp.Expression, node: exp.Expression, what: str) -> tuple[exp.Select, exp.Expression, bool]:
    """(a plain FROM / WHERE select over ``S``, the expression of ``S``'s column in it, whether
    it is correlated).

    DISTINCT is dropped (no summary depends on it).  An uncorrelated subquery with GROUP BY,
    LIMIT … is wrapped as a derived table; a correlated one must be plain, correlated by
    ``outer = inner`` equalities, and sit in WHERE or the SELECT list of a query without
    aggregates (where its per-group summaries can be LEFT JOINed to each row)."""
    sub = sub.this if isinstance(sub, exp.Subquery) else sub
    if not isinstance(sub, exp.Select) and isinstance(sub, exp.Query):
        raise UnsupportedQueryError(f"{what} over a set operation (UNION, INTERSECT, EXCEPT) here", position_of(node))
    if not isinstance(sub, exp.Select) or len(sub.expressions) != 1:
        raise UnsupportedQueryError(f"{what} subquery must return exactly one column", position_of(node))
    body = sub.copy()
    body.set("distinct", None)
    outer = _aliases(node.parent_select) if node.parent_select is not None else set()
    for s in _sources(body):
        if s.alias_or_name in outer:  # an inner name shadowing an outer one: x will be read inside
            _rename_alias(body, s.alias_or_name, f"_s_{s.alias_or_name}")
    inner = _inner_aliases(body)
    if not any(c.table and c.table not in inner for c in body.find_all(exp.Column)):
        if _simple_subquery(body):
            return body, body.expressions[0].unalias(), False
        derived = exp.Subquery(this=sub.copy(), alias=exp.TableAlias(this=exp.to_identifier("_q")))
        derived.this.set("expressions", [exp.alias_(sub.expressions[0].unalias().copy(), "_v", quoted=True)])
        return exp.select("*").from_(derived), exp.column("_v", table="_q", quoted=True), False
    name = f"correlated {what} subquery"
    if not _simple_subquery(body):
        raise UnsupportedQueryError(f"{name} with GROUP BY, HAVING, LIMIT, ORDER BY, WITH or an aggregate",
                                    position_of(node))
    v = body.expressions[0].unalias()
    _, correlated, inner = _split_correlation(body)
    if any(c.table not in inner for c in v.find_all(exp.Column)) or not _equality_keys(correlated, inner):
        raise UnsupportedQueryError(f"{name} unless correlated only by outer = inner equalities in its WHERE "
                                    f"and returning an inner expression", position_of(node))
    if not row_level(node):
        raise UnsupportedQueryError(f"{name} outside WHERE and the SELECT list of a query without aggregates",
                                    position_of(node))
    return body, v, True


def _rewrite(cmp: exp.Expression) -> exp.Expression:
    quant = cmp.expression
    what = f"{'ALL' if isinstance(quant, exp.All) else 'ANY'}"
    sub, v, correlated = summary_source(quant.this, cmp, what)
    x = cmp.this
    # correlated: one subquery whose value reads x and the aggregates (one grouped LEFT JOIN)
    agg = (lambda f: f(this=v.copy())) if correlated else (lambda f: summary(sub, f(this=v.copy())))  # noqa: E731
    if isinstance(cmp, (exp.EQ, exp.NEQ)):
        decisive = exp.or_(exp.NEQ(this=x.copy(), expression=agg(exp.Min)),
                           exp.NEQ(this=x.copy(), expression=agg(exp.Max)))
    elif what == "ALL":
        f, falsify = _ALL[type(cmp)]
        decisive = falsify(this=x.copy(), expression=agg(f))
    else:
        decisive = type(cmp)(this=x.copy(), expression=agg(_ANY[type(cmp)]))
    any_ = what == "ANY"
    st = state(sub, v)
    value = three_valued(x, decisive, st.this.expressions[0].unalias() if correlated else st, on_decisive=any_,
                         on_empty=not any_)
    return summary(sub, value) if correlated else value


def quantified_comparison(expression: exp.Expression) -> exp.Expression:
    """Rewrite every ``x <op> ALL / ANY (subquery)`` (runs after ``qualify``, or on a parsed query)."""
    for node in list(expression.find_all(exp.All, exp.Any)):
        cmp = node.parent
        if not isinstance(cmp, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)) or cmp.expression is not node:
            raise UnsupportedQueryError(f"{node.key.upper()} outside a comparison", position_of(node))
        if isinstance(cmp, exp.EQ) and isinstance(node, exp.Any):
            cmp.replace(exp.In(this=cmp.this.copy(), query=node.this.copy()))
            continue
        if isinstance(cmp, exp.NEQ) and isinstance(node, exp.All):
            cmp.replace(exp.Not(this=exp.In(this=cmp.this.copy(), query=node.this.copy())))
            continue
        if isinstance(cmp.this, exp.Tuple):
            raise UnsupportedQueryError(f"a row value with {node.key.upper()}", position_of(cmp))
        cmp.replace(exp.paren(_rewrite(cmp), copy=False))
    return expression
