"""Where each plan node runs on a cluster of ``P`` workers (docs/distributed.md §Placement).

The plan is data; placement is a pure function of it, the catalog and ``P``, and the
executors (dodb/executors) follow it.  Private tables are sharded by privacy unit
(dodb/storage/shards.py), so a node whose output is a union over units of rows fixed by
each unit's own rows (``unit_local``: scans, row-wise filters and projections, joins along
the unit path or with a public side, UNION ALL) runs on every worker over its shard, and
the workers' outputs together are the node's output.  An :class:`~.logical.Exchange` over
such a node runs on every worker too and sends each row to the worker its keys hash to;
the aggregate or DISTINCT above it, or the join or set operation above two of them
(co-partitioned by the join keys, or the columns), and row-wise nodes above that then run on
every worker over the rows it received (*keyed*) — as do such nodes over a keyed input already
partitioned by the keys they need (planner/key_partitioning.py, docs/distributed.md
§Partitioned inputs) and a UNION ALL of two keyed inputs; so does the local top-k of an
ORDER BY … LIMIT over worker rows (docs/distributed.md §Top-k).  Every other node that reads
private rows runs on the driver, on the gathered outputs; public sub-plans run on the driver
and are broadcast to the workers that read them.  Each release of a sharded or keyed node is made by every worker
over its own rows: one unit's rows sit on one shard, and a keyed node's rows on one worker
each, so the workers' released vectors together move by no more than the single-process
release's sensitivity (docs/distributed.md §Sharded execution).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .catalog import Catalog
from .key_partitioning import Partitioning, covers, paired_positions, partitioning
from .logical import (Aggregate, CrossOne, Distinct, Exchange, Filter, Join, Node, Project, ScalarRow, Scan, SetOp,
                      Sort, walk)
from .partitions import unit_local

__all__ = ["Placement", "Placer", "place", "shardable"]

# joins whose output rows are each one row of the sharded (private) side's unit; the
# public side, broadcast whole to every worker, must not be preserved (its unmatched rows
# would be repeated on every worker)
_SHARDED_JOINS = ("inner", "left", "semi", "anti")


@dataclass(frozen=True)
class Placement:
    """``sharded``: nodes every worker runs over its shard.  ``exchanges``: Exchange nodes over
    sharded inputs (every worker sends its rows by key).  ``keyed``: nodes every worker runs over
    the rows the exchanges sent it.  ``gathers``: sharded or keyed nodes whose output the
    driver reads (concatenated in worker order).  ``broadcasts``: driver nodes a worker reads
    (public sub-plans, sent whole to every worker)."""

    workers: int
    sharded: frozenset[int]
    gathers: tuple[Node, ...]
    broadcasts: tuple[Node, ...]
    exchanges: tuple[Exchange, ...] = ()
    keyed: frozenset[int] = frozenset()
    # node id -> the round it runs in (an exchange: the round it sends in); §Rounds
    rounds: dict[int, int] = field(default_factory=dict)
    # keyed node id -> the column lists its rows are partitioned by (planner/key_partitioning.py)
    partitioned: dict[int, frozenset] = field(default_factory=dict)

    def describe(self, node: Node) -> str | None:
        """EXPLAIN's note for ``node``."""
        gathered = ", gathered to the driver" if any(g.node_id == node.node_id for g in self.gathers) else ""
        if node.node_id in self.sharded:
            return f"on {self.workers} shards{gathered}"
        if any(x.node_id == node.node_id for x in self.exchanges):
            then = self.rounds.get(node.node_id, 1) + 1
            return f"every worker sends its rows to {self.workers} workers by key, for round {then}"
        if isinstance(node, Sort) and node.node_id in self.keyed:
            return f"on {self.workers} workers, each keeps its first {node.limit} rows{gathered}"
        if node.node_id in self.keyed:
            kept = isinstance(node, (Aggregate, Distinct, Join, SetOp)) and \
                any(c.node_id in self.keyed for c in node.children)
            # an input already partitioned by the keys it needs: no exchange (§Partitioned inputs)
            note = ", an input already partitioned by its keys" if kept else ""
            return f"on {self.workers} workers, by key{note}{gathered}"
        return None

    @property
    def distributed(self) -> bool:
        return bool(self.gathers)


def _reads_private(n: Node, memo: dict[int, bool]) -> bool:
    if n.node_id not in memo:
        memo[n.node_id] = (isinstance(n, Scan) and n.private) or any(_reads_private(c, memo) for c in n.children)
    return memo[n.node_id]


def shardable(n: Node, local: dict[int, bool], sharded: set[int], memo: dict[int, bool]) -> bool:
    """Whether ``n`` runs on every shard, given which of its children do."""
    if not local.get(n.node_id, False):
        return False
    private_kids = [c for c in n.children if _reads_private(c, memo)]
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
        return len(private_kids) == 2 or n.how == "inner" or private_kids == [n.left]
    if isinstance(n, CrossOne):
        return private_kids == [n.left]
    if isinstance(n, SetOp):
        return n.op == "union_all" and len(private_kids) == 2
    return False


def _public_side_ok(n: Node, on_workers_kids: list[Node], private_kids: list[Node]) -> bool:
    """Whether ``n``, one of whose inputs runs on the workers and the others are public (broadcast
    whole), outputs one row per worker row at most once: an inner join, or a LEFT/semi/anti join
    or a CrossOne whose preserved side is the worker side (a preserved public side would repeat on
    every worker)."""
    if on_workers_kids != private_kids or len(private_kids) != 1:
        return False
    if isinstance(n, Join):
        return n.how == "inner" or (n.how in ("left", "semi", "anti") and private_kids == [n.left])
    if isinstance(n, CrossOne):
        return private_kids == [n.left]
    return isinstance(n, (Filter, Project)) and not isinstance(n, ScalarRow)


class Placer:
    """Places the nodes of a plan one by one, children before parents (module doc): where each
    runs, the round it runs in (docs/distributed.md §Rounds) and, on the workers, the columns its
    rows are partitioned by (planner/key_partitioning.py).  Shared by :func:`place` and the pass
    that plans the exchanges (planner/exchanges.py), so the two agree."""

    def __init__(self, root: Node, catalog: Catalog, workers: int):
        self.workers = workers
        self.local = unit_local(root, catalog)
        self.memo: dict[int, bool] = {}
        self.sharded: set[int] = set()
        self.keyed: set[int] = set()
        self.exchanges: dict[int, Exchange] = {}
        self.rounds: dict[int, int] = {}  # node id -> the round it runs in (an exchange: sends in)
        self.parts: dict[int, Partitioning] = {}

    def on_workers(self, n: Node) -> bool:
        return n.node_id in self.sharded or n.node_id in self.keyed

    def partitioned(self, n: Node) -> Partitioning:
        return self.parts.get(n.node_id, frozenset())

    def arrives(self, n: Node) -> int:
        """The round ``n``'s rows are on the workers for: an exchange's, the round after it sends."""
        return self.rounds[n.node_id] + (1 if n.node_id in self.exchanges else 0)

    def reads_private(self, n: Node) -> bool:
        return _reads_private(n, self.memo)

    def side(self, n: Node) -> str | None:
        """Where ``n`` runs given where its children do: ``"sharded"``, ``"exchange"`` (it sends
        its input's rows by key), ``"keyed"`` (every worker over rows exchanges sent it, or a
        local top-k), or ``None`` (the driver)."""
        if shardable(n, self.local, self.sharded, self.memo):
            return "sharded"
        if isinstance(n, Exchange):
            return "exchange" if self.on_workers(n.child) and n.parts == self.workers else None
        if isinstance(n, (Aggregate, Distinct)):  # its input exchanged, or already partitioned, by its keys
            keys = n.keys if isinstance(n, Aggregate) else n.columns
            by_key = n.child.node_id in self.exchanges or (
                n.child.node_id in self.keyed and covers(self.partitioned(n.child), keys))
            return "keyed" if keys and by_key else None
        if isinstance(n, (Join, SetOp)) and n.copartitioned:
            return "keyed" if self._copartitioned(n) else None
        if isinstance(n, SetOp) and n.op == "union_all" and all(c.node_id in self.keyed for c in n.children) \
                and self.arrives(n.left) == self.arrives(n.right):
            return "keyed"  # every row stays on its worker (docs/distributed.md §Set operations)
        if isinstance(n, Sort):  # a local top-k over any worker rows (docs/distributed.md §Top-k)
            return "keyed" if n.per_worker == self.workers and self.on_workers(n.child) else None
        kids = [c for c in n.children if c.node_id in self.keyed]
        if kids and _public_side_ok(n, kids, [c for c in n.children if self.reads_private(c)]):
            return "keyed"  # row-wise on a keyed node's rows (HAVING, a projection, a public side)
        return None

    def _copartitioned(self, n: "Join | SetOp") -> bool:
        """A join or set operation the exchanges pass planned co-partitioned: both sides on the
        workers, partitioned alike by its paired keys (docs/distributed.md §Partitioned inputs),
        and a side that is not exchanged is there in the round the other arrives (its rows are
        not held across rounds)."""
        sides = n.children
        if not all(c.node_id in self.exchanges or c.node_id in self.keyed for c in sides):
            return False
        lk, rk = (n.left_keys, n.right_keys) if isinstance(n, Join) else (n.left.columns, n.right.columns)
        alike = paired_positions(self.partitioned(n.left), lk) & paired_positions(self.partitioned(n.right), rk)
        last = max(self.arrives(c) for c in sides)
        if not alike or any(self.arrives(c) != last for c in sides if c.node_id not in self.exchanges):
            raise RuntimeError(f"internal error: {n.describe()} is planned co-partitioned but its inputs are not "
                               "on the workers by its keys in one round")
        return True

    def add(self, n: Node) -> str | None:
        """Place ``n``, its children placed already (again, after an exchange was put under it);
        returns its side (:meth:`side`)."""
        self.sharded.discard(n.node_id)
        self.keyed.discard(n.node_id)
        self.exchanges.pop(n.node_id, None)
        side = self.side(n)
        if side is None:
            return None
        {"sharded": self.sharded, "keyed": self.keyed}.get(side, set()).add(n.node_id)
        if side == "exchange":
            self.exchanges[n.node_id] = n
        self.rounds[n.node_id] = max((self.arrives(c) for c in n.children if c.node_id in self.rounds), default=1)
        # a shard's rows sit at a keyed hash of their unit's label, not at partition_of of a column
        self.parts[n.node_id] = frozenset() if side == "sharded" else \
            partitioning(n, [self.partitioned(c) for c in n.children])
        return side


def place(root: Node, catalog: Catalog, workers: int) -> Placement:
    """Placement of the plan under ``root`` on ``workers`` workers (module doc)."""
    if workers <= 1:
        return Placement(workers, frozenset(), (), ())
    placer = Placer(root, catalog, workers)
    nodes = list(walk(root))  # children before parents
    for n in nodes:
        placer.add(n)
    sharded, keyed, exchanges = placer.sharded, placer.keyed, placer.exchanges
    on_workers = sharded | keyed
    gathers: dict[int, Node] = {}
    broadcasts: dict[int, Node] = {}
    if root.node_id in on_workers:
        gathers[root.node_id] = root
    for n in nodes:
        for c in n.children:
            parent_on_workers = n.node_id in on_workers or n.node_id in exchanges
            if not parent_on_workers and c.node_id in on_workers:
                gathers[c.node_id] = c
            if parent_on_workers and c.node_id not in on_workers and c.node_id not in exchanges:
                if placer.reads_private(c):
                    raise RuntimeError(f"internal error: {n.describe()} runs on the workers but reads an unplaced "
                                       "private input")
                broadcasts[c.node_id] = c
    return Placement(workers, frozenset(sharded), tuple(gathers.values()), tuple(broadcasts.values()),
                     tuple(exchanges.values()), frozenset(keyed), dict(placer.rounds),
                     {k: v for k, v in placer.parts.items() if k in keyed})
