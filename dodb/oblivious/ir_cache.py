"""The LLVM IR of the compiled kernels, kept beside their machine code for the IR lint.

numba keeps no IR for a kernel it loads from its on-disk cache, so checking the IR
(``tests/oblivious/test_ir_lint.py``) used to mean compiling every kernel again — minutes.
A process that compiles a kernel has its IR in hand: :func:`save` writes the IR of every
signature compiled in this process (``dodb warmup`` calls it after compiling), and
:func:`load` finds it again.  An entry is keyed by everything the IR depends on: the
source of every kernel module (a kernel inlines helpers from its siblings), the numba and
llvmlite versions, the CPU, the kernel's name and its signature.  A missing entry means
"compile it to see" — never "nothing to check".
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

__all__ = ["kernel_dispatchers", "in_process", "save", "load", "load_all"]

KERNEL_MODULES = ("compiled", "compiled_sort", "compiled_int128", "compiled_strings", "compiled_expr",
                  "compiled_reduce", "compiled_libm", "compiled_program")


def kernel_dispatchers() -> list:
    """Every numba dispatcher defined in dodb's kernel modules."""
    import importlib

    from numba.core.registry import CPUDispatcher

    out = []
    for name in KERNEL_MODULES:
        mod = importlib.import_module(f"dodb.oblivious.{name}")
        out += [v for v in vars(mod).values() if isinstance(v, CPUDispatcher) and v.__module__ == mod.__name__]
    return out


@lru_cache(maxsize=1)
def _stamp() -> str:
    import llvmlite
    import numba

    from .kernel_cache import _cpu

    h = hashlib.sha256(f"{numba.__version__}|{llvmlite.__version__}|{_cpu()}".encode())
    here = Path(__file__).resolve().parent
    for name in KERNEL_MODULES:
        h.update((here / f"{name}.py").read_bytes())
    return h.hexdigest()[:32]


def _folder() -> Path:
    from .kernel_cache import cache_dir

    return cache_dir() / "ir"


def _kernel_folder(dispatcher) -> Path:
    return _folder() / _stamp() / f"{dispatcher.__module__}.{dispatcher.py_func.__qualname__}"


def _path(dispatcher, sig) -> Path:
    return _kernel_folder(dispatcher) / (hashlib.sha256(str(sig).encode()).hexdigest()[:32] + ".ll")


def in_process(dispatcher, sig) -> str | None:
    """The IR of a signature compiled in this process; None for one loaded from numba's
    on-disk cache (numba keeps only a stub module for those)."""
    overload = dispatcher.overloads.get(sig)
    if overload is None or getattr(overload.library, "_disable_inspection", True):
        return None
    return dispatcher.inspect_llvm(sig) or None


def save(dispatchers=None) -> int:
    """Write the IR of every signature compiled in this process; returns how many were written."""
    written = 0
    for d in dispatchers if dispatchers is not None else kernel_dispatchers():
        for sig in d.signatures:
            target = _path(d, sig)
            if target.exists():
                continue
            ir = in_process(d, sig)
            if ir is None:
                continue
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
                with os.fdopen(fd, "w") as f:
                    f.write(ir)
                os.replace(tmp, target)
                written += 1
            except OSError as e:  # a read-only cache: the lint compiles what it needs
                print(f"dodb: cannot keep kernel IR in {target.parent}: {e}", file=sys.stderr)
                return written
    return written


def load(dispatcher, sig) -> str | None:
    """The IR of ``dispatcher`` at ``sig`` kept by :func:`save`, or None."""
    try:
        return _path(dispatcher, sig).read_text()
    except OSError:
        return None


def load_all(dispatcher) -> list[str]:
    """The IR of every signature of ``dispatcher`` kept by :func:`save` (a helper compiled only
    as another kernel's callee has no signature in a process that loaded its caller)."""
    try:
        return [p.read_text() for p in sorted(_kernel_folder(dispatcher).glob("*.ll"))]  # lint: public file names
    except OSError:
        return []
