"""``x [NOT] IN (subquery)`` and uncorrelated ``EXISTS (subquery)`` used as values.

``rules/unnest_exists.py`` turns the ones that are whole WHERE conditions into semi / anti
joins.  Anywhere else (a SELECT item, a CASE, under NOT, OR or IS NULL) SQL's three values
must come out exactly: ``x IN (S)`` is TRUE when some ``y`` of ``S`` equals ``x``; else FALSE
over an empty ``S``; else NULL when ``x`` is NULL or ``S`` holds a NULL; else FALSE.  That is
two scalar subqueries over ``S`` — a count of the ``y = x`` rows (correlated on ``y = x``:
``rules/correlated_count.py`` makes it a GROUP BY ``y`` LEFT JOINed on ``x``, 0 for no group)
and ``S``'s state (0 empty, 1 no NULL, 2 a NULL, docs/design.md §NOT IN and NULLs) — read by
the CASE of :func:`~dodb.planner.rules.quantified_comparison.three_valued`.  A subquery
correlated by ``outer = inner`` equalities keeps its correlation in both.  ``NOT IN`` is the
NOT of that value.  An uncorrelated IN that only reaches a WHERE / ON condition through
AND and OR (where NULL and FALSE drop the same rows) is left to sqlglot's ``unnest_subqueries``;
an uncorrelated ``EXISTS`` value is ``(SELECT count(*) …) > 0``.

Example:
    >>> import sqlglot
    >>> from sqlglot.optimizer.qualify import qualify
    >>> schema = {"t": {"x": "int"}, "u": {"y": "int"}}
    >>> e = qualify(sqlglot.parse_one("SELECT x IN (SELECT y FROM u) AS f FROM t"), schema=schema)
    >>> print(in_values(e).sql())  # doctest: +NORMALIZE_WHITESPACE
    SELECT (CASE WHEN (SELECT COUNT(*) AS _s FROM "u" AS "u" WHERE "u"."y" = "t"."x") > 0 THEN TRUE ELSE CASE
    (SELECT CASE WHEN COUNT(*) = 0 THEN 0 WHEN COUNT(*) = COUNT("u"."y") THEN 1 ELSE 2 END AS _s FROM "u" AS "u")
    WHEN 0 THEN FALSE WHEN 2 THEN NULL ELSE CASE WHEN "t"."x" IS NULL THEN NULL ELSE FALSE END END END)
    AS "f" FROM "t" AS "t"
"""
from __future__ import annotations

from sqlglot import exp

from ...errors import UnsupportedQueryError
from ..exprs import clause_of, positive, row_level
from .quantified_comparison import state, summary, summary_source, three_valued
from ...sqlpos import position_of
from .unnest_exists import _and, _inner_aliases, _simple_subquery

__all__ = ["in_values"]


def _correlated(sub: exp.Select) -> bool:
    inner = _inner_aliases(sub)
    return any(c.table and c.table not in inner for c in sub.find_all(exp.Column))


def _count_rows(sub: exp.Select) -> exp.Subquery:
    """``(SELECT count(*) …)`` over the rows of an uncorrelated ``sub``."""
    if _simple_subquery(sub):
        return summary(sub, exp.Count(this=exp.Star()))
    derived = exp.Subquery(this=sub.copy(), alias=exp.TableAlias(this=exp.to_identifier("_q")))
    return exp.Subquery(this=exp.select(exp.alias_(exp.Count(this=exp.Star()), "_s")).from_(derived))


def _in_value(node: exp.In) -> exp.Expression:
    """TRUE / FALSE / NULL of ``x IN (S)``, as DuckDB gives it."""
    x = node.this
    if isinstance(x, exp.Tuple):
        raise UnsupportedQueryError("a row value (…) IN (SELECT …) outside a WHERE condition of its own",
                                    position_of(node))
    body, v, correlated = summary_source(node.args["query"], node, "IN")
    if not correlated and x.find(exp.Column) and not row_level(node):  # the y = x count is correlated
        raise UnsupportedQueryError("IN (SELECT …) used as a value outside WHERE and the SELECT list of a query "
                                    "without aggregates", position_of(node))
    if not v.find(exp.Column) and x.find(exp.Column):
        raise UnsupportedQueryError("IN (SELECT <constant> …) used as a value", position_of(node))
    hits = body.copy()
    where = hits.args.get("where")
    hits.set("where", exp.Where(this=_and(([where.this] if where is not None else [])
                                          + [exp.EQ(this=v.copy(), expression=x.copy())])))
    hit = exp.GT(this=summary(hits, exp.Count(this=exp.Star())), expression=exp.Literal.number(0))
    return three_valued(x, hit, state(body, v), on_decisive=True, on_empty=False)


def in_values(expression: exp.Expression) -> exp.Expression:
    """Rewrite the IN / uncorrelated EXISTS subqueries that ``unnest_exists`` left as values."""
    selects = list(expression.find_all(exp.Select, bfs=False))
    for select in reversed(selects):  # inner queries first: an outer rewrite copies them
        for node in list(select.find_all(exp.In, exp.Exists)):
            if node.parent_select is not select:
                continue
            if isinstance(node, exp.Exists):
                sub = node.this
                if isinstance(sub, exp.Select) and not _correlated(sub):
                    node.replace(exp.paren(exp.GT(this=_count_rows(sub), expression=exp.Literal.number(0))))
                continue
            query = node.args.get("query")
            if query is None:
                continue
            sub = query.this if isinstance(query, exp.Subquery) else query
            if isinstance(sub, exp.Select) and not _correlated(sub) and not isinstance(node.this, exp.Tuple) \
                    and positive(node) and clause_of(node, select) in ("where", "joins"):
                continue
            node.replace(exp.paren(_in_value(node), copy=False))
    return expression
