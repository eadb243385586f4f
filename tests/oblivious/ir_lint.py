"""Taint lint of the LLVM IR that numba generates for the compiled kernels (issue 13).

What it checks.  Each function defined in a kernel's optimised LLVM module (numba's
``inspect_llvm``; the Python/C wrappers ``cpython.*``/``cfunc.*`` and the ``NRT_*``
runtime are skipped) is analysed as follows:

* *sources*: the value of every ``load`` (and ``atomicrmw``/``cmpxchg``) is tainted,
  except a load from a stack slot (``alloca``) into which nothing tainted was stored:
  numba passes array arguments as separate data pointers, sizes and strides, so a load
  is how array contents enter a kernel; and except a load, through an untainted address,
  from the array parameter named ``program`` (``_PUBLIC_ARRAY``): the compiled predicate
  program of ``dodb/oblivious/compiled_program.py``, built from the query and the declared
  types, public like a scalar argument (trusted in the same way, point (2) below);
* *propagation*: the result of any instruction with a tainted operand is tainted — phi,
  select, casts, arithmetic, comparisons, vector ops, calls (a call to a function defined
  in the module taints that function's parameters, and its result when the callee returns
  a tainted value; a call to an external function taints its result and the stack slots
  it is given when any argument is tainted); a store of a tainted value taints its slot;
* *violations*: a conditional ``br`` or a ``switch``/``indirectbr`` on a tainted value;
  a ``load``/``store`` (or masked/gather/scatter intrinsic, ``llvm.mem*``) whose address
  is tainted — a ``getelementptr`` with a tainted index, a ``select`` between pointers on
  a tainted condition, an ``inttoptr`` of data — or whose mask/length is tainted.
  ``select`` on a tainted condition producing a non-pointer value is allowed: it is how
  a branch-free select is written.

What that proves: in the IR numba hands to the code generator, which instructions run
and which addresses are touched are functions of the kernel's scalar arguments (public
sizes, by the kernels' contract) and of pointer arguments, never of array contents.

What it does not prove.  (1) It reads LLVM IR, not machine code: the backend could in
principle turn a ``select`` into a branch (x86 normally emits ``cmov``/blends), and
instruction timing (e.g. variable-latency division) is not modelled.  (2) Scalar
arguments are trusted to be public: the Python wrappers pass only sizes (checked by the
source lint, not here).  (3) It covers only the signatures compiled in the test run.
(4) It is flow-insensitive and conservative about memory (any non-stack load is data),
so it can reject a safe kernel, never silently accept a branch on loaded data — which
the planted-leak tests demonstrate.  (5) Cache-line granularity, prefetchers and other
micro-architectural channels are out of scope, as for the numpy reference.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["IRFinding", "lint_ir", "fresh_ir"]

_TOK = re.compile(r'%(?:"[^"]*"|[-\w.$]+)')
_DEFINE = re.compile(r'^define\b.*?@("[^"]+"|[-\w.$]+)\((.*)\)[^()]*\{\s*$')
_ASSIGN = re.compile(r'^\s*(%(?:"[^"]*"|[-\w.$]+))\s*=\s*(.*)$')
_CALLEE = re.compile(r'@("[^"]+"|[-\w.$]+)\s*\(')
_SKIP = ("cpython.", "_ZN7cpython", "cfunc.", "NRT_", "nrt_")
# the one array parameter whose contents are public: a compiled program built from the query
# and the declared types (dodb/oblivious/compiled_program.py), trusted like a scalar argument
_PUBLIC_ARRAY = re.compile(r'^%"?arg\.program\.')


@dataclass(frozen=True)
class IRFinding:
    function: str
    line: int
    rule: str
    text: str

    def __str__(self) -> str:
        return f"{self.function} line {self.line}: {self.rule}: {self.text[:160]}"


@dataclass
class _Inst:
    line: int
    text: str
    result: str | None
    opcode: str
    operands: list[str]
    callee: str | None = None


@dataclass
class _Func:
    name: str
    params: list[str]
    insts: list[_Inst] = field(default_factory=list)
    tainted: set[str] = field(default_factory=set)
    tainted_slots: set[str] = field(default_factory=set)  # allocas and pointer params written with data
    returns_taint: bool = False


def _strip_comment(line: str) -> str:
    out, quoted = [], False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        if ch == ";" and not quoted:
            break
        out.append(ch)
    return "".join(out).rstrip()


def _parse(ir: str) -> list[_Func]:
    funcs: list[_Func] = []
    cur: _Func | None = None
    for no, raw in enumerate(ir.splitlines(), 1):
        line = _strip_comment(raw)
        if cur is None:
            m = _DEFINE.match(line)
            if m:
                cur = _Func(m.group(1).strip('"'), _TOK.findall(m.group(2)))
            continue
        if line.startswith("}"):
            funcs.append(cur)
            cur = None
            continue
        body = line.strip()
        if not body or body.endswith(":") and " " not in body:
            continue
        m = _ASSIGN.match(line)
        result, rhs = (m.group(1), m.group(2)) if m else (None, body)
        words = rhs.split()
        while words and words[0] in ("tail", "musttail", "notail"):
            words = words[1:]
        opcode = words[0] if words else ""
        cm = _CALLEE.search(rhs) if opcode == "call" else None
        cur.insts.append(_Inst(no, body, result, opcode, _TOK.findall(rhs), cm.group(1).strip('"') if cm else None))
    return funcs


def _split_args(rhs: str) -> list[str]:
    """Top-level comma-separated arguments of the last parenthesised call in ``rhs``."""
    start = rhs.find("(", rhs.find("@"))
    depth, args, cur = 0, [], []
    for ch in rhs[start + 1:]:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    args.append("".join(cur))
    return args


def _store_parts(text: str) -> tuple[list[str], list[str]]:
    """(value operands, address operands) of a ``store``."""
    body = text.split(None, 1)[1]
    value, _, addr = body.rpartition(", ptr ")
    return _TOK.findall(value), _TOK.findall(addr.split(",")[0])


def _analyse(funcs: list[_Func]) -> None:
    by_name = {f.name: f for f in funcs}
    changed = True
    while changed:
        changed = False
        for f in funcs:
            allocas = {i.result for i in f.insts if i.opcode == "alloca"}
            root: dict[str, str] = {a: a for a in allocas}
            root.update({p: p for p in f.params})
            for i in f.insts:  # pointer roots through address arithmetic (defs precede uses in order)
                if i.opcode in ("getelementptr", "bitcast", "addrspacecast") and i.operands and i.operands[0] in root:
                    root[i.result] = root[i.operands[0]]
            for i in f.insts:
                new: set[str] = set()
                if i.opcode in ("load", "atomicrmw", "cmpxchg"):
                    slot = root.get(i.operands[0]) if i.operands else None
                    public = (i.opcode == "load" and slot is not None and _PUBLIC_ARRAY.match(slot)
                              and i.operands[0] not in f.tainted)
                    if not public and (slot is None or slot not in allocas or slot in f.tainted_slots):
                        new.add(i.result)
                elif i.opcode == "store":
                    vals, addr = _store_parts(i.text)
                    slot = root.get(addr[0]) if addr else None
                    if slot and any(v in f.tainted for v in vals) and slot not in f.tainted_slots:
                        f.tainted_slots.add(slot)
                        changed = True
                elif i.opcode == "call" and i.callee is not None:
                    args = [_TOK.findall(a) for a in _split_args(i.text)]
                    g = by_name.get(i.callee)
                    if g is not None and not g.name.startswith(_SKIP):
                        for p, a in zip(g.params, args):
                            if any(x in f.tainted for x in a) and p not in g.tainted:
                                g.tainted.add(p)
                                changed = True
                            if p in g.tainted_slots:
                                for x in a:
                                    if root.get(x) and root[x] not in f.tainted_slots:
                                        f.tainted_slots.add(root[x])
                                        changed = True
                        if g.returns_taint and i.result:
                            new.add(i.result)
                    elif any(x in f.tainted for a in args for x in a):
                        if i.result:
                            new.add(i.result)
                        for a in args:
                            for x in a:
                                if root.get(x) in allocas and root[x] not in f.tainted_slots:
                                    f.tainted_slots.add(root[x])
                                    changed = True
                elif i.opcode == "ret":
                    if any(o in f.tainted for o in i.operands) and not f.returns_taint:
                        f.returns_taint = True
                        changed = True
                plain = i.opcode not in ("call", "load", "alloca") or (i.opcode == "call" and i.callee is None)
                if i.result and plain and any(o in f.tainted for o in i.operands):  # incl. inline asm
                    new.add(i.result)
                for r in new - f.tainted:
                    f.tainted.add(r)
                    changed = True


def _violations(f: _Func) -> list[IRFinding]:
    out = []
    gep_index_taint = set()
    for i in f.insts:
        if i.opcode == "getelementptr" and any(o in f.tainted for o in i.operands[1:]):
            gep_index_taint.add(i.result)

    def add(i: _Inst, rule: str) -> None:
        out.append(IRFinding(f.name, i.line, rule, i.text))

    def why(ptr: str) -> str:
        return "getelementptr with a data index" if ptr in gep_index_taint else "data-dependent address"

    for i in f.insts:
        if i.opcode == "br" and i.text.startswith("br i1") and i.operands and i.operands[0] in f.tainted:
            add(i, "conditional branch on data")
        elif i.opcode in ("switch", "indirectbr") and i.operands and i.operands[0] in f.tainted:
            add(i, f"{i.opcode} on data")
        elif i.opcode == "load" and i.operands and i.operands[0] in f.tainted:
            add(i, f"load through a {why(i.operands[0])}")
        elif i.opcode == "store":
            _, addr = _store_parts(i.text)
            if addr and addr[0] in f.tainted:
                add(i, f"store through a {why(addr[0])}")
        elif i.opcode == "call" and i.callee and (".masked." in i.callee or i.callee.startswith("llvm.mem")):
            args = _split_args(i.text)
            # masked.store(value, ptr, align, mask) / memset(ptr, value, len): the value may be data
            skip = {0} if ".masked.store" in i.callee or ".masked.scatter" in i.callee else set()
            if i.callee.startswith("llvm.memset"):
                skip = {1}
            if ".masked.load" in i.callee or ".masked.gather" in i.callee:
                skip = {len(args) - 1}  # pass-through value
            if any(x in f.tainted for k, a in enumerate(args) if k not in skip for x in _TOK.findall(a)):
                add(i, "memory intrinsic with a data-dependent address, mask or length")
    return out


def lint_ir(ir: str) -> list[IRFinding]:
    """Findings for every kernel function of one LLVM module (see the module docstring)."""
    funcs = _parse(ir)
    _analyse(funcs)
    return [v for f in funcs if not f.name.startswith(_SKIP) for v in _violations(f)]


def fresh_ir(dispatchers: list) -> dict[str, list[str]]:
    """LLVM IR of every compiled signature of ``dispatchers``, recompiled without the cache.

    numba keeps no IR for code loaded from its on-disk cache, so every dispatcher gets a
    null cache (the cache on disk is neither read nor flushed) and those with signatures
    are recompiled; the helpers they call compile afresh with them, so callees are linked
    as IR and get signatures of their own.  The caches are restored afterwards.
    """
    from numba.core.caching import NullCache

    saved = {d: d._cache for d in dispatchers}
    try:
        for d in dispatchers:
            d._cache = NullCache()
        for d in dispatchers:
            if d.signatures:
                d.recompile()
        return {d.py_func.__name__: [d.inspect_llvm(s) for s in d.signatures] for d in dispatchers}
    finally:
        for d, cache in saved.items():
            d._cache = cache
