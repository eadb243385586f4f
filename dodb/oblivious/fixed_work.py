"""A fixed-work sampler for the padding noise (docs/design.md §Samplers).

The padding noise is ``shift + Z`` with ``Z`` a discrete Laplace of scale ``b``
conditioned on ``|Z| <= S`` (``S`` = shift): ``P[Z = z] ∝ r^|z|``, ``r = e^{-1/b}``.
A rejection sampler (Canonne–Kamath–Steinke) makes a number of random draws that depends
on the value it returns, so an observer counting draws or loop iterations learns
``|noise|``.  This sampler makes **the same draws and the same passes whatever it
returns**:

* ``|Z|`` is 0 with probability ``1/Z`` and otherwise ``1 + G`` with ``G`` geometric
  (``P[G = g] ∝ r^g``) on ``[0, K·M)``, ``Z = 1 + 2 Σ_{j=1..K·M} r^j``; a sign bit makes
  ``Z`` from ``|Z|``; keeping only ``|Z| <= S`` leaves exactly ``P ∝ r^|z|`` on ``[-S, S]``;
* ``G = A·M + B`` with ``A`` geometric of ratio ``r^M`` on ``[0, K)`` and ``B`` geometric
  of ratio ``r`` on ``[0, M)``, independent (``r^g = (r^M)^A · r^B``), ``K·M >= S``;
* each of the three choices is an inverse-CDF lookup: a uniform integer of ``bits`` bits
  is compared with **every** threshold of a fixed-point CDF table (a linear scan), and
  the value is the number of thresholds not above it;
* ``G >= S`` (possible because ``K·M >= S``) rejects the candidate; every sample draws
  ``T`` candidates and keeps the first accepted one with element-wise selects; if none
  is accepted (probability ``p^T``) it returns ``2S``.

All draws for a call come from one request to the random source (``getrandbits``: the
OS CSPRNG in production), whose size depends only on the number of samples and the
mechanism's public parameters.

**Closeness to the ideal distribution.**  Table thresholds are ``floor(CDF · 2^bits)``
computed with Python's ``decimal`` at more than ``bits`` bits, so every lookup's
probabilities are within ``2^-bits`` (additive) of the exact ones; ``bits`` is chosen
so that ``2^-bits`` is below ``2^-120`` times the smallest probability of the ideal
distribution on ``[0, 2S]``, and ``T`` so that ``p^T`` is too.  Hence every outcome's
implemented probability lies within a factor ``e^{±2^-118}`` of its ideal probability,
the supports coincide, and each sample's privacy loss differs from the ideal
mechanism's by at most ``2^-117`` (:data:`LOSS_PER_SAMPLE`), which the accountant adds
per sample (``dodb/accountant/best.py``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

import numpy as np

from .rng import RandomSource
from .select import select

__all__ = ["FixedWorkPadding", "fixed_work_sampler", "LOSS_PER_SAMPLE", "MAX_SAMPLES_PER_RELEASE",
           "LOSS_PER_RELEASE"]

LOSS_PER_SAMPLE = 2.0 ** -117   # bound on |implemented - ideal| privacy loss per sample (module doc)
MAX_SAMPLES_PER_RELEASE = 2 ** 40  # a release draws at most this many values (checked when it is made)
LOSS_PER_RELEASE = LOSS_PER_SAMPLE * MAX_SAMPLES_PER_RELEASE  # what the accountant adds per padding leaf
_MARGIN_BITS = 120
_CHUNK_CELLS = 1 << 22          # comparisons per vectorised block (bounds temporary memory)


def _words(x: int, w: int) -> list[int]:
    """``x`` as ``w`` 64-bit words, most significant first."""
    return [(x >> (64 * (w - 1 - i))) & 0xFFFFFFFFFFFFFFFF for i in range(w)]


@dataclass(frozen=True)
class _Table:
    """Fixed-point inverse CDF: ``thresholds[j] = floor(CDF(j) * 2^bits)``, ``j < size-1``."""

    thresholds: np.ndarray   # (size - 1, w) uint64, most significant word first

    def lookup(self, u: np.ndarray) -> np.ndarray:
        """For uniforms ``u`` ((m, w) uint64): how many thresholds are ``<= u`` — every threshold
        is compared with every uniform, so the pattern depends on ``m`` and the table size only."""
        m, w = u.shape
        t = self.thresholds
        out = np.zeros(m, dtype=np.int64)
        if t.shape[0] == 0:
            return out
        step = max(1, _CHUNK_CELLS // max(1, t.shape[0] * w))
        for lo in range(0, m, step):  # public bounds
            uu = u[lo:lo + step]
            le = np.ones((uu.shape[0], t.shape[0]), dtype=bool)  # equal so far: threshold <= u
            for k in range(w - 1, -1, -1):  # least significant word first
                tk, uk = t[None, :, k], uu[:, k][:, None]
                le = (tk < uk) | ((tk == uk) & le)
            out[lo:lo + step] = le.sum(axis=1)
        return out


def _geometric_table(rho: Decimal, size: int, bits: int) -> _Table:
    """Inverse CDF of ``P[j] ∝ rho^j`` on ``[0, size)``."""
    w = -(-bits // 64)
    total = Decimal(1) - rho ** size
    scale = Decimal(2) ** bits
    rows = []
    p = rho
    for _ in range(size - 1):
        cdf = (Decimal(1) - p) / total
        rows.append(_words(int((cdf * scale).to_integral_value(rounding="ROUND_FLOOR")) << (64 * w - bits), w))
        p *= rho
    return _Table(np.array(rows, dtype=np.uint64).reshape(len(rows), w))


def _threshold_table(prob: Decimal, bits: int) -> _Table:
    """One threshold: the lookup is 0 with probability ``prob`` (up to ``2^-bits``)."""
    w = -(-bits // 64)
    t = int((prob * Decimal(2) ** bits).to_integral_value(rounding="ROUND_FLOOR")) << (64 * w - bits)
    return _Table(np.array([_words(t, w)], dtype=np.uint64))


@dataclass(frozen=True)
class FixedWorkPadding:
    """Sampler of ``shift + Z`` (module doc) with public parameters fixed at construction."""

    shift: int
    bits: int
    candidates: int                 # T
    k: int                          # A in [0, K)
    m: int                          # B in [0, M)
    zero: _Table
    table_a: _Table
    table_b: _Table

    @property
    def words(self) -> int:
        return -(-self.bits // 64)

    def draws_per_sample(self) -> int:
        """Random 64-bit words one sample consumes (public: fixed by the parameters)."""
        return self.candidates * (3 * self.words + 1)

    def sample_many(self, rng: RandomSource, count: int) -> np.ndarray:
        """``count`` samples; one request of ``count * draws_per_sample()`` words to ``rng``."""
        s = self.shift
        if count == 0:
            return np.zeros(0, dtype=np.int64)
        if s == 0:
            _draw(rng, count * self.draws_per_sample())  # the same work whatever the parameters allow
            return np.zeros(count, dtype=np.int64)
        w, t = self.words, self.candidates
        raw = _draw(rng, count * self.draws_per_sample()).reshape(count * t, 3 * w + 1)
        is_zero = self.zero.lookup(raw[:, 0:w]) == 0
        g = self.table_a.lookup(raw[:, w:2 * w]) * self.m + self.table_b.lookup(raw[:, 2 * w:3 * w])
        sign = (raw[:, 3 * w] & np.uint64(1)).astype(np.int64) * 2 - 1
        mag = select(is_zero, 0, 1 + g)
        ok = (mag <= s).reshape(count, t)
        z = (sign * mag).reshape(count, t)
        # first accepted candidate, by element-wise selects from the last one back
        out = np.full(count, s, dtype=np.int64)       # no candidate accepted: 2S (probability p^T)
        for j in range(t - 1, -1, -1):  # public bound
            out = select(ok[:, j], z[:, j], out)
        return out + s


def _draw(rng: RandomSource, n_words: int) -> np.ndarray:
    if n_words == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.frombuffer(rng.getrandbits(64 * n_words).to_bytes(8 * n_words, "little"), dtype=np.uint64).copy()


@lru_cache(maxsize=256)
def fixed_work_sampler(scale: Fraction, shift: int) -> FixedWorkPadding:
    """The fixed-work sampler for ``shift + DLap(scale)`` truncated to ``[0, 2*shift]``."""
    s = int(shift)
    a = float(Fraction(scale.denominator, scale.numerator))        # 1/scale
    # the smallest ideal probability (|z| = S): r^S / Z_S with Z_S <= (1 + r)/(1 - r)
    log2_pmin = -(s * a) / math.log(2) - math.log2((1 + math.exp(-a)) / max(1e-300, -math.expm1(-a)))
    bits = _MARGIN_BITS + 8 + math.ceil(-log2_pmin)
    bits = 64 * (-(-bits // 64))
    m = max(1, math.isqrt(max(1, s)))
    k = max(1, -(-s // m))
    # rejection: G >= S with G geometric on [0, K*M); p <= r^S; T with p^T <= 2^-(margin) * pmin
    log2_p = min(-1e-12, -(s * a) / math.log(2)) if k * m > s else -math.inf
    need = _MARGIN_BITS + 8 - log2_pmin
    t = 1 if log2_p == -math.inf else max(1, math.ceil(need / -log2_p))
    with localcontext() as ctx:
        ctx.prec = bits // 3 + 40
        inv = Decimal(scale.denominator) / Decimal(scale.numerator)
        r = (-inv).exp()
        # P[|Z| = 0] relative to the candidates' range 1 .. K*M (rejection then cuts it to 1 .. S
        # without changing the ratios 1 : 2r^j)
        z_total = Decimal(1) + 2 * r * (Decimal(1) - r ** (k * m)) / (Decimal(1) - r) if s else Decimal(1)
        zero = _threshold_table(Decimal(1) / z_total, bits)
        table_a = _geometric_table((-inv * m).exp(), k, bits)
        table_b = _geometric_table(r, m, bits)
    return FixedWorkPadding(s, bits, t, k, m, zero, table_a, table_b)
