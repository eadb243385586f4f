"""A small protected TPC-H database shared by planner and API tests (customer = privacy unit)."""
from __future__ import annotations

import dodb
from dodb.datasets import generate_tpch

PRIVATE = ("customer", "orders", "lineitem")
PUBLIC = ("part", "partsupp", "supplier", "nation", "region")


def protect_tpch(db: "dodb.Database") -> None:
    db.protect("customer", "c_custkey", max_contributions=1, keys=[["c_custkey"]])
    db.protect("orders", "o_custkey", parent=("customer", "c_custkey"),
               keys=[["o_orderkey"]])
    db.protect("lineitem", "l_orderkey", parent=("orders", "o_orderkey"), max_contributions=7,
               keys=[["l_orderkey", "l_linenumber"]], max_degree={"l_partkey": None, "l_suppkey": None})


def tpch_database(scale: float = 0.01, path: str = ":memory:", budget: float = 1e6, seed: int = 1) -> "dodb.Database":
    db = dodb.connect(path, seed=seed, allow_insecure=True)
    generate_tpch(db.con, scale)
    protect_tpch(db)
    db.set_budget(epsilon=budget, delta=0.5)
    return db
