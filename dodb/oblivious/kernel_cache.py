"""Where the compiled kernels are cached, and the one line a cold process prints (issue 26).

numba compiles every ``@njit`` kernel of :mod:`.compiled` and its siblings on first use
(minutes for the sorting networks) and, with ``cache=True``, keeps the machine code in a
cache directory.  dodb puts that cache in a per-user folder, never in the package's own
folder (an installed package may be read-only and is shared between users)::

    <user cache dir>/dodb/kernels-numba<version>-<cpu>-<codegen tag>

keyed by the numba version, the CPU that the code was compiled for (``$NUMBA_CPU_NAME``
when set, else the host's) and the LLVM options that keep selects branch-free (numba also
checks both, and a stamp of each source file (its hash in numba 0.68), before it loads an entry).
``$NUMBA_CACHE_DIR``, when set, wins.  If no folder is writable the kernels are compiled
again in every process, with a warning.

A process that has to compile prints one line on stderr saying so (:func:`announce`);
``dodb warmup`` (:mod:`dodb.warmup`) compiles every kernel ahead of time.  Whether a kernel
is compiled depends on the machine and the cache only, never on data.
"""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

__all__ = ["cache_dir", "configure", "announce", "quiet", "CACHE_ENV", "LLVM_OPTIONS"]

CACHE_ENV = "NUMBA_CACHE_DIR"

# LLVM options every kernel is compiled with (docs/design.md §Compiled kernels).  The x86
# backend turns a group of branch-free selects in an inner loop back into a conditional
# jump when it predicts the jump is faster (the cmov converter), and CodeGenPrepare does
# the same to a select with an expensive operand: a branch on private data made after the
# IR lint has read the IR.  The address audit measured such jumps in seg_sum128_limbs and
# the sorting network (issue 28).  The tag names the code these options make, so that
# kernels compiled without them are never loaded from an older cache.
LLVM_OPTIONS = ("-x86-cmov-converter=false", "-disable-cgp-select2branch")
CODEGEN_TAG = "nobranch1"


def _cpu() -> str:
    # numba compiles for $NUMBA_CPU_NAME when it is set (the address audit sets "generic",
    # so that the CPU valgrind emulates reads what the real one compiled)
    named = os.environ.get("NUMBA_CPU_NAME", "").strip()
    if named:
        return named
    try:
        from llvmlite import binding
        return binding.get_host_cpu_name() or "cpu"
    except Exception:  # noqa: BLE001 - an llvmlite without the call: one folder for all CPUs
        return "cpu"


def cache_dir() -> Path:
    """The folder the kernels are cached in (``$NUMBA_CACHE_DIR`` when set)."""
    env = os.environ.get(CACHE_ENV, "").strip()
    if env:
        return Path(env)
    import numba
    import platformdirs

    return Path(platformdirs.user_cache_dir("dodb")) / f"kernels-numba{numba.__version__}-{_cpu()}-{CODEGEN_TAG}"


def set_llvm_options() -> None:
    """Apply :data:`LLVM_OPTIONS` (process-wide: they hold for every later numba compile)."""
    from llvmlite import binding

    for option in LLVM_OPTIONS:
        binding.set_option("dodb", option)


def configure() -> bool:
    """Point numba's cache at :func:`cache_dir`; False if it cannot be written.

    Must run before the first ``@njit(cache=True)`` decorator: numba picks a function's
    cache folder when the function is decorated.
    """
    from numba.core import config

    set_llvm_options()
    path = cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError:
        import warnings

        warnings.warn(f"dodb: the kernel cache folder {path} is not writable (set {CACHE_ENV}); the compiled "
                      "kernels are compiled again in every process", RuntimeWarning, stacklevel=2)
        return False
    config.CACHE_DIR = str(path)
    return True


_announced = threading.Event()


def announce() -> None:
    """Print one line on stderr the first time this process compiles a kernel (numba's
    ``numba:compile`` event fires on a cache miss only)."""
    from numba.core import event

    class _FirstCompile(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            dispatcher = ev.data.get("dispatcher")
            module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
            if _announced.is_set() or not module.startswith("dodb."):
                return  # said once, and only of dodb's kernels (not of other numba code in the process)
            _announced.set()
            name = getattr(dispatcher, "__qualname__", None) or "kernels"
            print(f"dodb: compiling the oblivious kernels for this CPU (first use, starting with {name}; cached in "
                  f"{cache_dir()}; `dodb warmup` compiles them all ahead of time)", file=sys.stderr, flush=True)

        def on_end(self, ev: event.Event) -> None:
            pass

    event.register("numba:compile", _FirstCompile())


def quiet() -> None:
    """No line from :func:`announce` in this process (``dodb warmup`` reports progress itself)."""
    _announced.set()
