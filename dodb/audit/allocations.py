"""Every numpy data allocation, as numpy's allocator sees it (docs/design.md §Audit, issue 28).

tracemalloc shows which numpy buffers are live when an operator ends and the peak of
traced memory, compared at 4 KiB granules: a short-lived buffer sized by the data (a
64-byte scratch array per matching row, freed at once) moves neither.  numpy lets a
process install its own data allocator (``PyDataMem_SetHandler``, NEP 49); this module
installs one that forwards to the C library and records the size of every ``malloc``,
``calloc`` and ``realloc`` made while a recording is open, in order.  It is built from
``ctypes`` alone: the handler's four functions are ``ctypes`` callbacks and the handler
is set through numpy's C-API table, so nothing is compiled.

What it records (and the limits, docs/threat-model.md §What the audit measures):

* numpy data buffers allocated on the recording thread's context (the handler is a
  context variable): arrays that kernel threads allocate for themselves, numba's own
  allocations inside compiled code and Arrow's buffers are not seen here (Arrow's pool
  is read by :class:`~dodb.audit.view.ViewRecorder`, and the trace records every kernel
  pass);
* sizes and their order, not addresses;
* allocations only: frees of buffers made before the recording started go to whichever
  allocator made them, so a free sequence would depend on what ran earlier.

numpy's small-block cache is bypassed while the handler is installed, so every request,
however small, reaches the record.
"""
from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["AllocationLog", "recording", "available"]

_MALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
_CALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
_REALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


class _Allocator(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("malloc", _MALLOC), ("calloc", _CALLOC),
                ("realloc", _REALLOC), ("free", _FREE)]


class _Handler(ctypes.Structure):  # numpy's PyDataMem_Handler, version 1
    _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8), ("allocator", _Allocator)]


_SET_HANDLER_SLOT = 304  # PyDataMem_SetHandler's index in numpy's C-API table (numpy >= 1.22)


class AllocationLog:
    """Sizes of the numpy allocations made while it is the open log, in order."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def take(self) -> tuple[int, ...]:
        """The sizes recorded since the last call (and forget them)."""
        out, self.sizes = tuple(self.sizes), []
        return out


_state = threading.local()  # .log: the open AllocationLog of this thread, if any
_libc = ctypes.CDLL(None)
_libc.malloc.restype = _libc.calloc.restype = _libc.realloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = [ctypes.c_size_t]
_libc.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
_libc.realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


def _note(size: int) -> None:
    log = getattr(_state, "log", None)
    if log is not None:
        log.sizes.append(int(size))


@_MALLOC
def _malloc(ctx, size):
    _note(size)
    return _libc.malloc(size or 1)


@_CALLOC
def _calloc(ctx, nelem, elsize):
    _note(nelem * elsize)
    return _libc.calloc(nelem or 1, elsize or 1)


@_REALLOC
def _realloc(ctx, ptr, size):
    _note(size)
    return _libc.realloc(ptr, size or 1)


@_FREE
def _free(ctx, ptr, size):
    _libc.free(ptr)


_handler = _Handler(b"dodb_audit_recorder", 1, _Allocator(None, _malloc, _calloc, _realloc, _free))
_capsule = None  # made once: arrays keep a reference to the handler that allocated them
_set_handler = None


def _setup() -> bool:
    global _capsule, _set_handler
    if _set_handler is not None:
        return True
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # pragma: no cover - numpy < 2
        from numpy.core import _multiarray_umath as umath
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    table = ctypes.cast(get_pointer(umath._ARRAY_API, None), ctypes.POINTER(ctypes.c_void_p))
    _capsule = new_capsule(ctypes.addressof(_handler), b"mem_handler", None)
    # PYFUNCTYPE: the call keeps the GIL (it sets a context variable)
    _set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(table[_SET_HANDLER_SLOT])
    return True


def available() -> bool:
    """Whether numpy's allocator can be replaced in this process (numpy >= 1.22, CPython)."""
    try:
        return _setup()
    except (AttributeError, OSError, ValueError):  # pragma: no cover - another runtime
        return False


@contextmanager
def recording() -> Iterator[AllocationLog]:
    """Install the recording allocator on this thread's context and open a log.

    >>> import numpy as np
    >>> with recording() as log:
    ...     _ = np.empty(8)
    >>> log.take()
    (64,)
    """
    _setup()
    log = AllocationLog()
    previous = _set_handler(_capsule)
    outer = getattr(_state, "log", None)
    _state.log = log
    try:
        yield log
    finally:
        _state.log = outer
        _set_handler(previous)
