"""Small SQL statements dodb sends to DuckDB, built as sqlglot expressions.

Identifiers are quoted and literals bound by sqlglot's renderer; no SQL text is ever
assembled by pasting strings (security hygiene: a table or column name cannot inject).
"""
from __future__ import annotations

from typing import Sequence

from sqlglot import exp

__all__ = ["table", "column", "create_schema", "count_rows", "content_fingerprint", "max_rows_per_value", "max_length", "count_where_null",
           "count_orphans", "render"]


def render(e: exp.Expression) -> str:
    return e.sql(dialect="duckdb")


def table(name: str, schema: str | None = None, database: str | None = None) -> exp.Table:
    return exp.table_(exp.to_identifier(name, quoted=True),
                      db=exp.to_identifier(schema, quoted=True) if schema else None,
                      catalog=exp.to_identifier(database, quoted=True) if database and schema else None)


def column(name: str, tbl: str | None = None) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True), table=exp.to_identifier(tbl, quoted=True) if tbl else None)


def create_schema(name: str) -> str:
    """``CREATE SCHEMA IF NOT EXISTS "name"``."""
    return render(exp.Create(this=exp.Table(this=exp.to_identifier(name, quoted=True)), kind="SCHEMA", exists=True))


def _count_star() -> exp.Expression:
    return exp.Count(this=exp.Star())


def count_rows(name: str | exp.Table, schema: str | None = None) -> str:
    return render(exp.select(_count_star()).from_(name if isinstance(name, exp.Table) else table(name, schema)))


def content_fingerprint(name: exp.Table, cols: Sequence[str]) -> str:
    """``SELECT count(*), sum(hash(cols…)), bit_xor(hash(cols…)) FROM t``: changes with any row."""
    if not cols:
        raise ValueError("a content fingerprint needs at least one column")
    h = exp.Anonymous(this="hash", expressions=[column(c) for c in cols])
    return render(exp.select(_count_star(), exp.Sum(this=h), exp.Anonymous(this="bit_xor", expressions=[h.copy()]))
                  .from_(name))


def max_rows_per_value(name: str | exp.Table, cols: Sequence[str], schema: str | None = None) -> str:
    """``SELECT coalesce(max(c), 0) FROM (SELECT count(*) AS c FROM t GROUP BY cols)``."""
    src = name if isinstance(name, exp.Table) else table(name, schema)
    inner = exp.select(_count_star().as_("c")).from_(src).group_by(*[column(c) for c in cols])
    return render(exp.select(exp.Coalesce(this=exp.Max(this=exp.column("c")), expressions=[exp.Literal.number(0)]))
                  .from_(inner.subquery("g")))


def max_length(name: str, col: str, fn: str, schema: str | None = None) -> str:
    """``SELECT coalesce(max(fn(col)), 1) FROM t`` with ``fn`` in strlen / octet_length."""
    if fn not in ("strlen", "octet_length"):
        raise ValueError(fn)
    length = exp.Anonymous(this=fn, expressions=[column(col)])
    return render(exp.select(exp.Coalesce(this=exp.Max(this=length), expressions=[exp.Literal.number(1)]))
                  .from_(table(name, schema)))


def count_where_null(name: str, col: str, schema: str | None = None) -> str:
    return render(exp.select(_count_star()).from_(table(name, schema)).where(exp.Is(this=column(col), expression=exp.Null())))


def count_orphans(name: str, fk: str, parent: str, pk: str, schema: str | None = None,
                  parent_schema: str | None = None) -> str:
    """Rows of ``name`` whose ``fk`` has no row in ``parent`` with that ``pk``."""
    sub = exp.select(exp.Literal.number(1)).from_(table(parent, parent_schema).as_("p")).where(
        exp.EQ(this=column(pk, "p"), expression=column(fk, "t")))
    return render(exp.select(_count_star()).from_(table(name, schema).as_("t")).where(
        exp.Not(this=exp.Exists(this=sub))))
