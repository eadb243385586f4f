"""g-NPDO composition computed numerically (004 Thm 6.13, Lemma 6.14).

Thm 6.13 composes power functions by the tensor product, i.e. the tradeoff curve of
the *product* of the leaks' dominating pairs.  We represent each pair ``(P, Q)`` by its
privacy-loss distribution (PLD): the law of ``L = log P(x)/Q(x)`` for ``x ~ P``, with
an atom at ``+inf`` for outcomes ``Q`` cannot produce.  Products of pairs convolve
PLDs; ``delta(eps) = P[L = inf] + E[(1 - e^{eps - L})_+]`` is the hockey-stick
divergence, i.e. the (eps, delta) read off the power function.

Pairs used (each is symmetric, ``PLD(P||Q) = PLD(Q||P)`` by reflecting the noise
about its centre, so one direction suffices):

* padding noise ``Z`` (truncated or not, Laplace or Gaussian, all log-concave):
  ``(Z, Z + Delta)``.  Log-concave location families have a monotone likelihood
  ratio, so the Neyman–Pearson tests for any shift ``d <= Delta`` are the same
  threshold tests and ``Pow(Z || Z+d) <= Pow(Z || Z+Delta)``: the shift by the full
  sensitivity dominates.  Discrete Laplace noise uses closed forms (``_closed.py``):
  the loss is ``+a Delta`` / linear / ``-a Delta`` on three ranges of outcomes, every
  range's mass is a geometric sum, and the linear range is aggregated per grid bucket
  (bisection for the bucket boundaries, which reproduces the per-outcome rounding
  exactly), so the cost is O(grid buckets) for any shift and sensitivity.  Gaussian
  noise is summed from the samplers' ``log_pmf`` while its support (or tail window)
  has at most ``_closed.SUPPORT_LIMIT`` points; beyond that the method reports
  itself not applicable ("support too large") instead of materialising the pmf.
  If the composed grid could exceed ``_MAX_GRID`` buckets (many leaks with large
  losses), every leaf PLD is first coarsened to a multiple of ``h`` (buckets rounded
  up — pessimistic, still certified), so memory stays bounded.
* generic (eps, delta): the 4-point dominating pair of KOV15.
* mu-GDP: ``(N(0,1), N(mu,1))``, loss ``N(mu^2/2, mu^2)``.

Certified upper bound ("pessimistic discretisation", as in dp_accounting): every
loss is rounded *up* to the grid ``h Z`` (a float margin of ``1e-11`` is added to
``eps`` per leak for the rounding of the loss itself); tails beyond the
computed window go to ``+inf`` (high-loss side) or to the lowest bucket (low side);
after each convolution the extreme ``tail_mass`` is moved the same way.  Raising a
loss or moving mass to a higher loss never lowers ``delta(eps)``, because the weight
``(1 - e^{eps - L})_+`` is non-decreasing in ``L``.  Floating-point error of the
convolutions (direct or FFT) is bounded and tracked in ``err``, added to delta.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from dodb.oblivious.noise import (
    DiscreteGaussian,
    DiscreteLaplace,
    ShiftedTruncatedDiscreteGaussian,
    ShiftedTruncatedDiscreteLaplace,
)

from ._closed import SUPPORT_LIMIT, Geometric, lgeo, support_size
from .base import Accountant
from .errors import NotApplicableError
from .events import NOMINAL_EPSILON, PrivacyEvent

__all__ = ["PLDAccountant", "DiscretePLD", "leaf_pld", "leaf_epsilon_at"]

_U = 2.0**-53  # unit roundoff
_LOSS_MARGIN = 1e-11  # absolute float error allowed on a computed loss value
_REL_PMF = 1e-10  # relative error allowance for pmf values evaluated in doubles
_DIRECT_MAX = 4_000_000  # use direct convolution below this many multiply-adds
_LOSS_CAP = 60.0  # per-leak losses beyond +-60 are treated pessimistically (see from_losses)
_DIRECT_J = 1 << 16  # Laplace linear range: one entry per outcome below this many outcomes
_MAX_GRID = 1 << 22  # composed PLDs longer than this (projected) use a coarser grid
# A leaf whose loss range [-ε, ε] needs more buckets than this at the requested interval is
# discretized on a coarser grid (pessimistic rounding: still a certified bound).  Below
# ε ≈ 6.5 at h = 1e-4 nothing changes; at the per-release cap ε = 40 (noise.MAX_RELEASE_EPSILON)
# it keeps one owner action's pricing in milliseconds instead of ~0.5 s of FFTs.
_MAX_LEAF_BUCKETS = 1 << 17
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


@dataclass(frozen=True)
class DiscretePLD:
    """A pessimistic PLD on the grid ``h * (offset + i)``."""

    h: float
    offset: int
    probs: np.ndarray
    inf_mass: float
    err: float = 0.0  # bound on |computed - exact| of sum(probs * w) for any 0 <= w <= 1
    loss_slack: float = 0.0  # losses may be under-stated by at most this much

    @classmethod
    def from_losses(cls, losses: np.ndarray, probs: np.ndarray, inf_mass: float, h: float) -> "DiscretePLD":
        losses = np.asarray(losses, dtype=np.float64)
        probs = np.asarray(probs, dtype=np.float64)
        keep = probs > 0
        losses, probs = losses[keep], probs[keep]
        # Bound the grid: losses above _LOSS_CAP count as +inf, below -_LOSS_CAP are
        # raised to it — both pessimistic, and (1 - e^{eps-L}) ~ 1 there anyway.
        big = losses > _LOSS_CAP
        if big.any():
            inf_mass += float(probs[big].sum())
            losses, probs = losses[~big], probs[~big]
        losses = np.maximum(losses, -_LOSS_CAP)
        if len(probs) == 0:
            return cls(h, 0, np.zeros(1), min(1.0, inf_mass), 0.0, _LOSS_MARGIN)
        idx = np.ceil((losses - _LOSS_MARGIN) / h).astype(np.int64)  # round *up* to the grid
        lo = int(idx.min())
        arr = np.bincount(idx - lo, weights=probs)
        return cls(h, lo, arr, min(1.0, inf_mass), 0.0, 2 * _LOSS_MARGIN)

    @classmethod
    def identity(cls, h: float) -> "DiscretePLD":
        return cls(h, 0, np.ones(1), 0.0, 0.0, 0.0)

    @property
    def losses(self) -> np.ndarray:
        return (self.offset + np.arange(len(self.probs))) * self.h

    def coarsened(self, k: int) -> "DiscretePLD":
        """The same PLD on the grid ``k h``: bucket ``i`` moves up to ``ceil(i/k)``
        (losses only rise, so delta(eps) can only grow — still a certified bound)."""
        if k <= 1:
            return self
        idx = self.offset + np.arange(len(self.probs), dtype=np.int64)
        new = -((-idx) // k)  # ceil(idx / k)
        lo = int(new[0])
        probs = np.bincount(new - lo, weights=self.probs)
        err = self.err + len(self.probs) * _U * float(self.probs.sum())
        return DiscretePLD(self.h * k, lo, probs, self.inf_mass, err, self.loss_slack)

    # -- composition ------------------------------------------------------------------

    def compose(self, other: "DiscretePLD", tail_mass: float = 1e-15) -> "DiscretePLD":
        """PLD of the product pair (004 Thm 6.13: tensor product of power functions)."""
        if other.h != self.h:
            raise ValueError("PLDs must share the discretisation interval")
        a, b = self.probs, other.probs
        n = len(a) + len(b) - 1
        ma, mb = float(a.sum()), float(b.sum())
        if len(a) * len(b) <= _DIRECT_MAX or min(len(a), len(b)) <= 64:
            c = np.convolve(a, b)
            conv_err = min(len(a), len(b)) * _U * ma * mb * 2  # sums of non-negative products
        else:
            size = 1 << (n - 1).bit_length()
            c = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n]
            # ||dc||_2 <= g log2(N) (|a|_2 |b|_1 + |a|_1 |b|_2 + |c|_2), ||dc||_1 <= sqrt(n) ||dc||_2
            g = 5 * _U * math.log2(size)
            l2 = g * (np.linalg.norm(a) * mb + ma * np.linalg.norm(b) + ma * mb)
            conv_err = math.sqrt(n) * l2
            c = np.maximum(c, 0.0)
        err = self.err * mb + other.err * ma + self.err * other.err + conv_err
        inf = 1 - (1 - self.inf_mass) * (1 - other.inf_mass)
        out = DiscretePLD(self.h, self.offset + other.offset, c, inf, err,
                          self.loss_slack + other.loss_slack)
        return out.truncated(tail_mass)

    def self_compose(self, k: int, tail_mass: float = 1e-15) -> "DiscretePLD":
        """k-fold composition by repeated squaring."""
        result = DiscretePLD.identity(self.h)
        base = self
        while k > 0:
            if k & 1:
                result = result.compose(base, tail_mass)
            k >>= 1
            if k:
                base = base.compose(base, tail_mass)
        return result

    def truncated(self, tail_mass: float) -> "DiscretePLD":
        """Move at most ``tail_mass/2`` from each end: low end up to the first kept
        bucket, high end to ``+inf`` — both can only increase delta(eps)."""
        p = self.probs
        if len(p) <= 1 or tail_mass <= 0:
            return self
        half = tail_mass / 2
        low = np.cumsum(p)
        i = int(np.searchsorted(low, half, side="right"))  # p[:i] has mass <= half
        high = np.cumsum(p[::-1])
        j = int(np.searchsorted(high, half, side="right"))  # p[len-j:] has mass <= half
        if i + j >= len(p):
            return self
        kept = p[i: len(p) - j].copy()
        moved_low = float(low[i - 1]) if i else 0.0
        moved_high = float(high[j - 1]) if j else 0.0
        kept[0] += moved_low
        inf = self.inf_mass + moved_high
        return replace(self, offset=self.offset + i, probs=kept, inf_mass=min(1.0, inf))

    # -- read-out -----------------------------------------------------------------------

    def get_delta(self, epsilon: float) -> float:
        """Certified upper bound on delta(epsilon)."""
        eps = epsilon - self.loss_slack
        ls = self.losses
        sel = ls > eps
        if not sel.any():
            finite = 0.0
        else:
            finite = float(np.sum(self.probs[sel] * -np.expm1(eps - ls[sel])))
        return min(1.0, self.inf_mass + finite * (1 + _REL_PMF) + self.err)

    def get_epsilon(self, delta: float) -> float:
        """Smallest epsilon whose certified delta is <= ``delta`` (continuous, not only grid)."""
        base = self.inf_mass + self.err
        if delta <= base:
            return math.inf
        if self.get_delta(self.loss_slack) <= delta:
            return self.loss_slack  # epsilon 0 (plus the rounding margin)
        ls, p = self.losses, self.probs
        pos = ls > 0
        ls, p = ls[pos], p[pos]
        room = (delta - base) / (1 + _REL_PMF)  # allowed finite part
        # suffix sums over losses above each grid point
        s1 = np.cumsum(p[::-1])[::-1]
        s2 = np.cumsum((p * np.exp(-ls))[::-1])[::-1]
        # finite part at eps = ls[j]: sum_{i>j} p_i (1 - e^{ls_j - ls_i})
        s1n = np.append(s1[1:], 0.0)
        s2n = np.append(s2[1:], 0.0)
        at_grid = s1n - np.exp(ls) * s2n
        ok = np.nonzero(at_grid <= room)[0]
        j = int(ok[0])  # first grid point that satisfies the target
        lo = ls[j - 1] if j > 0 else 0.0
        # on (lo, ls[j]] the active set is i >= j: finite(eps) = s1[j] - e^eps s2[j]
        num = s1[j] - room
        x = math.log(num / s2[j]) if num > 0 and s2[j] > 0 else lo
        x = min(max(x, lo), float(ls[j]))
        step = 1e-15 * max(1.0, x)
        for _ in range(80):  # float rounding: nudge up until the certified delta fits
            if self.get_delta(x + self.loss_slack) <= delta or x >= ls[j]:
                break
            x += step
            step *= 2
        return min(x, float(ls[j])) + self.loss_slack


# -- leaf PLDs ------------------------------------------------------------------------------

def _shift_pair_pld(lp_fn, lo: int, hi: int, sensitivity: int, inf_extra: float,
                    low_extra: float, h: float) -> DiscretePLD:
    """PLD of (Z, Z + Delta) for Z with log-pmf ``lp_fn`` evaluated on [lo, hi]."""
    xs = np.arange(lo, hi + 1)
    lp = np.asarray(lp_fn(xs), dtype=np.float64)
    lq = np.asarray(lp_fn(xs - sensitivity), dtype=np.float64)
    p = np.exp(lp)
    with np.errstate(invalid="ignore"):
        loss = lp - lq
    only_p = ~np.isfinite(lq) & (p > 0)
    inf_mass = float(np.sum(p[only_p])) + inf_extra
    fin = ~only_p & (p > 0)
    losses, probs = loss[fin], p[fin]
    if low_extra > 0 and len(losses):
        i = int(np.argmin(losses))
        probs = probs.copy()
        probs[i] += low_extra
    return DiscretePLD.from_losses(losses, probs, inf_mass, h)


def _gdp_pld(mu: float, h: float, tail: float) -> DiscretePLD:
    """Pessimistic discretisation of the continuous loss N(mu^2/2, mu^2)."""
    m = mu * mu / 2
    z = 1.0
    while 0.5 * math.erfc(z / math.sqrt(2)) > tail / 2:
        z += 0.25
    lo = math.floor((m - z * mu) / h)
    hi = math.ceil((m + z * mu) / h)
    edges = np.arange(lo - 1, hi + 1) * h  # bucket i covers (edges[i], edges[i+1]], loss -> upper edge
    t = (edges - m) / mu
    # Phi(b) - Phi(a) via the accurate tail: Q(a) - Q(b) with Q(x) = erfc(x/sqrt 2)/2
    upper = 0.5 * _erfc(t / math.sqrt(2))
    lower = 0.5 * _erfc(-t / math.sqrt(2))
    mass = np.where(t[:-1] >= 0, upper[:-1] - upper[1:], lower[1:] - lower[:-1])
    mass = np.maximum(mass, 0.0)
    mass[0] += float(lower[0])  # everything below the window -> lowest bucket
    inf = float(upper[-1])  # everything above the window -> +inf
    pld = DiscretePLD.from_losses(edges[1:], mass, inf, h)
    # per-bucket error of the erfc differences (relative ~1e-15 of the tail values)
    return replace(pld, err=len(mass) * 4 * _U * 2)


def _bucket(loss: np.ndarray, h: float) -> np.ndarray:
    """The grid index ``DiscretePLD.from_losses`` rounds a loss to (same expression)."""
    return np.ceil((loss - _LOSS_MARGIN) / h)


def _linear_segments(a: float, D: int, jlo: int, jhi: int, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Split ``j in [jlo, jhi]`` (loss ``a (D - 2j)``, decreasing) into segments whose
    outcomes all round to one grid bucket; returns (first j, length) per segment.

    Few outcomes: one segment each.  Otherwise, for every bucket ``v`` between the
    extremes (clipped to ``+-_LOSS_CAP``), the first ``j`` whose bucket is ``<= v`` is
    found by bisection on the *same* rounding expression, so the segments are exactly
    the per-outcome buckets.  The (possibly empty) ends beyond the clip hold outcomes
    with loss above ``_LOSS_CAP`` (sent to +inf by ``from_losses``, represented by the
    segment's largest loss) or below ``-_LOSS_CAP`` (raised to it)."""
    n = jhi - jlo + 1

    def bucket_of(j: np.ndarray) -> np.ndarray:
        return _bucket(a * (D - 2 * j).astype(np.float64), h)

    top = int(bucket_of(np.array([jlo]))[0])
    bot = int(bucket_of(np.array([jhi]))[0])
    vt = min(top, math.ceil(_LOSS_CAP / h) + 1)
    vb = min(max(bot, math.floor(-_LOSS_CAP / h) - 1), vt)
    if n <= max(_DIRECT_J, 4 * (vt - vb + 3)):
        return np.arange(jlo, jhi + 1, dtype=np.int64), np.ones(n, dtype=np.int64)
    v = np.arange(vb - 1, vt + 1, dtype=np.float64)
    lo = np.full(len(v), jlo, dtype=np.int64)
    hi = np.full(len(v), jhi + 1, dtype=np.int64)  # jhi + 1 stands for "no such j"
    while True:
        act = lo < hi
        if not act.any():
            break
        mid = (lo + hi) // 2
        ok = act & (bucket_of(np.minimum(mid, jhi)) <= v)
        hi = np.where(ok, mid, hi)
        lo = np.where(act & ~ok, mid + 1, lo)
    bounds = np.concatenate([[jlo], lo[::-1], [jhi + 1]]).astype(np.int64)
    return bounds[:-1], np.diff(bounds)


@functools.lru_cache(maxsize=1024)
def _laplace_pld_cached(mech, sensitivity: int, h: float) -> DiscretePLD:
    """:func:`_laplace_pld` kept per (mechanism, sensitivity, h): queries repeat the same
    calibrated leaves, and admission re-prices the history (read-only result)."""
    out = _laplace_pld(mech, sensitivity, h)
    out.probs.setflags(write=False)
    return out


def _laplace_pld(mech, sensitivity: int, h: float) -> DiscretePLD:
    """Closed-form PLD of ``(Z, Z + Delta)`` for (shifted truncated) discrete Laplace
    ``Z`` (module doc and ``_closed.py``): with ``j`` = outcome - shift, outcomes below
    ``Delta`` (truncated case) have infinite loss (mass ``truncation_delta``), ``j <= 0``
    loss ``a Delta``, ``0 < j < Delta`` loss ``a (Delta - 2j)``, ``j >= Delta`` loss
    ``-a Delta``; only ``j <= S`` has P-mass."""
    g = Geometric.of(mech)
    a, S, D = g.a, g.S, int(sensitivity)
    if D > 2 * S:
        return DiscretePLD.from_losses(np.empty(0), np.empty(0), 1.0, h)  # no common support
    log_z = g.log_z
    inf_mass = 0.0 if math.isinf(S) else mech.truncation_delta(D)
    losses = [np.array([a * D, -a * D])]
    logm = [np.array([float(g.log_weight(D - S, 0)), float(g.log_weight(D, S))])]
    jlo = max(1, D - int(S)) if math.isfinite(S) else 1
    jhi = min(D - 1, int(S)) if math.isfinite(S) else D - 1
    if jlo <= jhi:
        start, count = _linear_segments(a, D, jlo, jhi, h)
        losses.append(a * (D - 2 * start).astype(np.float64))
        logm.append(-a * start.astype(np.float64) + lgeo(a, count))
    probs = np.exp(np.concatenate(logm) - log_z)
    return DiscretePLD.from_losses(np.concatenate(losses), probs, inf_mass, h)


def gaussian_window(mech, sensitivity: int, tail: float) -> float:
    """Points the exact PLD of Gaussian padding noise evaluates (support or tail window,
    and the window of the sampler's numerical normaliser)."""
    if isinstance(mech, ShiftedTruncatedDiscreteGaussian):
        return support_size(mech)
    w = mech.tail_bound(tail / 2)
    return max(2.0 * w + sensitivity + 1, support_size(mech))


def _check_size(leaf: PrivacyEvent, tail: float) -> None:
    m = leaf.mechanism
    if leaf.kind == "padding" and leaf.sensitivity > 0 and isinstance(m, (ShiftedTruncatedDiscreteGaussian,
                                                                          DiscreteGaussian)):
        n = gaussian_window(m, leaf.sensitivity, tail)
        if n > SUPPORT_LIMIT:
            raise NotApplicableError(
                f"n/a: support too large for an exact PLD of Gaussian noise ({n:.3g} points > "
                f"{SUPPORT_LIMIT}); the Rényi accountant bounds it in closed form")


def leaf_pld(leaf: PrivacyEvent, h: float = 1e-4, tail: float = 1e-15) -> DiscretePLD:
    """The pessimistic PLD of one leaf's dominating pair (see module doc)."""
    if leaf.kind == "generic":
        e, d = float(leaf.epsilon), float(leaf.delta)
        pe = (1 - d) / (1 + math.exp(-e))
        return DiscretePLD.from_losses(np.array([e, -e]), np.array([pe, 1 - d - pe]), d, h)
    if leaf.kind == "gaussian":
        return _gdp_pld(float(leaf.mu), h, tail)
    if leaf.kind != "padding":
        raise NotApplicableError(f"the PLD accountant cannot compose {leaf!r} (no exact pmf)")
    m, s = leaf.mechanism, leaf.sensitivity
    if s == 0:
        return DiscretePLD.identity(h)
    _check_size(leaf, tail)
    if isinstance(m, (ShiftedTruncatedDiscreteLaplace, DiscreteLaplace)):
        return _laplace_pld_cached(m, s, h)
    if isinstance(m, ShiftedTruncatedDiscreteGaussian):
        return _shift_pair_pld(m.log_pmf, 0, 2 * m.shift, s, 0.0, 0.0, h)
    if isinstance(m, DiscreteGaussian):
        w = m.tail_bound(tail / 2)  # P(|Z| > w) <= tail/2
        # left tail (x < -w): losses above the window -> +inf; right tail -> lowest bucket
        return _shift_pair_pld(m.log_pmf, -w, w + s, s, tail / 2, tail / 2, h)
    raise NotApplicableError(f"unknown mechanism {type(m).__name__}")  # pragma: no cover


def _loss_bound(leaf: PrivacyEvent) -> float:
    """A cheap bound on the largest finite |loss| of a leaf (0 when none is known cheaply)."""
    if leaf.kind == "generic" and math.isfinite(float(leaf.epsilon)):
        return float(leaf.epsilon)
    m = leaf.mechanism if leaf.kind == "padding" else None
    if isinstance(m, (ShiftedTruncatedDiscreteLaplace, DiscreteLaplace)):
        return float(leaf.sensitivity / m.scale)
    return 0.0


class PLDAccountant(Accountant):
    """g-NPDO composition by exact PLDs, certified upper bound (004 Thm 6.13)."""

    name = "pld"
    theorem = "004 Thm 6.13"

    def __init__(self, value_discretization_interval: float = 1e-4, tail_mass_truncation: float = 1e-15) -> None:
        super().__init__()
        if not value_discretization_interval > 0:
            raise ValueError("value_discretization_interval must be > 0")
        if not 0 <= tail_mass_truncation < 1e-6:
            raise ValueError("tail_mass_truncation must lie in [0, 1e-6)")
        self.h = float(value_discretization_interval)
        self.tail = float(tail_mass_truncation)
        self._pld: DiscretePLD | None = None

    def check(self, leaf: PrivacyEvent) -> None:
        if leaf.kind not in ("generic", "gaussian", "padding"):
            raise NotApplicableError(f"the PLD accountant cannot compose {leaf!r} (no exact pmf)")
        _check_size(leaf, self.tail)

    def _invalidate(self) -> None:
        self._pld = None

    @property
    def pld(self) -> DiscretePLD:
        if self._pld is None:
            h = self._grid_step()
            parts = [(leaf_pld(leaf, h, self.tail), n) for leaf, n in self.leaves]
            # Bound time and memory: if the composed grid could exceed _MAX_GRID buckets,
            # compose on a coarser grid (pessimistic rounding, still a certified bound).
            projected = 1 + sum(n * (len(p.probs) - 1) for p, n in parts)
            k = -(-projected // _MAX_GRID)
            parts = [(p.coarsened(k), n) for p, n in parts]
            out = DiscretePLD.identity(h * k if k > 1 else h)
            for p, n in parts:
                out = out.compose(p.self_compose(n, self.tail), self.tail)
            self._pld = out
        return self._pld

    def _grid_step(self) -> float:
        """The discretization interval: ``h``, or coarser for leaves of very large ε (_MAX_LEAF_BUCKETS)."""
        return max(self.h, 2.0 * max((_loss_bound(leaf) for leaf, _ in self.leaves), default=0.0)
                   / _MAX_LEAF_BUCKETS)

    def get_delta(self, epsilon: float) -> float:
        epsilon = self._epsilon_arg(epsilon)
        if epsilon == math.inf:
            return min(1.0, self.pld.inf_mass + self.pld.err)
        return self.pld.get_delta(epsilon)

    def get_epsilon(self, delta: float) -> float:
        delta = self._delta_arg(delta)
        return self.pld.get_epsilon(delta)


def leaf_epsilon_at(leaf: PrivacyEvent, delta: float) -> float:
    """Exact (certified) epsilon of one leak at ``delta`` — used for nominal pairs."""
    return PLDAccountant(1e-5).compose(leaf).get_epsilon(delta)


NOMINAL_EPSILON["pld"] = leaf_epsilon_at  # the nominal pair of a pld leaf (events.py)
