"""The relation a SELECT is built from (planner/build.py) and small helpers over it."""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from .logical import Node

__all__ = ["_Rel", "_refs", "_col", "_all_public"]


@dataclass
class _Rel:
    """A relation under construction: plan node + (alias, column) → internal name."""

    node: Node
    cols: dict[tuple[str, str], str]
    aliases: set[str] = field(default_factory=set)
    position: str | None = None  # where the FROM item is written (for error messages)
    scalar: bool = False  # a scalar subquery unnested by sqlglot: must hold at most one row


def _refs(e: exp.Expression) -> set[str]:
    return {c.table for c in e.find_all(exp.Column) if c.table}


def _all_public(node: Node) -> bool:
    return node.stability == 0 and all(_all_public(c) for c in node.children)
