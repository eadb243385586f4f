"""Fixtures shared by the cluster tests (docs/distributed.md)."""
from __future__ import annotations

import pytest

from .cluster_db import tpch_cluster_db


@pytest.fixture(scope="module")
def three():
    """TPC-H sf 0.002 sharded 3 ways, inline workers: the coupled-neighbour audit's database."""
    d = tpch_cluster_db("add_remove", 3, 0.002, seed=8)
    yield d
    d.close()


@pytest.fixture(scope="module")
def db2():
    """TPC-H sf 0.01 sharded 2 ways, inline workers."""
    d = tpch_cluster_db("add_remove", 2, 0.01, seed=9)
    yield d
    d.close()
