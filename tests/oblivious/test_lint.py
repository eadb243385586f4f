"""The banned-call lint over dodb/oblivious and the expression evaluator (docs/design.md §Invariants, 2,
docs/design.md §Expressions), and proof that it bites."""
from __future__ import annotations

import pathlib

import pytest

from .lint_rules import in_place_findings, lint_source, module_containers

ROOT = pathlib.Path(__file__).resolve().parents[2] / "dodb"
PKG = ROOT / "oblivious"
# Not kernels: the samplers run on no data (their loops depend on fresh randomness only),
# the trace is the recorder, rng the generator; fixed_work is the padding sampler, whose
# property (the same draws whatever it returns) is checked by test_fixed_work.py instead.
NOT_KERNELS = {"__init__.py", "noise.py", "rng.py", "trace.py", "fixed_work.py"}
KERNELS = sorted(p for p in PKG.glob("*.py") if p.name not in NOT_KERNELS)
# The expression evaluator, every module of it, and the projection operator that calls it.
EVALUATOR = sorted((ROOT / "operators" / "expressions").glob("*.py")) + [ROOT / "operators" / "project.py"]
# constant tables (module-level dict/list/tuple displays) the evaluator's modules share, and
# the predicate programs' instruction set (oblivious/program_ops.py) they lower to
TABLES = set().union(*(module_containers(p.read_text()) for p in EVALUATOR + [PKG / "program_ops.py"]))


def test_kernel_modules_exist():
    names = {p.name for p in KERNELS}
    assert {"sort.py", "compact.py", "expand.py", "scan.py", "compiled.py", "compiled_sort.py",
            "compiled_int128.py"} <= names
    assert {"evaluator.py", "strings.py", "int128.py", "numeric.py", "dates.py", "format.py", "casts.py",
            "functions.py", "text.py", "casemap.py", "bind.py", "value.py"} <= {p.name for p in EVALUATOR}


# operators whose every pass is a kernel call or an element-wise select (docs/design.md §Window functions)
OPERATORS = [ROOT / "operators" / "window.py", ROOT / "operators" / "window_frames.py", ROOT / "operators" / "pkfk.py",
             ROOT / "operators" / "theta_join.py", ROOT / "operators" / "list_agg.py",
             ROOT / "operators" / "global_aggregate.py", ROOT / "operators" / "wide_sums.py",
             ROOT / "operators" / "exchange.py", ROOT / "operators" / "string_agg.py",
             ROOT / "operators" / "grouped_sums.py", ROOT / "operators" / "lookup.py",
             ROOT / "operators" / "scalar_row.py", ROOT / "operators" / "keys.py"]


@pytest.mark.parametrize("path", KERNELS + EVALUATOR + OPERATORS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kernel_has_no_banned_access(path):
    findings = lint_source(path.read_text(), TABLES)
    assert not findings, "\n".join(f"{path.name}: {f}" for f in findings)


# Every module that may hold a private lane, for the in-place AND/OR rule alone
# (docs/design.md §Address audit): the rule needs no knowledge of what is public, so it also
# covers the modules the full lint above cannot (the samplers, the operators that sort and
# compact through the kernels backend, the plaintext reference backend).
LANE_MODULES = sorted(PKG.glob("*.py")) + sorted((ROOT / "operators").rglob("*.py"))


@pytest.mark.parametrize("path", LANE_MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_in_place_and_or_of_a_lane(path):
    findings = in_place_findings(path.read_text())
    assert not findings, "\n".join(f"{path.name}: {f}" for f in findings)


BAD = {
    "argsort": "def f(a):\n    return np.argsort(a)\n",
    "method sort": "def f(a):\n    a.sort()\n",
    "nonzero": "def f(a):\n    return a.nonzero()\n",
    "unique": "def f(a):\n    return np.unique(a)\n",
    "searchsorted": "def f(a, v):\n    return np.searchsorted(a, v)\n",
    "take": "def f(a, i):\n    return np.take(a, i)\n",
    "mask index": "def f(a):\n    return a[a > 0]\n",
    "fancy index": "def f(a, idx):\n    return a[idx]\n",
    "mask in tuple": "def f(a, m):\n    return a[m, 0]\n",
    "one-arg where": "def f(a):\n    return np.where(a > 0)\n",
    "masked copyto": "def f(a, b, m):\n    np.copyto(a, b, where=m)\n",
    "branch on reduction": "def f(a):\n    if a.sum() > 3:\n        return 1\n",
    "branch on element": "def f(a):\n    while a[0] > 0:\n        pass\n",
    "branch via tainted name": "def f(a):\n    t = int(a.max())\n    if t > 2:\n        return t\n",
    "builtin max over an array": "def f(a):\n    if max(a) > 2:\n        return 1\n",
    "conditional expression": "def f(a):\n    return 1 if a.any() else 2\n",
    "table looked up by data": "T = {0: 1, 1: 2}\ndef f(a):\n    k = int(a.sum())\n    return T[k]\n",
    "slice bounded by data": "def f(a):\n    n = int(a.sum())\n    return a[:n]\n",
    "reassigned counter": "def f(a, m):\n    for i in range(3):\n        i = m\n        a[i] = 0\n",
    "evaluator branch on validity": "def ev(v):\n    if v.valid.any():\n        return v\n",
    "reduction with keywords only": "def f(a, m):\n    return m[:, : int(a.max(initial=0))]\n",
    "taint through a name": "def f(a):\n    t = a.max()\n    u = t + 1\n    if u:\n        return 1\n",
    "in-place AND of a lane": "def f(ok, valid):\n    ok &= valid\n    return ok\n",
    "in-place OR into a slice": "def f(out, v, n):\n    out[0:1, :n] |= v\n",
    "bool reduction along rows": "def f(hits):\n    return hits.any(axis=1)\n",
    "logical_and.reduce of lanes": "def f(vals):\n    return np.logical_and.reduce([v.valid for v in vals])\n",
    "kernel branch on a loaded field": "@njit\ndef f(program, a, n):\n    for j in range(n):\n        op = program[j]\n"
                                       "        if op == 0:\n            a[j] = 1\n",
}

GOOD = {
    "strided views": "def f(a, n, s):\n    out = np.zeros_like(a)\n    out[: n - s] = a[s:]\n    return out[:, 0]\n",
    "shape branch": "def f(a, m):\n    if a.shape[0] >= m:\n        return a[:m]\n",
    "where select": "def f(m, a, b):\n    return np.where(m, a, b)\n",
    "scalar min of sizes": "def f(n, b):\n    blk = min(b, n)\n    while 2 * blk > n:\n        blk //= 2\n",
    "exempted": "def f(a, m):\n    if a.sum() > m:  # lint: public caller contract\n        raise ValueError\n",
    "constant table by type": "T = {8: 1, 16: 2}\ndef f(t):\n    return T[t.bits]\n",
    "range counters": "def f(a, w):\n    for j in range(w):\n        a[:, j:j + 1] = a[:, j]\n",
    "enumerate counter": "def f(acc, xs):\n    for i, x in enumerate(xs):\n        acc[i + 1] = x\n",
    "local dict": "def f(xs):\n    out = {}\n    for k in xs:\n        out[k] = 1\n    return out\n",
    "taint stays in its function": "def f(a):\n    w = max(a)\n    return w\n\ndef g(k, w):\n    while k < w:\n"
                                   "        k <<= 1\n",
    "out-of-place AND/OR, in-place XOR": "def f(ok, valid, out, v):\n    ok = ok & valid\n    out[0:1] = out[0:1] | v\n"
                                         "    ok ^= valid\n    return ok\n",
    "branch-free bool reduction": "def f(hits, vals):\n    return any_along(hits, 1) & all_along(np.stack(vals), 0) & all(vals)\n",
    "Python set union": "def f(s, xs):\n    s |= set(xs)\n    s |= {1, 2}\n",
    "scalar OR in a compiled kernel": "@njit\ndef f(a, n):\n    acc = np.uint64(0)\n    for i in range(n):\n"
                                      "        acc |= a[i]\n    return acc\n",
    "kernel field exempted as public": "@njit\ndef f(program, a, n):\n    for j in range(n):\n"
                                       "        op = program[j]  # lint: public the program\n"
                                       "        if op == 0:\n            a[j] = 1\n",
}


# the full lint, and the in-place rule alone (which runs over LANE_MODULES) on its own cases
CHECKS = {
    "lint": (lint_source, sorted(BAD), sorted(GOOD)),
    "in-place rule": (in_place_findings, sorted(k for k in BAD if k.startswith("in-place")),
                      ["out-of-place AND/OR, in-place XOR", "Python set union", "scalar OR in a compiled kernel",
                       "exempted"]),
}


@pytest.mark.parametrize("check,name", [(c, n) for c, (_, bad, _) in CHECKS.items() for n in bad])
def test_lint_catches(check, name):
    assert CHECKS[check][0](BAD[name]), f"{check} missed: {name}"


@pytest.mark.parametrize("check,name", [(c, n) for c, (_, _, good) in CHECKS.items() for n in good])
def test_lint_allows(check, name):
    assert not CHECKS[check][0](GOOD[name]), f"{check} false positive: {name}"
