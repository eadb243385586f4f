"""Deterministic, vectorised TPC-H data generator (DuckDB's ``tpch`` extension substitute).

``generate_tpch(con, scale_factor, seed)`` builds the eight TPC-H 2.x tables with
numpy, hands them to DuckDB as Arrow tables and returns their row counts.  Column
names and types follow DuckDB's dbgen (``dbgen.cpp``): BIGINT row keys, INTEGER
nation/region keys, ``DECIMAL(15,2)`` money/quantities/rates, ``DATE`` dates, VARCHAR
text, every column NOT NULL, no primary/foreign keys.

Value rules follow the spec (clause 4.2.3), with dbgen's choices where the spec
leaves room: sparse order keys (8 of every 32 used), custkey % 3 == 0 customers never
order, the partsupp supplier formula, integer-cent ``o_totalprice`` arithmetic.  The
few deliberate deviations (all to keep the 22 queries non-empty at small scale
factors) are marked "Deviation" below and listed in ``DEVIATIONS``.
"""
from __future__ import annotations

from importlib import resources
from typing import NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import sqlglot
from sqlglot import exp

from dodb import sqlbuild
from dodb.datasets import _tpch_text as tx

__all__ = ["generate_tpch", "tpch_query", "TABLES", "DEVIATIONS"]

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders",
          "lineitem")

DEVIATIONS = (
    "part: (brand, container) and (type, size) are drawn as balanced shuffles "
    "(each combination appears floor/ceil(n/k) times) instead of i.i.d.; marginals "
    "are the spec's uniform ones.",
    "supplier: s_nationkey is a balanced shuffle of the 25 nations (uniform marginal).",
    "supplier: 'Customer ... Complaints' / '... Recommends' comments go to exactly "
    "SF*5 suppliers each (spec: on average), but at least 1 each so Q16's filter "
    "bites at small SF.",
    "orders: below SF 0.1, 3 random orders get 7 lines of quantity 43..50 so Q18 "
    "(sum(l_quantity) > 300) has rows; from SF 0.1 up the data is untouched.",
    "part/lineitem: below SF 0.1, one part per Q19 branch is given that branch's "
    "brand/container/size and one line of it the branch's quantity, AIR and "
    "DELIVER IN PERSON; one part supplied by a CANADA supplier gets a 'forest...' "
    "name and a 1994 line (Q20).",
    "text: comments are random slices of a fixed 1 MiB pool generated from the spec "
    "grammar (dbgen uses a larger pool).",
)

_BASE_ROWS = {"supplier": 10_000, "customer": 150_000, "part": 200_000,
              "orders": 1_500_000}
START_DATE = int(np.datetime64("1992-01-01", "D").astype(np.int64))  # days since epoch
CURRENT_DATE = int(np.datetime64("1995-06-17", "D").astype(np.int64))
END_DATE = int(np.datetime64("1998-12-31", "D").astype(np.int64))
_Y1994 = int(np.datetime64("1994-01-01", "D").astype(np.int64))
_Y1995 = int(np.datetime64("1995-01-01", "D").astype(np.int64))
# Below SF 0.1 (150k orders) a few rows are planted so every query has an answer.
_SMALL_ORDERS = 150_000

# Random streams per table, so each table is reproducible on its own.
_STREAM = {name: i for i, name in enumerate(TABLES)}

_DDL = {
    "region": "r_regionkey INTEGER, r_name VARCHAR, r_comment VARCHAR",
    "nation": "n_nationkey INTEGER, n_name VARCHAR, n_regionkey INTEGER, "
              "n_comment VARCHAR",
    "supplier": "s_suppkey BIGINT, s_name VARCHAR, s_address VARCHAR, "
                "s_nationkey INTEGER, s_phone VARCHAR, s_acctbal DECIMAL(15,2), "
                "s_comment VARCHAR",
    "customer": "c_custkey BIGINT, c_name VARCHAR, c_address VARCHAR, "
                "c_nationkey INTEGER, c_phone VARCHAR, c_acctbal DECIMAL(15,2), "
                "c_mktsegment VARCHAR, c_comment VARCHAR",
    "part": "p_partkey BIGINT, p_name VARCHAR, p_mfgr VARCHAR, p_brand VARCHAR, "
            "p_type VARCHAR, p_size INTEGER, p_container VARCHAR, "
            "p_retailprice DECIMAL(15,2), p_comment VARCHAR",
    "partsupp": "ps_partkey BIGINT, ps_suppkey BIGINT, ps_availqty BIGINT, "
                "ps_supplycost DECIMAL(15,2), ps_comment VARCHAR",
    "orders": "o_orderkey BIGINT, o_custkey BIGINT, o_orderstatus VARCHAR, "
              "o_totalprice DECIMAL(15,2), o_orderdate DATE, o_orderpriority VARCHAR, "
              "o_clerk VARCHAR, o_shippriority INTEGER, o_comment VARCHAR",
    "lineitem": "l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, "
                "l_linenumber BIGINT, l_quantity DECIMAL(15,2), "
                "l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), "
                "l_tax DECIMAL(15,2), l_returnflag VARCHAR, l_linestatus VARCHAR, "
                "l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, "
                "l_shipinstruct VARCHAR, l_shipmode VARCHAR, l_comment VARCHAR",
}

# Columns DuckDB derives while loading (cheaper than building the strings in numpy).
_DERIVED = {
    "s_name": "'Supplier#' || lpad(CAST(s_suppkey AS VARCHAR), 9, '0')",
    "s_phone": "printf('%d-%d-%d-%d', s_nationkey + 10, ph1, ph2, ph3)",
    "c_name": "'Customer#' || lpad(CAST(c_custkey AS VARCHAR), 9, '0')",
    "c_phone": "printf('%d-%d-%d-%d', c_nationkey + 10, ph1, ph2, ph3)",
    "o_clerk": "'Clerk#' || lpad(CAST(clerk AS VARCHAR), 9, '0')",
}


# --------------------------------------------------------------------------- helpers
def _decimal(cents: np.ndarray) -> pa.Array:
    """int64 hundredths -> Arrow decimal128(15, 2), exactly (no float round trip)."""
    c = np.asarray(cents, dtype=np.int64)
    words = np.empty((len(c), 2), dtype=np.int64)
    words[:, 0] = c
    words[:, 1] = c >> 63  # sign extension into the high 64 bits
    return pa.Array.from_buffers(pa.decimal128(15, 2), len(c), [None, pa.py_buffer(words)])


def _date(days: np.ndarray) -> pa.Array:
    """Days since 1970-01-01 -> Arrow date32."""
    d = np.ascontiguousarray(days, dtype=np.int32)
    return pa.Array.from_buffers(pa.date32(), len(d), [None, pa.py_buffer(d)])


def _balanced(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """n values in [0, k), each used floor(n/k) or ceil(n/k) times, shuffled.

    Same uniform marginal as ``rng.integers(0, k, n)`` but without the sampling
    noise that can leave rare combinations (Q2, Q17, Q19) empty at small SF.
    """
    full, rest = divmod(n, k)
    vals = np.concatenate([np.tile(np.arange(k), full), rng.choice(k, rest, replace=False)])
    rng.shuffle(vals)
    return vals


def _supplier_of(partkey: np.ndarray, i: np.ndarray, n_supp: int) -> np.ndarray:
    """Spec 4.2.3 PS_SUPPKEY: the i-th (0..3) supplier of a part."""
    return (partkey + i * (n_supp // 4 + (partkey - 1) // n_supp)) % n_supp + 1


def _phone_parts(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Local number of a spec phone 'CC-LLL-LLL-LLLL' (country code added in SQL)."""
    return {"ph1": rng.integers(100, 1000, n), "ph2": rng.integers(100, 1000, n),
            "ph3": rng.integers(1000, 10000, n)}


def _row_counts(scale_factor: float) -> dict[str, int]:
    """Spec cardinalities (floored like dbgen); at least 4 suppliers for the formula."""
    n = {t: max(1, int(base * scale_factor + 1e-9)) for t, base in _BASE_ROWS.items()}
    n["supplier"] = max(4, n["supplier"])
    return n


# ---------------------------------------------------------------------- table makers
def _region(rng: np.random.Generator) -> pa.Table:
    return pa.table({
        "r_regionkey": np.arange(5, dtype=np.int32),
        "r_name": tx.REGIONS,
        "r_comment": tx.text_column(rng, 5, 31, 115),
    })


def _nation(rng: np.random.Generator) -> pa.Table:
    return pa.table({
        "n_nationkey": np.arange(25, dtype=np.int32),
        "n_name": [name for name, _ in tx.NATIONS],
        "n_regionkey": np.array([r for _, r in tx.NATIONS], dtype=np.int32),
        "n_comment": tx.text_column(rng, 25, 31, 114),
    })


def _supplier(rng: np.random.Generator, n: int) -> pa.Table:
    nation = _balanced(rng, n, 25)  # Deviation: balanced, see DEVIATIONS
    address = tx.vstring_column(rng, n, 10, 40)
    phone = _phone_parts(rng, n)
    acctbal = rng.integers(-99_999, 1_000_000, n)
    comment, length = tx.text_matrix(rng, n, 25, 100)
    # "Better Business Bureau" comments (spec 4.2.3): 'Customer ' ... 'Complaints' or
    # 'Recommends' spliced into the comment.  Deviation: exactly max(2, SF*10) of them.
    n_bbb = min(n, max(2, round(n / 1000)))
    rows = rng.choice(n, n_bbb, replace=False)
    noise = rng.integers(0, length[rows] - 19 + 1)
    start = rng.integers(0, length[rows] - 19 - noise + 1)
    for j, (r, s, z) in enumerate(zip(rows, start, noise)):  # <= SF*10 rows
        word = b"Complaints" if j < (n_bbb + 1) // 2 else b"Recommends"
        comment[r, s:s + 9] = np.frombuffer(b"Customer ", dtype=np.uint8)
        comment[r, s + 9 + z:s + 19 + z] = np.frombuffer(word, dtype=np.uint8)
    return pa.table({
        "s_suppkey": np.arange(1, n + 1, dtype=np.int64),
        "s_address": address,
        "s_nationkey": nation.astype(np.int32),
        **phone,
        "s_acctbal": _decimal(acctbal),
        "s_comment": tx.strings_from_matrix(comment, length),
    })


def _customer(rng: np.random.Generator, n: int) -> pa.Table:
    nation = rng.integers(0, 25, n)
    return pa.table({
        "c_custkey": np.arange(1, n + 1, dtype=np.int64),
        "c_address": tx.vstring_column(rng, n, 10, 40),
        "c_nationkey": nation.astype(np.int32),
        **_phone_parts(rng, n),
        "c_acctbal": _decimal(rng.integers(-99_999, 1_000_000, n)),
        "c_mktsegment": tx.pick(tx.SEGMENTS, rng.integers(0, 5, n)),
        "c_comment": tx.text_column(rng, n, 29, 116),
    })


def _retail_cents(partkey: np.ndarray) -> np.ndarray:
    """Spec P_RETAILPRICE in cents: 90000 + (key/10 mod 20001) + 100 * (key mod 1000)."""
    return 90_000 + (partkey // 10) % 20_001 + 100 * (partkey % 1_000)


class _Plant(NamedTuple):
    """One lineitem to overwrite so a selective query has an answer at small SF."""

    partkey: int
    suppkey: int
    qty: tuple[int, int]  # inclusive range
    mode: int  # index into SHIP_MODES, -1 = keep
    instruct: int  # index into INSTRUCTIONS, -1 = keep
    ship_1994: bool  # pick a line shipped in 1994 (Q20's window)


# Q19's three OR branches: brand, containers, p_size range, l_quantity range.
_Q19 = (("Brand#12", ("SM CASE", "SM BOX", "SM PACK", "SM PKG"), (1, 5), (1, 11)),
        ("Brand#23", ("MED BAG", "MED BOX", "MED PKG", "MED PACK"), (1, 10), (10, 20)),
        ("Brand#34", ("LG CASE", "LG BOX", "LG PACK", "LG PKG"), (1, 15), (20, 30)))
_BRANDS = [f"Brand#{m}{b}" for m in range(1, 6) for b in range(1, 6)]


def _part(rng: np.random.Generator, n: int, n_supp: int,
          supp_nation: np.ndarray | None) -> tuple[pa.Table, list[_Plant]]:
    """PART rows, plus the lineitems to plant when ``supp_nation`` is given (small SF)."""
    key = np.arange(1, n + 1, dtype=np.int64)
    # p_name: 5 distinct colours; redraw the rows that repeat one (~11% per round).
    colors = rng.integers(0, len(tx.COLORS), size=(n, 5))
    while True:
        srt = np.sort(colors, axis=1)
        dup = (srt[:, 1:] == srt[:, :-1]).any(axis=1)
        if not dup.any():
            break
        colors[dup] = rng.integers(0, len(tx.COLORS), size=(int(dup.sum()), 5))
    # Deviation: balanced combinations (see DEVIATIONS).  brand (0..24 = Brand#MN with
    # manufacturer M) and container share one draw; type and size another.
    combo = _balanced(rng, n, 25 * 40)
    brand, container = combo // 40, combo % 40
    ts = _balanced(rng, n, 150 * 50)
    ptype, size = ts // 50, ts % 50 + 1
    plants = [] if supp_nation is None else _plant_parts(
        rng, n_supp, supp_nation, colors, brand, container, size)
    return pa.table({
        "p_partkey": key,
        "p_name": tx.join_words(tx.COLORS, colors),
        "p_mfgr": tx.pick([f"Manufacturer#{m}" for m in range(1, 6)], brand // 5),
        "p_brand": tx.pick(_BRANDS, brand),
        "p_type": tx.pick(tx.TYPES, ptype),
        "p_size": size.astype(np.int32),
        "p_container": tx.pick(tx.CONTAINERS, container),
        "p_retailprice": _decimal(_retail_cents(key)),
        "p_comment": tx.text_column(rng, n, 5, 22),
    }), plants


def _plant_parts(rng: np.random.Generator, n_supp: int, supp_nation: np.ndarray,
                 colors: np.ndarray, brand: np.ndarray, container: np.ndarray,
                 size: np.ndarray) -> list[_Plant]:
    """Deviation (SF < 0.1 only): make Q19 and Q20 answerable for every seed.

    At SF 0.01 the spec distributions give Q19 ~1 qualifying line on average (NULL
    for ~30% of seeds) and Q20 a handful of candidates (empty for ~8%).  For each Q19
    branch one matching part is ensured (adjusting one part's attributes in place) and
    one line of it is planted; for Q20 one part supplied by a CANADA supplier gets a
    name starting with 'forest' and a line shipped in 1994.
    """
    n = len(brand)
    plants: list[_Plant] = []
    for name, conts, (s_lo, s_hi), qty in _Q19:
        b = _BRANDS.index(name)
        cidx = np.array([tx.CONTAINERS.index(c) for c in conts])
        cand = np.flatnonzero((brand == b) & np.isin(container, cidx))
        p = int(rng.choice(cand)) if len(cand) else int(rng.integers(0, n))
        brand[p] = b
        if container[p] not in cidx:
            container[p] = rng.choice(cidx)
        if not s_lo <= size[p] <= s_hi:
            size[p] = rng.integers(s_lo, s_hi + 1)
        supp = _supplier_of(np.int64(p + 1), rng.integers(0, 4), n_supp)
        plants.append(_Plant(p + 1, int(supp), qty, tx.SHIP_MODES.index("AIR"),
                             tx.INSTRUCTIONS.index("DELIVER IN PERSON"), False))
    canada = np.flatnonzero(supp_nation == [nm for nm, _ in tx.NATIONS].index("CANADA"))
    if len(canada):
        s = int(rng.choice(canada)) + 1
        keys = np.arange(1, n + 1, dtype=np.int64)[:, None]
        hit = _supplier_of(keys, np.arange(4), n_supp) == s  # (n, 4)
        cand = np.flatnonzero(hit.any(axis=1))
        if len(cand):
            p = int(rng.choice(cand))
            forest = tx.COLORS.index("forest")
            row = colors[p]
            row[row == forest] = row[0]  # swap keeps the 5 colours distinct
            row[0] = forest
            plants.append(_Plant(p + 1, s, (1, 10), -1, -1, True))
    return plants


def _partsupp(rng: np.random.Generator, n_part: int, n_supp: int) -> pa.Table:
    part = np.repeat(np.arange(1, n_part + 1, dtype=np.int64), 4)
    i = np.tile(np.arange(4, dtype=np.int64), n_part)
    m = len(part)
    return pa.table({
        "ps_partkey": part,
        "ps_suppkey": _supplier_of(part, i, n_supp),
        "ps_availqty": rng.integers(1, 10_000, m),
        "ps_supplycost": _decimal(rng.integers(100, 100_001, m)),
        "ps_comment": tx.text_column(rng, m, 49, 198),
    })


def _orders_lineitem(rng: np.random.Generator, n: int, n_cust: int, n_part: int,
                     n_supp: int, small: bool, plants: list[_Plant]
                     ) -> tuple[pa.Table, pa.Table]:
    """Orders and their 1..7 lineitems (generated together: totals depend on lines)."""
    idx = np.arange(1, n + 1, dtype=np.int64)
    okey = ((idx >> 3) << 5) + (idx & 7)  # dbgen mk_sparse: keep 8 of every 32 keys
    # Customers with custkey % 3 == 0 never order: draw the j-th non-multiple of 3.
    j = rng.integers(0, n_cust - n_cust // 3, n)
    custkey = j + j // 2 + 1
    odate = rng.integers(START_DATE, END_DATE - 151 + 1, n)
    priority = rng.integers(0, 5, n)
    clerk = rng.integers(1, max(1000, int(n / 1500)) + 1, n)  # SF*1000, >= 1000 (dbgen)
    o_comment = tx.text_column(rng, n, 19, 78)
    nlines = rng.integers(1, 8, n)
    # Deviation: guarantee a few Q18 "large volume" orders below SF 0.1.
    bulk = rng.choice(n, min(n, 3), replace=False) if small else np.empty(0, np.int64)
    nlines[bulk] = 7

    starts = np.cumsum(nlines) - nlines
    oi = np.repeat(np.arange(n), nlines)  # order index of each line
    m = len(oi)
    linenumber = np.arange(m) - starts[oi] + 1
    partkey = rng.integers(1, n_part + 1, m)
    suppkey = _supplier_of(partkey, rng.integers(0, 4, m), n_supp)
    qty = rng.integers(1, 51, m)
    in_bulk = np.isin(oi, bulk)
    qty[in_bulk] = rng.integers(43, 51, int(in_bulk.sum()))  # 7 * 43 = 301 > 300
    disc = rng.integers(0, 11, m)
    tax = rng.integers(0, 9, m)
    ship = odate[oi] + rng.integers(1, 122, m)
    commit = odate[oi] + rng.integers(30, 91, m)
    receipt = ship + rng.integers(1, 31, m)
    instruct = rng.integers(0, 4, m)
    mode = rng.integers(0, 7, m)
    free = ~in_bulk
    in_1994 = (ship >= _Y1994) & (ship < _Y1995)
    for pl in plants:  # Deviation (SF < 0.1): at most 4 planted lines, see _plant_parts
        where = np.flatnonzero(free & in_1994 if pl.ship_1994 else free)
        if len(where):
            j = rng.choice(where)
            partkey[j], suppkey[j], free[j] = pl.partkey, pl.suppkey, False
            qty[j] = rng.integers(pl.qty[0], pl.qty[1] + 1)
            mode[j] = pl.mode if pl.mode >= 0 else mode[j]
            instruct[j] = pl.instruct if pl.instruct >= 0 else instruct[j]
    # returnflag: R/A at random once received by CURRENTDATE, else N.
    rflag = np.where(receipt <= CURRENT_DATE, rng.integers(0, 2, m), 2)
    shipped = ship <= CURRENT_DATE  # linestatus F, else O
    price = qty * _retail_cents(partkey)
    # o_totalprice as dbgen computes it, in integer cents, truncating each step.
    charge = (price * (100 - disc) // 100) * (100 + tax) // 100
    total = np.add.reduceat(charge, starts)
    n_f = np.add.reduceat(shipped.astype(np.int64), starts)
    status = np.where(n_f == nlines, 0, np.where(n_f == 0, 1, 2))  # F, O, P

    orders = pa.table({
        "o_orderkey": okey,
        "o_custkey": custkey,
        "o_orderstatus": tx.pick(["F", "O", "P"], status),
        "o_totalprice": _decimal(total),
        "o_orderdate": _date(odate),
        "o_orderpriority": tx.pick(tx.PRIORITIES, priority),
        "clerk": clerk,
        "o_shippriority": np.zeros(n, dtype=np.int32),
        "o_comment": o_comment,
    })
    lineitem = pa.table({
        "l_orderkey": okey[oi],
        "l_partkey": partkey,
        "l_suppkey": suppkey,
        "l_linenumber": linenumber,
        "l_quantity": _decimal(qty * 100),
        "l_extendedprice": _decimal(price),
        "l_discount": _decimal(disc),
        "l_tax": _decimal(tax),
        "l_returnflag": tx.pick(["R", "A", "N"], rflag),
        "l_linestatus": tx.pick(["O", "F"], shipped.astype(np.int8)),
        "l_shipdate": _date(ship),
        "l_commitdate": _date(commit),
        "l_receiptdate": _date(receipt),
        "l_shipinstruct": tx.pick(tx.INSTRUCTIONS, instruct),
        "l_shipmode": tx.pick(tx.SHIP_MODES, mode),
        "l_comment": tx.text_column(rng, m, 10, 43),
    })
    return orders, lineitem


# --------------------------------------------------------------------------- loading
def _load(con: duckdb.DuckDBPyConnection, name: str, schema: str | None, data: pa.Table) -> int:
    """CREATE OR REPLACE table ``name`` with the dbgen schema and insert ``data``.

    The statements are sqlglot expressions (quoted identifiers), never pasted text.
    """
    # "DECIMAL(15,2)" has no space after its comma, so ", " splits columns safely.
    defs = [c.split(" ", 1) for c in _DDL[name].split(", ")]
    target = sqlbuild.table(name, schema)
    columns = [exp.ColumnDef(this=exp.to_identifier(c, quoted=True), kind=exp.DataType.build(t, dialect="duckdb"),
                             constraints=[exp.ColumnConstraint(kind=exp.NotNullColumnConstraint())])
               for c, t in defs]
    con.execute(sqlbuild.render(exp.Create(this=exp.Schema(this=target, expressions=columns), kind="TABLE",
                                           replace=True)))
    view = f"__dodb_tpch_{name}"
    select = exp.select(*(sqlglot.parse_one(_DERIVED[c], dialect="duckdb") if c in _DERIVED else sqlbuild.column(c)
                          for c, _ in defs)).from_(sqlbuild.table(view))
    con.register(view, data)
    try:
        con.execute(sqlbuild.render(exp.insert(select, target)))
    finally:
        con.unregister(view)
    return data.num_rows


def generate_tpch(con: duckdb.DuckDBPyConnection, scale_factor: float = 0.01,
                  seed: int = 0, schema: str | None = None) -> dict[str, int]:
    """Create (or replace) the 8 TPC-H tables in ``con``; return their row counts.

    Deterministic in ``(scale_factor, seed)``.  ``schema`` (created if missing)
    qualifies the table names; by default they go to the current schema.
    """
    if not scale_factor > 0:
        raise ValueError("scale_factor must be positive")
    if seed < 0:
        raise ValueError("seed must be non-negative")
    n = _row_counts(scale_factor)

    def rng(table: str) -> np.random.Generator:
        return np.random.default_rng([seed, _STREAM[table]])

    if schema is not None:
        con.execute(sqlbuild.create_schema(schema))
    counts: dict[str, int] = {}

    def load(name: str, data: pa.Table) -> None:
        counts[name] = _load(con, name, schema, data)

    # Build and load one table at a time to bound peak memory.
    load("region", _region(rng("region")))
    load("nation", _nation(rng("nation")))
    small = n["orders"] < _SMALL_ORDERS
    supplier = _supplier(rng("supplier"), n["supplier"])
    supp_nation = supplier.column("s_nationkey").to_numpy() if small else None
    load("supplier", supplier)
    load("customer", _customer(rng("customer"), n["customer"]))
    part, plants = _part(rng("part"), n["part"], n["supplier"], supp_nation)
    load("part", part)
    del part
    load("partsupp", _partsupp(rng("partsupp"), n["part"], n["supplier"]))
    orders, lineitem = _orders_lineitem(rng("orders"), n["orders"], n["customer"],
                                        n["part"], n["supplier"], small, plants)
    load("orders", orders)
    del orders
    load("lineitem", lineitem)
    return {t: counts[t] for t in TABLES}


def tpch_query(n: int) -> str:
    """Text of TPC-H query ``n`` (1..22), from the packaged ``tpch_queries`` folder."""
    if not 1 <= n <= 22:
        raise ValueError(f"TPC-H query number must be in 1..22, got {n}")
    return (resources.files("dodb.datasets") / "tpch_queries" / f"q{n:02d}.sql").read_text()


PRIVATE_TABLES = ("customer", "orders", "lineitem")
PUBLIC_TABLES = ("part", "partsupp", "supplier", "nation", "region")


# Public policy for the sample data (TPC-H spec column widths; bounds that hold for the
# built-in generator up to scale factor 1: at most 34 orders per customer, 60 lines per
# part, 686 per supplier were measured at sf 1).
TPCH_WIDTHS = {
    "customer": {"c_name": 25, "c_address": 40, "c_phone": 15, "c_mktsegment": 10, "c_comment": 117},
    "orders": {"o_orderstatus": 1, "o_orderpriority": 15, "o_clerk": 15, "o_comment": 79},
    "lineitem": {"l_returnflag": 1, "l_linestatus": 1, "l_shipinstruct": 25, "l_shipmode": 10, "l_comment": 44},
}
MAX_ORDERS_PER_CUSTOMER = 40


def protect_tpch(db, *, epsilon: float | None = None) -> None:
    """Declare the TPC-H privacy units used by the demo, the tests and the benchmarks.

    customer is the privacy unit (one row per customer); orders reach it through
    ``o_custkey -> customer.c_custkey`` (at most 40 per customer) and lineitem through
    ``l_orderkey -> orders.o_orderkey`` (at most 7 lines per order), so joins along that
    path are same-unit joins.  part, partsupp, supplier, nation and region stay public.
    Every bound and width is declared policy; each table's size is released as its
    capacity with ``epsilon`` (default: the database's share for owner actions).
    """
    db.protect("customer", "c_custkey", max_contributions=1, keys=[["c_custkey"]],
               widths=TPCH_WIDTHS["customer"], epsilon=epsilon)
    db.protect("orders", "o_custkey", parent=("customer", "c_custkey"), max_contributions=MAX_ORDERS_PER_CUSTOMER,
               keys=[["o_orderkey"]], widths=TPCH_WIDTHS["orders"], epsilon=epsilon)
    db.protect("lineitem", "l_orderkey", parent=("orders", "o_orderkey"), max_contributions=7,
               keys=[["l_orderkey", "l_linenumber"]], max_degree={"l_partkey": 64, "l_suppkey": 800},
               widths=TPCH_WIDTHS["lineitem"], epsilon=epsilon)
