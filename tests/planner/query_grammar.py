"""A small typed SQL grammar over small random tables, for property tests of the planner.

:func:`databases` draws 2–3 tables (fixed schemas, random rows with NULLs, duplicates
and empty tables, small value domains so that joins match) and how each one is
protected.  :class:`Grammar` draws queries over them: every expression is generated
with a type (``int``, ``dec``, ``float``, ``str``, ``date``, ``ts``, ``bool``) so that
DuckDB accepts every query, and arithmetic stays exact (no division, floats are
multiples of 0.5) so that sums do not depend on the order of additions.

Every query labels its outputs ``c0, c1, …``; a query with ORDER BY orders by all of its
outputs, so the expected order is fully determined (ties are identical rows).
"""
from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import dataclass, field

import pyarrow as pa
from hypothesis import strategies as st

import dodb
from dodb.compare import snapshot

# -- tables ----------------------------------------------------------------------------------

#  column -> (DuckDB type, kind); ``id`` is the privacy unit (NOT NULL)
SCHEMAS: dict[str, dict[str, tuple[str, str]]] = {
    "t1": {"id": ("INTEGER", "int"), "k": ("INTEGER", "int"), "s": ("VARCHAR", "str"),
           "n": ("DECIMAL(10,2)", "dec"), "f": ("DOUBLE", "float"), "d": ("DATE", "date"),
           "b": ("BOOLEAN", "bool")},
    "t2": {"id": ("INTEGER", "int"), "k": ("BIGINT", "int"), "s": ("VARCHAR", "str"),
           "n": ("DECIMAL(10,2)", "dec"), "f": ("DOUBLE", "float"), "d": ("DATE", "date"),
           "b": ("BOOLEAN", "bool")},
    "t3": {"id": ("BIGINT", "int"), "k": ("INTEGER", "int"), "s": ("VARCHAR", "str"),
           "n": ("DECIMAL(10,2)", "dec"), "d": ("DATE", "date")},
}
NOT_NULL = {"id"}
JOIN_COLUMNS = ("id", "k", "s", "d")  # every protected table declares max_degree for these
_ARROW = {"INTEGER": pa.int32(), "BIGINT": pa.int64(), "VARCHAR": pa.string(),
          "DECIMAL(10,2)": pa.decimal128(10, 2), "DOUBLE": pa.float64(), "DATE": pa.date32(), "BOOLEAN": pa.bool_()}

STRINGS = ["", "a", "b", "ab", "ba", "abc", "Ab", "é"]
BASE_DATE = dt.date(1992, 1, 25)

_VALUES = {
    "k": st.integers(0, 3),
    "s": st.sampled_from(STRINGS),
    "n": st.integers(-12, 12).map(lambda i: decimal.Decimal(i) / 4),
    "f": st.integers(-6, 6).map(lambda i: i / 2),
    "d": st.integers(0, 12).map(lambda i: BASE_DATE + dt.timedelta(days=3 * i)),  # crosses two months
    "b": st.booleans(),
}


@dataclass
class TableSpec:
    name: str
    rows: list[dict]
    protection: dict | None = None  # kwargs of db.protect, or None for a public table

    def arrow(self) -> pa.Table:
        cols = SCHEMAS[self.name]
        return pa.table({c: pa.array([r[c] for r in self.rows], type=_ARROW[t]) for c, (t, _) in cols.items()})

    def __repr__(self) -> str:
        how = "public" if self.protection is None else f"protected {self.protection}"
        return f"{self.name} ({how}): {[tuple(r.values()) for r in self.rows]}"


@st.composite
def _rows(draw, name: str, ids=None, max_rows: int = 30) -> list[dict]:
    n = draw(st.one_of(st.just(0), st.integers(0, max_rows)) if ids is None else st.integers(0, max_rows))
    if ids is not None and not ids:
        n = 0
    out = []
    for _ in range(n):
        r = {"id": draw(st.sampled_from(sorted(ids)) if ids is not None else st.integers(1, 6))}
        for c in SCHEMAS[name]:
            if c != "id":
                r[c] = draw(st.none() | _VALUES[c]) if draw(st.integers(0, 5)) == 0 else draw(_VALUES[c])
        out.append(r)
    return out


@st.composite
def databases(draw, names=("t1", "t2", "t3"), max_rows: int = 30) -> list[TableSpec]:
    """2–3 random tables; each public, protected by ``id``, or (t3) protected through t1."""
    n_tables = draw(st.integers(2, len(names)))
    specs: list[TableSpec] = []
    for name in names[:n_tables]:
        t1 = specs[0] if specs else None
        hop = (name == "t3" and t1 is not None and t1.protection is not None
               and t1.protection.get("keys") and draw(st.booleans()))
        if hop:
            rows = draw(_rows(name, ids={r["id"] for r in t1.rows}, max_rows=max_rows))
        else:
            rows = draw(_rows(name, max_rows=max_rows))
        unique_id = len({r["id"] for r in rows}) == len(rows)
        # the owner declares a contribution bound that holds (the largest count per id, or
        # more); degree bounds are released under DP (None); strings are 'é' at most: 2 bytes
        most = max([sum(1 for r in rows if r["id"] == i) for i in {r["id"] for r in rows}], default=1)
        widths = {c: 4 for c, (t, _) in SCHEMAS[name].items() if t == "VARCHAR"}
        if hop:
            prot = {"privacy_unit": "id", "parent": ("t1", "id"), "max_contributions": max(1, most),
                    "max_degree": {c: None for c in JOIN_COLUMNS if c in SCHEMAS[name]}, "widths": widths}
        elif draw(st.booleans()):
            keyed = unique_id and draw(st.booleans())
            prot = {"privacy_unit": "id", "max_contributions": max(1, most) + draw(st.integers(0, 2)),
                    "keys": [["id"]] if keyed else [], "widths": widths,
                    "max_degree": {c: None for c in JOIN_COLUMNS if c in SCHEMAS[name] and not (keyed and c == "id")}}
        else:
            prot = None
        specs.append(TableSpec(name, rows, prot))
    return specs


def build_database(specs: list[TableSpec], seed: int = 1) -> "dodb.Database":
    db = dodb.connect(seed=seed, allow_insecure=True)
    for spec in specs:
        cols = ", ".join(f"{c} {t}" + (" NOT NULL" if c in NOT_NULL else "") for c, (t, _) in SCHEMAS[spec.name].items())
        db.con.execute(f"CREATE TABLE {spec.name} ({cols})")
        data = spec.arrow()  # noqa: F841  (read by DuckDB's replacement scan)
        db.con.execute(f"INSERT INTO {spec.name} SELECT * FROM data")
    db.oracle = snapshot(db.con)  # DuckDB on the raw tables: the oracle (protected tables leave db.con)
    db.set_budget(epsilon=1e9, delta=0.5)
    for spec in specs:
        if spec.protection is not None:
            p = dict(spec.protection)
            db.protect(spec.name, p.pop("privacy_unit"), **p)
    return db


# -- queries ------------------------------------------------------------------------------------

SHAPES = ("simple_query", "aggregate_query", "subquery_query", "setop_query", "cte_query")


@st.composite
def queries(draw, tables: list[str], shape: str) -> tuple[str, frozenset[str]]:
    """A query of one shape (a method of :class:`Grammar`) and the constructs it uses."""
    g = Grammar(draw, tables)
    sql = getattr(g, shape)()
    return sql, frozenset(g.constructs)


NUMERIC = ("int", "dec", "float")
ORDERABLE = ("int", "dec", "float", "str", "date")


@dataclass
class Source:
    """A FROM item: ``sql`` as written in FROM, its alias and its columns' kinds."""

    sql: str
    alias: str
    columns: dict[str, str]
    nullable: set[str] = field(default_factory=set)


def table_source(table: str, alias: str) -> Source:
    cols = {c: k for c, (_, k) in SCHEMAS[table].items()}
    return Source(f"{table} {alias}" if alias != table else table, alias, cols,
                  {c for c in cols if c not in NOT_NULL})


def _lit(kind: str, value) -> str:
    if value is None:
        return "NULL"
    if kind == "str":
        return "'" + value.replace("'", "''") + "'"
    if kind == "date":
        return f"DATE '{value.isoformat()}'"
    if kind == "float":
        return f"{value}::DOUBLE"
    if kind == "bool":
        return "TRUE" if value else "FALSE"
    return str(value)


def literal(draw, kind: str) -> str:
    if kind == "int":
        return _lit(kind, draw(st.integers(-1, 4)))
    if kind == "date":
        return _lit(kind, draw(_VALUES["d"]))
    if kind == "ts":
        return f"TIMESTAMP '{draw(_VALUES['d']).isoformat()} 12:00:00'"
    return _lit(kind, draw(_VALUES[{"dec": "n", "float": "f", "str": "s", "bool": "b"}[kind]]))


def _has_column(e: str) -> bool:
    return re.search(r"\b[a-z]\.[a-z]\b", e) is not None


class Grammar:
    """Draws typed expressions and whole queries.  ``stats`` counts constructs used."""

    def __init__(self, draw, tables: list[str]):
        self.draw = draw
        self.tables = tables
        self.constructs: set[str] = set()

    # -- helpers ------------------------------------------------------------------------------
    def choice(self, options):
        return self.draw(st.sampled_from(list(options)))

    def chance(self, p_in_8: int) -> bool:
        return self.draw(st.integers(0, 7)) < p_in_8

    def use(self, *names: str) -> None:
        self.constructs.update(names)

    def columns(self, scope: list[Source], kind: str) -> list[str]:
        return [f"{s.alias}.{c}" for s in scope for c, k in s.columns.items() if k == kind]

    # -- expressions ------------------------------------------------------------------------
    def expr(self, scope: list[Source], kind: str, depth: int = 2) -> str:
        cols = self.columns(scope, kind)
        leaf = depth <= 0 or self.chance(3)
        if leaf:
            if cols and (kind == "ts" or self.chance(6)):
                return self.choice(cols)
            if kind == "ts":
                return f"({self.expr(scope, 'date', 0)} + INTERVAL 2 DAY)"
            return literal(self.draw, kind)
        return getattr(self, f"_{kind}")(scope, depth - 1)

    def _case(self, scope, kind, depth) -> str:
        self.use("CASE")
        whens = " ".join(f"WHEN {self.pred(scope, depth)} THEN {self.expr(scope, kind, depth)}"
                         for _ in range(self.draw(st.integers(1, 2))))
        other = f" ELSE {self.expr(scope, kind, depth)}" if self.chance(6) else ""
        return f"CASE {whens}{other} END"

    def _int(self, scope, d) -> str:
        e = lambda k="int": self.expr(scope, k, d)  # noqa: E731
        form = self.draw(st.integers(0, 15))
        if form == 0:
            self.use("arithmetic")
            return f"({e()} {self.choice('+-')} {e()})"
        if form == 1:
            self.use("arithmetic")
            return f"({e()} * {self.draw(st.integers(-2, 3))})"
        if form == 2:
            self.use("arithmetic")
            return f"({e()} % {self.draw(st.integers(2, 3))})"
        if form == 3:
            return self._case(scope, "int", d)
        if form == 4:
            self.use("date extraction")
            return f"EXTRACT({self.choice(['day', 'month', 'year', 'dow'])} FROM {e('date')})"
        if form == 5:
            self.use("date extraction")
            return f"{self.choice(['month', 'day', 'dayofweek', 'week'])}({e('date')})"
        if form == 6:
            self.use("string functions")
            return f"length({e('str')})"
        if form == 7:
            self.use("CAST")
            return f"CAST({e(self.choice(['dec', 'float', 'bool']))} AS {self.choice(['INTEGER', 'BIGINT'])})"
        if form == 8:
            return f"abs({e()})"
        if form == 9:
            return f"coalesce({e()}, {literal(self.draw, 'int')})"
        if form == 10:
            self.use("date arithmetic")
            return f"({e('date')} - {e('date')})"
        if form == 11:
            self.use("date arithmetic")
            return f"date_diff('{self.choice(['day', 'month'])}', {e('date')}, {e('date')})"
        if form == 12:
            self.use("string functions")
            return f"strpos({e('str')}, {literal(self.draw, 'str')})"
        if form == 13:
            return f"greatest({e()}, {e()})"
        if form == 14:
            return f"sign({e(self.choice(NUMERIC))})"
        return f"-({e()})"  # not -{e()}: "--1" would start a comment

    def _dec(self, scope, d) -> str:
        e = lambda k="dec": self.expr(scope, k, d)  # noqa: E731
        form = self.draw(st.integers(0, 7))
        if form == 0:
            self.use("arithmetic")
            return f"({e()} {self.choice('+-')} {e(self.choice(['dec', 'int']))})"
        if form == 1:
            self.use("arithmetic")
            return f"({e()} * {self.draw(st.integers(-2, 3))})"
        if form == 2:
            return self._case(scope, "dec", d)
        if form == 3:
            self.use("CAST")
            return f"CAST({e('int')} AS DECIMAL(10,2))"
        if form == 4:
            return f"round({e()}, {self.draw(st.integers(0, 1))})"
        if form == 5:
            return f"coalesce({e()}, {literal(self.draw, 'dec')})"
        if form == 6:
            return f"abs({e()})"
        return f"floor({e()})"

    def _float(self, scope, d) -> str:
        e = lambda k="float": self.expr(scope, k, d)  # noqa: E731
        form = self.draw(st.integers(0, 5))
        if form == 0:
            self.use("arithmetic")
            return f"({e()} {self.choice('+-')} {e(self.choice(NUMERIC))})"
        if form == 1:
            self.use("arithmetic")
            return f"({e()} * {self.draw(st.integers(-2, 3))})"
        if form == 2:
            return self._case(scope, "float", d)
        if form == 3:
            self.use("CAST")
            return f"CAST({e(self.choice(['int', 'dec']))} AS DOUBLE)"
        if form == 4:
            self.use("arithmetic")
            return f"({e()} / 2)"
        return f"ceil({e()})"

    def _str(self, scope, d) -> str:
        e = lambda k="str": self.expr(scope, k, d)  # noqa: E731
        self.use("string functions")
        form = self.draw(st.integers(0, 15))
        if form == 0:
            # reverse() is refused by design (DuckDB reverses grapheme clusters); checked by name
            return f"{self.choice(['upper', 'lower', 'trim'])}({e()})"
        if form == 1:
            return f"({e()} || {e()})"
        if form == 2:
            return f"concat({e()}, {e(self.choice(['int', 'str', 'date']))})"
        if form == 3:
            return f"substr({e()}, {self.draw(st.integers(1, 3))}, {self.draw(st.integers(0, 2))})"
        if form == 4:
            return f"replace({e()}, 'a', 'xy')"
        if form == 5:
            return self._case(scope, "str", d)
        if form == 6:
            return f"coalesce({e()}, 'zz')"
        if form == 7:
            self.use("CAST")
            # DOUBLE -> VARCHAR is refused by design (DuckDB's shortest round-trip digits);
            # test_outside_the_surface_is_refused_by_name checks that refusal
            return f"CAST({e(self.choice(['int', 'dec', 'date', 'bool']))} AS VARCHAR)"
        if form == 8:
            return f"{self.choice(['left', 'right'])}({e()}, {self.draw(st.integers(0, 2))})"
        if form == 9:
            return f"lpad({e()}, {self.draw(st.integers(0, 4))}, '*')"
        if form == 10:
            return f"repeat({e()}, {self.draw(st.integers(0, 3))})"
        if form == 11:
            self.use("date extraction")
            return f"strftime({e('date')}, '%Y-%m')"
        if form == 12:
            return f"('x' || CAST({e('int')} AS VARCHAR))"
        if form == 13:
            return f"nullif({e()}, 'a')"
        if form == 14:
            return f"ltrim({e()}, 'a')"
        return f"monthname({e('date')})"

    def _date(self, scope, d) -> str:
        e = lambda k="date": self.expr(scope, k, d)  # noqa: E731
        self.use("date arithmetic")
        form = self.draw(st.integers(0, 5))
        if form == 0:
            return f"({e()} + {self.draw(st.integers(-3, 40))})"
        if form == 1:
            return f"CAST({e()} + INTERVAL {self.draw(st.integers(1, 2))} {self.choice(['DAY', 'MONTH'])} AS DATE)"
        if form == 2:
            return f"last_day({e()})"
        if form == 3:
            return self._case(scope, "date", d)
        if form == 4:
            return f"CAST(date_trunc('month', {e()}) AS DATE)"
        return f"({e()} - INTERVAL 1 DAY)::DATE"

    def _ts(self, scope, d) -> str:
        self.use("date arithmetic")
        return f"({self.expr(scope, 'date', d)} + INTERVAL {self.draw(st.integers(1, 30))} DAY)"

    def _bool(self, scope, d) -> str:
        return self.pred(scope, d)

    # -- predicates --------------------------------------------------------------------------
    def pred(self, scope: list[Source], depth: int = 2) -> str:
        form = self.draw(st.integers(0, 12 if depth > 0 else 8))
        kind = self.choice(ORDERABLE)
        e = lambda k=kind: self.expr(scope, k, max(0, depth - 1))  # noqa: E731
        if form <= 2:
            if kind in NUMERIC:
                other = self.choice(NUMERIC)
            else:
                other = kind
            return f"{e()} {self.choice(['=', '<>', '<', '<=', '>', '>='])} {e(other)}"
        if form == 3:
            self.use("IS NULL")
            return f"{e(self.choice(ORDERABLE + ('bool',)))} IS {self.choice(['', 'NOT '])}NULL"
        if form == 4:
            self.use("IN list")
            lits = [literal(self.draw, kind) for _ in range(self.draw(st.integers(1, 3)))]
            if self.chance(1):
                lits.append("NULL")
            return f"{e()} {self.choice(['', 'NOT '])}IN ({', '.join(lits)})"
        if form == 5:
            self.use("BETWEEN")
            return f"{e()} {self.choice(['', 'NOT '])}BETWEEN {literal(self.draw, kind)} AND {literal(self.draw, kind)}"
        if form == 6:
            self.use("LIKE")
            pat = self.choice(["a%", "%b", "_b%", "%", "ab", "%a%", "_"])
            return f"{e('str')} {self.choice(['', 'NOT '])}{self.choice(['LIKE', 'ILIKE'])} '{pat}'"
        if form == 7:
            cols = self.columns(scope, "bool")
            return self.choice(cols) if cols else "TRUE"
        if form == 8:
            return f"{self.choice(['starts_with', 'contains'])}({e('str')}, {literal(self.draw, 'str')})"
        if form == 9:
            self.use("NOT")
            return f"NOT ({self.pred(scope, depth - 1)})"
        if form == 10:
            self.use("AND/OR")
            return f"({self.pred(scope, depth - 1)} OR {self.pred(scope, depth - 1)})"
        if form == 11:
            self.use("AND/OR")
            return f"({self.pred(scope, depth - 1)} AND {self.pred(scope, depth - 1)})"
        self.use("date arithmetic")
        return f"{self.expr(scope, 'ts', 0)} {self.choice(['<', '>='])} {e('date')}"

    def where(self, scope: list[Source], p_in_8: int = 5) -> list[str]:
        return [self.pred(scope) for _ in range(self.draw(st.integers(1, 2)))] if self.chance(p_in_8) else []

    # -- FROM -----------------------------------------------------------------------------------
    def join_condition(self, left: list[Source], right: Source) -> str:
        lhs = self.choice(left)
        pairs = [(a, b) for a in JOIN_COLUMNS for b in JOIN_COLUMNS
                 if a in lhs.columns and b in right.columns and lhs.columns[a] == right.columns[b]]
        same = [(a, b) for a, b in pairs if a == b]
        a, b = self.choice(same) if same and self.chance(6) else self.choice(pairs)
        return f"{lhs.alias}.{a} = {right.alias}.{b}"

    def from_clause(self, max_tables: int = 3, allow_left: bool = True) -> tuple[str, list[Source], list[str]]:
        """FROM text, the sources in scope, and WHERE conjuncts that the join form needs."""
        n = self.draw(st.integers(1, max_tables))
        aliases = ["a", "b", "c"]
        scope = [table_source(self.choice(self.tables), aliases[0])]
        text = scope[0].sql
        where: list[str] = []
        comma = n > 1 and self.chance(3)
        for i in range(1, n):
            src = table_source(self.choice(self.tables), aliases[i])
            cond = self.join_condition(scope, src)
            if comma:
                self.use("comma join")
                text += f", {src.sql}"
                where.append(cond)
                if self.chance(2):
                    where.append(self.join_condition(scope, src))
            elif allow_left and self.chance(3):
                self.use("LEFT JOIN")
                extra = f" AND {self.pred([src], 1)}" if self.chance(2) else ""
                text += f" LEFT JOIN {src.sql} ON {cond}{extra}"
                src.nullable = set(src.columns)
            else:
                self.use("JOIN")
                extra = f" AND {self.join_condition(scope, src)}" if self.chance(1) else ""
                text += f" {self.choice(['JOIN', 'INNER JOIN'])} {src.sql} ON {cond}{extra}"
            scope.append(src)
        return text, scope, where

    # -- SELECT pieces -------------------------------------------------------------------------
    def outputs(self, scope, n_min=1, n_max=3) -> list[tuple[str, str]]:
        kinds = [self.choice(ORDERABLE + ("bool", "ts")) for _ in range(self.draw(st.integers(n_min, n_max)))]
        return [(self.expr(scope, k), k) for k in kinds]

    def order_limit(self, n_out: int, p_in_8: int = 3) -> str:
        if not self.chance(p_in_8):
            return ""
        self.use("ORDER BY")
        items = []
        for i in range(n_out):
            item = f"c{i}" + self.choice(["", " ASC", " DESC"])
            if self.chance(2):
                item += self.choice([" NULLS FIRST", " NULLS LAST"])
            items.append(item)
        text = " ORDER BY " + ", ".join(items)
        if self.chance(4):
            self.use("LIMIT")
            text += f" LIMIT {self.draw(st.integers(0, 8))}"
            if self.chance(3):
                self.use("OFFSET")
                text += f" OFFSET {self.draw(st.integers(1, 5))}"
        return text

    @staticmethod
    def select_list(items: list[str]) -> str:
        return ", ".join(f"{e} AS c{i}" for i, e in enumerate(items))

    # -- query shapes ------------------------------------------------------------------------------
    def simple_query(self) -> str:
        """One table or a join: expressions, WHERE, DISTINCT, ORDER BY/LIMIT/OFFSET."""
        text, scope, where = self.from_clause(max_tables=self.draw(st.integers(1, 3)))
        outs = self.outputs(scope)
        where += self.where(scope)
        distinct = self.chance(2)
        if distinct:
            self.use("DISTINCT")
        sql = f"SELECT {'DISTINCT ' if distinct else ''}{self.select_list([e for e, _ in outs])} FROM {text}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return sql + self.order_limit(len(outs))

    def aggregate(self, scope, kind=None) -> tuple[str, str]:
        """An aggregate call and its kind."""
        self.use("aggregate")
        form = self.draw(st.integers(0, 6))
        if form == 0:
            self.use("COUNT(*)")
            return "count(*)", "int"
        if form == 1:
            self.use("COUNT")
            return f"count({self.expr(scope, self.choice(ORDERABLE + ('bool',)), 1)})", "int"
        if form == 2:
            self.use("COUNT(DISTINCT)")
            return f"count(DISTINCT {self.expr(scope, self.choice(ORDERABLE), 1)})", "int"
        if form in (3, 4):
            k = self.choice(NUMERIC)
            func = self.choice(["sum", "avg"])
            self.use(func.upper())
            return f"{func}({self.expr(scope, k, 1)})", ("float" if func == "avg" else k)
        k = self.choice(ORDERABLE)
        func = self.choice(["min", "max"])
        self.use(func.upper())
        return f"{func}({self.expr(scope, k, 1)})", k

    def agg_output(self, scope) -> str:
        a, k = self.aggregate(scope)
        if self.chance(1) and k in NUMERIC:
            return f"({a} + {self.draw(st.integers(1, 3))})"
        if self.chance(1):
            self.use("CASE")
            a2, k2 = self.aggregate(scope)
            if k2 in NUMERIC:
                return f"CASE WHEN {a2} > {self.draw(st.integers(0, 3))} THEN 1 ELSE 0 END"
        return a

    def group_key(self, scope) -> str:
        cols = [f"{s.alias}.{c}" for s in scope for c, k in s.columns.items() if k != "float"]
        if self.chance(5):
            return self.choice(cols)
        e = self.expr(scope, self.choice(["int", "str", "date", "bool"]), 1)
        # a bare constant would be a positional reference (GROUP BY 2) or a constant group
        return e if _has_column(e) else self.choice(cols)

    def aggregate_query(self) -> str:
        """GROUP BY 0–2 keys with aggregates, HAVING, ORDER BY/LIMIT, over one table or a join."""
        text, scope, where = self.from_clause(max_tables=self.draw(st.integers(1, 2)))
        where += self.where(scope, 3)
        n_keys = self.draw(st.integers(0, 2))
        keys = []
        for _ in range(n_keys):
            k = self.group_key(scope)
            if k not in keys:
                keys.append(k)
        if keys:
            self.use("GROUP BY", f"GROUP BY {len(keys)} keys")
        shown = [k for k in keys if not self.chance(1)] if keys else []
        aggs = [self.agg_output(scope) for _ in range(self.draw(st.integers(1, 3)))]
        items = shown + aggs
        sql = f"SELECT {self.select_list(items)} FROM {text}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        if keys:
            sql += " GROUP BY " + ", ".join(keys)
            if self.chance(3):
                self.use("HAVING")
                a, k = self.aggregate(scope)
                op = self.choice([">", ">=", "<", "<>", "="])
                rhs = literal(self.draw, k) if k in ORDERABLE else "1"
                sql += f" HAVING {a} {op} {rhs}"
        return sql + self.order_limit(len(items))

    def subquery_predicate(self, scope: list[Source]) -> str:
        outer = self.choice(scope)
        table = self.choice(self.tables)
        inner = table_source(table, "z")
        form = self.draw(st.integers(0, 5))
        inner_where = [self.pred([inner], 1)] if self.chance(4) else []
        if form <= 1:
            self.use("NOT EXISTS" if form else "EXISTS")
            conds = [self.join_condition([outer], inner)] + inner_where
            if self.chance(1):
                self.use("EXISTS with non-equality")
                conds.append(f"z.n {self.choice(['<>', '<', '>'])} {outer.alias}.n" if "n" in outer.columns
                             else f"z.k <> {outer.alias}.k")
            return f"{'NOT ' if form else ''}EXISTS (SELECT {self.choice(['*', '1', 'z.k'])} FROM {inner.sql} " \
                   f"WHERE {' AND '.join(conds)})"
        if form == 2:
            self.use("IN subquery")
            cond = self.join_condition([outer], inner)
            lhs, rhs = cond.split(" = ")
            w = f" WHERE {' AND '.join(inner_where)}" if inner_where else ""
            return f"{lhs} IN (SELECT {rhs} FROM {inner.sql}{w})"
        if form == 3:
            # NOT IN over id (never NULL) or k (nullable: SQL's NULL semantics apply)
            self.use("NOT IN subquery")
            w = f" WHERE {' AND '.join(inner_where)}" if inner_where else ""
            col = self.choice(["id", "k"])
            if col == "k":
                self.use("NOT IN over NULLs")
            return f"{outer.alias}.{col} NOT IN (SELECT z.{col} FROM {inner.sql}{w})"
        self.use("scalar subquery")
        kind = self.choice(["dec", "int"] + (["float"] if "f" in inner.columns else []))
        col = {"dec": "n", "int": self.choice(["k", "id"]), "float": "f"}[kind]
        func = self.choice(["avg", "max", "min", "sum", "count"])
        if self.chance(2):
            self.use("correlated scalar subquery")
            inner_where = [self.join_condition([outer], inner)] + inner_where
        w = f" WHERE {' AND '.join(inner_where)}" if inner_where else ""
        lhs = self.expr([outer], self.choice(NUMERIC), 1)
        return f"{lhs} {self.choice(['<', '>', '>=', '='])} (SELECT {func}(z.{col}) FROM {inner.sql}{w})"

    def subquery_query(self) -> str:
        """WHERE with EXISTS / NOT EXISTS / IN / NOT IN subqueries or a scalar subquery."""
        text, scope, where = self.from_clause(max_tables=2, allow_left=False)
        where += [self.subquery_predicate(scope) for _ in range(self.draw(st.integers(1, 2)))]
        where += self.where(scope, 2)
        if self.chance(2):
            self.use("scalar subquery in SELECT")
            t = table_source(self.choice(self.tables), "y")
            w = ""
            if self.chance(2):
                self.use("correlated scalar subquery")
                w = f" WHERE {self.join_condition(scope, t)}"
            outs = [self.expr(scope, self.choice(ORDERABLE), 1),
                    f"(SELECT {self.choice(['max', 'min', 'count', 'sum'])}(y.k) FROM {t.sql}{w})"]
        elif self.chance(3):
            outs = [self.group_key(scope)]
            sql = f"SELECT {self.select_list(outs + ['count(*)'])} FROM {text} WHERE {' AND '.join(where)} " \
                  f"GROUP BY {outs[0]}"
            self.use("GROUP BY")
            return sql + self.order_limit(2)
        else:
            outs = [e for e, _ in self.outputs(scope, 1, 2)]
        return f"SELECT {self.select_list(outs)} FROM {text} WHERE {' AND '.join(where)}" + \
            self.order_limit(len(outs))

    def _branch(self, kinds: list[str], alias: str) -> str:
        scope = [table_source(self.choice(self.tables), alias)]
        items = []
        for k in kinds:
            cols = self.columns(scope, k)
            items.append(self.choice(cols) if cols and self.chance(5) else self.expr(scope, k, 1))
        where = self.where(scope, 4)
        sql = f"SELECT {self.select_list(items)} FROM {scope[0].sql}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        if self.chance(1) and all(_has_column(i) for i in items):
            self.use("GROUP BY")
            sql += " GROUP BY " + ", ".join(items)
        return sql

    def setop_query(self) -> str:
        kinds = [self.choice(["int", "str", "date", "dec"]) for _ in range(self.draw(st.integers(1, 2)))]
        op = self.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT"])
        self.use(op)
        sql = f"{self._branch(kinds, 'a')} {op} {self._branch(kinds, 'b')}"
        if self.chance(2):
            op2 = self.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT"])
            self.use(op2)
            sql = f"({sql}) {op2} {self._branch(kinds, 'c')}" if self.chance(4) else f"{sql} {op2} {self._branch(kinds, 'c')}"
        return sql + self.order_limit(len(kinds))

    def cte_query(self) -> str:
        """WITH w AS (an aggregate or a filtered projection) joined to a table or to itself."""
        self.use("CTE")
        base = table_source(self.choice(self.tables), "a")
        if self.chance(5):
            self.use("GROUP BY")
            key = self.choice(["k", "s", "d", "id"])
            agg, k = self.aggregate([base])
            body = f"SELECT a.{key} AS j, {agg} AS v FROM {base.sql}"
            w = self.where([base], 3)
            if w:
                body += " WHERE " + " AND ".join(w)
            body += f" GROUP BY a.{key}"
            jk = base.columns[key]
        else:
            key = self.choice(["k", "s", "d", "id"])
            k = self.choice(ORDERABLE)
            body = f"SELECT a.{key} AS j, {self.expr([base], k, 1)} AS v FROM {base.sql}"
            w = self.where([base], 5)
            if w:
                body += " WHERE " + " AND ".join(w)
            if self.chance(2):
                self.use("LIMIT in CTE")
                body += f" ORDER BY j, v LIMIT {self.draw(st.integers(0, 6))}"
            jk = base.columns[key]
        w_src = Source("w x", "x", {"j": jk, "v": k}, {"j", "v"})
        form = self.draw(st.integers(0, 2))
        if form == 0:
            text, scope = "w x", [w_src]
        elif form == 1:
            other = table_source(self.choice(self.tables), "b")
            col = self.choice([c for c in JOIN_COLUMNS if other.columns[c] == jk])
            self.use("JOIN")
            text, scope = f"w x JOIN {other.sql} ON x.j = b.{col}", [w_src, other]
        else:
            self.use("CTE self join")
            y = Source("w y", "y", dict(w_src.columns), set(w_src.nullable))
            text, scope = "w x JOIN w y ON x.j = y.j", [w_src, y]
        outs = [e for e, _ in self.outputs(scope, 1, 3)]
        where = self.where(scope, 3)
        sql = f"WITH w AS ({body}) SELECT {self.select_list(outs)} FROM {text}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return sql + self.order_limit(len(outs))
