"""Pull conjuncts shared by every branch of an OR out in front of it.

``(A AND B) OR (A AND C)`` becomes ``A AND (B OR C)``, so that a join equality repeated
in every branch (TPC-H Q19) becomes a join key instead of a cross join.

Example:
    >>> import sqlglot
    >>> factor_disjunctions(sqlglot.parse_one(
    ...     "SELECT * FROM a, b WHERE (a.k = b.k AND a.x = 1) OR (a.k = b.k AND a.x = 2)")).sql()
    'SELECT * FROM a, b WHERE a.k = b.k AND (a.x = 1 OR a.x = 2)'
"""
from __future__ import annotations

from sqlglot import exp

__all__ = ["factor_disjunctions"]


def _conj(e: exp.Expression) -> list[exp.Expression]:
    e = e.unnest() if isinstance(e, exp.Paren) else e
    if isinstance(e, exp.And):
        return _conj(e.left) + _conj(e.right)
    return [e]


def _disj(e: exp.Expression) -> list[exp.Expression]:
    e = e.unnest() if isinstance(e, exp.Paren) else e
    if isinstance(e, exp.Or):
        return _disj(e.left) + _disj(e.right)
    return [e]


def _factor(node: exp.Expression) -> exp.Expression:
    if not isinstance(node, exp.Or):
        return node
    branches = [_conj(b) for b in _disj(node)]
    keys = [{c.sql(): c for c in b} for b in branches]
    common = [k for k in keys[0] if all(k in other for other in keys[1:])]
    if not common:
        return node
    rest = []
    for b in keys:
        left = [c for k, c in b.items() if k not in common]
        if not left:  # one branch is implied by the common part: the OR is just the common part
            return exp.and_(*[keys[0][k].copy() for k in common])
        rest.append(exp.paren(exp.and_(*[c.copy() for c in left])) if len(left) > 1 else left[0].copy())
    return exp.and_(*[keys[0][k].copy() for k in common], exp.paren(exp.or_(*rest)))


def factor_disjunctions(expression: exp.Expression) -> exp.Expression:
    """Factor common conjuncts out of ORs in WHERE, HAVING and JOIN ... ON conditions."""
    for node in list(expression.find_all(exp.Where, exp.Having, exp.Join)):
        key = "on" if isinstance(node, exp.Join) else "this"
        cond = node.args.get(key)
        if cond is not None:
            node.set(key, cond.transform(_factor))
    return expression
