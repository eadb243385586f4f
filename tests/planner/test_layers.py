"""The planner's modules import one another without cycles (DEVELOPERS.md, "the house":
every layer imports only the layers below it).  Function-level imports count too: a cycle
hidden inside a function is still a cycle of the design.

Shared helpers live in modules of their own (planner/projection.py: ``column_ref``,
``project_node``; plan nodes, ``AddRowId`` and ``BuiltQuery`` included, in
planner/logical.py), so the passes (build, aggregation, windows, theta_joins) and the
executor no longer import each other's private names.
"""
from __future__ import annotations

import ast
import pathlib

import dodb

ROOT = pathlib.Path(dodb.__file__).parent


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = ("dodb",) + p.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _imports(name: str, path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    deps: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = {f"{target}.{a.name}" for a in node.names} & set(modules)
            deps |= subs or ({target} & set(modules))
        elif isinstance(node, ast.Import):
            deps |= {a.name for a in node.names} & set(modules)
    return deps - {name}


def import_cycles(prefix: str) -> list[list[str]]:
    """Strongly connected components of more than one module among modules under ``prefix``."""
    modules = _modules()
    graph = {m: {d for d in _imports(m, p, modules) if d.startswith(prefix)}
             for m, p in modules.items() if m.startswith(prefix)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_planner_passes_and_executor_import_no_cycle():
    cycles = import_cycles("dodb.planner")  # the rules too: position_of lives in dodb/sqlpos.py
    assert not cycles, cycles


def test_the_check_sees_a_cycle_through_a_function_level_import(tmp_path):
    pkg = tmp_path / "dodb" / "planner"
    pkg.mkdir(parents=True)
    (tmp_path / "dodb" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from .a import g\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path / "dodb"
    try:
        assert import_cycles("dodb.planner") == [["dodb.planner.a", "dodb.planner.b"]]
    finally:
        ROOT = saved


def test_no_import_circle_anywhere():
    """Every layer imports only the layers below it: the front end (session, remote, analyst
    sessions; shared error classes in dodb/errors.py, the charge sentence in dodb/result.py),
    storage, the executors, the audit, and the accountant (events look the nominal epsilon of a
    Gaussian, Rényi or PLD leaf up in a registry the accountant modules fill)."""
    assert not import_cycles("dodb"), import_cycles("dodb")  # the accountant's events too (registry)
