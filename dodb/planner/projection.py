"""Projection nodes and column references: the helpers every planning pass shares.

A projection keeps what the planner knows of its input's columns (degree bounds,
uniqueness, functional dependencies, constants, literal values) under their new names.
"""
from __future__ import annotations

from sqlglot import exp

from .degrees import literal_value, project_fds, rename_keys
from .logical import Node, Project

__all__ = ["column_ref", "project_node"]


def column_ref(name: str) -> exp.Column:
    """A reference to the plan column ``name`` (quoted: plan names are not SQL identifiers).

    >>> column_ref("t.a").sql()
    '"t.a"'
    """
    return exp.Column(this=exp.to_identifier(name, quoted=True))


def project_node(child: Node, exprs: dict[str, exp.Expression], same: dict[str, str] | None = None) -> Project:
    """A projection node; plain column references keep their degree bounds and uniqueness.

    ``same`` maps further outputs to the input column they are an injective function of
    (planner/degrees.py ``shifted_column``): they keep its bounds too.  A column projected
    under several names keeps its bounds under each."""
    mapping: dict[str, str] = {}
    for n, e in exprs.items():
        if isinstance(e, exp.Column) and (e.name not in mapping or n == e.name):
            mapping[e.name] = n  # the column under its own name if it keeps it, else its first alias
    also = {n: e.name for n, e in exprs.items() if isinstance(e, exp.Column) and mapping[e.name] != n}
    also.update({n: c for n, c in (same or {}).items() if n in exprs and c in mapping})
    degrees = {mapping[c]: d for c, d in child.degrees.items() if not isinstance(c, frozenset) and c in mapping}
    degrees.update({frozenset(mapping[x] for x in c): d for c, d in child.degrees.items()
                    if isinstance(c, frozenset) and c <= set(mapping)})
    unique = [frozenset(mapping[c] for c in u) for u in child.unique if u <= set(mapping)]
    degrees, unique = rename_keys(degrees, unique, {n: mapping[c] for n, c in also.items()})
    # a column fixed to one value stays fixed under any name (and any function of it too)
    constant = frozenset({mapping[c] for c in child.constant if c in mapping}
                         | {n for n, c in also.items() if c in child.constant})
    # dependencies from declared keys survive while their key columns are kept (planner/degrees.py)
    names: dict[str, list[str]] = {}
    for n, e in exprs.items():
        if isinstance(e, exp.Column):
            names.setdefault(e.name, []).append(n)
    fds = project_fds(child.fds, names)
    # a literal output holds one value in every row; a plain column keeps its literal values
    literals = {}
    for n, e in exprs.items():
        if (v := literal_value(e)) is not None:
            literals[n] = frozenset({v})
        elif isinstance(e, exp.Column) and e.name in child.literals:
            literals[n] = child.literals[e.name]
    return Project(child, dict(exprs), columns=list(exprs), stability=child.stability, degrees=degrees,
                   unique=unique, one_row=child.one_row, max_rows=child.max_rows, constant=constant,
                   fds=fds, literals=literals)
