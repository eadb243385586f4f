"""Decorrelate a scalar subquery whose value counts rows: GROUP BY + LEFT JOIN, 0 for no row.

sqlglot's ``unnest_subqueries`` decorrelates ``(SELECT avg(x) FROM t WHERE t.k = o.k)`` (NULL
over no row is what its LEFT JOIN gives) but leaves a COUNT alone, because COUNT over no row
is 0, not NULL.  This rule takes those (TPC-DS Q41): in WHERE or in the SELECT list of a
query without aggregates, a subquery correlated only by ``outer = inner`` equalities becomes

    LEFT JOIN (SELECT inner AS _k0, <each aggregate> AS _a0 … FROM … WHERE <local> GROUP BY inner) AS _cN
         ON outer = _cN._k0

and the subquery's expression reads each aggregate from ``_cN``, a COUNT as
``COALESCE(_cN._aI, 0)``: over a matched group the COALESCE does nothing (a count is never
NULL), over no group it is the empty set's count, and every other aggregate of the empty set is
NULL, as the LEFT JOIN gives.  A NULL outer key matches no group: the subquery is empty then
too (``inner = NULL`` holds for no row).  The grouped side has one row per key (degree 1).
The expression may read outer columns outside its aggregates (the same for every row of the
subquery: ``rules/quantified_comparison.py`` puts a whole three-valued CASE there).

Example:
    >>> import sqlglot
    >>> from sqlglot.optimizer.qualify import qualify
    >>> schema = {"a": {"k": "int"}, "b": {"k": "int", "x": "int"}}
    >>> e = qualify(sqlglot.parse_one(
    ...     "SELECT a.k FROM a WHERE (SELECT count(*) FROM b WHERE b.k = a.k AND b.x > 1) > 2"), schema=schema)
    >>> print(correlated_count(e).sql())  # doctest: +NORMALIZE_WHITESPACE
    SELECT "a"."k" AS "k" FROM "a" AS "a" LEFT JOIN (SELECT "b"."k" AS "_k0", COUNT(*) AS "_a0" FROM "b" AS "b"
    WHERE "b"."x" > 1 GROUP BY "b"."k") AS _c0 ON "a"."k" = "_c0"."_k0" WHERE (COALESCE("_c0"."_a0", 0)) > 2
"""
from __future__ import annotations

import itertools

from sqlglot import exp

from .unnest_exists import _and, _equality_keys, _inner_aliases, _split_correlation

__all__ = ["correlated_count"]


def _candidate(sub: exp.Select) -> bool:
    """One aggregate expression with a COUNT, over a plain FROM/WHERE."""
    if not isinstance(sub, exp.Select) or len(sub.expressions) != 1 or any(
            sub.args.get(k) for k in ("group", "having", "limit", "offset", "order", "with", "with_",
                                      "distinct", "qualify")):
        return False
    value = sub.expressions[0].unalias()
    if value.find(exp.Window) or value.find(exp.Subquery) or not value.find(exp.Count):
        return False
    # every column of the value is inside an aggregate (else it is not one value per group) or
    # an outer one, the same for every row of the subquery (rules/quantified_comparison.py)
    inner = _inner_aliases(sub)
    return all(c.find_ancestor(exp.AggFunc) is not None or c.table not in inner for c in value.find_all(exp.Column))


def _rewrite(select: exp.Select, node: exp.Subquery, counter) -> bool:
    sub = node.this
    local, correlated, inner = _split_correlation(sub)
    keys = _equality_keys(correlated, inner)
    value = sub.expressions[0].unalias()
    if not keys or any(c.table not in inner for a in value.find_all(exp.AggFunc) for c in a.find_all(exp.Column)):
        return False
    alias = f"_c{next(counter)}"
    aggs: dict[str, tuple[str, exp.Expression]] = {}
    for a in value.find_all(exp.AggFunc):
        if a.find_ancestor(exp.AggFunc) is None:
            aggs.setdefault(a.sql(), (f"_a{len(aggs)}", a.copy()))
    body = sub.copy()
    body.set("where", exp.Where(this=_and([p.copy() for p in local])) if local else None)
    body.set("expressions", [exp.alias_(i.copy(), f"_k{n}", quoted=True) for n, (_, i) in enumerate(keys)]
             + [exp.alias_(a, name, quoted=True) for name, a in aggs.values()])
    body.set("group", exp.Group(expressions=[i.copy() for _, i in keys]))
    derived = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    on = _and([exp.EQ(this=o.copy(), expression=exp.column(f"_k{n}", table=alias, quoted=True))
               for n, (o, _) in enumerate(keys)])

    def read(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.AggFunc) and n.sql() in aggs:
            col = exp.column(aggs[n.sql()][0], table=alias, quoted=True)
            return exp.Coalesce(this=col, expressions=[exp.Literal.number(0)]) if isinstance(n, exp.Count) else col
        return n

    new_value = value.copy().transform(read)
    select.append("joins", exp.Join(this=derived, side="LEFT", on=on))
    node.replace(exp.paren(new_value, copy=False))
    return True


def correlated_count(expression: exp.Expression) -> exp.Expression:
    """Rewrite correlated COUNT subqueries in WHERE and in the SELECT list of a query without aggregates."""
    counter = itertools.count()
    for select in list(expression.find_all(exp.Select)):
        # WHERE runs before any grouping; a SELECT item only when the query does not aggregate
        # (the joined value is one per input row, not per group)
        grouped = bool(select.args.get("group")) or any(
            p.find(exp.AggFunc) and not _inside_subquery(p, select) for p in select.expressions)
        places = [select.args.get("where")] + ([] if grouped else list(select.expressions))
        for place in places:
            if place is None:
                continue
            for node in list(place.find_all(exp.Subquery)):
                if node.parent_select is not select or not _candidate(node.this):
                    continue
                if isinstance(node.parent, (exp.Exists, exp.In)):
                    continue
                _rewrite(select, node, counter)
    return expression


def _inside_subquery(e: exp.Expression, select: exp.Select) -> bool:
    """Whether every aggregate of ``e`` belongs to a nested subquery, not to ``select``."""
    return all(a.parent_select is not select for a in e.find_all(exp.AggFunc))
