"""``dodb audit --addresses``: branches and memory addresses measured under valgrind (issue 28).

The coupled-neighbour audit compares what the code *reports* of its accesses (the trace)
and the allocations it measures.  This audit measures the accesses themselves, in the
running process, in the manner of ctgrind (docs/design.md §Address audit):

1. the queries run in a child process under valgrind's memcheck;
2. each query runs once to warm every cache, then again with the rows of every private
   table marked *undefined* as they leave their scan (:mod:`.valgrind` client requests);
3. memcheck propagates "undefined" through every copy and every arithmetic operation, in
   numpy, in the compiled kernels and in the interpreter, and reports each conditional
   jump and each memory address computed from an undefined byte, with
   ``--track-origins`` naming where the undefined value came from;
4. a release (``ExecContext.release``) marks its exact values defined first: what the
   observer learns from a release is modelled by DP (docs/threat-model.md), not measured.

A report whose origin is this marking is a finding: some instruction's branch or address
depends on private data.  Errors from other origins (uninitialised memory in CPython or a
library) are not about private data and are not counted.  Each finding is placed at the
plan node and the Python line that ran when it was raised: a line tracer counts
memcheck's errors (``VALGRIND_COUNT_ERRORS``) at every line of dodb's code and writes
the line into valgrind's log when the count moves.

Because nothing about the marked data may steer the code, one marked run covers every
neighbour of the data at once; no pair of runs is compared.  What it cannot see is in
docs/threat-model.md §Measured and modelled.
"""
from __future__ import annotations

import json
import linecache
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .neighbour import AuditError

__all__ = ["AddressFinding", "AddressAudit", "AddressReport", "audit_addresses", "valgrind_command"]

_ORIGIN = "created by a client request"  # memcheck's words for an origin set by MAKE_MEM_UNDEFINED
_QUERY, _NODE, _LINE, _END = "dodb-query ", "dodb-node ", "dodb-line ", "dodb-end"


@dataclass
class AddressFinding:
    """One instruction whose branch or address depended on private data."""

    node: str
    line: str  # "dodb/… .py:N: source", or "" when no dodb line had run
    what: str  # memcheck's description
    frame: str  # the innermost frame: function and library
    count: int

    def describe(self) -> str:
        at = self.line or "(no dodb line)"
        return f"{self.node}: {at} — {self.what} in {self.frame}, {self.count}×"


@dataclass
class AddressAudit:
    label: str
    sql: str
    plant: str | None = None
    nodes: int = 0
    findings: list[AddressFinding] = field(default_factory=list)
    # memcheck errors of the marked run beyond the unmarked control run's (a finding whose
    # C stack memcheck had printed before is counted here only), and the lines they ran on
    excess: int = 0
    excess_lines: dict = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.findings and self.excess == 0

    def line(self) -> str:
        if self.error:
            return f"ERROR {self.label}: {self.error}"
        if not self.findings and self.excess:
            where = ", ".join(_source(k) for k in list(self.excess_lines)[:3]) or "no dodb line"
            return f"LEAK  {self.label}: {self.excess} more memcheck errors with private rows marked than " \
                   f"without (already-seen C stacks); at {where}"
        if not self.findings:
            return f"ok    {self.label}: no branch or address depends on private data ({self.nodes} nodes)"
        n = sum(f.count for f in self.findings)
        return f"LEAK  {self.label}: {n} branches or addresses depend on private data; first: " \
               f"{self.findings[0].describe()}"


@dataclass
class AddressReport:
    queries: list[AddressAudit]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.queries) and all(q.ok for q in self.queries)

    def lines(self) -> list[str]:
        out = [q.line() for q in self.queries]
        clean = sum(q.ok for q in self.queries)
        out.append(f"audit --addresses: {clean} of {len(self.queries)} queries with no branch or address "
                   "that depends on private data")
        return out


def valgrind_command(xml_file: Path) -> list[str]:
    """memcheck, with origins (to tell private data from other uninitialised memory)."""
    exe = shutil.which("valgrind")
    if exe is None:
        raise AuditError("--addresses runs the queries under valgrind, which is not installed "
                         "(Debian/Ubuntu: apt-get install valgrind)")
    return [exe, "--tool=memcheck", "--track-origins=yes", "--error-limit=no", "--num-callers=8",
            "--xml=yes", f"--xml-file={xml_file}"]


def _worker_env(generic: bool = False) -> dict[str, str]:
    """The child's environment.  valgrind emulates a CPU of its own, and numba looks kernels
    up in its cache by the CPU's name and features: the child names the real CPU (so it
    runs the very machine code the engine runs, from the cache ``dodb warmup`` filled), or,
    when valgrind cannot run that code, a generic x86-64 (compiled natively first)."""
    env = dict(os.environ)
    env.update(PYTHONMALLOC="malloc", DODB_ALLOW_SEED="1", DODB_THREADS="1")
    if generic:
        env.update(NUMBA_CPU_NAME="generic", NUMBA_CPU_FEATURES="")
    elif not env.get("NUMBA_CPU_NAME"):
        from llvmlite import binding
        from numba.core.codegen import get_host_cpu_features

        env.update(NUMBA_CPU_NAME=binding.get_host_cpu_name(), NUMBA_CPU_FEATURES=get_host_cpu_features())
    return env


def _warm_kernels(env: dict[str, str]) -> None:
    """Compile (or find cached) every kernel for the child's CPU, natively: compiling them
    under valgrind would take an hour."""
    r = subprocess.run([sys.executable, "-m", "dodb", "warmup"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise AuditError(f"--addresses: compiling the kernels failed: {r.stderr.strip()[-300:]}")


def audit_addresses(database: Path, queries: Sequence[str], *, mode: str = "do", epsilon: float = 1.0,
                    seed: int = 0, plants: Sequence[str | None] | None = None,
                    timeout: float | None = None, labels: Sequence[str] | None = None) -> AddressReport:
    """Run ``queries`` over the protected ``database`` under memcheck (see the module's docstring).

    ``plants`` (tests only) names, per query, a ``"module:function"`` returning a context
    manager that is entered around that query's runs: a leak planted on purpose must be found.
    ``labels`` name the queries in the report (``q1``, ``q2`` … by default).
    """
    t0 = time.perf_counter()
    plants = list(plants) if plants is not None else [None] * len(queries)
    work = Path(tempfile.mkdtemp(prefix="dodb-addresses-"))
    try:
        xml_file, out_file, spec_file = work / "memcheck.xml", work / "result.json", work / "spec.json"
        cmd = valgrind_command(xml_file)
        spec = {"database": str(database), "queries": list(queries), "plants": plants, "mode": mode,
                "epsilon": epsilon, "seed": seed, "out": str(out_file)}
        spec_file.write_text(json.dumps(spec))
        for generic in (False, True):
            env = _worker_env(generic)
            _warm_kernels(env)
            try:
                r = subprocess.run(cmd + [sys.executable, "-m", "dodb.audit.addresses", str(spec_file)], env=env,
                                   capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise AuditError(f"--addresses: the run under valgrind took longer than {timeout:.0f} s") from None
            # valgrind stops at an instruction it cannot emulate (newer vector extensions):
            # then once more with the kernels compiled for a generic x86-64
            if out_file.exists() or "unhandled instruction" not in (r.stdout + r.stderr) or generic:
                break
        if not out_file.exists():
            raise AuditError(f"--addresses: the run under valgrind failed: {(r.stderr or r.stdout).strip()[-400:]}")
        done = json.loads(out_file.read_text())
        labels = list(labels) if labels is not None else [f"q{i + 1}" for i in range(len(queries))]
        audits = [AddressAudit(label, q, p) for label, q, p in zip(labels, queries, plants)]
        for a, d in zip(audits, done):
            a.nodes, a.seconds, a.error = d.get("nodes", 0), d["seconds"], d.get("error")
            a.excess = max(0, d.get("marked", 0) - d.get("control", 0))
            a.excess_lines = d.get("lines", {})
        for i, findings in _findings(xml_file).items():
            audits[i].findings = findings
        return AddressReport(audits, time.perf_counter() - t0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- reading memcheck's XML --------------------------------------------------------------------
def _frame(stack: ET.Element | None) -> str:
    if stack is None:
        return "?"
    for fr in stack.findall("frame"):
        fn = fr.findtext("fn") or "???"
        where = fr.findtext("file") or Path(fr.findtext("obj") or "?").name
        return f"{fn} ({where})"
    return "?"


def _source(loc: str) -> str:
    path, _, num = loc.rpartition(":")
    text = linecache.getline(path, int(num)).strip() if num.isdigit() else ""
    short = path.split("/dodb/", 1)[-1] if "/dodb/" in path else path
    return f"dodb/{short}:{num}: {text}" if text else f"{short}:{num}"


def _findings(xml_file: Path) -> dict[int, list[AddressFinding]]:
    """The errors whose undefined value came from the marking, by query, in order."""
    counts: dict[str, int] = {}
    events: list[tuple] = []
    query, node = -1, ""
    for _, el in ET.iterparse(xml_file, events=("end",)):
        tag = el.tag
        if tag == "clientmsg":
            text = (el.findtext("text") or "").strip()
            if text.startswith(_QUERY):
                query, node = int(text[len(_QUERY):]), ""
            elif text.startswith(_END):
                query = -1
            elif text.startswith(_NODE):
                node = text[len(_NODE):]
            elif text.startswith(_LINE):
                events.append(("line", text[len(_LINE):]))
            el.clear()
        elif tag == "error":
            aux = " ".join(a.text or "" for a in el.iter("auxwhat"))
            if query >= 0 and _ORIGIN in aux:
                what = el.findtext("what") or el.findtext("kind") or "?"
                events.append(("error", query, node, el.findtext("unique"), what, _frame(el.find("stack"))))
            el.clear()
        elif tag == "pair":
            counts[el.findtext("unique") or ""] = int(el.findtext("count") or 1)
    out: dict[int, list[AddressFinding]] = {}
    pending: list[AddressFinding] = []
    for ev in events:
        if ev[0] == "line":
            for f in pending:
                f.line = _source(ev[1])
            pending = []
            continue
        _, q, nd, unique, what, frame = ev
        f = AddressFinding(nd, "", what, frame, counts.get(unique, 1))
        out.setdefault(q, []).append(f)
        pending.append(f)
    return out


# -- the child process, under valgrind -----------------------------------------------------------
class _Marker:
    """The executor's observer in the marked run: marks private scans undefined, declassifies
    releases, and writes each node into valgrind's log."""

    def __init__(self, vg, mark: bool = True) -> None:
        self.vg = vg
        self.mark = mark  # False: the control run, everything else the same
        self.marked: list = []
        self.nodes = 0

    def enter(self, node) -> None:
        self.nodes += 1
        self.vg.log(f"{_NODE}{node.describe()}")

    def leave(self, node, out) -> None:
        from ..planner.logical import Scan

        if self.mark and isinstance(node, Scan) and node.stability > 0:
            for a in out.arrays():
                self.vg.make_undefined(a)
                self.marked.append(a)

    def declassify(self, values) -> None:
        self.vg.make_defined(values)

    def restore(self) -> None:
        for a in self.marked:  # the slot cache keeps them for the next query's warm run
            self.vg.make_defined(a)
        self.marked = []


class _LineTracer:
    """Counts memcheck's errors per dodb line, and writes the line that was running into
    valgrind's log whenever the count moves (an error is reported when it happens, so the
    line follows its errors)."""

    def __init__(self, vg) -> None:
        self.vg = vg
        self.per_line: dict[str, int] = {}
        self.root = str(Path(__file__).resolve().parent.parent)
        self.skip = str(Path(__file__).resolve().parent)  # the audit's own code is not traced
        self.last = (None, vg.count_errors())

    def __call__(self, frame, event, arg):
        name = frame.f_code.co_filename
        if not name.startswith(self.root) or name.startswith(self.skip):
            return None
        return self._local

    def _local(self, frame, event, arg):
        self._moved(self.vg.count_errors())
        self.last = (f"{frame.f_code.co_filename}:{frame.f_lineno}", self.last[1])
        return self._local

    def _moved(self, n: int) -> None:
        where, seen = self.last
        if n != seen and where is not None:
            self.vg.log(f"{_LINE}{where}")
            self.per_line[where] = self.per_line.get(where, 0) + n - seen
        self.last = (where, n)

    def flush(self) -> None:
        self._moved(self.vg.count_errors())


def _traced_run(plan, db, spec: dict, vg, mark: bool) -> tuple[int, int, dict[str, int]]:
    """One run with the line tracer: (nodes, memcheck errors during it, errors per line)."""
    from ..oblivious.rng import new_rng
    from ..operators.context import ExecContext

    marker = _Marker(vg, mark)
    ctx = ExecContext(mode=spec["mode"], rng=new_rng(spec["seed"]), neighbour=db.neighbour, observer=marker)
    # no sorted join side from the warm run: kept in the slot cache, it was made from unmarked
    # lanes and would hide what the marked run computes from its own (operators/join.py)
    db.catalog.slot_cache.forget(lambda key: key[0] == "sorted side")
    tracer = _LineTracer(vg)
    start = vg.count_errors()
    sys.settrace(tracer)
    try:
        plan.execute(ctx=ctx, executor=db.executor)
    finally:
        sys.settrace(None)
        tracer.flush()
        marker.restore()
    return marker.nodes, vg.count_errors() - start, tracer.per_line


def _run_marked(db, sql: str, spec: dict, i: int) -> dict:
    """Warm, control (unmarked) and marked runs of one query.

    memcheck prints an error only the first time its stack is seen, so an error of the
    marked run whose C stack matches one seen earlier (CPython's own uninitialised memory
    at start-up, an earlier query) is counted but not printed.  The verdict therefore also
    compares counts: the marked run against the same run with nothing marked, confirmed by
    a second pair when the marked run has more.
    """
    from ..oblivious.rng import new_rng
    from ..operators.context import ExecContext
    from . import valgrind as vg

    plan = db.plan(sql, epsilon=spec["epsilon"], mode=spec["mode"])
    # warm: every kernel loaded, every cache filled (a first run takes paths a later one does not)
    plan.execute(ctx=ExecContext(mode=spec["mode"], rng=new_rng(spec["seed"]), neighbour=db.neighbour),
                 executor=db.executor)
    nodes, control, marked, excess = _control_and_marked(plan, db, spec, vg, i)
    if marked > control:
        # CPython reports uninitialised memory of its own (``int.from_bytes`` of zero reads a
        # digit it never wrote), in stacks seen before, and how often varies from run to run:
        # a count excess stands only if a second pair of runs repeats it (a leak does)
        _, control2, marked2, excess2 = _control_and_marked(plan, db, spec, vg, i)
        excess = {k: min(v, excess2[k]) for k, v in excess.items() if k in excess2}
        if marked2 - control2 < marked - control:
            control, marked = control2, marked2
    return {"nodes": nodes, "control": control, "marked": marked, "lines": excess}


def _control_and_marked(plan, db, spec: dict, vg, i: int) -> tuple[int, int, int, dict[str, int]]:
    """An unmarked run and a marked one: (nodes, errors of each, per-line excess of the marked)."""
    _, control, control_lines = _traced_run(plan, db, spec, vg, mark=False)
    vg.log(f"{_QUERY}{i}")
    try:
        nodes, marked, marked_lines = _traced_run(plan, db, spec, vg, mark=True)
    finally:
        vg.log(_END)
    excess = {k: v - control_lines.get(k, 0) for k, v in marked_lines.items() if v > control_lines.get(k, 0)}
    return nodes, control, marked, excess


def _child(spec_path: str) -> int:
    import importlib

    import dodb
    from . import valgrind as vg

    from ..oblivious.invariant import set_declassifier

    spec = json.loads(Path(spec_path).read_text())
    set_declassifier(vg.make_defined)  # invariant checks read their (always false) flag: modelled
    db = dodb.connect(spec["database"], seed=spec["seed"])
    if db.ledger.budget is None:
        db.set_budget(epsilon=1e9, delta=0.5)  # planning needs a budget; nothing is charged
    results = []
    try:
        for i, (sql, plant) in enumerate(zip(spec["queries"], spec["plants"])):
            t0 = time.perf_counter()
            entry: dict = {"nodes": 0}
            try:
                planted = None
                if plant:  # "module:function", a test's planted leak (tests/audit/planted_addresses.py)
                    module, _, function = plant.partition(":")
                    planted = getattr(importlib.import_module(module), function or "plant")()
                if planted is not None:
                    planted.__enter__()
                try:
                    entry.update(_run_marked(db, sql, spec, i))
                finally:
                    if planted is not None:
                        planted.__exit__(None, None, None)
            except Exception as e:  # noqa: BLE001 - reported per query; the others still run
                entry["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            entry["seconds"] = time.perf_counter() - t0
            results.append(entry)
    finally:
        db.close()
    Path(spec["out"]).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1]))
