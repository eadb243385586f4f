"""Which operator aggregate a SQL aggregate call is (docs/design.md §Aggregates).

:func:`agg_call` maps a sqlglot aggregate node to the operator's function name, its row
arguments (expressions to pre-project) and its public parameter (a quantile's fraction,
checked to be a constant in [0, 1] written as a number).  Anything else is refused with
the call named as the analyst wrote it.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..sqlpos import position_of

__all__ = ["AggCall", "agg_call", "SUPPORTED_AGGREGATES", "MAX_FRACTION_DIGITS"]

MAX_FRACTION_DIGITS = 9   # n·10^9 stays inside int64 for every padded size below 2^33
_ONE_ARG = {exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
            exp.Stddev: "stddev_samp", exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop",
            exp.Variance: "var_samp", exp.VariancePop: "var_pop"}
_TWO_ARG = {exp.Corr: "corr", exp.CovarPop: "covar_pop", exp.CovarSamp: "covar_samp",
            exp.ArgMin: "arg_min", exp.ArgMax: "arg_max"}
_QUANTILES = {exp.PercentileCont: "quantile_cont", exp.PercentileDisc: "quantile_disc", exp.Quantile: "quantile_disc"}
SUPPORTED_AGGREGATES = (exp.Count, exp.Median, exp.GroupConcat, exp.ArrayAgg) + tuple(_ONE_ARG) + tuple(_TWO_ARG) + tuple(_QUANTILES)


@dataclass(frozen=True)
class AggCall:
    func: str
    args: tuple          # row expressions (0, 1 or 2)
    param: str | None = None
    order: tuple = ()    # string_agg's/list's ORDER BY: (expression, descending, nulls_first)


def _named(a: exp.Expression) -> str:
    return a.sql(dialect="duckdb")[:80]


def _fraction(q: exp.Expression | None, a: exp.Expression) -> str:
    """The quantile fraction as an exact decimal string, or a refusal naming the call."""
    if isinstance(q, exp.Paren):
        q = q.this
    if not (isinstance(q, exp.Literal) and not q.is_string):
        raise UnsupportedQueryError(f"{_named(a)}: the fraction must be one number between 0 and 1 "
                                    "(lists and expressions are not supported)", position_of(a))
    try:
        f = Fraction(q.this)
    except (ValueError, ZeroDivisionError):
        raise UnsupportedQueryError(f"{_named(a)}: fraction {q.this}", position_of(a)) from None
    if not 0 <= f <= 1:
        raise UnsupportedQueryError(f"{_named(a)}: the fraction must be between 0 and 1", position_of(a))
    if f.denominator > 10 ** MAX_FRACTION_DIGITS:
        raise UnsupportedQueryError(f"{_named(a)}: fraction with more than {MAX_FRACTION_DIGITS} decimals",
                                    position_of(a))
    return str(f)


def agg_call(a: exp.AggFunc) -> AggCall:
    """The operator aggregate behind ``a``; raises :class:`UnsupportedQueryError` naming it."""
    if isinstance(a, (exp.ArrayAgg, exp.Filter)):
        return _list(a)
    arg = a.this
    if isinstance(a, exp.GroupConcat):
        return _string_agg(a)
    if isinstance(a, exp.Count):
        if isinstance(arg, exp.Star) or arg is None:
            return AggCall("count_star", ())
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise UnsupportedQueryError(f"COUNT(DISTINCT …) over several expressions: {_named(a)}", position_of(a))
            return AggCall("count_distinct", (arg.expressions[0],))
        return AggCall("count", (arg,))
    if isinstance(arg, exp.Distinct):
        raise UnsupportedQueryError(f"DISTINCT inside {_named(a)} (only COUNT(DISTINCT …))", position_of(a))
    if type(a) in _ONE_ARG:
        if a.args.get("expressions"):
            raise UnsupportedQueryError(f"{_named(a)} with more than one argument", position_of(a))
        return AggCall(_ONE_ARG[type(a)], (arg,))
    if type(a) in _TWO_ARG:
        if a.args.get("count") is not None:
            raise UnsupportedQueryError(f"{_named(a)}: the form with a count returns a list", position_of(a))
        return AggCall(_TWO_ARG[type(a)], (arg, a.expression))
    if isinstance(a, exp.Median):
        return AggCall("median", (arg,), "1/2")
    if type(a) in _QUANTILES:
        q = a.args.get("quantile") if isinstance(a, exp.Quantile) else a.expression
        return AggCall(_QUANTILES[type(a)], (arg,), _fraction(q, a))
    raise UnsupportedQueryError(f"aggregate {_named(a)}", position_of(a))


def _string_agg(a: exp.GroupConcat) -> AggCall:
    """``string_agg/group_concat/listagg(x[, sep] [ORDER BY …])``: the separator must be a
    string constant (its length is part of the public width); DISTINCT is refused."""
    arg, order = a.this, ()
    if isinstance(arg, exp.Order):
        order = tuple((o.this, bool(o.args.get("desc")), bool(o.args.get("nulls_first")))
                      for o in arg.expressions)
        arg = arg.this
    if isinstance(arg, exp.Distinct):
        raise UnsupportedQueryError(f"string_agg(DISTINCT …): {_named(a)} (aggregate the distinct values of a "
                                    "subquery instead: SELECT string_agg(x, sep) FROM (SELECT DISTINCT …))",
                                    position_of(a))
    sep = a.args.get("separator")
    if sep is None:
        sep_text = ","
    elif isinstance(sep, exp.Literal) and sep.is_string:
        sep_text = sep.this
    else:
        raise UnsupportedQueryError(f"{_named(a)}: the separator must be one string constant", position_of(a))
    return AggCall("string_agg", (arg,), sep_text, order)


def _order(arg: exp.Expression):
    if isinstance(arg, exp.Order):
        return arg.this, tuple((o.this, bool(o.args.get("desc")), bool(o.args.get("nulls_first")))
                               for o in arg.expressions)
    return arg, ()


def _list(node: exp.Expression) -> AggCall:
    """``list/array_agg(x [ORDER BY …]) [FILTER (WHERE p)]`` (docs/design.md §list): the
    FILTER stays a second row argument (the CASE rewrite would turn excluded rows into NULL
    elements, which a list keeps); DISTINCT is refused."""
    a, cond = (node.this, node.expression) if isinstance(node, exp.Filter) else (node, None)
    if isinstance(cond, exp.Where):
        cond = cond.this
    arg, order = _order(a.this)
    if isinstance(arg, exp.Distinct):
        raise UnsupportedQueryError(f"list(DISTINCT …): {_named(node)} (aggregate the distinct values of a "
                                    "subquery instead: SELECT list(x) FROM (SELECT DISTINCT …))", position_of(node))
    return AggCall("list", (arg,) if cond is None else (arg, cond), None, order)
