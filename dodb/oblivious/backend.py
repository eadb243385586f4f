"""Which implementation runs the oblivious kernels: ``compiled`` (default) or ``numpy``.

``compiled`` runs the numba kernels of :mod:`.compiled`; ``numpy`` runs the vectorised
reference in ``sort``/``compact``/``scan``.  Both record the same trace events and return
the same values (``tests/oblivious/test_compiled.py``).  The choice is read once from the
environment variable ``DODB_KERNELS`` (``compiled`` or ``numpy``) when dodb is imported;
:func:`set_kernel_backend` and :func:`kernel_backend_scope` switch it at run time.  If
numba cannot be imported the reference is used.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

__all__ = ["BACKENDS", "kernel_backend", "set_kernel_backend", "kernel_backend_scope", "use_compiled"]

BACKENDS = ("compiled", "numpy")


def _numba_available() -> bool:
    """Whether numba is installed, without importing it (0.5 s: the kernels import it on first use)."""
    from importlib.util import find_spec

    return find_spec("numba") is not None


def _check(name: str) -> str:
    if name not in BACKENDS:
        raise ValueError(f"unknown kernel backend {name!r} (choose from {', '.join(BACKENDS)})")
    return name


_backend = _check(os.environ.get("DODB_KERNELS", "compiled").strip().lower() or "compiled")
if _backend == "compiled" and not _numba_available():
    _backend = "numpy"


def kernel_backend() -> str:
    """The backend in use: ``"compiled"`` or ``"numpy"``."""
    return _backend


def set_kernel_backend(name: str) -> str:
    """Select the kernel backend for the whole process; returns the previous one."""
    global _backend
    previous = _backend
    if _check(name) == "compiled" and not _numba_available():
        raise ImportError("the compiled kernel backend needs numba")
    _backend = name
    return previous


@contextmanager
def kernel_backend_scope(name: str) -> Iterator[str]:
    """``with kernel_backend_scope("numpy"): ...`` runs the block on that backend."""
    previous = set_kernel_backend(name)
    try:
        yield name
    finally:
        set_kernel_backend(previous)


def use_compiled() -> bool:
    """True when the compiled kernels should run."""
    return _backend == "compiled"
