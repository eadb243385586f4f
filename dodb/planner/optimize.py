"""Parse and optimise SQL with sqlglot's optimizer plus dodb's own rules.

sqlglot's rules do the heavy lifting (qualify, normalise, push predicates and
projections down, decorrelate scalar subqueries, merge subqueries, simplify).  dodb adds
:func:`~dodb.planner.rules.reject_unsupported` (before anything else) and
:func:`~dodb.planner.rules.unnest_exists` (EXISTS/IN → SEMI/ANTI joins),
:func:`~dodb.planner.rules.in_values` (IN subqueries as values, with SQL's three values) and
:func:`~dodb.planner.rules.correlated_count` (correlated COUNT subqueries → GROUP BY + LEFT
JOIN), before sqlglot's ``unnest_subqueries``.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SqlglotError
from sqlglot.optimizer import RULES
from sqlglot.optimizer import optimize as sqlglot_optimize
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.pushdown_predicates import pushdown_predicates
from sqlglot.optimizer.simplify import Simplifier, simplify
from sqlglot.optimizer.unnest_subqueries import unnest_subqueries

from .rules.mark_scalar_sources import (mark_scalar_sources, merge_keeping_scalar_sources,
                                        pushdown_keeping_scalar_sources)

from ..errors import CatalogError, PlanningError, UnsupportedQueryError, one_line
from .catalog import Catalog
from .guard import check_nesting, check_unit_arguments
from .rules import (correlated_count, correlated_value, factor_disjunctions, in_values, local_disjunctions, null_rejecting_joins,
                    one_row_source,
                    quantified_comparison, reject_unsupported,
                    unnest_exists)
from ..sqlpos import position_of

__all__ = ["parse", "optimize"]


def parse(sql: str) -> exp.Expression:
    """Parse one SQL statement (DuckDB dialect); malformed SQL raises :class:`PlanningError`."""
    if not isinstance(sql, str) or not sql.strip():
        raise PlanningError("empty SQL")
    check_nesting(sql)  # sqlglot and the planner recurse once per level
    try:
        # DuckDB's own parser is the authority on what is well-formed (it only parses here)
        duckdb.extract_statements(sql)
    except duckdb.Error as e:  # a ParserException, or DuckDB's own limits (depth, size)
        raise PlanningError("malformed SQL: " + " ".join(str(e).replace("Parser Error: ", "").split())) from None
    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except ParseError as e:
        errs = e.errors[0] if getattr(e, "errors", None) else {}
        where = f" at line {errs.get('line')}, col {errs.get('col')}" if errs else ""
        raise PlanningError(f"malformed SQL{where}: {errs.get('description') or e}") from None
    except SqlglotError as e:
        raise PlanningError(f"malformed SQL: {one_line(e)}") from None
    except RecursionError:
        raise UnsupportedQueryError("SQL nested too deeply to parse") from None
    if len(statements) != 1:
        raise UnsupportedQueryError(f"{len(statements)} statements (send one query at a time)")
    check_unit_arguments(sql)  # what the parse cannot tell apart: a column where a unit goes
    return statements[0]


def _check_tables(e: exp.Expression, catalog: Catalog) -> None:
    """Every relation is a CTE or a base table (the guard renamed CTEs and expanded views)."""
    ctes = {c.alias_or_name for c in e.find_all(exp.CTE)}
    for t in e.find_all(exp.Table):
        if t.name in ctes:
            continue
        if t.args.get("db") or t.args.get("catalog"):
            raise UnsupportedQueryError(f"qualified table name {t.sql(dialect='duckdb')}", position_of(t))
        info = catalog.tables.get(t.name)
        if info is None or t.name.startswith("dodb_") or info.kind != "table":
            raise CatalogError(f"unknown table {t.name!r}" + (f" ({position_of(t)})" if position_of(t) else ""))


_INTEGER_TYPES = {getattr(exp.DataType.Type, t) for t in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "INT128",
                                                          "UTINYINT", "USMALLINT", "UINT", "UBIGINT", "UINT128")}


def _sum_type(annotator, e: exp.Sum) -> exp.Sum:
    """DuckDB's SUM type: HUGEINT over integers (sqlglot: the argument's type, promoted)."""
    annotator._annotate_by_args(e, "this", "expressions", promote=True)
    arg = e.this.unalias() if isinstance(e.this, exp.Expression) else None
    if arg is not None and arg.type is not None and arg.type.this in _INTEGER_TYPES:
        annotator._set_type(e, exp.DataType.build("HUGEINT", dialect="duckdb"))
    return e


_DUCKDB_METADATA = None


def duckdb_annotate_types(expression: exp.Expression, schema=None, dialect=None) -> exp.Expression:
    """sqlglot's ``annotate_types`` with DuckDB's SUM type.

    sqlglot types ``sum(int_col)`` as BIGINT, DuckDB as HUGEINT; ``canonicalize`` would then
    drop ``CAST(sum(x) AS BIGINT)`` as redundant, where DuckDB's cast fails on a total
    outside BIGINT (and sqlglot's types of everything above the sum would be off too).
    """
    global _DUCKDB_METADATA
    if _DUCKDB_METADATA is None:
        from sqlglot.dialects.duckdb import DuckDB

        _DUCKDB_METADATA = {**DuckDB().EXPRESSION_METADATA, exp.Sum: {"annotator": _sum_type}}
    return annotate_types(expression, schema=schema, dialect=dialect, expression_metadata=_DUCKDB_METADATA)


class _DuckDBSimplifier(Simplifier):
    """sqlglot's simplifier without the rewrites whose answer differs from DuckDB's.

    * ``x + 0.2 = 0.3`` → ``x = 0.1`` holds in exact arithmetic only: over a DOUBLE ``x`` it
      changes which rows match, and over an integer it removes DuckDB's overflow error (moving a
      zero, ``x + 0 = 5``, is exact and still done);
    * an arithmetic chain holding an INTERVAL is reassociated (``(DATE '2020-01-30' + 2) +
      INTERVAL 1 MONTH`` folded the month first: 03-02, not DuckDB's 03-01); DuckDB folds the
      constant parts itself when the expression is bound (docs/design.md §Expressions);
    * ``-(-x)`` → ``x`` removes DuckDB's negation overflow.
    """

    def simplify_equality(self, expression: exp.Expression) -> exp.Expression:
        # moving a zero is exact (x + 0 is x: no rounding, no overflow); anything else is not
        left = expression.left if isinstance(expression, self.COMPARISONS) else None
        if isinstance(left, (exp.Add, exp.Sub)) and any(
                isinstance(o, exp.Literal) and o.is_number and o.to_py() == 0
                for o in ((left.left, left.right) if isinstance(left, exp.Add) else (left.right,))):
            return super().simplify_equality(expression)
        return expression

    def simplify_literals(self, expression: exp.Expression, root: bool = True) -> exp.Expression:
        if isinstance(expression, exp.Neg) and isinstance(expression.this, exp.Neg):
            return expression
        if (isinstance(expression, exp.Binary) and not isinstance(expression, exp.Connector)
                and expression.find(exp.Interval) is not None) or self._is_inverse_date_op(expression):
            return expression
        return super().simplify_literals(expression, root)


def duckdb_simplify(expression: exp.Expression, dialect=None) -> exp.Expression:
    """sqlglot's ``simplify`` rule with :class:`_DuckDBSimplifier`.

    >>> duckdb_simplify(sqlglot.parse_one("SELECT a FROM t WHERE a + 0.2 = 0.3 AND 1 + 1 = 2")).sql()
    'SELECT a FROM t WHERE a + 0.2 = 0.3'
    """
    return _DuckDBSimplifier(dialect=dialect).simplify(expression)


# sqlglot's predicate pushdown simplifies every WHERE condition with its own simplifier
# (`pushdown_predicates.pushdown`), where `f + 0.2 = 0.3` becomes `f = 0.1`: it must use the
# DuckDB-faithful one.  Set once, at import, so concurrent planning never sees a swap.
import sqlglot.optimizer.pushdown_predicates as _pushdown_module  # noqa: E402

_pushdown_module.simplify = lambda expression, dialect=None, **_: duckdb_simplify(expression, dialect=dialect)

# sqlglot drops the parentheses of ``a + (b + c)`` as if addition were associative; the tree
# is rendered and parsed again, so it becomes ``(a + b) + c``: for ``d + (INTERVAL 1 MONTH +
# INTERVAL 1 MONTH)`` DuckDB adds two months at once (01-30 → 03-30), not one and one (03-29),
# and doubles round differently.  A right operand's parentheses stay.
import sqlglot.optimizer.simplify as _simplify_module  # noqa: E402

_sqlglot_simplify_parens = _simplify_module.simplify_parens


def _simplify_parens(expression, dialect):
    parent = expression.parent
    if isinstance(expression, exp.Paren) and isinstance(expression.this, exp.Add) and isinstance(parent, exp.Add) \
            and parent.args.get("expression") is expression:
        return expression
    return _sqlglot_simplify_parens(expression, dialect)


_simplify_module.simplify_parens = _simplify_parens


def typed_case_defaults(expression: exp.Expression) -> exp.Expression:
    """Give a CASE without ELSE the ELSE it means, ``CAST(NULL AS <its type>)``, after
    ``annotate_types``.

    ``simplify`` turns a CASE whose every WHEN is false into a bare ``NULL``, and DuckDB cannot
    bind ``NULL + INTERVAL 1 DAY`` (which of DATE, TIMESTAMP, TIME, INTERVAL is it?), though it
    binds the CASE: the typed NULL keeps the query answerable, with the same value and type.

    >>> e = sqlglot.parse_one("SELECT CASE WHEN x > 1 THEN DATE '2020-01-01' END FROM t", read="duckdb")
    >>> from sqlglot.optimizer.annotate_types import annotate_types
    >>> typed_case_defaults(annotate_types(e, schema={"t": {"x": "INT"}})).sql("duckdb")
    "SELECT CASE WHEN x > 1 THEN CAST('2020-01-01' AS DATE) ELSE CAST(NULL AS DATE) END FROM t"
    """
    for case in expression.find_all(exp.Case):
        t = case.type
        if case.args.get("default") is None and t is not None and not t.is_type(
                exp.DataType.Type.NULL, exp.DataType.Type.UNKNOWN):
            case.set("default", exp.cast(exp.null(), t.copy()))
    return expression


def duckdb_literal_types(expression: exp.Expression) -> exp.Expression:
    """Type decimal literals as DuckDB does, after sqlglot's ``annotate_types``.

    sqlglot types ``0.5`` as DOUBLE, DuckDB as DECIMAL(2,1); ``canonicalize`` would then
    drop ``CAST(0.5 AS DOUBLE)`` as redundant, and the value changes (``CAST(0.5 AS
    DOUBLE)::INTEGER`` is 0 in DuckDB, ``CAST(0.5 AS INTEGER)`` is 1).
    """
    for lit in expression.find_all(exp.Literal):
        text = lit.this
        if lit.is_string or "." not in text or "e" in text.lower():
            continue
        digits = sum(ch.isdigit() for ch in text)
        scale = len(text.split(".", 1)[1])
        if digits <= 38:
            lit.type = exp.DataType.build(f"DECIMAL({max(digits, scale, 1)}, {scale})")
    return expression


def scalar_projections(expression: exp.Expression) -> exp.Expression:
    """Parenthesise an uncorrelated scalar subquery used as a whole SELECT item.

    sqlglot's ``unnest_subqueries`` turns scalar subqueries inside a condition or an
    arithmetic expression into a cross join with the one-row relation, but leaves a bare
    ``(SELECT max(x) FROM t) AS m`` alone; a parenthesis puts it in the same position.
    The cross join is with exactly one row: the subquery's value, NULL when it is empty,
    DuckDB's error when it has several (rules/mark_scalar_sources.py, a ScalarRow).
    """
    for select in list(expression.find_all(exp.Select)):
        for proj in select.expressions:
            sub = proj.this if isinstance(proj, exp.Alias) else proj
            if not isinstance(sub, exp.Subquery) or not isinstance(sub.this, exp.Select):
                continue
            inner = sub.this
            own = {s.alias_or_name for s in inner.find_all(exp.Table)}
            if len(inner.expressions) != 1 or any(c.table not in own for c in inner.find_all(exp.Column)):
                continue
            sub.replace(exp.paren(sub.copy(), copy=False))
    return expression


_CACHE_SIZE = 256
_cache: OrderedDict[tuple, exp.Expression] = OrderedDict()
_cache_lock = threading.Lock()


def _schema_key(catalog: Catalog) -> tuple:
    """Everything of the catalog that :func:`optimize` reads: names, kinds, columns, NOT NULLs."""
    return tuple(sorted((t, i.kind, tuple(i.columns.items()), tuple(sorted(i.not_null)))
                        for t, i in catalog.tables.items()))


def optimize(sql: str | exp.Expression, catalog: Catalog) -> exp.Expression:
    """The optimised, fully qualified AST of one SELECT query (already through the guard).

    sqlglot's optimizer is the largest part of planning; its result depends only on the
    query text and the schema, so it is kept (a copy is returned) for repeated queries.
    """
    e = parse(sql) if isinstance(sql, str) else sql
    key = (e.sql(dialect="duckdb"), _schema_key(catalog))
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
    if hit is not None:
        return hit.copy()
    out = _optimize(e, catalog)
    with _cache_lock:
        _cache[key] = out.copy()
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return out


def _optimize(e: exp.Expression, catalog: Catalog) -> exp.Expression:
    reject_unsupported(e)
    _check_tables(e, catalog)
    e = one_row_source(e)  # a SELECT without FROM reads one row (a UNION's constant branch, scalar subqueries)
    schema = catalog.sqlglot_schema()
    not_null = {t: set(i.not_null) for t, i in catalog.tables.items()}
    def dodb_unnest_exists(expression: exp.Expression) -> exp.Expression:
        return unnest_exists(expression, not_null)

    # sqlglot's rule sequence with dodb's EXISTS/IN rule in front of unnest_subqueries
    rules = []
    for rule in RULES:
        if rule is unnest_subqueries:
            rules.append(quantified_comparison)
            rules.append(factor_disjunctions)
            rules.append(dodb_unnest_exists)
            rules.append(in_values)
            rules.append(correlated_count)
            rules.append(correlated_value)
            rules.append(local_disjunctions)
            rules.append(scalar_projections)
        rules.append(rule)
        if rule is unnest_subqueries:
            rules.append(mark_scalar_sources)
        if rule is merge_subqueries:
            rules[-1] = merge_keeping_scalar_sources
        if rule is pushdown_predicates:
            rules[-1] = pushdown_keeping_scalar_sources
        if rule is simplify:
            rules[-1] = duckdb_simplify
        if rule is annotate_types:
            rules[-1] = duckdb_annotate_types
            rules.append(duckdb_literal_types)
            rules.append(typed_case_defaults)
    rules.append(null_rejecting_joins)  # on the final AST: sqlglot's rules never see the inner joins it makes
    try:
        e = sqlglot_optimize(e, schema=schema, dialect="duckdb", rules=rules, validate_qualify_columns=True)
    except OptimizeError as err:
        raise PlanningError(one_line(err)) from None
    except RecursionError:
        raise UnsupportedQueryError("expressions nested too deeply to plan") from None
    # decorrelation may have produced constructs we cannot run (e.g. ARRAY_AGG)
    reject_unsupported(e)
    return e
