"""One way in: the allow-list every query passes before dodb plans it (docs/design.md §Pushdown allow-list).

:func:`guard` rewrites a parsed query so that every relation it names is one dodb can
see — a CTE of the query (renamed to a fresh name, so a CTE named like a table can never
be confused with it), a base table of the catalog, or a view, which is expanded into its
definition and checked the same way — and checks every node against an allow-list of
query structure and scalar expressions.  Anything else (table functions, file paths,
dodb's storage schemas, qualified names, macros and other user functions, ``COLUMNS``,
star modifiers, positional references, parameters …) is refused with an
:class:`~dodb.errors.UnsupportedQueryError` naming the construct, before anything runs.

:func:`pushable` decides whether a predicate may be handed to DuckDB with a public scan:
only allow-listed scalar expressions over that scan's own columns (no subquery, no
aggregate, no star).  The scan's SQL is then built by dodb from its plan.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from ..errors import CatalogError, UnsupportedQueryError, did_you_mean
from .catalog import Catalog
from ..sqlpos import position_of

__all__ = ["guard", "check_scalar", "Guarded", "pushable", "check_nesting", "check_unit_arguments", "MAX_NESTING", "INTERNAL_SCHEMAS"]

MAX_NESTING = 64          # parentheses/brackets; sqlglot and the planner recurse per level
MAX_VIEW_DEPTH = 16       # views defined over views
INTERNAL_SCHEMAS = ("dodb_private", "dodb_shadow", "dodb_meta")


def _classes(*names: str) -> tuple[type, ...]:
    # tolerate sqlglot versions that lack a class (it can then never appear in a tree)
    return tuple(c for c in (getattr(exp, n, None) for n in names) if isinstance(c, type))


# Query structure: allowed in the query, never inside a pushed-down predicate.
_STRUCTURE = _classes(
    "Select", "Union", "Intersect", "Except", "Subquery", "From", "Join", "Where", "Group", "Having",
    "Order", "Ordered", "Limit", "Offset", "With", "CTE", "Table", "TableAlias", "Exists", "Any", "All",
    "Distinct", "Star", "Count", "Sum", "Avg", "Min", "Max", "LimitOptions",
    # grouping sets, GROUPING() and FILTER: rewritten by planner/rules before planning (§Grouping)
    "Rollup", "Cube", "GroupingSets", "Grouping", "Filter", "WithinGroup",
    # aggregates of docs/design.md §Aggregates (planner/agg_calls.py checks their arguments)
    "Median", "Stddev", "StddevSamp", "StddevPop", "Variance", "VariancePop", "Corr", "CovarPop", "CovarSamp",
    "ArgMin", "ArgMax", "PercentileCont", "PercentileDisc", "Quantile", "GroupConcat", "ArrayAgg",
    # window functions (planner/windows.py refuses what it cannot run)
    "Window", "WindowSpec", "Qualify", "RowNumber", "Rank", "DenseRank", "Ntile", "Lag", "Lead", "FirstValue",
    "LastValue", "NthValue", "PercentRank", "CumeDist", "RespectNulls", "IgnoreNulls")
# Scalar expressions: deterministic, no side effects, no access to anything but their arguments.
_SCALAR = _classes(
    "Column", "Identifier", "Alias", "Literal", "Boolean", "Null", "Paren", "Neg", "Not", "And", "Or",
    "Add", "Sub", "Mul", "Div", "IntDiv", "Mod", "Pow", "EQ", "NEQ", "GT", "GTE", "LT", "LTE",
    "NullSafeEQ", "NullSafeNEQ", "Is", "Between", "Like", "ILike", "In", "Tuple", "Case", "If", "Coalesce",
    "Nullif", "Cast", "TryCast", "DataType", "DataTypeParam", "Interval", "Var", "Abs", "Round", "Floor",
    "Ceil", "Trunc", "Sign", "Sqrt", "Ln", "Log", "Exp", "Greatest", "Least", "Upper", "Lower", "Length",
    "BitLength", "Substring", "Concat", "ConcatWs", "DPipe", "Trim", "Left", "Right", "Pad", "Repeat",
    "Replace", "Reverse", "StartsWith", "EndsWith", "Contains", "StrPosition", "Ascii", "Chr", "SplitPart",
    "Extract", "Year", "Month", "Day", "Quarter", "DayOfWeek", "DayOfWeekIso", "DayOfMonth", "DayOfYear",
    "Week", "WeekOfYear", "DateTrunc", "TimestampTrunc", "DateDiff", "DateAdd", "DateSub", "LastDay",
    "Monthname", "Dayname", "TimeToStr", "StrToTime", "StrToDate", "DateFromParts", "TimeFromParts", "TimestampFromParts", "TsOrDsToDate",
    "IsNan", "IsInf", "RegexpLike", "RegexpFullMatch", "SimilarTo", "RegexpReplace", "RegexpExtract", "Anonymous", "Cbrt", "Sin", "Cos", "Tan", "Cot", "Asin", "Acos", "Atan",
    "Atan2", "Sinh", "Cosh", "Tanh", "Asinh", "Acosh", "Atanh", "Degrees", "Radians", "Pi", "Hour", "Minute",
    "Second", "TimeToUnix", "UnixToTime", "MD5", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
    "BitwiseLeftShift", "BitwiseRightShift", "Unicode", "Chr", "Translate", "Hex", "Factorial",
    "SplitPart", "Glob", "Format", "Levenshtein", "Escape", "SHA2", "ToDays",
    # constants of the query's moment (expressions/now.py writes them in before planning)
    "CurrentDate", "CurrentTimestamp",
    # a string's bytes and its split, read only by octet_length/to_base64 and len (expressions/blobs.py, text.py)
    "Encode", "ToBase64", "Split", "ArraySize")
_AGGREGATES = _classes("Count", "Sum", "Avg", "Min", "Max")
_QUERIES = _classes("Select", "Union", "Intersect", "Except", "Subquery", "Exists", "Any", "All")
# DuckDB scalar functions sqlglot does not model: pure functions of their arguments only
_FUNCTIONS = frozenset({
    "strlen", "octet_length", "length_grapheme", "date_part", "datepart", "suffix", "prefix", "gcd", "lcm",
    "even", "yearweek", "isoyear", "century", "decade", "millennium", "nullif", "ifnull", "lcase", "ucase",
    "ceiling", "trunc", "left_grapheme", "right_grapheme", "strip_accents", "bit_count", "signbit",
    "isfinite", "era", "millisecond", "microsecond", "weekday", "epoch_us", "add", "subtract", "multiply", "fmod",
    "nextafter", "ord", "round_even", "roundbankers", "printf", "divide", "date_sub", "datesub", "try_strptime",
    "to_hours", "to_minutes", "to_microseconds", "to_days", "to_weeks", "age", "base64",
})
# CAST targets the padded representation holds (docs/design.md §Storage)
_CAST_TYPES = {t for t in (getattr(exp.DataType.Type, n, None) for n in (
    "TINYINT", "SMALLINT", "INT", "BIGINT", "HUGEINT", "INT128", "UINT128", "UTINYINT", "USMALLINT", "UINT", "UBIGINT",
    "DECIMAL", "FLOAT", "DOUBLE", "VARCHAR", "TEXT", "CHAR", "NCHAR", "NVARCHAR", "DATE", "TIMESTAMP", "TIMESTAMPNTZ",
    "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "DATETIME", "TIMESTAMPTZ", "TIME", "BOOLEAN", "BLOB", "VARBINARY",
    "BINARY")) if t is not None}
# arguments each structural node may carry (anything else is a DuckDB extension dodb does not plan)
_ARGS = {
    exp.Select: {"expressions", "from", "from_", "joins", "where", "group", "having", "order", "limit",
                 "offset", "distinct", "with", "with_", "qualify"},
    exp.Join: {"this", "on", "side", "kind"},
    **{op: {"this", "expression", "distinct", "with", "with_", "order", "limit", "offset"}
       for op in (exp.Union, exp.Intersect, exp.Except)},
    exp.Table: {"this", "alias", "db", "catalog"},
    exp.Group: {"expressions", "all"},
    exp.Limit: {"expression", "limit_options"},
    exp.In: {"this", "expressions", "query"},
}
_NAMES = {"Columns": "COLUMNS(…) expression", "Placeholder": "query parameter (pass values with params=)", "PositionalColumn":
          "positional column reference (#n)", "Array": "ARRAY/list value", "Struct": "STRUCT value",
          "Bracket": "subscript [ ]", "Dot": "method-call syntax x.f()", "Lambda": "lambda",
          "Filter": "aggregate FILTER clause", "Values": "VALUES list", "Rand": "random()", "Uuid": "uuid()",
          "CurrentDate": "current_date", "CurrentTimestamp": "current_timestamp", "CurrentVersion": "version()"}


def _refuse(what: str, node: exp.Expression) -> None:
    raise UnsupportedQueryError(what, position_of(node))


def _snippet(node: exp.Expression, n: int = 60) -> str:
    return node.sql(dialect="duckdb")[:n]


# functions whose first argument sqlglot reads as a unit keyword even when it is a column
_UNIT_FIRST = frozenset({"date_diff", "datediff", "date_trunc", "datetrunc"})


def check_unit_arguments(sql: str) -> None:
    """Refuse DATE_DIFF / DATE_TRUNC whose unit is a column, not a string constant.

    sqlglot parses ``date_diff(s, a, b)`` — ``s`` a column — as the unit ``S`` (seconds),
    exactly as it parses ``date_diff('s', a, b)``, so the difference is only in the text: a
    unit written as a name is refused here (DuckDB reads it as a column; dodb needs the
    unit public and constant).

    >>> check_unit_arguments("SELECT date_diff('day', a, b) FROM t")
    >>> check_unit_arguments("SELECT date_diff(u, a, b) FROM t")
    Traceback (most recent call last):
    dodb.errors.UnsupportedQueryError: unsupported SQL: DATE_DIFF with the unit u from a column (dodb takes units as string constants, e.g. 'day')
    """
    from sqlglot.tokens import TokenType

    try:
        tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(sql)
    except sqlglot.errors.SqlglotError:
        return  # malformed: the parser says so
    names = (TokenType.VAR, TokenType.IDENTIFIER)
    for fn, paren, arg in zip(tokens, tokens[1:], tokens[2:]):
        if fn.token_type in names and fn.text.lower() in _UNIT_FIRST and paren.token_type == TokenType.L_PAREN \
                and arg.token_type in names:
            raise UnsupportedQueryError(f"{fn.text.upper()} with the unit {arg.text} from a column (dodb takes "
                                        "units as string constants, e.g. 'day')")


def check_nesting(sql: str, limit: int = MAX_NESTING) -> None:
    """Refuse SQL nested deeper than ``limit`` brackets (strings and comments skipped)."""
    depth = deepest = 0
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":
            j = sql.find(ch, i + 1)
            while j != -1 and j + 1 < n and sql[j + 1] == ch:  # doubled quote inside the literal
                j = sql.find(ch, j + 2)
            i = n if j == -1 else j + 1
            continue
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j == -1 else j + 1
            continue
        if sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j == -1 else j + 2
            continue
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
        i += 1
    if deepest > limit:
        raise UnsupportedQueryError(f"brackets nested {deepest} deep (dodb accepts at most {limit})")


@dataclass
class Guarded:
    """A query that passed the guard: views expanded, CTEs renamed, every relation resolved."""

    ast: exp.Expression
    ctes: set[str] = field(default_factory=set)      # fresh CTE names
    tables: set[str] = field(default_factory=set)    # catalog base tables read
    views: set[str] = field(default_factory=set)     # views expanded


class _Resolver:
    def __init__(self, catalog: Catalog, ast: exp.Expression):
        self.catalog = catalog
        self.out = Guarded(ast)
        self.taken = {i.name for i in ast.find_all(exp.Identifier)} | set(catalog.tables)
        self.n = 0

    def fresh(self, name: str) -> str:
        while True:
            self.n += 1
            cand = f"{name}__cte{self.n}"
            if cand not in self.taken:
                self.taken.add(cand)
                self.out.ctes.add(cand)
                return cand

    def visit(self, node: exp.Expression, scope: dict[str, str], views: tuple[str, ...]) -> None:
        """Resolve the relations under ``node``; ``scope`` maps visible CTE names to fresh ones."""
        with_ = node.args.get("with") or node.args.get("with_")
        if with_ is not None:
            if with_.args.get("recursive"):
                _refuse("WITH RECURSIVE", with_)
            scope = dict(scope)
            for cte in with_.expressions:
                self.visit(cte.this, scope, views)  # a CTE sees the earlier ones, not itself
                old, alias = cte.alias_or_name, cte.args.get("alias")
                new = self.fresh(old)
                cte.set("alias", exp.TableAlias(this=exp.to_identifier(new),
                                                columns=alias.args.get("columns") if alias is not None else None))
                scope[old] = new
        for key, value in list(node.args.items()):
            if key in ("with", "with_"):
                continue
            for child in (value if isinstance(value, list) else [value]):
                if isinstance(child, exp.Table):
                    self.table(child, scope, views)
                elif isinstance(child, exp.Expression):
                    self.visit(child, scope, views)

    def canonical(self, name: str, scope: dict[str, str]) -> str:
        """DuckDB matches names case-insensitively, quoted or not: find the one it would bind."""
        for names in (scope, self.catalog.tables):  # a CTE in scope hides a table of any case
            if name in names:
                return name
            hits = [n for n in names if n.lower() == name.lower()]
            if hits:
                return hits[0]
        return name

    def table(self, t: exp.Table, scope: dict[str, str], views: tuple[str, ...]) -> None:
        src = t.this
        if not isinstance(src, exp.Identifier):
            name = src.name if isinstance(src, exp.Anonymous) else src.key
            if name.lower() in self.catalog.macros:
                _refuse(f"table macro {name}() in FROM (dodb does not run macros: write its query instead)", t)
            _refuse(f"table function {name}(…) in FROM", t)
        extra = sorted(k for k, v in t.args.items() if v and k not in _ARGS[exp.Table])
        if extra:
            _refuse(f"table modifier {extra[0].upper()} on {_snippet(t)}", t)
        name = self.canonical(t.name, scope)
        db = t.args.get("db")
        if db is not None or t.args.get("catalog") is not None:
            schema = db.name if db is not None else ""
            if schema in INTERNAL_SCHEMAS:
                _refuse(f"dodb's internal schema {schema} ({_snippet(t)}): query a private table by its own "
                        f"name, e.g. {name}", t)
            _refuse(f"qualified table name {_snippet(t)} (name tables of the current schema unqualified)", t)
        if name in scope:
            if not t.args.get("alias"):
                t.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
            t.set("this", exp.to_identifier(scope[name]))
            return
        info = self.catalog.tables.get(name)
        if info is None or name.startswith("dodb_"):
            where = position_of(t)
            raise CatalogError(f"unknown table {name!r}" + (f" ({where})" if where else "") +
                               did_you_mean(name, [n for n in self.catalog.tables if not n.startswith("dodb_")]))
        if info.kind == "view":
            self.expand_view(t, name, views)
            return
        t.set("this", exp.to_identifier(name, quoted=t.this.quoted))
        self.out.tables.add(name)

    def expand_view(self, t: exp.Table, name: str, views: tuple[str, ...]) -> None:
        """Replace a view by its definition; it is resolved in the catalog, not in the query's CTE scope."""
        if name in views:
            _refuse(f"view {name} refers to itself", t)
        if len(views) >= MAX_VIEW_DEPTH:
            _refuse(f"views nested more than {MAX_VIEW_DEPTH} deep", t)
        body, columns = _view_definition(self.catalog, name)
        try:
            self.visit(body, {}, views + (name,))
        except UnsupportedQueryError as e:
            raise UnsupportedQueryError(f"view {name}: {e.construct}", e.position) from None
        except CatalogError as e:
            raise CatalogError(f"view {name}: {e}") from None
        alias = t.args.get("alias")
        if alias is None or not alias.args.get("columns"):
            alias = exp.TableAlias(this=exp.to_identifier(alias.name if alias is not None else name),
                                   columns=[exp.to_identifier(c) for c in columns] or None)
        t.replace(exp.Subquery(this=body, alias=alias))
        self.out.views.add(name)


def _view_definition(catalog: Catalog, name: str) -> tuple[exp.Expression, list[str]]:
    sql = catalog.table(name).view_sql or ""
    try:
        create = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.SqlglotError:
        create = None
    if not isinstance(create, exp.Create) or not isinstance(create.expression, (exp.Query, exp.Subquery)):
        raise UnsupportedQueryError(f"view {name}: its definition cannot be planned by dodb")
    target = create.this
    columns = [c.name for c in target.expressions] if isinstance(target, exp.Schema) else []
    return create.expression, columns


# -- the allow-list ------------------------------------------------------------------------
def _check_node(node: exp.Expression, user_functions: set[str]) -> None:
    cls = type(node)
    if not isinstance(node, _STRUCTURE + _SCALAR):
        what = _NAMES.get(cls.__name__) or (f"function {node.sql_name()}()" if isinstance(node, exp.Func)
                                            else f"{cls.__name__} expression")
        _refuse(f"{what} {_snippet(node)}", node)
    if isinstance(node, exp.Func) and user_functions:
        names = {node.name.lower()} if isinstance(node, exp.Anonymous) else {n.lower() for n in cls.sql_names()}
        rendered = _CALL.match(_snippet(node, 200))
        if rendered:
            names.add(rendered.group(1).lower())
        hit = sorted(names & user_functions)
        if hit:
            _refuse(f"user-defined function or macro {hit[0]}() (dodb does not run macros or UDFs: "
                    "write the definition into the query)", node)
    allowed = _ARGS.get(cls)
    if allowed is not None:
        extra = sorted(k for k, v in node.args.items() if v and k not in allowed)
        if extra:
            _refuse(f"{cls.__name__.upper()} with {extra[0].upper().replace('_', ' ')}: {_snippet(node)}", node)
    if isinstance(node, exp.Anonymous) and node.name.lower() not in _FUNCTIONS:
        _refuse(f"function {node.name}() (not on dodb's list of supported functions)", node)
    if isinstance(node, exp.Var) and node.arg_key != "unit" \
            and not isinstance(node.parent, (exp.Extract, exp.WindowSpec)):
        if isinstance(node.parent, exp.Ordered) and node.name.upper() == "ALL":
            _refuse("ORDER BY ALL (list the columns to order by)", node)
        _refuse(f"keyword {node.name} in this position", node)
    if isinstance(node, exp.Limit):
        opts = node.args.get("limit_options")
        if opts is not None and (opts.args.get("percent") or opts.args.get("with_ties")):
            _refuse(f"LIMIT … {'PERCENT' if opts.args.get('percent') else 'WITH TIES'}", node)
    if isinstance(node, exp.Star) and any(node.args.get(k) for k in node.args):
        _refuse(f"SELECT * with EXCLUDE/REPLACE/RENAME: {_snippet(node)}", node)
    if isinstance(node, exp.Star) and not isinstance(node.parent, (exp.Select, exp.Column, exp.Count)):
        _refuse(f"* in this position: {_snippet(node.parent)}", node)
    if isinstance(node, exp.Tuple) and not isinstance(node.parent, (exp.In, exp.GroupingSets, exp.Rollup, exp.Cube)):
        _refuse(f"row value {_snippet(node)}", node)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        to = node.args.get("to")
        if isinstance(to, exp.DataType) and to.this not in _CAST_TYPES:
            _refuse(f"CAST to {to.sql(dialect='duckdb')}", node)


_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def _check_tree(ast: exp.Expression, user_functions: set[str]) -> None:
    for node in ast.walk():
        _check_node(node, user_functions)


def check_scalar(expression: exp.Expression) -> None:
    """Refuse (``UnsupportedQueryError``) a scalar expression the allow-list does not take —
    what :func:`guard` checks of each expression in a query (no user functions)."""
    _check_tree(expression, set())


def guard(ast: exp.Expression, catalog: Catalog) -> Guarded:
    """Resolve every relation of ``ast`` (a copy is rewritten) and check it against the allow-list."""
    ast = ast.copy()
    r = _Resolver(catalog, ast)
    r.visit(ast, {}, ())
    _check_tree(r.out.ast, set(catalog.macros))
    return r.out


def pushable(predicate: exp.Expression, alias: str, user_functions: set[str] = frozenset()) -> bool:
    """Whether ``predicate`` may run in DuckDB with the public scan ``alias``: allow-listed scalars
    over that scan's own columns only (no subquery, aggregate or star)."""
    for node in predicate.walk():
        if isinstance(node, _QUERIES + _AGGREGATES + (exp.Star, exp.Table)) or not isinstance(node, _SCALAR):
            return False
        if isinstance(node, exp.Column) and node.table != alias:
            return False
        try:
            _check_node(node, set(user_functions))
        except UnsupportedQueryError:
            return False
    return True
