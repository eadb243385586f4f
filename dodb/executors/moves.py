"""The exchange log: every block a sharded run moves between processes (docs/distributed.md §Exchange log).

The driver routes every block today: a worker's exchange blocks go to the driver and on to
their destination worker, a gathered output to the driver.  Each is logged as a
:class:`BlockMove` — stage, source, destination, bytes, dtypes and shapes — in the run's
context (``ctx.moves``), beside the workers' traces.  The bytes are measured as what a
Ray object store carries for the block: its pickle (protocol 5) with the array buffers out
of band, plus those buffers.  The coupled-neighbour audit compares the logs of the two
runs of a pair (dodb/audit/view.py), and the cost model (dodb/planner/exchange_cost.py)
predicts each stage's bytes from the released sizes and the public row width (the lanes'
dtypes and per-row shapes, recorded with each block), plus each block's framing (the bytes of
an empty block of the same lanes).
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass

from ..operators.exchange import lane_row_bytes
from ..operators.table import PaddedTable

__all__ = ["BlockMove", "block_move", "wire_bytes", "DRIVER"]

DRIVER = -1  # the destination of a gathered block


@dataclass(frozen=True)
class BlockMove:
    """One block sent: ``stage`` is ``"exchange k"`` (the ``k``-th exchange of the placement)
    or ``"gather k"``; ``destination`` a worker, or :data:`DRIVER`."""

    stage: str
    source: int
    destination: int
    bytes: int
    rows: int
    row_bytes: int  # public: the lanes' item sizes times their per-row shapes
    dtypes: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    header_bytes: int = 0  # public: the bytes of an empty block of the same lanes (its framing)

    def __str__(self) -> str:
        to = "driver" if self.destination == DRIVER else f"worker {self.destination}"
        return (f"{self.stage}: worker {self.source} -> {to}, {self.bytes} B, {self.rows} rows, "
                f"dtypes {list(self.dtypes)}, shapes {list(self.shapes)}")


def wire_bytes(table: PaddedTable) -> int:
    """Bytes of ``table`` as the object store carries it: the pickle stream with its buffers
    out of band, plus the buffers (no copy of the data is made)."""
    buffers: list[pickle.PickleBuffer] = []
    stream = pickle.dumps(table, protocol=5, buffer_callback=buffers.append)
    return len(stream) + sum(b.raw().nbytes for b in buffers)


def block_move(stage: str, source: int, destination: int, block: PaddedTable) -> BlockMove:
    """The log record of ``block`` sent from ``source`` to ``destination``."""
    lanes = block.arrays()
    return BlockMove(stage, source, destination, wire_bytes(block), block.padded_size, lane_row_bytes(block),
                     tuple(str(a.dtype) for a in lanes), tuple(tuple(int(x) for x in a.shape) for a in lanes),
                     wire_bytes(block.slice(0, 0)))
