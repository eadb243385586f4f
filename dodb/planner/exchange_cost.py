"""The cost model of rows and bytes moved between workers (docs/distributed.md §Exchange cost).

Pure functions of public numbers: the released block sizes of an exchange (or the padded
sizes of a gather) and the public width of a row (the lanes of the relation's schema,
:func:`dodb.operators.exchange.lane_row_bytes`).  The sharded executor logs every block it
moves with its measured bytes (dodb/executors/moves.py); EXPLAIN prints this model next to
them, and the benchmark (``python -m benchmarks exchange_cost``) compares the DO exchange
with a fully oblivious exchange and with Opaque's column sort at scales this machine
cannot run.

    >>> stage_bytes([[3, 1], [0, 2]], 10)
    60
    >>> stage_bytes([3, 1], 10, header_bytes=100)
    240
    >>> do_exchange(1000, 4, 2).rows, oblivious_exchange(1000, 4).rows
    (1032, 4000)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

__all__ = ["ExchangeCost", "stage_rows", "stage_bytes", "do_exchange", "oblivious_exchange", "column_sort"]


def stage_rows(released: Sequence[Sequence[int]] | Sequence[int]) -> int:
    """Rows one stage moves: the sum of its blocks' public sizes (a ``P × P`` matrix of
    released counts, or one size per block)."""
    return int(sum(sum(r) if isinstance(r, (list, tuple)) else int(r) for r in released))


def stage_bytes(released: Sequence[Sequence[int]] | Sequence[int], row_bytes: int, header_bytes: int = 0) -> int:
    """Bytes one stage moves by the cost model: released rows × the public row width, plus
    ``header_bytes`` a block (the framing of an empty block of the public schema, which
    dominates the small blocks of a top-k gather)."""
    blocks = sum(len(r) if isinstance(r, (list, tuple)) else 1 for r in released)
    return stage_rows(released) * int(row_bytes) + blocks * int(header_bytes)


@dataclass(frozen=True)
class ExchangeCost:
    """One way of moving ``n`` real rows among ``P`` workers: rows in all blocks sent (to
    itself included), rounds of messages, and the padding (rows sent beyond the real ones)."""

    method: str
    rows: int
    rounds: int
    padding: int


def do_exchange(n: int, workers: int, noise_mean: float) -> ExchangeCost:
    """The DO exchange (docs/distributed.md §Exchange): every real row once, plus each of the
    ``P²`` blocks' one-sided noise (mean ``noise_mean``, the mechanism's shift), one round."""
    pad = int(round(workers * workers * noise_mean))
    return ExchangeCost("DO exchange", int(n) + pad, 1, pad)


def oblivious_exchange(n: int, workers: int) -> ExchangeCost:
    """A fully oblivious hash exchange: every source pads each of its ``P`` blocks to its
    whole size ``n/P``, so ``P·n`` rows in one round."""
    rows = workers * int(n)
    return ExchangeCost("oblivious exchange", rows, 1, rows - int(n))


def column_sort(n: int, workers: int) -> ExchangeCost:
    """Opaque's distributed oblivious sort (Leighton's column sort on ``P`` columns of ``r``
    rows): ``n`` padded to ``r·P`` with ``P | r`` and ``r ≥ 2(P-1)²``, then four shuffles
    (transpose, untranspose, shift, unshift) each sending all ``r·P`` rows, a local sort
    before each; the exchange is the sort by destination."""
    r = max(math.ceil(int(n) / workers), 2 * (workers - 1) ** 2, 1)
    r = math.ceil(r / workers) * workers
    return ExchangeCost("column sort", 4 * r * workers, 4, 4 * r * workers - int(n))
