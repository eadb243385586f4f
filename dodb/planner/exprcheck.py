"""Plan-time check of every scalar expression over private rows (docs/design.md §Expressions).

A query may only run if the oblivious evaluator (:mod:`dodb.operators.expressions`)
can evaluate each expression that will see private rows: projections, WHERE/HAVING
predicates, join residuals and the casts that unify join keys and set-operation
inputs.  :func:`check_expressions` finds out before the query is admitted (so a refusal
charges nothing) by running the plan over **zero slots**: every scan yields an empty
table of its public schema and widths, every operator runs in ``oblivious`` mode (no
release, no noise), and each expression over a private input goes through the same
evaluator as the real run — whose bind step dry-runs it over zero rows and raises
:class:`~dodb.errors.UnsupportedQueryError` naming what it cannot do.  No private row
is read: the scans are ``LIMIT 0``.
"""
from __future__ import annotations

from sqlglot import exp

from .. import duckcalls, sqlbuild
from ..operators import ExecContext, PaddedTable, from_arrow
from ..storage.canonical import PRIVATE_SCHEMA
from ..storage.layout import from_physical, physical_columns
from .catalog import Catalog
from .execute import Executor
from .logical import Node, Scan

__all__ = ["check_expressions"]


class _ZeroSlots(Executor):
    """The plan's operators over empty inputs of the public schemas."""

    def _scan(self, node: Scan) -> PaddedTable:
        info = self.catalog.table(node.table)
        con = self.catalog.con
        if info.private:
            wanted = set(node.source_columns)
            cols = [c for c in info.logical_columns if c.name in wanted]
            q = exp.select(*[exp.column(n, quoted=True) for n, _ in physical_columns(cols)]).from_(
                exp.table_(info.name, db=PRIVATE_SCHEMA, quoted=True)).limit(0)
            is_real, columns = from_physical(duckcalls.fetch_arrow(con, q.sql(dialect="duckdb")), cols, 0)
            names = [f"{node.alias}.{c}" for c in node.source_columns]
            return PaddedTable(names, [columns[c] for c in node.source_columns], is_real, node.stability,
                               aligned=True)
        q = exp.select(*[exp.column(c, table=node.alias, quoted=True).as_(f"{node.alias}.{c}", quoted=True)
                         for c in node.source_columns]).from_(
            sqlbuild.table(node.table, info.schema).as_(node.alias, quoted=True)).limit(0)
        return from_arrow(duckcalls.fetch_arrow(con, q.sql(dialect="duckdb")), stability=node.stability)


def check_expressions(root: Node, catalog: Catalog, mode: str) -> None:
    """Raise :class:`~dodb.errors.UnsupportedQueryError` if an expression over private rows
    cannot be evaluated obliviously (``plain`` mode keeps DuckDB and is not checked)."""
    if mode == "plain":
        return
    _ZeroSlots(catalog, ExecContext(mode="oblivious"), {}).run(root)
