"""Built-in benchmark data sets (currently a deterministic TPC-H generator)."""
from __future__ import annotations

from dodb.datasets.tpch import PRIVATE_TABLES, PUBLIC_TABLES, TPCH_WIDTHS, generate_tpch, protect_tpch, tpch_query

__all__ = ["PRIVATE_TABLES", "PUBLIC_TABLES", "TPCH_WIDTHS", "generate_tpch", "protect_tpch", "tpch_query"]
