"""Move a correlated subquery's local disjunctions into a derived table.

sqlglot's ``unnest_subqueries`` leaves a correlated subquery alone when its WHERE holds any
OR, even one that reads only the subquery's own table.  Filtering that table first, in a
derived table under the same alias, gives the same rows to the rest of the subquery, whose
WHERE is then conjunctions only and decorrelates as usual (docs/design.md §Subqueries).

Example:
    >>> import sqlglot
    >>> e = sqlglot.parse_one("SELECT a.k FROM a WHERE a.f >= (SELECT MIN(z.n) FROM t AS z "
    ...                       "WHERE a.id = z.id AND (z.n < 3 OR z.n > 5))")
    >>> local_disjunctions(e).sql()
    'SELECT a.k FROM a WHERE a.f >= (SELECT MIN(z.n) FROM (SELECT "z"."id" AS "id", "z"."n" AS "n" FROM t AS z WHERE z.n < 3 OR z.n > 5) AS z WHERE a.id = z.id)'
"""
from __future__ import annotations

from sqlglot import exp

from ..exprs import conjuncts
from .unnest_exists import _sources

__all__ = ["local_disjunctions"]


def _single_table(select: exp.Select) -> exp.Table | None:
    sources = _sources(select)
    return sources[0] if len(sources) == 1 and isinstance(sources[0], exp.Table) else None


def _rewrite(select: exp.Select) -> None:
    where = select.args.get("where")
    table = _single_table(select)
    if where is None or table is None or not where.find(exp.Or):
        return
    alias = table.alias_or_name
    parts = conjuncts(where.this)
    outer = [p for p in parts if any(c.table and c.table != alias for c in p.find_all(exp.Column))]
    local = [p for p in parts if not any(p is o for o in outer) and p.find(exp.Or)]
    if not outer or not local or any(o.find(exp.Or) for o in outer):
        return  # uncorrelated (sqlglot's), nothing to move, or an OR over outer columns: left alone
    names = sorted({c.name for c in select.find_all(exp.Column) if c.table == alias})
    body = exp.select(*[exp.alias_(exp.column(n, table=alias, quoted=True), n, quoted=True) for n in names]) \
        .from_(table.copy()).where(exp.and_(*[p.copy() for p in local]))
    table.replace(exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias))))
    rest = [p for p in parts if not any(p is x for x in local)]
    select.set("where", exp.Where(this=exp.and_(*[p.copy() for p in rest])))


def local_disjunctions(expression: exp.Expression) -> exp.Expression:
    """Rewrite every subquery (a SELECT inside a Subquery that reads an outer column) whose
    WHERE has a conjunct with an OR over its one table only."""
    for sub in list(expression.find_all(exp.Subquery)):
        if isinstance(sub.this, exp.Select) and sub.parent is not None and not isinstance(sub.parent, (exp.From, exp.Join)):
            _rewrite(sub.this)
    return expression
