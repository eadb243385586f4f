"""The DO exchange: one worker's block cut into ``P`` destination blocks of noisy public sizes.

A distributed operator moves rows between ``P`` workers by a key (group-by and join keys,
a range of sort keys, a privacy unit).  A fully oblivious exchange must pad every one of
the ``P`` blocks a worker sends to the worker's whole input size ``n``, so ``P`` workers
move ``P·n`` rows each.  The differentially oblivious exchange (docs/distributed.md
§Exchange) instead releases how many real rows go to each destination, plus one-sided
noise, and writes blocks of exactly the released sizes:

1. every row gets its destination ``d`` in ``[0, P)`` (a public function of its key,
   :func:`partition_of`); a dummy row gets ``P``;
2. the per-destination counts ``c_d`` are released as ``ñ_d = c_d + noise_d`` with the
   one-sided shifted truncated discrete Laplace noise of every other release (``ñ_d >= c_d``),
   clipped to ``n`` (post-processing: no ``c_d`` exceeds ``n``);
3. an oblivious sort by ``d`` brings the real rows to the front, grouped by destination;
4. oblivious distribution (:func:`dodb.oblivious.compact.distribute`) moves the row of
   rank ``r`` within destination ``d`` to slot ``Ñ_{<d} + r``, where ``Ñ_{<d}`` is the
   prefix sum of the *released* sizes, so block ``d`` is the public slot range
   ``[Ñ_{<d}, Ñ_{<d} + ñ_d)`` — its real rows first, then dummies.

The view is the sort network over ``n`` rows, the distribution over ``max(n, Ñ)`` slots
and the ``P`` released sizes: nothing else.  Privacy: one unit changes at most ``s`` rows
of the input (its stability), so the count vector moves by at most ``s`` in L1 under
add/remove and ``2s`` under replace (its rows may leave one destination and another
unit's arrive at another).  Independent noise calibrated to that L1 sensitivity on every
coordinate makes the whole vector one ``(epsilon, delta)`` release, by the argument of
the binned filter (:mod:`dodb.operators.filter`).  No real row is ever dropped.

Modes: ``plain`` runs the same steps on plain kernels and cuts exact blocks
(data-dependent sizes: the insecure baseline);
``oblivious`` is the fully oblivious exchange, every block all ``n`` slots with the rows
of other destinations marked dummy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .context import ExecContext
from .filter import release_sensitivity
from .keys import EncodedKey, KeyField, column_fields, normalise_key, pack_fields
from .table import Column, PaddedTable
from ..oblivious.select import select

__all__ = ["Exchange", "exchange", "exchange_by_keys", "partition_of", "exchange_sensitivity", "lane_row_bytes"]

_GOLDEN = 0x9E3779B97F4A7C15
_WORD = (1 << 64) - 1


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a bijection of 64-bit words with full avalanche (element-wise)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _hash_words(c: Column, n: int) -> list[np.ndarray]:
    """Words equal for equal SQL values (NULLs equal): the order-preserving key fields, except
    that a string's bytes are cut into whole words whatever its padded width, followed by its
    length, so that only all-zero words depend on the width."""
    if not c.is_string:
        return pack_fields(column_fields(normalise_key(c)), n)[0]
    w = c.values.shape[1]
    mat = np.zeros((n, (w + 7) // 8 * 8), dtype=np.uint8)
    mat[:, :w] = select(c.valid[:, None], c.values, np.uint8(0))
    words = mat.view("<u8")
    lengths = select(c.valid, c.lengths.astype(np.uint64) + np.uint64(1), np.uint64(0))
    return [lengths] + [words[:, j].copy() for j in range(words.shape[1])]


def partition_of(columns: Sequence[Column], parts: int, salt: int = 0) -> np.ndarray:
    """Destination in ``[0, parts)`` of every row, from the values of ``columns`` alone.

    Equal keys (SQL equality with NULLs equal, integers of any width, strings of any
    padded width) get equal destinations, so two sides of a join hashed with the same
    ``salt`` meet on one worker.  Element-wise arithmetic over every row: no access
    depends on a value.  A string's all-zero padding words add nothing to the hash, which
    makes it independent of the column's padded width.

    >>> import pyarrow as pa
    >>> from dodb.operators.table import column_from_arrow
    >>> a = column_from_arrow(pa.array([1, 2, None, 1], pa.int32()))
    >>> b = column_from_arrow(pa.array([1, 2, None, 1], pa.int64()))
    >>> (partition_of([a], 4) == partition_of([b], 4)).all()
    True
    """
    if parts < 1:
        raise ValueError("an exchange needs at least one destination")
    n = int(columns[0].valid.shape[0]) if columns else 0
    h = np.full(n, np.uint64((int(salt) * _GOLDEN) & _WORD), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j, c in enumerate(columns):
            for k, w in enumerate(_hash_words(c, n)):
                tag = np.uint64(((((j + 1) << 32) + k + 1) * _GOLDEN) & _WORD)
                h = h + select(w != 0, _mix64(w ^ tag), np.uint64(0))
        h = _mix64(h)
    return (h % np.uint64(parts)).astype(np.int64)


def exchange_sensitivity(stability: int, neighbour: str) -> int:
    """L1 distance of the per-destination count vector between coupled neighbours."""
    return release_sensitivity(stability, True, neighbour)


def lane_row_bytes(table: PaddedTable) -> int:
    """Bytes a row of ``table`` takes in a block sent between workers: every lane's item size
    times its per-row shape (fixed by the schema and the public string widths, never by a
    value); the cost model's row width (dodb/planner/exchange_cost.py)."""
    return int(sum(a.dtype.itemsize * int(np.prod(a.shape[1:], dtype=np.int64)) for a in table.arrays()))


@dataclass
class Exchange:
    """``blocks[d]`` goes to destination ``d``; ``sizes[d]`` is its public padded size."""

    blocks: list[PaddedTable]
    sizes: list[int] = field(default_factory=list)


def _counts(dest: np.ndarray, real: np.ndarray, parts: int) -> np.ndarray:
    """Real rows per destination: ``parts`` element-wise passes (no access by value)."""
    return np.array([int(np.count_nonzero(real & (dest == d))) for d in range(parts)], dtype=np.int64)


def _per_row(dest: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``table[dest]`` as ``sum_d (dest == d) * table[d]``: one pass per public ``d``."""
    out = np.zeros(dest.shape[0], dtype=np.int64)
    for d in range(table.shape[0]):
        out += (dest == d) * np.int64(table[d])
    return out


def _fit(a: np.ndarray, m: int) -> np.ndarray:
    if a.shape[0] == m:
        return a
    out = np.zeros((m,) + a.shape[1:], dtype=a.dtype)
    k = min(m, a.shape[0])
    out[:k] = a[:k]
    return out


def exchange(table: PaddedTable, dest: np.ndarray, parts: int, *, epsilon: float = 1.0, delta: float = 1e-6,
             ctx: ExecContext | None = None) -> Exchange:
    """Cut ``table`` into ``parts`` blocks, row ``i`` to block ``dest[i]`` (module doc).

    ``dest`` holds values in ``[0, parts)`` (dummy rows' entries are ignored).  In ``do``
    mode the sizes are one ``(epsilon, delta)`` release of sensitivity
    :func:`exchange_sensitivity`; a public input (stability 0) releases its exact counts.
    """
    ctx = ctx or ExecContext()
    n = table.padded_size
    dest = np.asarray(dest, dtype=np.int64)
    if dest.shape != (n,):
        raise ValueError("exchange destinations must have the padded length")
    if parts < 1:
        raise ValueError("an exchange needs at least one destination")
    real = table.is_real
    dest = select(real, dest, parts)  # dummies sort after every destination
    name = ctx.op_name("exchange")
    cols = table.arrays()[:-1]
    if ctx.mode == "oblivious":  # every block all n slots: P·n rows leave the worker
        ctx.trace.record("exchange:mark", -1, n, parts)
        blocks = [table.with_arrays(cols + [real & (dest == d)]) for d in range(parts)]
        return Exchange(blocks, [n] * parts)
    counts = _counts(dest, real, parts)
    ctx.trace.record("exchange:count", -1, n, parts)
    if ctx.mode == "plain":  # the same algorithm on plain kernels, cut to the exact counts
        sizes = counts
    else:
        sens = exchange_sensitivity(table.stability, ctx.neighbour)
        sizes = np.minimum(ctx.release(name, "dest_counts", counts, epsilon, delta, sens), n).astype(np.int64)
    bits = max(1, int(parts).bit_length())  # destinations 0..parts, dummies at parts
    key = EncodedKey(*pack_fields([KeyField(dest.astype(np.uint64), bits)], n))
    _, moved = ctx.kernels.sort(key, cols + [real, dest])  # lint: public the network, keyed by destination
    real_sorted, dest_sorted = moved[-2], moved[-1]
    # row of rank r in destination d (positions C_<d + r) goes to slot Ñ_<d + r: a shift by
    # Ñ_<d − C_<d, which is ≥ 0 because every ñ_d ≥ c_d; strictly increasing over the live prefix
    shift = (np.cumsum(sizes) - sizes) - (np.cumsum(counts) - counts)
    target = np.arange(n, dtype=np.int64) + _per_row(np.minimum(dest_sorted, parts - 1), shift)
    total = int(sizes.sum())
    m = max(n, total)
    target = select(real_sorted, target, 0)
    ctx.trace.record("exchange:route", -1, n, m, total)
    occupied, routed = ctx.kernels.distribute(_fit(real_sorted, m), _fit(target, m),
                                              [_fit(a, m) for a in moved[:-2]])
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    blocks = []
    for d in range(parts):
        lo, hi = int(starts[d]), int(starts[d + 1])
        blocks.append(table.with_arrays([a[lo:hi] for a in routed] + [occupied[lo:hi].copy()]))
    return Exchange(blocks, [int(s) for s in sizes])


def exchange_by_keys(table: PaddedTable, keys: Sequence[str], parts: int, *, epsilon: float, delta: float,
                     ctx: ExecContext) -> Exchange:
    """:func:`exchange` of ``table`` to the destinations its ``keys`` columns hash to (salt 0:
    every worker of a query hashes alike)."""
    return exchange(table, partition_of([table.column(k) for k in keys], parts), parts, epsilon=epsilon,
                    delta=delta, ctx=ctx)
