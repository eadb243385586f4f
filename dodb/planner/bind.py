"""Bind before charge (docs/design.md §Bind before charge).

Every error that does not depend on data is raised here, before the ledger admits the
query, so it costs nothing:

* :func:`result_schema` — DuckDB binds the guarded query (``DESCRIBE``, which reads no
  row) with every private table replaced by its zero-row shadow and every public table
  fully qualified: unknown columns, type mismatches and unknown functions fail here; each
  result column's type must be one the padded representation holds (no INTERVAL,
  STRUCT, LIST …).
* :func:`duckdb_names` — the result columns' names exactly as DuckDB names them: DuckDB
  binds the analyst's own SQL text (its names render the expression as DuckDB parsed it,
  ``min_by(x, y)``, ``count_star()``, which sqlglot's rendering does not keep).
* :func:`dry_run` — the DO plan runs once over dummy slots (each private scan) and empty
  public scans (:class:`~dodb.planner.execute.Executor` with ``dry_run``): every
  operator and expression meets the types, and the all-NULL dummy rows, it will meet for
  real.  Its work depends on the plan only.
"""
from __future__ import annotations

import functools

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from ..duckcalls import scratch
from ..errors import DodbError, PlanningError, UnsupportedQueryError, one_line
from ..operators import ExecContext
from ..operators.table import column_from_arrow
from .catalog import SHADOW_SCHEMA, Catalog
from .guard import Guarded

__all__ = ["result_schema", "duckdb_names", "check_type", "dry_run"]

_AFTER = "found while binding the query, before admission: nothing was charged"


def _qualified(guarded: Guarded, catalog: Catalog) -> exp.Expression:
    """The guarded query with each base table fully qualified (private ones → zero-row shadows)."""
    ast = guarded.ast.copy()
    for t in list(ast.find_all(exp.Table)):
        if t.name in guarded.ctes:
            continue
        if not t.args.get("alias"):  # column references keep naming the table
            t.set("alias", exp.TableAlias(this=exp.to_identifier(t.name)))
        target = catalog.shadow(t.name)
        for key in ("this", "db", "catalog"):
            t.set(key, target.args.get(key))
    return ast


def _duck_message(e: BaseException) -> str:
    text = one_line(e)
    for prefix in ("Binder Error: ", "Catalog Error: ", "Parser Error: ", "Conversion Error: ",
                   "Invalid Input Error: ", "Not implemented Error: "):
        text = text.replace(prefix, "")
    return text


def result_schema(guarded: Guarded, catalog: Catalog) -> list[tuple[str, str]]:
    """DuckDB's names and types of the result columns; raises before anything is charged."""
    sql = exp.Describe(this=_qualified(guarded, catalog)).sql(dialect="duckdb")
    cur = catalog.cursor()
    try:
        rows = cur.execute(sql).fetchall()
    except duckdb.Error as e:
        raise PlanningError(_duck_message(e)) from None
    except RecursionError:
        raise UnsupportedQueryError("expressions nested too deeply to bind") from None
    finally:
        cur.close()
    for row in rows:
        check_type(row[1], f"result column {row[0]!r}")
    return [(r[0], r[1]) for r in rows]


def duckdb_names(sql: str, catalog: Catalog, params=None) -> list[str] | None:
    """DuckDB's names of the result columns of ``sql`` as the analyst wrote it, or None.

    The text is bound (``DESCRIBE``, which reads no row) with private tables found in the
    zero-row shadow schema ahead of the public one, and with the parameters DuckDB would be
    given.  None when DuckDB cannot bind the text on its own (a view over a private table):
    the caller keeps the names bound on the guarded query (docs/design.md §Analyst API).
    """
    db = exp.to_identifier(catalog.database).sql(dialect="duckdb")
    path = ",".join(f"{db}.{exp.to_identifier(s).sql(dialect='duckdb')}" for s in (SHADOW_SCHEMA, catalog.schema))
    cur = catalog.cursor()  # its own client context: the search path set here stays here
    try:
        cur.execute(f"SET search_path = '{path.replace(chr(39), chr(39) * 2)}'")
        described = f"DESCRIBE {sql.strip().rstrip(';')}"
        rows = cur.execute(described).fetchall() if params is None else cur.execute(described, params).fetchall()
    except (duckdb.Error, TypeError, ValueError, OverflowError, RecursionError):
        return None
    finally:
        cur.close()
    return [r[0] for r in rows]


@functools.lru_cache(maxsize=256)
def _holds(duck_type: str) -> bool:
    """Whether values of ``duck_type`` fit the padded representation (docs/design.md §Storage)."""
    if duck_type.strip('"').upper() == "NULL":  # max(NULL): a column of NULLs
        return True
    try:  # the scratch database is empty: only the type is looked at
        cast = exp.cast(exp.null(), exp.DataType.build(duck_type, dialect="duckdb"))
        arrow = scratch().sql(exp.select(cast.as_("x")).limit(0).sql(dialect="duckdb")).to_arrow_table()
        column_from_arrow(pa.array([], type=arrow.schema.field(0).type))
        return True
    except (duckdb.Error, sqlglot.errors.SqlglotError, DodbError, ValueError, TypeError, pa.ArrowException):
        return False


def check_type(duck_type: str, what: str) -> None:
    if not _holds(duck_type):
        raise UnsupportedQueryError(f"{what} has type {duck_type}, which dodb cannot return (numbers, DECIMAL, "
                                    "BOOLEAN, DATE, TIME, TIMESTAMP, VARCHAR and BLOB are supported)")


def dry_run(plan) -> None:
    """Run ``plan`` (a :class:`~dodb.planner.plan.QueryPlan`) over no data, as the real run will.

    Raises a :class:`~dodb.errors.DodbError` naming the failure; reads no private row
    and releases nothing.
    """
    from ..wire import encode
    from .execute import Executor

    ctx = ExecContext(mode="plain" if plan.mode == "plain" else "oblivious", neighbour=plan.neighbour)
    try:
        out = Executor(plan.catalog, ctx, {}, dry_run=True).run(plan.root)
        plan.answer(encode(out, plan.internal, plan.names, plan.types, 0))
    except UnsupportedQueryError:
        raise
    except DodbError as e:
        raise PlanningError(f"{one_line(e)} ({_AFTER})") from None
    except duckdb.Error as e:
        raise PlanningError(f"{_duck_message(e)} ({_AFTER})") from None
    except RecursionError:
        raise UnsupportedQueryError("expressions nested too deeply to run") from None
    except Exception as e:  # noqa: BLE001 - any failure here would have failed after the charge
        raise PlanningError(f"dodb cannot run this query: {type(e).__name__}: {one_line(e)} ({_AFTER})") from e
