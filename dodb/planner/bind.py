"""Bind before charge (docs/design.md §Bind before charge).

Every error that does not depend on data is raised here, before the ledger admits the
query, so it costs nothing:

* :func:`result_schema` — DuckDB binds the guarded query (``DESCRIBE``, which reads no
  row) with every private table replaced by its zero-row shadow and every public table
  fully qualified: unknown columns, type mismatches and unknown functions fail here; each
  result column's type must be one the padded representation holds (no INTERVAL,
  STRUCT, LIST …).
* :func:`check_window_defaults` — a constant LAG/LEAD default must cast to the type of
  the value it stands in for (``lag(x::TINYINT, 1, 300)``): DuckDB raises on the first
  row that reads it, dodb raises here, before admission.
* :func:`duckdb_names` — the result columns' names exactly as DuckDB names them: DuckDB
  *parses* the analyst's own text (given as a value, never run) and renders each select
  expression as it names it (``min_by(x, y)``, ``count_star()``, which sqlglot's
  rendering does not keep).
* :func:`dry_run` — the DO plan runs once over dummy slots (each private scan) and empty
  public scans (:class:`~dodb.planner.execute.Executor` with ``dry_run``): every
  operator and expression meets the types, and the all-NULL dummy rows, it will meet for
  real.  Its work depends on the plan only.
"""
from __future__ import annotations

import functools
import json

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from ..duckcalls import scratch
from ..errors import DodbError, PlanningError, UnsupportedQueryError, one_line
from ..operators import ExecContext
from ..operators.table import column_from_arrow
from .catalog import Catalog
from .guard import Guarded
from .logical import Exchange, Join, SetOp, walk
from ..sqlpos import position_of

__all__ = ["result_schema", "check_window_defaults", "duckdb_names", "check_type", "dry_run", "public_query_sql"]

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


def public_query_sql(guarded: Guarded, catalog: Catalog) -> str | None:
    """The guarded query as DuckDB SQL, when every base table it reads is public (else None).

    Built from the guarded tree (every node allow-listed, views expanded, CTEs renamed),
    with each table fully qualified — the statement :func:`result_schema` binds, run
    instead of described (docs/design.md §Public queries).
    """
    if any(catalog.table(t).private for t in guarded.tables):
        return None
    return _qualified(guarded, catalog).sql(dialect="duckdb")


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


def _value_type(window: exp.Window, value: exp.Expression, root: exp.Expression, catalog: Catalog) -> str | None:
    """DuckDB's type of ``value`` in the SELECT holding ``window`` (None if it cannot be bound alone)."""
    select = window.find_ancestor(exp.Select)
    if select is None:
        return None
    probe = select.copy()
    probe.set("expressions", [value.copy().as_("__dodb_value")])
    for key in ("order", "limit", "offset", "qualify", "distinct"):
        probe.set(key, None)
    with_ = root.args.get("with") or root.args.get("with_")
    if select is not root and with_ is not None and not (probe.args.get("with") or probe.args.get("with_")):
        probe.set("with", with_.copy())  # the guard gave every CTE a fresh name: no clash
    cur = catalog.cursor()
    try:
        return cur.execute(exp.Describe(this=probe).sql(dialect="duckdb")).fetchall()[0][1]
    except (duckdb.Error, IndexError, RecursionError):
        return None  # e.g. a correlated column: the default is cast at run time as before
    finally:
        cur.close()


def check_window_defaults(guarded: Guarded, catalog: Catalog) -> None:
    """Raise if a constant LAG/LEAD default cannot be cast to its value's type (module doc)."""
    root = _qualified(guarded, catalog)
    for window in root.find_all(exp.Window):
        func = window.this
        default = func.args.get("default") if isinstance(func, (exp.Lag, exp.Lead)) else None
        if default is None or default.find(exp.Column, exp.Query, exp.AggFunc, exp.Window) is not None:
            continue
        value_type = _value_type(window, func.this, root, catalog)
        if value_type is None:
            continue
        try:
            target = exp.DataType.build(value_type, dialect="duckdb")
        except sqlglot.errors.SqlglotError:
            continue
        cur = scratch().cursor()  # a constant cast: reads nothing, touches no table
        try:
            cur.execute(exp.select(exp.cast(default.copy(), target)).sql(dialect="duckdb")).fetchall()
        except duckdb.Error as e:
            name = func.key.upper()
            where = position_of(window)
            raise PlanningError(
                f"{name}'s default {default.sql(dialect='duckdb')[:40]} does not fit {value_type}, the type of "
                f"{name}'s value ({_duck_message(e).split(' LINE ')[0]}); write a default of that type, or "
                f"cast the value to a wider type{' (at ' + where + ')' if where else ''}; {_AFTER}") from None
        finally:
            cur.close()


def _expression_text(con, select: dict, expr: dict, statement: dict) -> str | None:
    """DuckDB's own rendering of one parsed select-list expression (its ``ToString``)."""
    alone = dict(select, select_list=[expr], where_clause=None, group_expressions=[], group_sets=[], having=None,
                 aggregate_handling="STANDARD_HANDLING",
                 qualify=None, modifiers=[], sample=None,
                 from_table={"type": "EMPTY", "alias": "", "sample": None, "query_location": 2 ** 64 - 1})
    tree = {"error": False, "statements": [{"node": alone, "named_param_map": statement.get("named_param_map", [])}]}
    try:
        text = con.execute("SELECT json_deserialize_sql(?)", [json.dumps(tree)]).fetchall()[0][0]
    except (duckdb.Error, TypeError, ValueError):
        return None
    return text[len("SELECT "):] if isinstance(text, str) and text.startswith("SELECT ") else None


def duckdb_names(sql: str) -> list[str] | None:
    """DuckDB's names of the result columns of ``sql`` as the analyst wrote it, or None.

    DuckDB names an unaliased column by its rendering of the *parsed* expression
    (``min_by(x, y)``, ``count_star()``, ``($1 + x)``; a column reference by its column
    name).  The text is only parsed by DuckDB — ``json_serialize_sql`` with the text as a
    bound value, never as SQL, so nothing the guard did not see is bound or run — and
    each expression rendered back (``json_deserialize_sql``).  None where the names need
    binding (a ``*`` in the outer select list, a statement that is not a query): the
    caller keeps the names of the bound guarded query (docs/design.md §Analyst API).
    """
    con = scratch().cursor()  # its own result set: the shared scratch connection is left as it was
    try:
        return _names(con, sql)
    finally:
        con.close()


def _names(con, sql: str) -> list[str] | None:
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()[0][0])
    except (duckdb.Error, TypeError, ValueError, RecursionError):
        return None
    statements = tree.get("statements") or []
    if tree.get("error") or len(statements) != 1:
        return None
    node = statements[0].get("node") or {}
    while node.get("type") == "SET_OPERATION_NODE":  # a set operation is named by its first query
        node = node.get("left") or (node.get("children") or [{}])[0]
    if node.get("type") != "SELECT_NODE":
        return None
    names = []
    for expr in node.get("select_list") or []:
        if expr.get("alias"):
            names.append(expr["alias"])
        elif expr.get("class") == "STAR":
            return None
        elif expr.get("class") == "COLUMN_REF":
            names.append(expr["column_names"][-1])
        else:
            text = _expression_text(con, node, expr, statements[0])
            if text is None:
                return None
            names.append(text)
    return names


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
    """A result type dodb can return: a padded scalar, or a list of one (an output column of
    list/array_agg, docs/design.md §list; planner/rules/list_outputs.py says where)."""
    elem = duck_type[:-2] if duck_type.endswith("[]") else duck_type
    if not _holds(elem) or elem.endswith("]"):
        raise UnsupportedQueryError(f"{what} has type {duck_type}, which dodb cannot return (numbers, DECIMAL, "
                                    "BOOLEAN, DATE, TIME, TIMESTAMP, VARCHAR and BLOB are supported)")


def dry_run(plan) -> tuple[list[int | None], bool]:
    """Run ``plan`` (a :class:`~dodb.planner.plan.QueryPlan`) over no data, as the real run will.

    Raises a :class:`~dodb.errors.DodbError` naming the failure; reads no private row
    and releases nothing.  Returns the public row width of every Exchange's rows, in walk
    order (the cost model's, docs/distributed.md §Exchange cost), and whether a co-partitioned
    join or set operation had to cast its paired columns to a common type (then the two sides'
    hashes of equal values may differ: the planner does not co-partition them, §Joins).
    """
    from ..wire import encode
    from .execute import Executor

    ctx = ExecContext(mode="plain" if plan.mode == "plain" else "oblivious", neighbour=plan.neighbour)
    try:
        ex = Executor(plan.catalog, ctx, {}, dry_run=True)
        out = ex.run(plan.root)
        plan.answer(encode(out, plan.internal, plan.names, plan.types, 0))
        cast = any(isinstance(n, (Join, SetOp)) and n.copartitioned and n.node_id in ex.cast_pairs
                   for n in walk(plan.root))
        return [ex.row_bytes.get(n.node_id) for n in walk(plan.root) if isinstance(n, Exchange)], cast
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
