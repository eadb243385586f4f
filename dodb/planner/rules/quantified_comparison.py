"""``x > ALL (S)`` / ``x < ANY (S)`` over an uncorrelated subquery, with SQL's NULL semantics.

``x > ALL (S)`` is TRUE over an empty ``S``; FALSE when some ``s`` has ``x <= s`` (that is,
``x <= max(S)``); otherwise NULL when ``x`` is NULL or ``S`` holds a NULL; else TRUE.
``x > ANY (S)`` is FALSE over an empty ``S``; TRUE when ``x > min(S)``; otherwise NULL when
``x`` is NULL or ``S`` holds a NULL; else FALSE.  Both read two one-row summaries of ``S``:
its state (0 empty, 1 no NULL, 2 a NULL, as for NOT IN, docs/design.md §NOT IN and NULLs)
and its max or min.  ``= ANY`` is IN and ``<> ALL`` is NOT IN (sqlglot/``unnest_exists``);
``= ALL``, ``<> ANY`` and correlated quantified comparisons are refused by name.

Example:
    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT a FROM t WHERE a > ALL (SELECT b FROM u)")
    >>> print(quantified_comparison(q).sql())  # doctest: +NORMALIZE_WHITESPACE
    SELECT a FROM t WHERE CASE WHEN (SELECT CASE WHEN COUNT(*) = 0 THEN 0 WHEN COUNT(*) = COUNT(b) THEN 1 ELSE 2 END
    FROM u) = 0 THEN TRUE WHEN a <= (SELECT MAX(b) FROM u) THEN FALSE WHEN a IS NULL OR (SELECT CASE WHEN COUNT(*) = 0
    THEN 0 WHEN COUNT(*) = COUNT(b) THEN 1 ELSE 2 END FROM u) = 2 THEN NULL ELSE TRUE END
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import UnsupportedQueryError
from .reject_unsupported import position_of

__all__ = ["quantified_comparison"]

# comparison -> (summary for ALL, the comparison that falsifies ALL / satisfies ANY)
_ALL = {exp.GT: (exp.Max, exp.LTE), exp.GTE: (exp.Max, exp.LT), exp.LT: (exp.Min, exp.GTE),
        exp.LTE: (exp.Min, exp.GT)}
_ANY = {exp.GT: exp.Min, exp.GTE: exp.Min, exp.LT: exp.Max, exp.LTE: exp.Max}


def _summary(sub: exp.Select, agg: exp.Expression) -> exp.Subquery:
    body = sub.copy()
    body.set("expressions", [agg])
    return exp.Subquery(this=body)


def _state(sub: exp.Select, v: exp.Expression) -> exp.Subquery:
    """0 when ``S`` is empty, 1 when it holds no NULL, 2 when it holds one."""
    count_all = exp.Count(this=exp.Star())
    return _summary(sub, exp.Case(
        ifs=[exp.If(this=exp.EQ(this=count_all, expression=exp.Literal.number(0)), true=exp.Literal.number(0)),
             exp.If(this=exp.EQ(this=count_all.copy(), expression=exp.Count(this=v.copy())),
                    true=exp.Literal.number(1))],
        default=exp.Literal.number(2)))


def _rewrite(cmp: exp.Expression) -> exp.Expression:
    quant = cmp.expression
    what = "ALL" if isinstance(quant, exp.All) else "ANY"
    text = f"{type(cmp).__name__} {what}"
    sub = quant.this.this if isinstance(quant.this, exp.Subquery) else quant.this
    if type(cmp) not in _ALL:
        raise UnsupportedQueryError(f"{cmp.sql(dialect='duckdb')[:60]}: only <, <=, >, >= with ALL / ANY "
                                    f"(= ANY is IN, <> ALL is NOT IN)", position_of(cmp))
    if not isinstance(sub, exp.Select) or len(sub.expressions) != 1:
        raise UnsupportedQueryError(f"{text} subquery must return exactly one column", position_of(cmp))
    own = {s.alias_or_name for sel in sub.find_all(exp.Select) for s in sel.find_all(exp.Table)}
    if any(c.table and c.table not in own for c in sub.find_all(exp.Column)):
        raise UnsupportedQueryError(f"correlated {what} subquery", position_of(cmp))
    x, v = cmp.this, sub.expressions[0].unalias()
    nulls = exp.or_(exp.Is(this=x.copy(), expression=exp.Null()),
                    exp.EQ(this=_state(sub, v), expression=exp.Literal.number(2)))
    empty = exp.EQ(this=_state(sub, v), expression=exp.Literal.number(0))
    if what == "ALL":
        agg, falsify = _ALL[type(cmp)]
        decisive = falsify(this=x.copy(), expression=_summary(sub, agg(this=v.copy())))
        on_empty, on_decisive, otherwise = exp.true(), exp.false(), exp.true()
    else:
        decisive = type(cmp)(this=x.copy(), expression=_summary(sub, _ANY[type(cmp)](this=v.copy())))
        on_empty, on_decisive, otherwise = exp.false(), exp.true(), exp.false()
    return exp.Case(ifs=[exp.If(this=empty, true=on_empty), exp.If(this=decisive, true=on_decisive),
                         exp.If(this=nulls, true=exp.Null())], default=otherwise)


def quantified_comparison(expression: exp.Expression) -> exp.Expression:
    """Rewrite every ``x <op> ALL / ANY (subquery)`` (runs on the parsed query)."""
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
        cmp.replace(_rewrite(cmp))
    return expression
