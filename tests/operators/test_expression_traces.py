"""The evaluator's view does not depend on the data (docs/design.md §Expressions).

:class:`PythonView` records what an observer of the evaluator could tell apart, at a
finer grain than the operator trace: every line the evaluator's Python code executes
(so every branch taken), the shape and dtype of every array its functions return, and
after each evaluator function returns, the live numpy buffers (``tracemalloc``'s numpy
domain: count and bytes; Python's own objects are out of scope, docs/threat-model.md).
Two padded tables of the same public shape — row count, types, declared widths — but
different values, NULL patterns and real/dummy slots must give identical views; a
planted data-dependent branch or data-sized buffer must not.
"""
from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import dodb.operators.expressions as E
from dodb.oblivious.trace import Trace
from dodb.operators import ExecContext, project, simulate
from dodb.operators.expressions import strings
from dodb.audit.view import numpy_block_sizes

from .expr_cases import padded, tables

EVALUATOR = str(Path(E.__file__).parent)
HERE = str(Path(__file__))


def _arrays(value, out: list, depth: int = 0) -> None:
    if isinstance(value, np.ndarray):
        out.append((str(value.dtype), value.shape))
    elif depth < 3 and isinstance(value, (tuple, list)):
        for v in value:
            _arrays(v, out, depth + 1)
    elif depth < 3 and hasattr(value, "__dataclass_fields__"):
        for k in value.__dataclass_fields__:
            _arrays(getattr(value, k), out, depth + 1)


class PythonView:
    """Lines executed, shapes returned and traced bytes, in the evaluator's code (and in
    this file, where planted leaks live)."""

    def __init__(self):
        self.events: list = []

    def _traced(self, frame) -> bool:
        f = frame.f_code.co_filename
        return f.startswith(EVALUATOR) or f == HERE and frame.f_code.co_name.startswith("leaky")

    def _trace(self, frame, event, arg):
        if not self._traced(frame):
            return None
        if event == "line":
            self.events.append(("line", Path(frame.f_code.co_filename).name, frame.f_lineno))
        elif event == "return":
            shapes: list = []
            _arrays(arg, shapes)
            name = frame.f_code.co_name
            live = Path(frame.f_code.co_filename).name in _NODE_MODULES and not name.startswith("<")
            self.events.append(("return", name, tuple(shapes)) + (_numpy_live() if live else ()))
        return self._trace

    def record(self, fn):
        gc.collect()
        if tracemalloc.is_tracing():
            raise RuntimeError("tracemalloc is already tracing")
        tracemalloc.start()  # only blocks allocated from here on are traced: snapshots stay small
        sys.settrace(self._trace)
        try:
            fn()
        finally:
            sys.settrace(None)
            tracemalloc.stop()
        return self


# numpy buffers are counted when a node handler returns (the kernels' helpers, called in
# public loops, are covered by the shapes they return and by their callers' counts)
_NODE_MODULES = {"evaluator.py", "functions.py", "text.py", "casts.py", "__init__.py", "test_expression_traces.py",
                 "times.py", "maths.py", "digests.py", "bits.py", "more_functions.py", "ages.py", "blobs.py"}


def _numpy_live() -> tuple[int, int]:
    """(count, bytes) of live numpy buffers allocated since tracing started."""
    sizes = numpy_block_sizes()
    return len(sizes), sum(sizes)


def view_of(pt, exprs: dict) -> list:
    """The evaluator's view over ``pt`` (after a warm-up run that fills the bind caches)."""
    E.evaluate(pt, exprs)
    return PythonView().record(lambda: E.evaluate(pt, exprs)).events


def first_difference(a: list, b: list) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"event {i}: {x} != {y}"
    return "" if len(a) == len(b) else f"{len(a)} events != {len(b)}"


EXPRS = {
    "arith": "(i + t16) * 3 - b // 7 + b % 5", "dec": "d * 3 - h + abs(d)", "float": "f / 3 + f // 2",
    "cmp": "(i < b) OR (d >= 1.5) AND NOT (s = 'ab')", "case": "CASE WHEN i > 0 THEN s WHEN k THEN n ELSE 'z' END",
    "coalesce": "COALESCE(i, t8, 7)", "nullif": "NULLIF(s, 'a')", "in": "i IN (1, 2, 3) OR s NOT IN ('a', 'b')",
    "between": "dt BETWEEN DATE '1994-01-01' AND DATE '1996-12-31'", "like": "s LIKE '%a_b%' OR s ILIKE 'A%'",
    "affix": "prefix(s, 'a') AND suffix(n, '2') OR contains(s, 'é')", "substr": "substring(s, 2, 3)",
    "case_map": "upper(s) || lower(n)", "len": "length(s) + length(n)", "concat": "concat(s, '-', i, d)",
    "trim": "trim(s) || ltrim(n, '1') || rtrim(s, 'a')", "cast_int": "TRY_CAST(n AS INTEGER)",
    "cast_text": "CAST(d AS VARCHAR) || CAST(dt AS VARCHAR) || CAST(b AS VARCHAR)", "cast_dec": "CAST(f AS DECIMAL(10,2))",
    "date_arith": "dt + INTERVAL 3 MONTH", "date_part": "EXTRACT(year FROM dt) + date_part('doy', ts)",
    "trunc": "date_trunc('month', dt)", "huge": "b::HUGEINT * b // i", "strftime": "strftime(dt, '%Y-%m-%d')",
    "replace": "replace(s, 'a', 'xyz')", "pad": "lpad(s, 5, '*')",
    "maths": "sqrt(f) + ln(abs(b) + 1) + power(d, 2) + atan2(i, f) + log(3, f) + tanh(f) + even(d) + cot(t8)",
    "maths_flags": "isnan(f) OR isinf(f) OR isfinite(d)",
    "windows_per_row": "substring(s, t8 % 4, i % 3) || left(n, t8) || right(s, b)",
    "time_units": "date_diff('hour', ts, dt) + date_diff('week', dt, ts) + hour(ts) + millisecond(ts) + century(dt)",
    "time_trunc": "date_trunc('decade', ts) < date_trunc('ms', ts) OR date_trunc('hour', dt) > ts",
    "epoch": "epoch(ts) + epoch(dt) + epoch_us(ts) + date_part('epoch', dt) + epoch_ms(ts) + epoch_ms(dt)",
    "make_date": "make_date(i % 3000 + 1, t8 % 12 + 1, t16 % 28 + 1)",
    "ts_casts": "CAST(dt AS TIMESTAMP) + INTERVAL 90 MINUTE > ts - INTERVAL 1 MONTH",
    "numbers": "trunc(f) + fmod(f, 3) + nextafter(f, 0::DOUBLE) + trunc(d)",
    "gcd": "gcd(b, i) + lcm(t8, t16) + add(i, b) - multiply(t8, 3)",
    "signbit": "signbit(f) OR signbit(d) OR signbit(i)",
    "needles": "strpos(s, n) + instr(n, s) + strlen(s) + bit_length(n)",
    "affix_rows": "contains(s, n) OR starts_with(n, s) OR suffix(s, n)",
    "md5": "md5(s) || md5(n) || sha256(s)",
    "bits": "(b & i) + (t8 | t16) + xor(b, 7) + ~i + bit_count(b) + (b >> t8) + (t16 << 2)",
    "chars": "ascii(s) + unicode(n) + ord(s) + length(chr(t8 + 200))",
    "more": "concat_ws(',', s, n, i) || translate(s, 'aé', 'x') || reverse(n) || to_hex(b) || hex(s)",
    "more_numbers": "round_even(d, 1) + factorial(t8 % 30) + year(date_add(dt, INTERVAL 3 DAY))",
    "split_format": "split_part(s, 'a', 2) || split_part(n, '', -1) || format('{}-{}', s, i) || printf('%d%%', b)",
    "edit_glob": "levenshtein(s, n) + divide(b, 7) > 3 OR s GLOB 'a*'",
    "per_row_text": "replace(s, n, 'xy') || CAST(s LIKE n AS VARCHAR) || CAST(s LIKE 'a!%' ESCAPE '!' AS VARCHAR)",
    "age": "epoch(age(ts, dt)) + epoch(age(dt, TIMESTAMP '2000-02-29 12:00:00')) + epoch(age(ts, ts))",
    "blobs_splits": "octet_length(encode(s)) + length(to_base64(encode(n))) + len(string_split(s, 'a')) "
                    "+ array_length(string_split(n, '')) + len(string_split(s, 'aa'))",
    "date_sub": "date_sub('month', dt, ts) + date_sub('hour', ts, dt) + datesub('year', dt, dt)",
    "time": "tm < TIME '12:00:00' OR hour(tm) + minute(tm) + second(tm) > 70 OR epoch(tm) > 3600",
    "regex": "regexp_matches(s, '(a|é)+[0-9]?$') OR regexp_full_match(n, '\\d+') OR s SIMILAR TO '.*_.' OR n ~ '^x'",
    "date_text": "TRY_CAST(s AS DATE) < TRY_CAST(n AS DATE) OR CAST(s AS DATE) IS NULL",
    "make_time": "make_time(t8 % 25, t16 % 61, f) < TIME '12:00:00' OR make_timestamp(i, t8, t16, 1, 2, f) < ts",
    "strptime": "try_strptime(s, '%d %b %Y %I%p') < strptime(CASE WHEN k THEN '2013-07-04' ELSE '2000-01-01' END, "
                "'%Y-%m-%d') OR try_strptime(n, '%Y%j %A %S.%f') IS NULL",
    "interval_rows": "CAST(tm AS VARCHAR) || CAST(tm - INTERVAL 25 HOUR AS VARCHAR) || CAST(tm + to_minutes(b) AS VARCHAR) "
                     "|| CAST(ts - to_hours(b) AS VARCHAR) || CAST(dt + to_days(i) AS VARCHAR) "
                     "|| CAST(ts + to_microseconds(b) AS VARCHAR)",
    "timestamptz": "CAST(CAST(ts AS TIMESTAMPTZ) AS VARCHAR) || CAST(CAST(to_timestamp(f) AS DATE) AS VARCHAR) "
                   "|| CAST(epoch_us(to_timestamp(i)) AS VARCHAR) || CAST(CAST(dt AS TIMESTAMPTZ) > to_timestamp(b) "
                   "AS VARCHAR) || CAST(CAST(to_timestamp(t16) AS TIMESTAMP) AS VARCHAR)",
    "interval_values": "CASE WHEN k THEN INTERVAL 1 DAY ELSE INTERVAL 2 MONTH END > INTERVAL 30 DAY "
                       "OR epoch(CASE WHEN k THEN INTERVAL 1 DAY ELSE INTERVAL 25 HOUR END) > i "
                       "OR greatest(INTERVAL 40 DAY, CASE WHEN k THEN INTERVAL 1 MONTH END) = INTERVAL 40 DAY",
    "regex_rewrite": "regexp_extract(s, '(a|é)(b*?)_?', 2) || regexp_replace(n, 'x*', '-', 'g') "
                     "|| regexp_replace(s, '(a)|b', '<\\1>')",
}


@settings(max_examples=8)
@given(data=st.data())
def test_same_shape_different_data_same_view(data):
    n = data.draw(st.integers(0, 8))
    a = data.draw(padded(data.draw(tables(rows=n)), extra=3))
    b = data.draw(padded(data.draw(tables(rows=data.draw(st.integers(0, n + 3)))), extra=n + 3))
    b = _same_slots(b, a.padded_size)
    names = data.draw(st.lists(st.sampled_from(sorted(EXPRS)), min_size=4, max_size=4, unique=True))
    exprs = {k: EXPRS[k] for k in names}
    va, vb = view_of(a, exprs), view_of(b, exprs)
    assert not first_difference(va, vb), first_difference(va, vb)


def _same_slots(t, size):
    """``t`` cut or grown to ``size`` slots (the public shape of the other input)."""
    assert t.padded_size >= size
    return t.slice(0, size)


@pytest.mark.parametrize("name", sorted(EXPRS))
def test_each_family_has_a_data_independent_view(name):
    """All-real, all-NULL and all-dummy inputs of one shape: the same view per expression."""
    import datetime as dt
    import decimal

    n = 5
    full = pa.table({
        "t8": pa.array([1, -128, 127, 0, 5], pa.int8()), "t16": pa.array([3, 200, -32768, 0, 1], pa.int16()),
        "i": pa.array([1, 0, 2147483647, -5, 9], pa.int32()), "b": pa.array([7, -1, 0, 2 ** 62, 5], pa.int64()),
        "d": pa.array([decimal.Decimal("1.25")] * n, pa.decimal128(15, 2)),
        "h": pa.array([decimal.Decimal(10) ** 30] * n, pa.decimal128(38, 0)),
        "f": pa.array([0.0, 1.5, float("nan"), -2.0, 1e300]), "s": pa.array(["ab", "éé", "", "a_b", "A%"]),
        "n": pa.array(["12", "x", " 3.5", "0x1", ""]), "dt": pa.array([dt.date(1995, 5, 17)] * n, pa.date32()),
        "ts": pa.array([dt.datetime(2000, 1, 1, 12)] * n, pa.timestamp("us")), "k": pa.array([True, False] * 2 + [True]),
        "tm": pa.array([dt.time(0, 0), dt.time(23, 59, 59, 999999), dt.time(12, 0), dt.time(1, 2, 3), dt.time(9)],
                       pa.time64("us")),
    })
    nulls = pa.table({c: pa.nulls(n, full.schema.field(c).type) for c in full.column_names})
    from dodb.operators.table import from_arrow

    widths = {"s": 24, "n": 24}
    inputs = [from_arrow(full, stability=1, widths=widths), from_arrow(nulls, stability=1, widths=widths),
              from_arrow(full, stability=1, widths=widths, is_real=np.zeros(n, bool))]
    views = [view_of(t, {name: EXPRS[name]}) for t in inputs]
    for v in views[1:]:
        assert not first_difference(views[0], v), f"{name}: {first_difference(views[0], v)}"


def test_operator_trace_matches_the_simulator():
    """``project``'s operator trace is reproduced from public information alone."""
    from dodb.operators.table import from_arrow

    t = from_arrow(pa.table({"s": pa.array(["ab", None, "c"]), "x": pa.array([1, 2, None], pa.int32())}),
                   stability=1, widths={"s": 8})
    ctx = ExecContext(mode="do")
    project(t, {"u": "upper(s)", "y": "x * 2"}, ctx=ctx)
    sim = simulate(project, [t], [], mode="do", exprs={"u": "upper(s)", "y": "x * 2"})
    assert isinstance(sim, Trace) and sim == ctx.trace


# -- planted leaks: the view must tell the inputs apart ------------------------------------------

def leaky_compact_branch(mat, keep, _orig=strings.compact):
    if not (keep[:, 1:] & ~keep[:, :-1]).any():  # a data-dependent fast path: no holes, nothing to move
        return np.where(keep, mat, np.uint8(0)), keep.sum(axis=1)
    return _orig(mat, keep)


def leaky_compact_sized(mat, keep, _orig=strings.compact):
    out, lengths = _orig(mat, keep)
    return out[:, : max(1, int(lengths.max(initial=0)))], lengths  # width cut to the longest real string


@pytest.mark.parametrize("leak", [leaky_compact_branch, leaky_compact_sized], ids=lambda f: f.__name__)
def test_planted_leaks_are_caught(monkeypatch, leak):
    from dodb.operators.table import from_arrow

    monkeypatch.setattr(strings, "compact", leak)
    w = {"s": 8}
    a = from_arrow(pa.table({"s": pa.array(["ab", "cd", "ef"])}), stability=1, widths=w)
    b = from_arrow(pa.table({"s": pa.array(["a b", "c", "  e"])}), stability=1, widths=w)
    exprs = {"t": "trim(s)"}
    assert first_difference(view_of(a, exprs), view_of(b, exprs))


def test_planted_leak_is_caught_by_the_lint():
    import inspect

    from tests.oblivious.lint_rules import lint_source

    for leak in (leaky_compact_branch, leaky_compact_sized):
        assert lint_source(inspect.getsource(leak)), leak.__name__
