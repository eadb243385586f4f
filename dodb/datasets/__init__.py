"""Built-in benchmark data sets (currently a deterministic TPC-H generator)."""
from __future__ import annotations

from dodb.datasets.tpch import generate_tpch, tpch_query

__all__ = ["generate_tpch", "tpch_query"]
