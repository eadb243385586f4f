"""Where each plan node runs on a cluster of ``P`` workers (docs/distributed.md §Placement).

The plan is data; placement is a pure function of it, the catalog and ``P``.  Private
tables are sharded by privacy unit (dodb/storage/shards.py), so a node whose output is a
union over units of rows fixed by each unit's own rows (``unit_local``: scans, row-wise
filters and projections, joins along the unit path or with a public side, UNION ALL)
runs on every worker over its shard, and the workers' outputs together are the node's
output.  Every other node that reads private rows runs on the driver, on the gathered
outputs; public sub-plans run on the driver and are broadcast to the workers that read
them.  Each release of a sharded node is made by every worker over its own units: one
unit's rows sit on one shard, so the workers' released vectors together move by no more
than the single-process release's sensitivity, and the plan's privacy events stay the
same (docs/distributed.md §Sharded execution).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..planner.catalog import Catalog
from ..planner.logical import CrossOne, Filter, Join, Node, Project, ScalarRow, Scan, SetOp, walk
from ..planner.partitions import unit_local

__all__ = ["Placement", "place"]

# joins whose output rows are each one row of the sharded (private) side's unit; the
# public side, broadcast whole to every worker, must not be preserved (its unmatched rows
# would be repeated on every worker)
_SHARDED_JOINS = ("inner", "left", "semi", "anti")


@dataclass(frozen=True)
class Placement:
    """``sharded``: nodes every worker runs over its shard.  ``gathers``: sharded nodes whose
    output the driver reads (concatenated in worker order).  ``broadcasts``: driver nodes a
    sharded node reads (public sub-plans, sent whole to every worker)."""

    workers: int
    sharded: frozenset[int]
    gathers: tuple[Node, ...]
    broadcasts: tuple[Node, ...]

    def describe(self, node: Node) -> str | None:
        """EXPLAIN's note for ``node``."""
        if node.node_id not in self.sharded:
            return None
        gathered = any(g.node_id == node.node_id for g in self.gathers)
        return f"on {self.workers} shards" + (", gathered to the driver" if gathered else "")


def _shardable(n: Node, local: dict[int, bool], sharded: set[int]) -> bool:
    if not local.get(n.node_id, False):
        return False
    private_kids = [c for c in n.children if _reads_private(c)]
    if any(c.node_id not in sharded for c in private_kids):
        return False
    if isinstance(n, Scan):
        return n.private
    if isinstance(n, ScalarRow):
        return False
    if isinstance(n, (Filter, Project)):
        return True
    if isinstance(n, Join):
        if n.how not in _SHARDED_JOINS:
            return False
        both = len(private_kids) == 2
        return both or (n.how == "inner") or (private_kids == [n.left])
    if isinstance(n, CrossOne):
        return private_kids == [n.left]
    if isinstance(n, SetOp):
        return n.op == "union_all" and len(private_kids) == 2
    return False


def _reads_private(n: Node) -> bool:
    return any(isinstance(m, Scan) and m.private for m in walk(n))


def place(root: Node, catalog: Catalog, workers: int) -> Placement:
    """Placement of the plan under ``root`` on ``workers`` workers (module doc)."""
    if workers <= 1:
        return Placement(workers, frozenset(), (), ())
    local = unit_local(root, catalog)
    nodes = list(walk(root))  # children before parents
    sharded: set[int] = set()
    for n in nodes:
        if _shardable(n, local, sharded):
            sharded.add(n.node_id)
    gathers: dict[int, Node] = {}
    broadcasts: dict[int, Node] = {}
    if root.node_id in sharded:
        gathers[root.node_id] = root
    for n in nodes:
        for c in n.children:
            if n.node_id not in sharded and c.node_id in sharded:
                gathers[c.node_id] = c
            if n.node_id in sharded and c.node_id not in sharded:
                if _reads_private(c):
                    raise RuntimeError(f"internal error: sharded {n.describe()} reads an unsharded private input")
                broadcasts[c.node_id] = c
    return Placement(workers, frozenset(sharded), tuple(gathers.values()), tuple(broadcasts.values()))
