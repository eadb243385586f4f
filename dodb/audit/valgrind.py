"""Valgrind client requests from Python, with no compiler (docs/design.md §Address audit).

A client request is a fixed instruction sequence that does nothing on a real CPU and that
valgrind recognises when it translates the code (``valgrind.h``,
``VALGRIND_DO_CLIENT_REQUEST_EXPR`` for amd64): four rotations of ``%rdi`` by 3, 13, 61
and 51 bits (128 in all, so ``%rdi`` is unchanged), then ``xchgq %rbx,%rbx``, with
``%rax`` pointing at six words (the request code and five arguments) and ``%rdx``
holding the default result, which valgrind replaces with its answer.

This module writes that sequence once into an executable page as a tiny function
``f(args, default) -> result`` and calls it through ``ctypes``.  Outside valgrind every
request returns its default (``running()`` is 0).  Only x86-64 is supported; elsewhere
:func:`available` is false.

Used by the address audit (:mod:`.addresses`): memcheck's "undefined" bits stand for
*private*, in the manner of ctgrind (Langley, 2010): a conditional jump or a memory address
computed from an undefined byte is reported, so a branch or an access pattern that depends
on private data is measured in the running process.
"""
from __future__ import annotations

import ctypes
import mmap
import platform

import numpy as np

__all__ = ["available", "running", "make_undefined", "make_defined", "count_errors", "log"]

# mov rax, rdi; mov rdx, rsi; rol rdi, 3/13/61/51; xchg rbx, rbx; mov rax, rdx; ret
_CODE = bytes([0x48, 0x89, 0xF8, 0x48, 0x89, 0xF2,
               0x48, 0xC1, 0xC7, 0x03, 0x48, 0xC1, 0xC7, 0x0D, 0x48, 0xC1, 0xC7, 0x3D, 0x48, 0xC1, 0xC7, 0x33,
               0x48, 0x87, 0xDB, 0x48, 0x89, 0xD0, 0xC3])

_RUNNING_ON_VALGRIND = 0x1001
_COUNT_ERRORS = 0x1201
_PRINTF_VALIST_BY_REF = 0x1403
_MEMCHECK = (ord("M") << 24) | (ord("C") << 16)  # VG_USERREQ_TOOL_BASE('M', 'C')
_MAKE_MEM_UNDEFINED = _MEMCHECK + 1
_MAKE_MEM_DEFINED = _MEMCHECK + 2

_request = None
_page = None  # kept alive: the function's code lives in it


def available() -> bool:
    """Whether client requests can be made here (x86-64 Linux)."""
    global _request, _page
    if _request is not None:
        return True
    if platform.machine() not in ("x86_64", "AMD64") or not hasattr(mmap, "PROT_EXEC"):
        return False
    try:
        _page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except (OSError, PermissionError):  # pragma: no cover - a system that forbids writable code
        return False
    _page.write(_CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(_page))
    _request = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64)(address)
    return True


def _do(code: int, a1: int = 0, a2: int = 0, default: int = 0) -> int:
    if not available():
        return default
    # a fresh block per request: a request made from a trace function while another one is
    # being filled in (the address audit's line tracer) must not overwrite it
    args = (ctypes.c_uint64 * 6)(code, a1, a2)
    return int(_request(ctypes.addressof(args), default))


def running() -> int:
    """How many valgrinds this process runs under (0 on a real CPU)."""
    return _do(_RUNNING_ON_VALGRIND)


def _span(a: np.ndarray) -> tuple[int, int]:
    if not a.flags.c_contiguous and not a.flags.f_contiguous:
        base = a
        while isinstance(base.base, np.ndarray):
            base = base.base
        a = base  # a view: mark the whole buffer it views
    return a.__array_interface__["data"][0], a.nbytes


def make_undefined(a: np.ndarray) -> None:
    """Mark ``a``'s bytes undefined (private) for memcheck; nothing outside valgrind."""
    if a.nbytes:
        _do(_MAKE_MEM_UNDEFINED, *_span(a))


def make_defined(a: np.ndarray) -> None:
    """Mark ``a``'s bytes defined (public, or released): memcheck stops tracking them."""
    if a.nbytes:
        _do(_MAKE_MEM_DEFINED, *_span(a))


def count_errors() -> int:
    """Errors the running valgrind tool has found so far (0 outside valgrind)."""
    return _do(_COUNT_ERRORS)


_VA_LIST = (ctypes.c_uint64 * 4)()  # never read: the logged text has no conversions


def log(text: str) -> None:
    """Write ``text`` into valgrind's log (``VALGRIND_PRINTF``), between the errors it reports."""
    data = ctypes.create_string_buffer(text.replace("%", "%%").encode() + b"\n")
    _do(_PRINTF_VALIST_BY_REF, ctypes.addressof(data), ctypes.addressof(_VA_LIST))
