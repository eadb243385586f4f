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
from ...sqlpos import position_of

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
    # inner queries first: a subquery copied into a join then holds its own rewritten joins
    for select in reversed(list(expression.find_all(exp.Select, bfs=False))):
        where = select.args.get("where")
        if where is None:
            continue
        keep: list[exp.Expression] = []
        for c in conjuncts(where.this):
            negated = isinstance(c, exp.Not)
            inner = c.this if negated else c
            if isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Exists) and _simple_subquery(inner.this) and not _split_correlation(inner.this)[1]:
                keep.append(_uncorrelated_exists(inner.this, negated))
            elif isinstance(inner, exp.Exists) and _simple_subquery(inner.this):
                _exists_to_join(select, inner.this, negated, counter)
            elif not negated and _or_of_exists(inner) is not None:
                _any_exists_to_join(select, _or_of_exists(inner), counter, c)
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
    if _neq_correlation(sub) is not None:
        derived, on = _neq_summary(sub, f"_e{next(counter)}")
        select.append("joins", exp.Join(this=derived, kind="ANTI" if negated else "SEMI", on=on))
        return
    outer = _aliases(select)
    inner_sources = _sources(sub)
    if len(inner_sources) != 1 or not isinstance(inner_sources[0], exp.Table):
        # EXISTS over a join: keep the join inside a derived table and correlate on its output
        derived, on = _correlated_relation(sub, f"_e{next(counter)}")
        select.append("joins", exp.Join(this=derived, kind="ANTI" if negated else "SEMI", on=on))
        return
    source = inner_sources[0].copy()
    alias = source.alias_or_name
    if alias in outer:
        fresh = f"_e{next(counter)}"
        sub = sub.copy()
        _rename_alias(sub, alias, fresh)
        source = _sources(sub)[0].copy()
    cond = _and([p.copy() for p in conjuncts((sub.args.get("where") or exp.Where(this=exp.true())).this)])
    select.append("joins", exp.Join(this=source, kind="ANTI" if negated else "SEMI", on=cond or exp.true()))


def _neq_correlation(sub: exp.Select):
    """``(keys, (outer, inner))`` when ``sub`` is correlated by ``outer = inner`` equalities and
    exactly one ``outer <> inner`` (TPC-H Q21), else None."""
    _, correlated, inner = _split_correlation(sub)
    neqs = [p for p in correlated if isinstance(p, exp.NEQ)]
    if len(neqs) != 1:
        return None
    keys = _equality_keys([p for p in correlated if p is not neqs[0]], inner)
    sides = _equality_keys([exp.EQ(this=neqs[0].left.copy(), expression=neqs[0].right.copy())], inner)
    if not keys or not sides:
        return None
    return keys, sides[0]


def _neq_summary(sub: exp.Select, alias: str) -> tuple[exp.Subquery, exp.Expression]:
    """``EXISTS (sub)`` correlated by ``o_k = i_k …`` and one ``o <> i`` as a semi-join condition
    on a per-key summary: some matching row has ``i <> o`` iff ``o`` differs from the smallest
    or the largest non-NULL ``i`` of its key (all equal to ``o`` means both are ``o``; no
    non-NULL ``i``, or a NULL ``o``, leaves the condition NULL, as ``i <> o`` is for every
    row).  The summary — ``GROUP BY`` the inner keys — is unique on them, so the join needs no
    row expansion (docs/design.md §Subqueries).

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT * FROM b WHERE b.k = a.k AND b.x <> a.y AND b.z > 0")
    >>> d, on = _neq_summary(q, "_e0")
    >>> d.sql()
    '(SELECT b.k AS "_k0", MIN(b.x) AS "_mn", MAX(b.x) AS "_mx" FROM b WHERE b.z > 0 GROUP BY b.k) AS _e0'
    >>> on.sql()
    'a.k = "_e0"."_k0" AND (a.y <> "_e0"."_mn" OR a.y <> "_e0"."_mx")'
    """
    local, _, _ = _split_correlation(sub)
    keys, (o, i) = _neq_correlation(sub)
    body = sub.copy()
    body.set("where", exp.Where(this=_and([p.copy() for p in local])) if local else None)
    body.set("expressions", [exp.alias_(ik.copy(), f"_k{n}", quoted=True) for n, (_, ik) in enumerate(keys)]
             + [exp.alias_(exp.Min(this=i.copy()), "_mn", quoted=True),
                exp.alias_(exp.Max(this=i.copy()), "_mx", quoted=True)])
    body.set("group", exp.Group(expressions=[ik.copy() for _, ik in keys]))
    derived = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    on = [exp.EQ(this=ok.copy(), expression=exp.column(f"_k{n}", table=alias, quoted=True))
          for n, (ok, _) in enumerate(keys)]
    differs = exp.or_(*[exp.NEQ(this=o.copy(), expression=exp.column(c, table=alias, quoted=True))
                        for c in ("_mn", "_mx")])
    return derived, _and(on + [exp.paren(differs)])


def _uncorrelated_exists(sub: exp.Select, negated: bool) -> exp.Expression:
    """An uncorrelated ``[NOT] EXISTS (sub)`` as ``(SELECT count(*) FROM sub) > 0`` (``= 0``): a
    one-row value the planner joins to every row (no join key to semi-join on)."""
    body = sub.copy()
    body.set("expressions", [exp.alias_(exp.Count(this=exp.Star()), "_n", quoted=True)])
    cmp = exp.EQ if negated else exp.GT
    return cmp(this=exp.Subquery(this=body), expression=exp.Literal.number(0))


def _inner_aliases(sub: exp.Select) -> set[str]:
    """Every relation alias visible inside ``sub`` (its own sources and nested subqueries')."""
    return set().union(*(_aliases(s) for s in sub.find_all(exp.Select)))


def _is_outer(e: exp.Expression, inner: set[str]) -> bool:
    return any(c.table and c.table not in inner for c in e.find_all(exp.Column))


def _only_inner(e: exp.Expression, inner: set[str]) -> bool:
    cols = list(e.find_all(exp.Column))
    return bool(cols) and not _is_outer(e, inner)


def _split_correlation(sub: exp.Select) -> tuple[list[exp.Expression], list[exp.Expression], set[str]]:
    """(conjuncts over the subquery alone, conjuncts that read an outer column, inner aliases)."""
    inner = _inner_aliases(sub)
    for j in sub.args.get("joins") or []:
        if j.args.get("on") is not None and _is_outer(j.args["on"], inner):
            raise UnsupportedQueryError(
                "a correlated JOIN … ON condition inside a subquery (for an inner join, move it to the "
                "subquery's WHERE: same answer)", position_of(j))
    where = sub.args.get("where")
    local, correlated = [], []
    for p in conjuncts(where.this) if where is not None else []:
        (correlated if _is_outer(p, inner) else local).append(p)
    return local, correlated, inner


def _equality_keys(correlated: list[exp.Expression], inner: set[str]) -> list[tuple[exp.Expression, exp.Expression]] | None:
    """``[(outer side, inner side)]`` when every correlated conjunct is ``outer = inner``."""
    keys = []
    for p in correlated:
        if not isinstance(p, exp.EQ):
            return None
        a, b = p.left, p.right
        if _only_inner(b, inner) and not _only_inner(a, inner) and not any(
                c.table in inner for c in a.find_all(exp.Column)):
            keys.append((a, b))
        elif _only_inner(a, inner) and not _only_inner(b, inner) and not any(
                c.table in inner for c in b.find_all(exp.Column)):
            keys.append((b, a))
        else:
            return None
    return keys


def _correlated_relation(sub: exp.Select, alias: str) -> tuple[exp.Subquery, exp.Expression]:
    """``EXISTS (sub)`` as (a DISTINCT derived table, the semi-join condition on it).

    The subquery's own joins and filters stay inside the derived table, projected on the
    inner side of every correlated conjunct: ``outer = inner`` projects ``inner`` as a key,
    any other correlated conjunct projects the inner columns it reads.  DISTINCT keeps one
    row per key (the join's degree is 1); EXISTS only asks whether some row satisfies the
    correlated conjuncts, so the answer is the same (docs/design.md §Subqueries).
    """
    local, correlated, inner = _split_correlation(sub)
    projected: dict[str, tuple[str, exp.Expression]] = {}

    def proj(e: exp.Expression) -> exp.Column:
        k = e.sql()
        if k not in projected:
            projected[k] = (f"_k{len(projected)}", e.copy())
        return exp.column(projected[k][0], table=alias, quoted=True)

    on = []
    keys = _equality_keys(correlated, inner)
    if keys is not None:
        on = [exp.EQ(this=o.copy(), expression=proj(i)) for o, i in keys]
    else:
        for p in correlated:
            p = p.copy()
            for c in list(p.find_all(exp.Column)):
                if c.table in inner:
                    c.replace(proj(c))
            on.append(p)
    body = sub.copy()
    body.set("where", exp.Where(this=_and([p.copy() for p in local])) if local else None)
    items = [exp.alias_(e, name, quoted=True) for name, e in projected.values()] or \
        [exp.alias_(exp.true(), "_k0", quoted=True)]
    body.set("expressions", items)
    body.set("distinct", exp.Distinct())
    derived = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    return derived, _and(on) or exp.true()


def _or_of_exists(e: exp.Expression) -> list[exp.Select] | None:
    """The subqueries of ``EXISTS (a) OR EXISTS (b) OR …`` (each a plain SELECT), else None."""
    parts: list[exp.Expression] = []
    stack = [e]
    while stack:
        x = stack.pop()
        x = x.unnest() if isinstance(x, exp.Paren) else x
        if isinstance(x, exp.Or):
            stack += [x.right, x.left]
        else:
            parts.append(x)
    if len(parts) < 2 or not all(isinstance(p, exp.Exists) and _simple_subquery(p.this) for p in parts):
        return None
    return [p.this for p in parts]


def _any_exists_to_join(select: exp.Select, subs: list[exp.Select], counter, node: exp.Expression) -> None:
    """``EXISTS (a) OR EXISTS (b)`` correlated on the same ``outer = inner`` keys: one semi
    join with the UNION of the subqueries' keys (UNION is distinct, so the degree is 1)."""
    outer_keys = None
    bodies = []
    for sub in subs:
        local, correlated, inner = _split_correlation(sub)
        keys = _equality_keys(correlated, inner)
        if not keys:
            raise UnsupportedQueryError(
                "EXISTS (…) OR EXISTS (…) unless both are correlated by equalities on the same outer columns",
                position_of(node))
        by_outer = {o.sql(): i for o, i in keys}
        if len(by_outer) != len(keys) or (outer_keys is not None and set(by_outer) != set(outer_keys)):
            raise UnsupportedQueryError(
                "EXISTS (…) OR EXISTS (…) unless both are correlated by equalities on the same outer columns",
                position_of(node))
        outer_keys = outer_keys or {o.sql(): o for o, _ in keys}
        body = sub.copy()
        body.set("where", exp.Where(this=_and([p.copy() for p in local])) if local else None)
        body.set("expressions", [exp.alias_(by_outer[k].copy(), f"_k{n}", quoted=True)
                                 for n, k in enumerate(outer_keys)])
        bodies.append(body)
    union: exp.Expression = bodies[0]
    for b in bodies[1:]:
        union = exp.Union(this=union, expression=b, distinct=True)
    alias = f"_e{next(counter)}"
    derived = exp.Subquery(this=union, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    on = _and([exp.EQ(this=o.copy(), expression=exp.column(f"_k{n}", table=alias, quoted=True))
               for n, o in enumerate(outer_keys.values())])
    select.append("joins", exp.Join(this=derived, kind="SEMI", on=on))


def _in_to_join(select: exp.Select, node: exp.In, negated: bool, counter, not_null) -> exp.Expression | None:
    """Add the SEMI/ANTI join; returns the condition NOT IN's NULL semantics still need."""
    query = node.args["query"]
    query = query.this if isinstance(query, exp.Subquery) else query
    xs = node.this.expressions if isinstance(node.this, exp.Tuple) else [node.this]
    if not isinstance(query, exp.Select) and isinstance(query, exp.Query):
        raise UnsupportedQueryError("IN over a set operation (UNION, INTERSECT, EXCEPT)", position_of(node))
    if not isinstance(query, exp.Select) or len(query.expressions) != len(xs):
        raise UnsupportedQueryError(f"IN subquery must return exactly {len(xs) if len(xs) > 1 else 'one'} column"
                                    f"{'s' * (len(xs) > 1)}", position_of(node))
    outer = _aliases(select)
    if len(xs) > 1 or any(c.table in outer and c.table not in _inner_aliases(query)
                          for c in query.find_all(exp.Column)):
        _in_as_exists(select, node, query, xs, negated, counter, not_null)
        return None
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


def _in_as_exists(select: exp.Select, node: exp.In, query: exp.Select, xs: list[exp.Expression], negated: bool,
                  counter, not_null) -> None:
    """A correlated (or row-valued) ``xs [NOT] IN (query)`` as ``[NOT] EXISTS`` over ``query``'s rows.

    ``x IN (S)`` keeps a row iff some ``y`` of S equals ``x``: EXISTS with ``y = x`` added to
    the subquery's WHERE.  ``x NOT IN (S)`` keeps it iff no ``y`` of S makes ``x = y`` TRUE or
    NULL: NOT EXISTS with ``(y = x OR y IS NULL OR x IS NULL)`` — TRUE over an empty S, dropped
    when ``x`` is NULL or S holds a NULL (S is the per-row correlated set).  A row value
    ``(a, b)`` compares component-wise: AND of the per-component conditions.  When neither
    side can be NULL the condition is the plain ``y = x``.
    """
    sub = query.copy()
    sub.set("distinct", None)  # [NOT] IN does not depend on duplicates
    if not _simple_subquery(sub):
        raise UnsupportedQueryError("correlated or row-valued IN subquery with GROUP BY, HAVING, LIMIT, ORDER BY, "
                                    "WITH or an aggregate", position_of(node))
    outer = _aliases(select)
    for s in _sources(sub):
        if s.alias_or_name in outer:  # inner names shadow outer ones: rename before adding x
            _rename_alias(sub, s.alias_or_name, f"_e{next(counter)}")
    conds = []
    for x, y in zip(xs, [e.unalias() for e in sub.expressions]):
        eq = exp.EQ(this=y.copy(), expression=x.copy())
        if negated and (_column_nullable(x, select, not_null) or _column_nullable(y, sub, not_null)):
            eq = exp.paren(exp.or_(eq, exp.Is(this=y.copy(), expression=exp.Null()),
                                   exp.Is(this=x.copy(), expression=exp.Null())), copy=False)
        conds.append(eq)
    _, correlated, inner = _split_correlation(sub)
    if negated and all(isinstance(c, exp.Paren) for c in conds) and not _equality_keys(
            [p for p in correlated if isinstance(p, exp.EQ)], inner):
        # the anti join needs one equality to run on; NOT EXISTS's y = x alone is not NOT IN
        raise UnsupportedQueryError("NOT IN (SELECT …) over columns that can be NULL, correlated by no outer = "
                                    "inner equality", position_of(node))
    where = sub.args.get("where")
    sub.set("where", exp.Where(this=_and(([where.this] if where is not None else []) + conds)))
    sub.set("expressions", [exp.Star()])
    _exists_to_join(select, sub, negated, counter)
