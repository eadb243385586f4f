"""SQL → differentially oblivious plan (docs/design.md §Layers, §Execution path).

:func:`plan_query` parses and optimises with sqlglot, builds the DO plan, splits the
query's budget over the leaking operators and lists their privacy events — all before
anything runs.  :meth:`QueryPlan.execute` then runs it on the DO operators.
"""
from .catalog import Catalog, TableInfo
from .plan import ALLOCATIONS, QueryPlan, allocate, plan_query

__all__ = ["Catalog", "TableInfo", "QueryPlan", "plan_query", "allocate", "ALLOCATIONS"]
