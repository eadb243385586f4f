"""What a query hands the analyst: the exact answer (:class:`Result`) and its privacy report.

A :class:`Result` is built from the engine's padded answer (:mod:`dodb.wire`): the
dummies are dropped here, on the analyst's side of the boundary — in-process, or in the
client of served mode (docs/threat-model.md §Where the answer leaves the engine).
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field, fields
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from .accountant.standing import Standing
from .compare import table_rows
from .errors import DodbError, InvalidParameterError
from .wire import PaddedAnswer, decode

__all__ = ["PrivacyReport", "Result", "charged_note"]


@dataclass
class PrivacyReport:
    """What a query leaked and what it cost: per-operator releases, every composition
    method's total (the one charged marked), and the budget left afterwards (``spent`` and
    ``remaining`` as they stood right after this query was charged)."""

    sql: str
    mode: str
    epsilon: float
    delta: float
    operators: list[dict[str, Any]]
    composition: dict[str, dict[str, Any]]
    chosen: str | None
    charged_epsilon: float
    charged_delta: float
    query_id: int | None
    spent: tuple[float, float] | None = Standing()       # computed on first read (accountant/standing.py)
    remaining: tuple[float, float] | None = Standing()
    tables: list[dict[str, Any]] = field(default_factory=list)  # private tables read: capacity and its origin
    partitions: list[str] | None = None  # partitions charged (None: all; docs/design.md §Partitions)
    session: str | None = None           # the analyst session whose budget was charged

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_json(self) -> str:
        """The report as JSON (served mode sends it next to the padded answer)."""
        return json.dumps(self.as_dict(), default=_plain, allow_nan=True)

    @classmethod
    def from_json(cls, text: str) -> "PrivacyReport":
        d = json.loads(text)
        for k in ("spent", "remaining"):
            if d.get(k) is not None:
                d[k] = tuple(d[k])
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    def __str__(self) -> str:
        """The report in plain words (:meth:`verbose` adds every ε/δ and the theorems)."""
        lines = [f"privacy report for this {_MODE_WORDS.get(self.mode, self.mode)} query"]
        if not self.operators:
            lines.append("  it revealed no new size to an observer of memory")
        else:
            s = max(op["sensitivity"] for op in self.operators)
            lines.append(f"  an observer of memory learned {len(self.operators)} padded size(s), each the true size "
                         f"plus random dummy rows (never fewer); one privacy unit moves a true size by at most {s}:")
            for op in self.operators:
                lines.append(f"    {_release_words(op)}")
        for t in self.tables:
            lines.append(f"  size of {t['table']}: {t['capacity']} slots ({_origin(t)})")
        if self.query_id or self.charged_epsilon:
            lines.append(f"  charged: ε={self.charged_epsilon:.4g}, δ={self.charged_delta:.3g}"
                         + (f" (query #{self.query_id}, by {self.chosen} composition, the tightest that applies)"
                            if self.query_id and self.chosen else ""))
        else:
            lines.append("  charged: nothing")
        if self.remaining is not None:
            lines.append(f"  budget: {self.budget_words()}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)  # a notebook shows the plain words, not the dataclass's fields

    def _repr_html_(self) -> str:
        """The report in a notebook: its summary, a table of the sizes an observer saw, the
        private tables' capacities and the budget."""
        from .display import html_table, num

        parts = [f"<p><b>privacy report</b> for this {html.escape(_MODE_WORDS.get(self.mode, self.mode))} query: "
                 f"{html.escape(self.summary())}</p>"]
        if self.operators:
            rows = []
            for op in self.operators:
                v = op.get("value")
                drawn = f"{sum(v)} in {len(v)} bins" if isinstance(v, list) and len(v) > 1 else \
                    (v[0] if isinstance(v, list) and v else v)
                seen = op["padded"] if op.get("padded") is not None else drawn
                rows.append((op["operator"], _RELEASE_NOUNS.get(op["release"], op["release"]),
                             seen, drawn if op.get("padded") is not None else "", op["sensitivity"],
                             num(op["epsilon"]), num(op["delta"], 3)))
            parts.append(html_table(["operator", "released", "size seen", "noise drew (cut to the bound)",
                                     "sensitivity", "ε", "δ"], rows))
        for t in self.tables:
            parts.append(f"<p>size of {html.escape(t['table'])}: {t['capacity']} slots ({html.escape(_origin(t))})</p>")
        if self.remaining is not None:
            parts.append(f"<p>{html.escape('budget: ' + self.budget_words())}</p>")
        return "".join(parts)

    def summary(self) -> str:
        """The report in one line: the charge (or why none), the sizes released, the ε left."""
        if self.query_id is None and not self.charged_epsilon:
            return f"charged nothing ({self.free_reason()})"
        line = f"charged ε={self.charged_epsilon:.4g}, δ={self.charged_delta:.3g}" + \
            (f" (query #{self.query_id})" if self.query_id else "")
        n = len(self.operators)
        line += f"; {n} padded size{'s' if n != 1 else ''} released"
        if self.remaining is not None:
            line += f"; ε={self.remaining[0]:.4g} left for the next query"
        return line

    def free_reason(self) -> str:
        """Why a query charged nothing (it may still have read private tables)."""
        if not self.tables:
            return "public tables only"
        if self.mode == "plain":
            return "plain mode, which protects nothing"
        if self.mode == "oblivious":
            return "fully oblivious: it released no size"
        return "it released no size"

    def budget_words(self) -> str:
        """What is left and what was spent, each named for what it is: ``remaining`` is what the
        admitting filter still grants the next query; ``spent`` is the plain sum of the charges,
        which the filter composes more tightly (so spent + remaining need not be the budget)."""
        return (f"ε={self.remaining[0]:.4g}, δ={self.remaining[1]:.3g} left for the next query; "
                f"the charges so far sum to ε={self.spent[0]:.4g}, δ={self.spent[1]:.3g} "
                "(a plain sum: the admitting filter composes them more tightly)")

    def verbose(self) -> str:
        """Every release with its mechanism's ε/δ, every composition method with its
        theorem (paper 004 unless named), and the guarantee charged."""
        lines = [f"privacy report (mode={self.mode}, requested ε={self.epsilon:g}, δ={self.delta:g})"]
        if not self.operators:
            lines.append("  no new size was released by this query")
        for op in self.operators:
            v = op.get("value")
            shown = f"{sum(v)} in {len(v)} bins" if isinstance(v, list) and len(v) > 1 else \
                (v[0] if isinstance(v, list) and v else v)
            lines.append(f"  {op['operator']}: {op['release']} sensitivity {op['sensitivity']}, "
                         f"ε={op['epsilon']:.4g}, δ={op['delta']:.3g}, released size {shown} "
                         f"(one-sided discrete Laplace, scale {op.get('scale', 0):.4g}, shift {op.get('shift')})")
        for name, b in self.composition.items():
            mark = "*" if name == self.chosen else " "
            eps = b.get("epsilon")
            ref = f" [{b['theorem']}]" if b.get("theorem") else ""
            lines.append(f"  {mark} {name:<10} ε={eps:.4g}{ref}" if isinstance(eps, (int, float)) and
                         eps != float("inf") else f"    {name:<10} n/a ({_first_clause(str(b.get('note', '')))})")
        for t in self.tables:
            lines.append(f"  size of {t['table']}: {t['capacity']} slots ({_origin(t)})")
        lines.append(f"  charged: ε={self.charged_epsilon:.4g}, δ={self.charged_delta:.3g}"
                     + (f" (query #{self.query_id})" if self.query_id else "")
                     + (f" to partitions {', '.join(self.partitions)}" if self.partitions else "")
                     + (f" in session {self.session!r}" if self.session else "")
                     + ("; the view is (ε, δ)-differentially oblivious (004 Def 1.2), composed with earlier "
                        "queries by the ledger's adaptive filter (docs/design.md §Accounting)" if self.query_id else ""))
        if self.remaining is not None:
            lines.append(f"  budget: {self.budget_words()}")
        return "\n".join(lines)


_MODE_WORDS = {"do": "differentially oblivious", "oblivious": "fully oblivious", "plain": "unprotected (plain)"}
_RELEASE_NOUNS = {"bin_counts": "rows kept (bins)", "groups": "groups", "rows": "distinct rows",
                  "output_size": "output rows"}
_RELEASE_WORDS = {"bin_counts": "rows kept by", "groups": "groups made by", "rows": "distinct rows of",
                  "output_size": "rows out of"}


def _release_words(op: dict[str, Any]) -> str:
    v = op.get("value")
    if isinstance(v, list):
        shown = f"{sum(v)} (in {len(v)} bins)" if len(v) > 1 else (str(v[0]) if v else "?")
    else:
        shown = str(v)
    if op.get("padded") is not None:  # the draw was above what the input can hold: the size seen is the cap
        shown = f"{op['padded']} (the noise drew {shown}, more rows than its input can hold)"
    return f"{_RELEASE_WORDS.get(op['release'], op['release'] + ' of')} {op['operator']}: {shown}"


def _origin(t: dict[str, Any]) -> str:
    return (f"released under DP when loaded, ledger #{t['ledger_id']}" if t["source"] == "dp"
            else "declared by the owner")


def _plain(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, tuple):
        return list(o)
    return str(o)


def _first_clause(note: str, limit: int = 90) -> str:
    """The reason a method does not apply, up to its first ';' and at most ``limit`` characters."""
    head = note.split(";", 1)[0].strip()
    return head if len(head) <= limit else head[:limit].rsplit(" ", 1)[0] + " …"



def charged_note(report: PrivacyReport) -> str:
    """``"; ε=…, δ=… was charged (query #n)"`` for a query the ledger charged, else ``""``."""
    if report.query_id is None:
        return ""
    return f"; ε={report.charged_epsilon:.4g}, δ={report.charged_delta:.3g} was charged (query #{report.query_id})"

class Result:
    """A private query's exact answer plus its privacy report.

    Built from the engine's padded answer (:mod:`dodb.wire`): the dummies are dropped
    here, on the analyst's side of the boundary (docs/threat-model.md).  ``con``: the
    DuckDB connection :attr:`relation` lives on (a private in-memory one if ``None``,
    as in served mode); ``plan``: the executed plan, or its EXPLAIN text.
    """

    def __init__(self, padded: PaddedAnswer, report: PrivacyReport, con: duckdb.DuckDBPyConnection | None = None,
                 plan: Any = None):
        self.padded = padded
        self.privacy = report
        self._con = con
        self.plan = plan
        self._table = _answer(padded)

    def arrow(self) -> pa.Table:
        return self._table

    to_arrow_table = fetch_arrow_table = arrow

    def df(self):
        """The answer as a pandas DataFrame, converted by DuckDB as its own ``.df()`` does
        (nullable integers as ``Int64``, DATE as ``datetime64``; needs pandas)."""
        if not _importable("pandas"):
            raise DodbError(self._missing("df", "pandas"))
        return self.relation.df()

    fetchdf = df

    def fetchnumpy(self) -> dict:
        """The answer as a dict of numpy arrays, by DuckDB's ``fetchnumpy()``."""
        return self.relation.fetchnumpy()

    @property
    def shape(self) -> tuple[int, int]:
        return (self._table.num_rows, self._table.num_columns)

    @property
    def description(self) -> list:
        """DB-API column descriptions, as DuckDB's relation gives them."""
        return self.relation.description

    @property
    def types(self) -> list:
        return self.relation.types

    dtypes = types

    def pl(self):
        """The answer as a polars DataFrame (needs polars: ``pip install polars``)."""
        if not _importable("polars"):
            raise DodbError(self._missing("pl", "polars"))
        import polars

        return polars.from_arrow(self._table)

    def _missing(self, method: str, module: str) -> str:
        """The one-line error of ``.df()``/``.pl()`` without its library: the answer is not lost
        (it is in this Result, and in ``db.last_result``), and only what is installed is offered."""
        others = [".arrow()", ".fetchall()", ".show()"] + \
            [f".{m}()" for m, mod in (("df", "pandas"), ("pl", "polars")) if mod != module and _importable(mod)]
        kept = "" if self.privacy.query_id is None else f" (query #{self.privacy.query_id})"
        return (f"Result.{method}() needs {module}: pip install {module} (or dodb[{module}]); the answer{kept} is "
                f"kept in this Result and in db.last_result: {', '.join(others)} give it now, and .{method}() "
                "once it is installed, without a new charge")

    def fetchall(self) -> list[tuple]:
        """The rows as tuples, like DuckDB's ``fetchall()``: one value per column, also when
        names repeat, and HUGEINT values (``sum`` of integers) as ``int``, not the
        ``Decimal`` their Arrow type (decimal128(38, 0), as DuckDB exports it) would give."""
        rows = table_rows(self._table)
        types = self.padded.types or []
        huge = [i for i, t in enumerate(types) if str(t).upper() in ("HUGEINT", "UHUGEINT")]
        if not huge or len(types) != self._table.num_columns:
            return rows
        return [tuple(int(v) if i in huge and v is not None else v for i, v in enumerate(r)) for r in rows]

    def show(self) -> None:
        """Print the answer the way DuckDB prints a relation."""
        self.relation.show()

    @property
    def relation(self) -> duckdb.DuckDBPyRelation:
        """The answer as a DuckDB relation on the same connection (join it, write Parquet, …)."""
        if self._con is None:
            self._con = duckdb.connect()
        return self._con.from_arrow(self._table)

    @property
    def columns(self) -> list[str]:
        return list(self._table.column_names)

    def __len__(self) -> int:
        return self._table.num_rows

    def _charged_words(self) -> str:
        r = self.privacy
        return f"charged ε={r.charged_epsilon:.4g}, δ={r.charged_delta:.3g}" if r.charged_epsilon else "charged nothing"

    def __repr__(self) -> str:
        """DuckDB's box rendering of the answer, under one line of size and charge."""
        head = f"<dodb.Result {self._table.num_rows} rows × {self._table.num_columns} columns; {self._charged_words()}>"
        try:
            return f"{head}\n{self.relation}"
        except duckdb.Error:  # a type DuckDB cannot render: Arrow's own text
            return f"{head}\n{self._table}"

    def _repr_html_(self, max_rows: int = 50) -> str:
        """An HTML table for notebooks (the first ``max_rows`` rows) over a one-line privacy
        summary (the charge, the sizes released, the ε left)."""
        from .display import html_table

        rows = table_rows(self._table.slice(0, max_rows))
        more = f"; first {max_rows} shown" if self._table.num_rows > max_rows else ""
        return (html_table(self._table.column_names, rows)
                + f"<p>{self._table.num_rows} rows × {self._table.num_columns} columns{more}; "
                f"{html.escape(self.privacy.summary())} (<code>.privacy</code> for the report)</p>")

    def explain(self) -> str:
        """The plan with the padded sizes measured in this run."""
        if isinstance(self.plan, str):
            return self.plan
        return self.plan.explain() if self.plan is not None else ""


OUTPUTS = {"arrow": None, "df": "pandas", "pl": "polars"}  # sql(output=...): the library each needs


def check_output(output: str | None) -> None:
    """Refuse, before a query is planned or charged, an ``output`` whose library is missing:
    ``db.sql(q, epsilon=e, output="df").df()`` never pays for an answer pandas cannot hold."""
    if output is None:
        return
    if output not in OUTPUTS:
        raise InvalidParameterError(f"output={output!r}: choose one of {', '.join(OUTPUTS)}")
    module = OUTPUTS[output]
    if module is not None and not _importable(module):
        raise DodbError(f"output={output!r} needs {module}: pip install {module} (or dodb[{module}]); "
                        "nothing was charged")


def _importable(module: str) -> bool:
    """Whether ``module`` imports (a test hides one by putting ``None`` in ``sys.modules``)."""
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _answer(padded: PaddedAnswer) -> pa.Table:
    """The exact answer from a padded one (analyst side: strips dummies, casts to DuckDB's types)."""
    from .operators.expressions import message_for
    from .planner.execute import cast_result

    return decode(padded, error_message=message_for, cast=cast_result)


