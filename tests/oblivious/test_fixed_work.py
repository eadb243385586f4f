"""The fixed-work padding sampler (docs/design.md §Samplers): the random draws it makes do
not depend on the values it returns, its output fits the exact pmf, and the draw-count
check catches a value-dependent sampler (the rejection sampler) when one is planted."""
from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from dodb.oblivious.fixed_work import LOSS_PER_SAMPLE, fixed_work_sampler
from dodb.oblivious.noise import ShiftedTruncatedDiscreteLaplace

from .test_noise import chi_square_p


class CountingSource:
    """A seeded random source that records every request (what an observer counting draws sees)."""

    def __init__(self, seed: int):
        self._r = random.Random(seed)
        self.calls: list[tuple[str, int]] = []

    def getrandbits(self, k: int) -> int:
        self.calls.append(("bits", k))
        return self._r.getrandbits(k)

    def randrange(self, stop: int) -> int:
        self.calls.append(("range", stop))
        return self._r.randrange(stop)


def _request_log(sample, seeds) -> dict[tuple, set[int]]:
    """Map each distinct request log to the values it produced, over many seeds."""
    logs: dict[tuple, set[int]] = {}
    for s in seeds:
        src = CountingSource(s)
        v = sample(src)
        logs.setdefault(tuple(src.calls), set()).add(int(v))
    return logs


MECHS = [ShiftedTruncatedDiscreteLaplace.for_privacy(1.0, 1e-6),
         ShiftedTruncatedDiscreteLaplace.for_privacy(0.1, 1e-9, 2),
         ShiftedTruncatedDiscreteLaplace(Fraction(3, 2), 5)]


@pytest.mark.parametrize("mech", MECHS, ids=lambda m: f"b={m.scale},S={m.shift}")
def test_draws_do_not_depend_on_the_value(mech):
    logs = _request_log(mech.sample, range(300))
    assert len(logs) == 1, f"{len(logs)} different request logs"
    (values,) = logs.values()
    assert len(values) > 3  # many different outputs, one pattern of draws


@pytest.mark.parametrize("count", [1, 7, 64])
def test_sample_many_makes_one_request_sized_by_count(count):
    mech = MECHS[0]
    logs = _request_log(lambda s: mech.sample_many(s, count).sum(), range(50))
    assert len(logs) == 1
    (log,) = logs
    assert len(log) == 1 and log[0][0] == "bits"


def test_planted_value_dependent_sampler_is_caught():
    """The rejection sampler's draw count depends on what it returns: the same check sees it."""
    mech = MECHS[0]
    logs = _request_log(mech.sample_rejection, range(300))
    assert len(logs) > 1


@pytest.mark.parametrize("mech", MECHS[:1] + MECHS[2:], ids=lambda m: f"b={m.scale},S={m.shift}")
def test_fixed_work_output_fits_the_pmf(mech):
    rng = random.Random(7)
    xs = [int(v) for v in mech.sample_many(rng, 20000)]
    assert min(xs) >= 0 and max(xs) <= 2 * mech.shift
    a = 1.0 / float(mech.scale)
    pmf = lambda ks: np.exp(-a * np.abs(ks - mech.shift))
    assert chi_square_p(xs, pmf, 0, 2 * mech.shift) > 1e-4


def test_chi_square_sees_a_wrong_scale():
    mech = MECHS[2]
    wrong = ShiftedTruncatedDiscreteLaplace(mech.scale * 3, mech.shift)
    xs = [int(v) for v in wrong.sample_many(random.Random(3), 20000)]
    a = 1.0 / float(mech.scale)
    pmf = lambda ks: np.exp(-a * np.abs(ks - mech.shift))
    assert chi_square_p(xs, pmf, 0, 2 * mech.shift) < 1e-6


def test_sampler_tables_are_cached_and_loss_is_tiny():
    m = MECHS[0]
    assert fixed_work_sampler(m.scale, m.shift) is fixed_work_sampler(m.scale, m.shift)
    assert LOSS_PER_SAMPLE < 1e-30
