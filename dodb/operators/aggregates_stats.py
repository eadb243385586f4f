"""Statistical aggregates on the group-by's sorted runs (docs/design.md §Aggregates).

Each runs after :func:`dodb.operators.aggregate.group_by` sorted the rows by
``(is_dummy, keys[, value])`` and marked the runs; every function here is a fixed number
of segmented scans and element-wise passes over all ``n`` slots, so its access pattern
depends on ``n`` only — not on the group sizes or the values.  The result of a run is on
its last row, like every other aggregate.

* ``var_pop/var_samp/stddev_pop/stddev_samp``: two passes (the run's mean, broadcast
  back to every row, then the sum of squared deviations), in DOUBLE as DuckDB does.
  DuckDB updates Welford's running mean in its own row order, so the last bits can
  differ: answers agree with DuckDB within a relative 1e-9 (tests/operators).
* ``covar_pop/covar_samp/corr``: the same over rows where both arguments are non-NULL;
  ``corr`` is ``covar_pop / (stddev_pop(x) · stddev_pop(y))`` (NaN on zero variance).
* ``quantile_cont/quantile_disc/median`` (``value`` sorted within the run): each row's
  rank among the run's non-NULL values is a segmented prefix count; the run's count is
  broadcast back; the rows at DuckDB's positions are flagged element-wise and carried to
  the run's end by one segmented scan each — an oblivious selection whose pattern does
  not depend on where the positions are.  Positions follow DuckDB's interpolators:
  discrete ``max(1, n − ⌊n·(1−q)⌋) − 1`` (exact rational q), continuous ``RN = (n−1)·q``
  and ``lo + (hi − lo)·(RN − ⌊RN⌋)`` (DECIMAL results truncated to the type as DuckDB does).
* ``arg_min/arg_max`` (``min_by/max_by``): the lexicographic MIN/MAX scan over
  ``(b)`` carrying ``a``, over rows where both are non-NULL (DuckDB skips the others).
  Ties in ``b`` pick one of the tied rows, as DuckDB does (which one is unspecified).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa

from .keys import KeyField, column_fields, pack_fields
from .table import Column
from .wide_sums import int128_to_float
from ..oblivious.select import as_float64, select

__all__ = ["STATS_FUNCS", "SORTED_FUNCS", "PAIR_FUNCS", "stats_aggregate", "check_quantile_input"]

_VAR = ("var_pop", "var_samp", "stddev_pop", "stddev_samp")
_COV = ("covar_pop", "covar_samp", "corr")
_QUANT = ("quantile_cont", "quantile_disc", "median")
_ARG = ("arg_min", "arg_max")
STATS_FUNCS = _VAR + _COV + _QUANT + _ARG
SORTED_FUNCS = _QUANT          # need the run sorted by their column
PAIR_FUNCS = _COV + _ARG       # read a second column


def _as_float(c: Column) -> np.ndarray:
    """DuckDB's cast to DOUBLE of an integer, decimal or floating column (values only)."""
    t = c.type
    if pa.types.is_floating(t):
        return c.values.astype(np.float64)
    if pa.types.is_decimal(t):
        return int128_to_float(c.values[:, 0], c.values[:, 1].view(np.int64)) / (10.0 ** t.scale)
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return as_float64(c.values)
    raise TypeError(f"statistical aggregate over {t}")


def _broadcast_last(kern, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Every row gets its run's last-row value (one reverse segmented scan)."""
    return kern.seg_last(values, starts)


def _moments(kern, x: np.ndarray, inc: np.ndarray, starts: np.ndarray):
    """Per run (on every row): count, mean; and per row the deviation from the mean (0 off ``inc``)."""
    cnt = _broadcast_last(kern, kern.seg_reduce(inc, starts, "count"), starts)
    total = _broadcast_last(kern, kern.seg_reduce(select(inc, x, 0.0), starts, "sum"), starts)
    mean = total / np.maximum(cnt, 1)
    return cnt, select(inc, x - mean, 0.0)


def _variance(kern, func: str, col: Column, real: np.ndarray, starts: np.ndarray) -> Column:
    inc = real & col.valid
    x = select(inc, _as_float(col), 0.0)
    cnt, dev = _moments(kern, x, inc, starts)
    m2 = kern.seg_reduce(dev * dev, starts, "sum")
    samp = func.endswith("samp")
    div = np.maximum(cnt - (1 if samp else 0), 1).astype(np.float64)
    var = m2 / div
    out = np.sqrt(var) if func.startswith("stddev") else var
    return Column(pa.float64(), out, cnt > (1 if samp else 0))


def _covariance(kern, func: str, xc: Column, yc: Column, real: np.ndarray, starts: np.ndarray) -> Column:
    inc = real & xc.valid & yc.valid
    x = select(inc, _as_float(xc), 0.0)
    y = select(inc, _as_float(yc), 0.0)
    cnt, dx = _moments(kern, x, inc, starts)
    _, dy = _moments(kern, y, inc, starts)
    cxy = kern.seg_reduce(dx * dy, starts, "sum")
    if func == "corr":
        sxx = kern.seg_reduce(dx * dx, starts, "sum")
        syy = kern.seg_reduce(dy * dy, starts, "sum")
        n = np.maximum(cnt, 1).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = (cxy / n) / (np.sqrt(sxx / n) * np.sqrt(syy / n))
        return Column(pa.float64(), out, cnt > 0)
    samp = func == "covar_samp"
    out = cxy / np.maximum(cnt - (1 if samp else 0), 1).astype(np.float64)
    return Column(pa.float64(), out, cnt > (1 if samp else 0))


def _select(kern, col: Column, flag: np.ndarray, starts: np.ndarray) -> Column:
    """The value of the (one) flagged row of each run, on the run's last row."""
    words, _ = pack_fields([KeyField(flag.astype(np.uint64), 1)], flag.shape[0])
    _, lanes = kern.seg_reduce_lex(words, starts, "max", payload=col.arrays())
    return col.with_arrays(lanes)


def check_quantile_input(func: str, t: pa.DataType) -> None:
    """Refuse what dodb does not compute exactly as DuckDB (raised in the plan's dry run)."""
    if func == "quantile_cont" and not (pa.types.is_integer(t) or pa.types.is_floating(t)
                                        or (pa.types.is_decimal(t) and t.precision <= 18)):
        raise TypeError(f"quantile_cont/median over {t} (dodb interpolates integers, floats and "
                        "DECIMAL up to 18 digits; use quantile_disc)")


def _quantile(kern, func: str, q: Fraction, col: Column, real: np.ndarray, starts: np.ndarray) -> Column:
    check_quantile_input(func, col.type)
    inc = real & col.valid
    # the run is sorted by value; NULL rows sort together, so ranks among non-NULL rows are exact
    rank = kern.seg_prefix(inc, starts, "count") - 1
    cnt = _broadcast_last(kern, kern.seg_reduce(inc, starts, "count"), starts)
    nonnull = cnt > 0
    if func == "quantile_disc":
        floored = (cnt * (q.denominator - q.numerator)) // q.denominator
        idx = np.maximum(cnt - floored, 1) - 1
        out = _select(kern, col, inc & (rank == idx), starts)
        return Column(out.type, out.values, nonnull & np.ones_like(real), out.lengths)
    rn = (cnt - 1).astype(np.float64) * float(q)
    frn = np.floor(rn)
    d = rn - frn
    lo_i, hi_i = frn.astype(np.int64), np.ceil(rn).astype(np.int64)
    lo = _select(kern, col, inc & (rank == lo_i), starts)
    hi = _select(kern, col, inc & (rank == hi_i), starts)
    if pa.types.is_decimal(col.type):
        lv = lo.values[:, 0].view(np.int64).astype(np.float64)
        hv = hi.values[:, 0].view(np.int64).astype(np.float64)
        res = np.trunc(lv + (hv - lv) * d)
        res = select(nonnull, res, 0.0).astype(np.int64)
        words = np.stack([res.view(np.uint64), select(res < 0, -1, 0).astype(np.int64).view(np.uint64)], axis=1)
        return Column(col.type, words, nonnull)
    lv, hv = _as_float(lo), _as_float(hi)
    return Column(pa.float64(), lv + d * (hv - lv), nonnull)


def _arg(kern, func: str, a: Column, b: Column, real: np.ndarray, starts: np.ndarray) -> Column:
    inc = real & a.valid & b.valid
    fields = column_fields(b, nullable=False)
    lead = KeyField((~inc).astype(np.uint64) if func == "arg_min" else inc.astype(np.uint64), 1)
    words, _ = pack_fields([lead] + fields, real.shape[0])
    op = "min" if func == "arg_min" else "max"
    _, lanes = kern.seg_reduce_lex(words, starts, op, payload=a.arrays() + [a.valid])
    out = a.with_arrays(lanes[:-1])
    nonnull = kern.seg_reduce(inc, starts, "count") > 0
    return Column(out.type, out.values, nonnull & lanes[-1].astype(bool), out.lengths)


def stats_aggregate(kern, func: str, col: Column, col2: Column | None, param: str | None,
                    real: np.ndarray, starts: np.ndarray) -> Column:
    """One statistical aggregate's column (value on each run's last row)."""
    if func in _VAR:
        return _variance(kern, func, col, real, starts)
    if func in _COV:
        return _covariance(kern, func, col, col2, real, starts)
    if func == "median":  # DuckDB interpolates what it can subtract, else takes the lower middle
        t = col.type
        func = "quantile_disc" if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                                   or pa.types.is_boolean(t)) else "quantile_cont"
    if func in _QUANT:
        return _quantile(kern, func, Fraction(param), col, real, starts)
    return _arg(kern, func, col, col2, real, starts)
