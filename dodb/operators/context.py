"""Execution context shared by the operators of one query: mode, noise, trace, leaks.

Every data-dependent size an operator reveals goes through :meth:`ExecContext.release`:
the true value is padded with one-sided noise from a shifted truncated discrete Laplace
calibrated to the operator's stability and ``(epsilon, delta)``, a :class:`Leak` is
recorded, and only the noisy value is returned.  Operators use nothing else about the
true size afterwards — which is what the trace simulators check.

In *replay* mode (used by simulators) ``release`` ignores the true value and returns the
next recorded noisy value, so an operator can be re-run on fake data of the same public
size to reproduce its trace from public information and leaked values alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

import numpy as np

from ..errors import DodbError, InvalidParameterError
from ..oblivious.fixed_work import MAX_SAMPLES_PER_RELEASE
from ..oblivious.noise import MAX_RELEASE_EPSILON, ShiftedTruncatedDiscreteLaplace
from ..oblivious.rng import RandomSource, new_rng
from ..oblivious.trace import Trace
from .kernels import Kernels, kernels_for

__all__ = ["MODES", "Leak", "ExecContext", "OpResult", "check_privacy_params", "UnboundedStabilityError",
           "ReplayBelowTrueError"]

MODES = ("do", "oblivious", "plain")


class UnboundedStabilityError(DodbError, ValueError):
    """An operator's output stability is unbounded (e.g. a join without degree bound)."""


class ReplayBelowTrueError(RuntimeError):
    """An audit replay handed a release a value below its true value (the coupling's
    failure event, whose probability the padding's δ bounds; docs/design.md §Audit)."""


@dataclass(frozen=True)
class Leak:
    """One DP release of sizes by an operator (a privacy event in the making).

    ``values`` may hold several noisy sizes released together (e.g. per-bin counts of the
    DO filter); ``sensitivity`` is then the L1 sensitivity of the whole vector, and the
    vector release is ``(epsilon, delta)``-DP exactly like one count (see
    :mod:`dodb.operators.filter`).
    """

    operator: str
    name: str
    mechanism: ShiftedTruncatedDiscreteLaplace
    sensitivity: int
    epsilon: float
    delta: float
    values: tuple[int, ...]

    def to_event(self):
        """The accountant's :class:`~dodb.accountant.PrivacyEvent` for this leak."""
        from ..accountant import PrivacyEvent

        return PrivacyEvent.padding(mechanism=self.mechanism, sensitivity=self.sensitivity,
                                    operator=f"{self.operator}:{self.name}")


class OpResult(NamedTuple):
    table: "object"  # PaddedTable (avoid import cycle in annotations)
    leaks: list[Leak]
    trace: Trace


def check_privacy_params(epsilon: float, delta: float) -> None:
    # a bool is an int to Python, but epsilon=True is a mistake, not ε = 1
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) \
            or epsilon <= 0:
        raise InvalidParameterError(f"epsilon must be a positive finite number, got {epsilon!r}")
    if epsilon > MAX_RELEASE_EPSILON:
        # refused, not silently used as 40: the charge would not be the ε asked for (issue 29)
        raise InvalidParameterError(
            f"epsilon={epsilon:.4g} is above {MAX_RELEASE_EPSILON:g}, the largest ε the padding sampler uses for one "
            f"release (its padding is then already 0 with probability 1 - 8e-18): ask for at most "
            f"{MAX_RELEASE_EPSILON:g}; nothing was charged")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0 < delta < 1):
        raise InvalidParameterError(f"delta must lie in (0, 1) for padding noise, got {delta!r}")


@dataclass
class ExecContext:
    mode: str = "do"
    rng: RandomSource = field(default_factory=new_rng)
    trace: Trace = field(default_factory=Trace)
    neighbour: str = "add_remove"  # or "replace"
    replay: list[int] | None = None
    leaks: list[Leak] = field(default_factory=list)
    # audit only (docs/design.md §Audit): the true values of every release, in order, and an
    # observer told when each plan node starts and ends; never set when serving queries
    true_log: list | None = None
    observer: object | None = None
    _counter: int = 0
    _mech_cache: dict = field(default_factory=dict)
    # the query's expression status: the largest per-row error code of a real row seen by
    # the expression evaluator (0 = none; dodb.operators.expressions.message_for names it)
    # (a 0-d array folded with numpy's maximum: no Python number, no branch, is made of a
    # private value while the plan runs; ``error_code`` reads it when the answer is encoded)
    errors: np.ndarray = field(default_factory=lambda: np.zeros((), dtype=np.int64))
    # the message of every code the query's expressions can set (public: fixed by the plan)
    error_messages: dict = field(default_factory=dict)
    # blocks a sharded run sent between processes (docs/distributed.md §Exchange log): the
    # driver's log, beside the workers' traces; empty in one process
    moves: list = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InvalidParameterError(f"unknown mode {self.mode!r}; choose one of {MODES}")
        if self.neighbour not in ("add_remove", "replace"):
            raise InvalidParameterError("neighbour must be 'add_remove' or 'replace'")
        self.kernels: Kernels = kernels_for(self.mode, self.trace)

    def fold_errors(self, codes: np.ndarray) -> None:
        """Fold error codes (per row, already 0 on dummy rows; or one code) into the query's
        status: one linear max over the public number of rows, in numpy (branch-free, as the
        address audit measures); the analyst's side raises it."""
        codes = np.asarray(codes, dtype=np.int64)
        top = np.zeros((), dtype=np.int64)  # results stay in arrays: a numpy scalar is made through a Python int
        np.max(codes, initial=0, out=top)
        np.maximum(self.errors, top, out=self.errors)  # in place: a 0-d result would come back a scalar

    @property
    def error_code(self) -> int:
        """The query's status word (read when the answer is encoded)."""
        return int(self.errors)

    def op_name(self, kind: str) -> str:
        self._counter += 1
        return f"{kind}#{self._counter}"

    def mechanism(self, epsilon: float, delta: float, sensitivity: int) -> ShiftedTruncatedDiscreteLaplace:
        key = (float(epsilon), float(delta), int(sensitivity))
        if key not in self._mech_cache:
            self._mech_cache[key] = ShiftedTruncatedDiscreteLaplace.for_privacy(epsilon, delta, sensitivity)
        return self._mech_cache[key]

    def release(self, operator: str, name: str, true_values: Sequence[int] | np.ndarray,
                epsilon: float, delta: float, sensitivity: int) -> np.ndarray:
        """Release ``true + noise`` (one-sided) for each value; record the leak and trace."""
        # the true values read once, the same way in a run and in its audited replay (the audit
        # compares every numpy allocation of the two: docs/design.md §Audit)
        # an array from the caller (a list of numpy numbers would be read through Python ints)
        exact = np.array(true_values, dtype=np.int64).reshape(-1)
        declassify = getattr(self.observer, "declassify", None)
        if declassify is not None:  # the address audit: a release is modelled by DP, not measured
            declassify(exact)
        true = [int(v) for v in exact.tolist()]
        if sensitivity == 0:
            # the input is public (e.g. only public tables upstream): the size is public too
            if self.true_log is not None:
                self.true_log.append((operator, name, 0, tuple(true)))
            vals = true if self.replay is None else [self.replay.pop(0) for _ in range(len(true))]
            for v in vals:
                self.trace.leak(f"{operator}:{name}:public", v)
            return np.asarray(vals, dtype=np.int64)
        check_privacy_params(epsilon, delta)
        if sensitivity < 0:
            raise UnboundedStabilityError(f"{operator}: sensitivity must be non-negative, got {sensitivity}")
        mech = self.mechanism(epsilon, delta, sensitivity)
        k = len(true)
        if k > MAX_SAMPLES_PER_RELEASE:
            raise RuntimeError(f"internal error: {operator} releases {k} values, above the accounted maximum")
        # the sampler does the same work in a replay (the audit's neighbour run): its draws are part of the view
        noise = mech.sample_many(self.rng, k)
        if self.true_log is not None:
            self.true_log.append((operator, name, int(sensitivity), tuple(true)))
        if self.replay is not None:
            vals = [self.replay.pop(0) for _ in range(k)]
            if self.true_log is not None and any(v < t for v, t in zip(vals, self.true_log[-1][3])):
                raise ReplayBelowTrueError(f"{operator}:{name}: replayed size below the true size")
        else:
            vals = [v + int(z) for v, z in zip(true, noise)]
        for v in vals:
            self.trace.leak(f"{operator}:{name}", v)
        self.leaks.append(Leak(operator, name, mech, int(sensitivity), float(epsilon), float(delta), tuple(vals)))
        return np.asarray(vals, dtype=np.int64)

    def group_stability(self, s: int) -> int:
        """Rows of a group-by/distinct output one privacy unit can change (docs/design.md §Operators and stability)."""
        return 2 * s if self.neighbour == "replace" else s
