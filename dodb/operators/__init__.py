"""Differentially oblivious relational operators on padded tables (docs/design.md §Operators and stability).

Every operator runs in three modes with one interface — ``do``, ``oblivious``,
``plain`` — takes its ``(epsilon, delta)`` explicitly and returns an :class:`OpResult`
``(table, leaks, trace)``.
"""
from .aggregate import Agg, group_by
from .context import MODES, ExecContext, Leak, OpResult, UnboundedStabilityError
from .filter import filter_table
from .join import join
from .project import evaluate, predicate_mask, project
from .setops import except_, intersect, set_operation, union, union_all
from .simulate import fake_like, simulate
from .sort_limit import SortKey, distinct, order_by
from .table import Column, PaddedTable, concat_tables, from_arrow

__all__ = [
    "MODES", "ExecContext", "Leak", "OpResult", "UnboundedStabilityError",
    "PaddedTable", "Column", "from_arrow", "concat_tables",
    "filter_table", "group_by", "Agg", "join", "order_by", "SortKey", "distinct",
    "union_all", "union", "intersect", "except_", "set_operation",
    "project", "evaluate", "predicate_mask", "simulate", "fake_like",
]
