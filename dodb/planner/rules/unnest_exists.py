"""Turn ``[NOT] EXISTS`` and ``[NOT] IN`` subqueries in WHERE into SEMI / ANTI joins.

Runs after ``qualify`` (columns carry their table alias) and before sqlglot's
``unnest_subqueries``, which then only sees scalar subqueries.  A semi/anti join is one
DO operator with one noisy release, and it also covers correlations that are not
equalities (TPC-H Q21's ``l2.l_suppkey <> l1.l_suppkey``): the ON condition keeps them.

Example:
    >>> import sqlglot
    >>> from sqlglot.optimizer.qualify import qualify
    >>> schema = {"a": {"k": "int"}, "b": {"k": "int", "x": "int"}}
    >>> e = qualify(sqlglot.parse_one(
    ...     "SELECT a.k FROM a WHERE EXISTS (SELECT * FROM b WHERE b.k = a.k AND b.x > 1)"), schema=schema)
    >>> unnest_exists(e).sql()
    'SELECT "a"."k" AS "k" FROM "a" AS "a" SEMI JOIN "b" AS "b" ON "b"."k" = "a"."k" AND "b"."x" > 1'

``x NOT IN (subquery)`` is an anti join when neither ``x`` nor the subquery's column can
be NULL; otherwise SQL's NULL semantics (NOT IN is not NOT EXISTS under NULLs) add one
condition on a scalar summary of the subquery (:func:`_not_in_nulls`).
"""
from __future__ import annotations

import itertools

from sqlglot import exp

from ...errors import UnsupportedQueryError
from ..exprs import conjuncts
from .reject_unsupported import position_of

__all__ = ["unnest_exists"]


def _and(parts: list[exp.Expression]) -> exp.Expression | None:
    return exp.and_(*parts) if parts else None


def _sources(select: exp.Select) -> list[exp.Expression]:
    from_ = select.args.get("from") or select.args.get("from_")
    out = [from_.this] if from_ is not None else []
    out += [j.this for j in select.args.get("joins") or []]
    return out


def _aliases(select: exp.Select) -> set[str]:
    return {s.alias_or_name for s in _sources(select)}


def _simple_subquery(q: exp.Expression) -> bool:
    return isinstance(q, exp.Select) and not any(
        q.args.get(k) for k in ("group", "having", "limit", "offset", "order", "with", "with_", "distinct")) \
        and not q.find(exp.AggFunc)


def _column_nullable(col: exp.Expression, scope_select: exp.Select, not_null: dict[str, set[str]]) -> bool:
    """Whether ``col`` may be NULL, following derived tables down to a base column."""
    if not isinstance(col, exp.Column):
        return True
    for s in _sources(scope_select):
        if s.alias_or_name != col.table:
            continue
        if isinstance(s, exp.Table):
            return col.name not in not_null.get(s.name, set())
        if isinstance(s, exp.Subquery) and isinstance(s.this, exp.Select):
            for proj in s.this.expressions:
                if proj.alias_or_name == col.name:
                    return _column_nullable(proj.unalias(), s.this, not_null)
    return True


def _rename_alias(sub: exp.Select, old: str, new: str) -> None:
    for s in _sources(sub):
        if s.alias_or_name == old:
            s.set("alias", exp.TableAlias(this=exp.to_identifier(new)))
    for c in sub.find_all(exp.Column):
        if c.table == old:
            c.set("table", exp.to_identifier(new))


def unnest_exists(expression: exp.Expression, not_null: dict[str, set[str]] | None = None) -> exp.Expression:
    """Rewrite WHERE-level [NOT] EXISTS / [NOT] IN subqueries as SEMI / ANTI joins."""
    not_null = not_null or {}
    counter = itertools.count()
    for select in list(expression.find_all(exp.Select)):
        where = select.args.get("where")
        if where is None:
            continue
        keep: list[exp.Expression] = []
        for c in conjuncts(where.this):
            negated = isinstance(c, exp.Not)
            inner = c.this if negated else c
            if isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Exists) and _simple_subquery(inner.this):
                _exists_to_join(select, inner.this, negated, counter)
            elif isinstance(inner, exp.In) and isinstance(inner.args.get("query"), exp.Expression):
                extra = _in_to_join(select, inner, negated, counter, not_null)
                if extra is not None:
                    keep.append(extra)
            else:
                keep.append(c)
        if keep:
            select.set("where", exp.Where(this=_and(keep)))
        else:
            select.set("where", None)
    return expression


def _exists_to_join(select: exp.Select, sub: exp.Select, negated: bool, counter) -> None:
    outer = _aliases(select)
    inner_sources = _sources(sub)
    if len(inner_sources) != 1 or not isinstance(inner_sources[0], exp.Table):
        # EXISTS over a join: keep the join inside a derived table and correlate on its output
        raise UnsupportedQueryError("EXISTS over a subquery with joins", position_of(sub))
    source = inner_sources[0].copy()
    alias = source.alias_or_name
    if alias in outer:
        fresh = f"_e{next(counter)}"
        sub = sub.copy()
        _rename_alias(sub, alias, fresh)
        source = _sources(sub)[0].copy()
    cond = _and([p.copy() for p in conjuncts((sub.args.get("where") or exp.Where(this=exp.true())).this)])
    select.append("joins", exp.Join(this=source, kind="ANTI" if negated else "SEMI", on=cond or exp.true()))


def _in_to_join(select: exp.Select, node: exp.In, negated: bool, counter, not_null) -> exp.Expression | None:
    """Add the SEMI/ANTI join; returns the condition NOT IN's NULL semantics still need."""
    query = node.args["query"]
    query = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(query, exp.Select) or len(query.expressions) != 1:
        raise UnsupportedQueryError("IN subquery must return exactly one column", position_of(node))
    outer = _aliases(select)
    if any(c.table in outer and c.table not in _aliases(query) for c in query.find_all(exp.Column)):
        raise UnsupportedQueryError("correlated IN subquery", position_of(node))
    nullable = negated and (_column_nullable(node.this, select, not_null)
                            or _column_nullable(query.expressions[0].unalias(), query, not_null))
    alias = f"_in{next(counter)}"
    col = "_v"
    sub = query.copy()
    sub.set("expressions", [exp.alias_(sub.expressions[0].unalias(), col)])
    derived = exp.Subquery(this=sub, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    cond = exp.EQ(this=node.this.copy(), expression=exp.column(col, table=alias))
    select.append("joins", exp.Join(this=derived, kind="ANTI" if negated else "SEMI", on=cond))
    return _not_in_nulls(node.this, sub.copy(), alias) if nullable else None


def _not_in_nulls(x: exp.Expression, sub: exp.Select, alias: str) -> exp.Expression:
    """The rest of SQL's ``x NOT IN (S)`` once the anti join removed the rows ``x`` matches.

    ``x NOT IN (S)`` is TRUE when S is empty; otherwise NULL (so the row is dropped) when
    ``x`` is NULL or S holds a NULL, else TRUE exactly when nothing matched.  One scalar
    subquery folds S into a state — 0 empty, 1 no NULL, 2 a NULL — so the kept rows are
    the anti join's with ``state = 0 OR (state = 1 AND x IS NOT NULL)``, written
    ``state <= CASE WHEN x IS NULL THEN 0 ELSE 1 END`` so the summary is joined once.  Over private
    rows that state is a one-row private value every row depends on; the planner prices
    that (CrossOne: the stability becomes the size bound).
    """
    # the summary's column gets its own name: sqlglot would otherwise fold the two equal
    # derived tables into one CTE and lose the anti join's
    sub.set("expressions", [exp.alias_(sub.expressions[0].unalias(), "_w")])
    v = exp.column("_w", table=f"{alias}_s")
    count_all = exp.Count(this=exp.Star())
    state = exp.Case(ifs=[exp.If(this=exp.EQ(this=count_all, expression=exp.Literal.number(0)),
                                 true=exp.Literal.number(0)),
                          exp.If(this=exp.EQ(this=count_all.copy(), expression=exp.Count(this=v)),
                                 true=exp.Literal.number(1))],
                     default=exp.Literal.number(2))
    flag = exp.Subquery(this=exp.select(exp.alias_(state, "_state")).from_(
        exp.Subquery(this=sub, alias=exp.TableAlias(this=exp.to_identifier(f"{alias}_s")))))
    # state = 0 OR (state = 1 AND x IS NOT NULL), with the summary used once
    allowed = exp.Case(ifs=[exp.If(this=exp.Is(this=x.copy(), expression=exp.Null()), true=exp.Literal.number(0))],
                       default=exp.Literal.number(1))
    return exp.LTE(this=flag, expression=allowed)
