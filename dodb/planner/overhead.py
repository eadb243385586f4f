"""Expected padding overhead of a DO plan, for EXPLAIN (docs/design.md §Samplers).

Every released size is the true size plus one-sided noise with mean ``shift`` (symmetric
around ``shift`` on ``[0, 2·shift]``), and an operator never pads beyond its public
bound.  So, relative to the plain plan, which handles only the true rows, a release adds
about ``shift`` dummy rows — ``shift`` per bin for a binned filter — capped at the
node's bound.  Everything here is computed from public numbers (shifts, bounds), so
EXPLAIN can show it before anything runs; a smaller ε means a larger shift.
"""
from __future__ import annotations

from dataclasses import dataclass

from .logical import Filter, Node, upper_rows

__all__ = ["PaddingOverhead", "padding_overhead", "padding_line"]


@dataclass
class PaddingOverhead:
    operator: str
    release: str
    expected_dummies: int      # mean extra rows over the true size (capped at the bound)
    worst_dummies: int         # 2·shift per bin, capped at the bound
    bound: int                 # the node's public padded-size bound


def _bins(node: Node, shift: int) -> int:
    """Bins a binned filter cuts its aligned input into (operators/filter.py)."""
    if not (isinstance(node, Filter) and getattr(node, "binned", False)):
        return 1
    from ..operators.filter import default_bin_size

    n = max(1, upper_rows(node.child))
    return -(-n // default_bin_size(n, shift))


def padding_overhead(event_nodes) -> list[PaddingOverhead]:
    """One entry per release of the plan (``QueryPlan.event_nodes``)."""
    out = []
    for node, name, _s, _eps, _delta, mech in event_nodes:
        bound = max(0, upper_rows(node))
        k = _bins(node, int(mech.shift))
        out.append(PaddingOverhead(f"{node.kind}#{node.node_id}", name, min(k * int(mech.shift), bound),
                                   min(2 * k * int(mech.shift), bound), bound))
    return out


def padding_line(event_nodes) -> str:
    """EXPLAIN's line on the expected padding overhead (rows relative to the plain plan)."""
    items = padding_overhead(event_nodes)
    if not items:
        return "padding: none (no size is released; operators run at their public sizes)"
    total = sum(i.expected_dummies for i in items)
    worst = sum(i.worst_dummies for i in items)
    parts = ", ".join(f"{i.operator} +{i.expected_dummies}" + (" (its bound)" if i.expected_dummies == i.bound
                                                              else "") for i in items)
    return (f"padding: expected +{total} dummy rows over the plain plan's true sizes (at most +{worst}; "
            f"{parts}); each costs work like a real row, and halving ε about doubles it")
