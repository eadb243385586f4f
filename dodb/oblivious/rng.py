"""Randomness for DP noise.

Production noise comes from the operating system's CSPRNG (``secrets.SystemRandom``,
i.e. ``os.urandom``).  A seeded, reproducible generator is available only in an
explicit test/benchmark mode, switched on by :func:`enable_seeding` or by setting the
environment variable ``DODB_ALLOW_SEED=1`` before dodb is imported.  Asking for a
seed outside that mode raises :class:`SeedingDisabledError`, so a seed can never slip
into a production deployment by accident.
"""
from __future__ import annotations

import os
import random
import secrets
from contextlib import contextmanager
from typing import Iterator, Protocol

from ..errors import DodbError

__all__ = [
    "RandomSource",
    "SeedingDisabledError",
    "enable_seeding",
    "disable_seeding",
    "seeding_enabled",
    "seeded_mode",
    "new_rng",
]


class SeedingDisabledError(DodbError, RuntimeError):
    """A seed was requested outside the explicit test/benchmark mode."""


class RandomSource(Protocol):
    """What the exact samplers need: uniform integers."""

    def randrange(self, stop: int) -> int: ...  # uniform in [0, stop)

    def getrandbits(self, k: int) -> int: ...


_seeding = os.environ.get("DODB_ALLOW_SEED", "") == "1"


def enable_seeding() -> None:
    """Allow seeded generators (tests and benchmarks only)."""
    global _seeding
    _seeding = True


def disable_seeding() -> None:
    global _seeding
    _seeding = False


def seeding_enabled() -> bool:
    return _seeding


@contextmanager
def seeded_mode() -> Iterator[None]:
    """Context manager form of :func:`enable_seeding` (restores the previous state)."""
    global _seeding
    old = _seeding
    _seeding = True
    try:
        yield
    finally:
        _seeding = old


def new_rng(seed: int | None = None) -> RandomSource:
    """A cryptographically strong generator, or a seeded one in test/bench mode."""
    if seed is None:
        return secrets.SystemRandom()
    if not _seeding:
        raise SeedingDisabledError(
            "seeded noise is only allowed in test/benchmark mode "
            "(dodb.oblivious.rng.enable_seeding() or DODB_ALLOW_SEED=1)"
        )
    return random.Random(seed)
