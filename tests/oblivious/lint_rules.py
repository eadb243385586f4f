"""Banned-call lint for the oblivious kernels (docs/design.md §Invariants, 2).

A kernel may only touch memory in patterns fixed by public sizes.  The lint parses the
kernel modules and reports, with file and line:

* calls whose access pattern or output size depends on data: ``argsort``, ``sort``,
  ``nonzero``, ``unique``, ``searchsorted``, ``take``, ``compress``, ``extract``,
  ``argwhere``, ``lexsort``, ``partition``, ``put``, ``place``, ``copyto(..., where=...)``,
  one-argument ``where`` (= ``nonzero``), and friends;
* indexing with anything but constants and slices (``a[mask]``, ``a[idx]``: boolean-mask
  and fancy indexing);
* branches (``if``/``while``/conditional expressions/``assert``) whose test reads data:
  a reduction (``sum``, ``any``, ``max``, ``item`` …) or a subscript, directly or
  through a local name assigned from one;
* an in-place AND/OR (``x &= y``, ``x |= y``): on a one-element bool array numpy's in-place
  logical loop takes its reduction path and branches on the element's value, where
  ``x = x & y`` does not (docs/design.md §Address audit).  Without types every such
  statement is flagged, except one whose right side is visibly a Python set; compiled
  kernels (below) work on scalars and are exempt.  :func:`in_place_findings` applies this
  rule alone to modules the full lint does not cover;
* a bool reduction (``.any(…)``, ``.all(…)``, ``np.logical_and.reduce``/``logical_or.reduce``):
  numpy stops at the first deciding element, a branch per element on the value (measured,
  one per row of ``m.any(axis=1)``); ``select.any_along``/``all_along`` OR the bytes.

Python-level lookups are told apart from array indexing without type inference:

* a subscript of a *container* — a dict/list/tuple/set display or comprehension, or a
  name bound only to one (in the function, at module level, or a module constant of the
  package passed as ``containers``) — may use any key that reads no data: a Python
  container cannot be indexed by an array, and a key computed from data needs a
  reduction, which taints it;
* any other subscript may use constants, slices whose bounds read no data, and
  *public counters*: targets of ``for i in range(...)`` / ``enumerate(...)`` over
  sizes, and sums and differences of them;
* names assigned from a reduction are tainted in their own function (and module-level
  ones everywhere), not across unrelated functions.

A line may opt out only with a trailing ``# lint: public <reason>`` comment naming why
the value is public (e.g. a caller contract that is always true in correct runs).

Compiled kernels (functions decorated ``@njit``/``@jit``) index arrays with loop
counters, so inside them the rules are taint-based instead: a value loaded from an array
(``a[i]``), a scalar parameter annotated ``: Data``, a call of a kernel that returns such a
value, and every name assigned from one of those is *data*; other scalar parameters are
public sizes.  Flagged: an index, a branch test (``if``/``while``/conditional expression/
``assert``), a ``for`` loop's range, a short-circuit ``and``/``or`` or a chained
comparison that reads data.  ``tests/oblivious/ir_lint.py`` checks the compiled code itself.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

BANNED_CALLS = {
    "argsort", "sort", "sorted", "nonzero", "flatnonzero", "argwhere", "unique",
    "searchsorted", "take", "take_along_axis", "compress", "extract", "put", "place",
    "putmask", "lexsort", "partition", "argpartition", "argmax", "argmin", "digitize",
    "bincount", "histogram", "isin", "in1d", "setdiff1d", "intersect1d", "union1d",
    "delete", "insert", "resize", "trim_zeros", "choose",
}
MODULES = {"np", "numpy", "math", "builtins"}  # receivers of module functions, not data
REDUCTIONS = {
    "sum", "any", "all", "max", "min", "item", "mean", "count_nonzero", "array_equal",
    "amax", "amin", "nanmax", "nanmin", "prod", "tolist",
}


IN_PLACE_RULE = "in-place AND/OR of a lane: numpy branches on a one-element bool array's value; write x = x & y"

SHORT_CUT_RULE = "bool reduction (any/all/logical_and.reduce): numpy stops at the first deciding element; " \
    "use select.any_along/all_along"


@dataclass(frozen=True)
class Finding:
    line: int
    rule: str
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.rule}: {self.text}"


def _call_name(node: ast.Call) -> str | None:
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return None


def _only_shapes(node: ast.AST) -> bool:
    """True if every data leaf of ``node`` is a ``.shape``/``.ndim``/``.dtype`` or constant."""
    if isinstance(node, ast.Attribute) and node.attr in ("shape", "ndim", "dtype", "itemsize"):
        return True
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return False
    children = list(ast.iter_child_nodes(node))
    if isinstance(node, ast.Call):
        children = list(node.args) + [k.value for k in node.keywords]
        f = node.func  # a method's receiver is read too (``a.max(initial=0)``), a module's is not
        if isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name) and f.value.id in MODULES):
            children.append(f.value)
    return bool(children) and all(_only_shapes(c) for c in children if not isinstance(c, (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)))


def _scalar_minmax(node: ast.Call) -> bool:
    """Builtin ``min(a, b, ...)``/``max(...)`` of several scalars is a comparison, not a reduction."""
    return isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and len(node.args) >= 2


def _reads_data(node: ast.AST, tainted: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _call_name(sub) in REDUCTIONS and not _scalar_minmax(sub):
            if not _only_shapes(sub):
                return True
        if isinstance(sub, ast.Subscript) and not _only_shapes(sub.value):
            return True
        if isinstance(sub, ast.Name) and sub.id in tainted:
            return True
    return False


_DISPLAYS = (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)


def _index_ok(node: ast.AST, counters: set[str], tainted: set[str]) -> bool:
    """An index into something that may be an array: constants, data-free slices, counters."""
    if isinstance(node, ast.Tuple):
        return all(_index_ok(e, counters, tainted) for e in node.elts)
    if isinstance(node, ast.Slice):
        return not any(b is not None and _reads_data(b, tainted) for b in (node.lower, node.upper, node.step))
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in counters
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _index_ok(node.operand, counters, tainted)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _index_ok(node.left, counters, tainted) and _index_ok(node.right, counters, tainted)
    return False


def _in_place_and_or(node: ast.AST) -> bool:
    """``x &= y`` / ``x |= y`` unless ``y`` is visibly a Python set (a set display or ``set(...)``)."""
    if not (isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.BitAnd, ast.BitOr))):
        return False
    v = node.value
    python_set = isinstance(v, (ast.Set, ast.SetComp)) or \
        (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in ("set", "frozenset"))
    return not python_set


def _short_cut_reduction(node: ast.Call) -> bool:
    """``x.any(…)``/``np.all(…)`` or ``np.logical_and.reduce(…)``/``logical_or.reduce(…)``."""
    f = node.func
    if not isinstance(f, ast.Attribute):
        return False  # the builtins any()/all() iterate Python values
    if f.attr in ("any", "all"):
        return True
    return f.attr == "reduce" and isinstance(f.value, ast.Attribute) and f.value.attr in ("logical_and", "logical_or")


KERNEL_DECORATORS = {"njit", "jit"}


def _is_kernel(fn: ast.AST) -> bool:
    if not isinstance(fn, ast.FunctionDef):
        return False
    for d in fn.decorator_list:
        f = d.func if isinstance(d, ast.Call) else d
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if name in KERNEL_DECORATORS:
            return True
    return False


def _data_params(fn: ast.FunctionDef) -> set[str]:
    return {a.arg for a in fn.args.args + fn.args.kwonlyargs
            if isinstance(a.annotation, (ast.Name, ast.Constant))
            and getattr(a.annotation, "id", getattr(a.annotation, "value", None)) == "Data"}


def _kernel_reads(node: ast.AST, tainted: set[str], data_calls: set[str]) -> bool:
    """Whether ``node`` reads data: an array element, a data name or a data-returning kernel."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Subscript) and not _only_shapes(sub.value):
            return True
        if isinstance(sub, ast.Name) and sub.id in tainted:
            return True
        if isinstance(sub, ast.Call) and _call_name(sub) in data_calls:
            return True
    return False


def _kernel_taint(fn: ast.FunctionDef, data_calls: set[str], exempt=lambda lineno: False) -> set[str]:
    """Data names of a compiled kernel; an assignment on a ``# lint: public`` line (a value the
    caller guarantees public, e.g. a field of the predicate program) taints nothing."""
    tainted = set(_data_params(fn))
    changed = True
    while changed:
        changed = False
        for node in ast.walk(fn):
            value, targets = None, []
            if isinstance(node, ast.Assign):
                value, targets = node.value, node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                value, targets = node.value, [node.target]
            elif isinstance(node, ast.For):
                value, targets = node.iter, [node.target]
            if value is None or not _kernel_reads(value, tainted, data_calls) or exempt(node.lineno):
                continue
            for n in _target_names(targets):  # a store into a[i] taints neither a nor i
                if n not in tainted:
                    tainted.add(n)
                    changed = True
    return tainted


def _target_names(targets: list[ast.AST]) -> list[str]:
    out = []
    for t in targets:
        if isinstance(t, ast.Name):
            out.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            out += _target_names(list(t.elts))
        elif isinstance(t, ast.Starred):
            out += _target_names([t.value])
    return out


def _lint_kernel(fn: ast.FunctionDef, data_calls: set[str], add, exempt=lambda lineno: False) -> None:
    tainted = _kernel_taint(fn, data_calls, exempt)

    def reads(node: ast.AST) -> bool:
        return _kernel_reads(node, tainted, data_calls)

    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and not _only_shapes(node.value) and reads(node.slice):
            add(node, "data-dependent index in a compiled kernel")
        elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) and reads(node.test):
            add(node, "branch on data in a compiled kernel")
        elif isinstance(node, ast.For) and reads(node.iter):
            add(node, "loop bound from data in a compiled kernel")
        elif isinstance(node, ast.BoolOp) and any(reads(v) for v in node.values):
            add(node, "short-circuit and/or on data in a compiled kernel")
        elif isinstance(node, ast.Compare) and len(node.ops) > 1 and reads(node):
            add(node, "chained comparison on data (short-circuits) in a compiled kernel")


def _data_returning(kernels: list[ast.FunctionDef]) -> set[str]:
    """Kernels whose return value reads data (calls of them taint), to a fixed point."""
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for fn in kernels:
            if fn.name in out:
                continue
            tainted = _kernel_taint(fn, out)
            if any(isinstance(r, ast.Return) and r.value is not None and _kernel_reads(r.value, tainted, out)
                   for r in ast.walk(fn)):
                out.add(fn.name)
                changed = True
    return out


def module_containers(src: str) -> set[str]:
    """Module-level names bound only to container displays (constant tables) in ``src``."""
    return _bound_to_displays(ast.parse(src).body)


def _assignment(node: ast.AST) -> tuple[list[ast.expr], ast.expr | None]:
    """(targets, assigned value) of a binding statement; no targets for any other node."""
    if isinstance(node, ast.Assign):
        return node.targets, node.value
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return [node.target], node.value
    if isinstance(node, (ast.For, ast.comprehension, ast.AugAssign)):
        return [node.target], None
    return [], None


def _bound_to_displays(body: list[ast.stmt]) -> set[str]:
    good: set[str] = set()
    bad: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt) if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) else []:
            targets, value = _assignment(node)
            for t in targets:
                if isinstance(t, ast.Name):
                    (good if isinstance(value, _DISPLAYS) else bad).add(t.id)
                else:
                    bad.update(_bound_names(t))
    return good - bad


def _local_containers(fn: ast.AST) -> set[str]:
    good: set[str] = set()
    bad: set[str] = set()
    for node in ast.walk(fn):
        targets, value = _assignment(node)
        if isinstance(node, ast.arg):
            bad.add(node.arg)
        for t in targets:
            for n in _bound_names(t):
                (good if isinstance(value, _DISPLAYS) and isinstance(t, ast.Name) else bad).add(n)
    return good - bad


def _counters(fn: ast.AST, tainted: set[str]) -> set[str]:
    """Loop targets of ``range(...)`` over data-free bounds, and ``enumerate`` indices."""
    out: set[str] = set()
    assigned_elsewhere: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Call):
            name = _call_name(node.iter)
            if name == "range" and isinstance(node.target, ast.Name) and \
                    not any(_reads_data(a, tainted) for a in node.iter.args):
                out.add(node.target.id)
                continue
            if name == "enumerate" and isinstance(node.target, ast.Tuple) and \
                    isinstance(node.target.elts[0], ast.Name):
                out.add(node.target.elts[0].id)
                assigned_elsewhere.update(n.id for e in node.target.elts[1:] for n in ast.walk(e)
                                          if isinstance(n, ast.Name))
                continue
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigned_elsewhere.update(n for t in targets for n in _bound_names(t))
    return out - assigned_elsewhere


def _taint(scope: ast.AST, inherited: set[str], exempt, nested: bool) -> set[str]:
    """Names assigned from a data reduction in ``scope`` (not descending into functions
    unless ``nested``), on top of ``inherited``."""
    tainted = set(inherited)

    def nodes(n: ast.AST):
        for c in ast.iter_child_nodes(n):
            if not nested and isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            yield c
            yield from nodes(c)

    changed = True
    while changed:
        changed = False
        for node in nodes(scope):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if _reads_data(node.value, tainted) and not exempt(node.lineno):
                    # array-valued results of subscripts are fine; only scalars matter, and we
                    # cannot tell them apart statically: taint only names fed by explicit
                    # reductions (or by names already tainted).
                    fed = any(isinstance(c, ast.Call) and _call_name(c) in REDUCTIONS and not _only_shapes(c)
                              and not _scalar_minmax(c) for c in ast.walk(node.value)) or \
                        any(isinstance(c, ast.Name) and c.id in tainted for c in ast.walk(node.value))
                    for t in targets:
                        for n in ast.walk(t):
                            if isinstance(n, ast.Name) and n.id not in tainted and fed:
                                tainted.add(n.id)
                                changed = True
    return tainted


def lint_source(src: str, containers: set[str] | frozenset[str] = frozenset()) -> list[Finding]:
    """Findings in ``src``; ``containers``: constant tables of sibling modules it imports."""
    tree = ast.parse(src)
    lines = src.splitlines()

    exempt = _exemption(lines)
    findings: list[Finding] = []
    # type annotations are not executed code
    in_annotation: set[int] = set()
    for node in ast.walk(tree):
        anns = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            anns.append(node.returns)
            a = node.args
            anns += [x.annotation for x in a.args + a.kwonlyargs + a.posonlyargs]
            anns += [x.annotation for x in (a.vararg, a.kwarg) if x is not None]
        elif isinstance(node, ast.AnnAssign):
            anns.append(node.annotation)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript) and isinstance(node.value.value, ast.Name) and node.value.value.id in ("Union", "Optional", "tuple", "list", "dict"):
            anns.append(node.value)  # type alias
        for a_ in anns:
            if a_ is not None:
                in_annotation.update(id(n) for n in ast.walk(a_))

    add = _recorder(lines, findings)

    # compiled kernels: taint rules instead of the subscript/branch rules below
    kernels = [fn for fn in ast.walk(tree) if _is_kernel(fn)]
    in_kernel: set[int] = set()
    data_calls = _data_returning(kernels)
    for fn in kernels:
        _lint_kernel(fn, data_calls, add, exempt)
        in_kernel.update(id(n) for n in ast.walk(fn))

    module_tainted = _taint(tree, set(), exempt, nested=False)
    module_tables = _bound_to_displays(tree.body) | set(containers)

    def check(scope: ast.AST, tainted: set[str], tables: set[str], counters: set[str]) -> None:
        for node in ast.iter_child_nodes(scope):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inner = _taint(node, tainted, exempt, nested=True)
                local = _local_containers(node)
                check(node, inner, (tables - _assigned(node)) | local, counters | _counters(node, inner))
                continue
            _check_node(node, tainted, tables, counters)
            check(node, tainted, tables, counters)

    def _check_node(node: ast.AST, tainted: set[str], tables: set[str], counters: set[str]) -> None:
        if id(node) in in_kernel and not isinstance(node, ast.Call):
            return  # checked by the kernel rules above (banned calls still apply)
        if isinstance(node, ast.Call):
            name = _call_name(node)
            if name in BANNED_CALLS:
                add(node, f"banned call {name}()")
            if name == "copyto" and any(k.arg == "where" for k in node.keywords):
                add(node, "masked copyto(where=...)")
            if name == "where" and len(node.args) == 1:
                add(node, "one-argument where() (= nonzero)")
            if _short_cut_reduction(node):
                add(node, SHORT_CUT_RULE)
        elif isinstance(node, ast.Subscript):
            if id(node) in in_annotation or _only_shapes(node.value):
                return
            container = isinstance(node.value, _DISPLAYS) or \
                (isinstance(node.value, ast.Name) and node.value.id in tables)
            if container:
                if _reads_data(node.slice, tainted):
                    add(node, "container looked up by a data-derived key")
            elif not _index_ok(node.slice, counters, tainted):
                add(node, "data-dependent indexing (boolean mask or index array)")
        elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            if _reads_data(node.test, tainted):
                add(node, "branch on data")
        elif isinstance(node, ast.comprehension):
            for cond in node.ifs:
                if _reads_data(cond, tainted):
                    add(cond, "branch on data")
        elif _in_place_and_or(node):
            add(node, IN_PLACE_RULE)

    check(tree, module_tainted, module_tables, set())
    return findings


def in_place_findings(src: str) -> list[Finding]:
    """The in-place AND/OR rule alone over ``src`` (compiled kernel bodies exempt)."""
    tree = ast.parse(src)
    lines = src.splitlines()
    findings: list[Finding] = []
    add = _recorder(lines, findings)
    in_kernel = {id(n) for fn in ast.walk(tree) if _is_kernel(fn) for n in ast.walk(fn)}
    for node in ast.walk(tree):
        if id(node) not in in_kernel and _in_place_and_or(node):
            add(node, IN_PLACE_RULE)
    return sorted(findings, key=lambda f: f.line)


def _exemption(lines: list[str]):
    """Whether a line opts out with a trailing ``# lint: public <reason>``."""
    return lambda lineno: "# lint: public" in lines[lineno - 1]


def _recorder(lines: list[str], findings: list[Finding]):
    """``add(node, rule)``: record a finding at ``node``'s line unless that line opts out."""
    exempt = _exemption(lines)

    def add(node: ast.AST, rule: str) -> None:
        ln = getattr(node, "lineno", 0)
        if not exempt(ln):
            findings.append(Finding(ln, rule, lines[ln - 1].strip()))
    return add


def _bound_names(target: ast.AST) -> list[str]:
    """Names a target binds (``x``, ``x, y``, ``*x``), not those it subscripts (``x[k] = …``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _bound_names(e)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _assigned(fn: ast.AST) -> set[str]:
    """Names (re)bound inside ``fn``: they shadow module-level tables."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.update(n for t in targets for n in _bound_names(t))
        elif isinstance(node, ast.arg):
            out.add(node.arg)
    return out
