"""MD5 and SHA-256 of strings (dodb/operators/expressions/digests.py) against Python's hashlib and DuckDB:
every length around the 64-byte block boundaries (55, 56, 63, 64, 119, 120 …), multibyte
UTF-8, the empty string and NULLs, among dummy slots — and a data-independent view."""
from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
from hypothesis import given, settings, strategies as st

from dodb.operators import expressions as E
from dodb.operators.expressions.digests import md5_hex, sha256_hex
from dodb.operators.table import from_arrow

from tests.operators.expr_cases import compare, padded, tables

WIDTH = 130


def _strings(seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = ["", "a", "abc", "é", "日本語"]
    for n in list(range(50, 70)) + list(range(115, 130)) + [1, 2, 8, 31, 32, 33]:
        out.append("".join(rng.choice(list("abcXYZ019 _%"), n)))
    out += ["é" * 28, "é" * 32, "日" * 21 + "a"]
    return out


def test_md5_equals_hashlib_at_every_block_boundary():
    values = _strings(0)
    raw = [v.encode() for v in values]
    mat = np.zeros((len(raw), WIDTH), dtype=np.uint8)
    for i, b in enumerate(raw):
        mat[i, :len(b)] = np.frombuffer(b, dtype=np.uint8)
    lengths = np.array([len(b) for b in raw])
    assert [r.tobytes().decode() for r in md5_hex(mat, lengths)] == [hashlib.md5(b).hexdigest() for b in raw]
    assert [r.tobytes().decode() for r in sha256_hex(mat, lengths)] == [hashlib.sha256(b).hexdigest() for b in raw]


def test_md5_over_padded_rows_equals_duckdb():
    values = _strings(1) + [None, None]
    t = pa.table({"s": pa.array(values, pa.string())})
    dummies = pa.table({"s": pa.array(["z" * 40] * len(values), pa.string())})
    full = pa.concat_tables([t, dummies])
    pt = from_arrow(full, stability=1, widths={"s": WIDTH}, is_real=np.r_[np.ones(len(values), bool),
                                                                         np.zeros(len(values), bool)])
    compare(t, pt, "md5(s)")
    compare(t, pt, "md5(s || 'x') = md5(s) OR md5(upper(s)) IS NULL")
    compare(t, pt, "sha256(s)")


def test_the_work_does_not_depend_on_the_lengths():
    """Same width, different lengths and contents: the same arrays are made, in the same order."""
    from dodb.audit.allocations import recording

    def run(values):
        t = pa.table({"s": pa.array(values, pa.string())})
        pt = from_arrow(t, stability=1, widths={"s": WIDTH}, is_real=np.ones(len(values), bool))
        E.evaluate(pt, {"r": "md5(s) || sha256(s)"})  # bind caches warm
        with recording() as log:
            E.evaluate(pt, {"r": "md5(s) || sha256(s)"})
        return log.take()

    assert run(["", "a" * 120, "é", None]) == run(["x" * 64, "", "abc", "y" * 55])


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_md5_expressions_match_duckdb(data):
    t = data.draw(tables())
    compare(t, data.draw(padded(t)), data.draw(st.sampled_from(["md5(s)", "md5(n || s)", "md5(lower(s)) < md5(n)",
                                                                "length(md5(s))", "sha256(s)", "sha256(n) = sha256(s)"])))
