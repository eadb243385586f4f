"""TPC-DS (99 queries) on dodb with private sales tables, compared with DuckDB (issue 14).

Data and queries come from DuckDB's ``tpcds`` extension (``dsdgen``, ``tpcds_queries()``).
That extension cannot be downloaded at run time here, and the PyPI package that ships it
(``duckdb-extension-tpcds``) is built for an older DuckDB than dodb's, so the generator runs in
a side virtual environment of its own (made once under ``--data``; nothing of it is
committed, neither the data nor the query texts).

Privacy setup (the issue's "sales tables protected, NULL-customer rows kept"): ``customer``
is the privacy unit (``c_customer_sk``; keys ``c_customer_sk`` and the business key
``c_customer_id``, verified unique at protect), and ``store_sales`` / ``catalog_sales`` /
``web_sales`` reach it through their customer key (``parent=("customer", "c_customer_sk")``);
a sale with a NULL customer is a unit of its own (docs/neighbours.md §Privacy units).
``max_contributions`` is the largest number of sales of one customer (an owner declaration,
public).  Every query runs in its own process with a time limit, on its own copy of the
protected file; its answer is compared with DuckDB's on the plain tables (floats to 1e-6
relative, order compared only where the query orders its whole output).
"""
from __future__ import annotations

import argparse
import decimal
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import DEFAULT_OUT, PeakMemory, fmt_bytes, machine_info, machine_lines, write_json

GENERATOR_PACKAGE = "duckdb-extension-tpcds==1.5.5"
SALES = (("store_sales", "ss_customer_sk", ["ss_item_sk", "ss_ticket_number"]),
         ("catalog_sales", "cs_bill_customer_sk", ["cs_item_sk", "cs_order_number"]),
         ("web_sales", "ws_bill_customer_sk", ["ws_item_sk", "ws_order_number"]))

_GENERATE = r"""
import duckdb, glob, os, sys
import duckdb_extension_tpcds as pkg
scale, out = float(sys.argv[1]), sys.argv[2]
ext = glob.glob(os.path.join(os.path.dirname(pkg.__file__), "extensions", "*", "tpcds.duckdb_extension"))[0]
con = duckdb.connect()
con.execute(f"LOAD '{ext}'")
con.execute(f"CALL dsdgen(sf={scale})")
os.makedirs(os.path.join(out, "tables"), exist_ok=True)
os.makedirs(os.path.join(out, "queries"), exist_ok=True)
for (t,) in con.execute("SHOW TABLES").fetchall():
    con.execute(f"COPY {t} TO '{os.path.join(out, 'tables', t + '.parquet')}' (FORMAT parquet)")
for n, q in con.execute("SELECT query_nr, query FROM tpcds_queries()").fetchall():
    open(os.path.join(out, "queries", f"q{n:02d}.sql"), "w").write(q)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", type=float, default=0.01)
    p.add_argument("--data", type=Path, default=Path.home() / ".cache" / "dodb" / "tpcds",
                   help="where the generator's environment, tables and queries are kept")
    p.add_argument("--queries", default="1-99", help="e.g. 1-99 or 4,11,74")
    p.add_argument("--epsilon", type=float, default=1.0, help="ε per query")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per query")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--tag", default="", help="suffix of the report's file name")


def _query_numbers(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def generate(data: Path, scale: float) -> Path:
    """Tables (Parquet) and query texts at ``scale``, made once with the side generator."""
    where = data / f"sf{scale:g}"
    if (where / "queries" / "q99.sql").exists():
        return where
    venv = data / "generator-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", GENERATOR_PACKAGE], check=True)
    subprocess.run([str(py), "-c", _GENERATE, str(scale), str(where)], check=True)
    return where


def _widths(con, table: str) -> dict[str, int]:
    cols = con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND data_type = 'VARCHAR'",
                       [table]).fetchall()
    return {c: max(1, int(con.execute(f'SELECT coalesce(max(strlen("{c}")), 1) FROM "{table}"').fetchall()[0][0]))
            for (c,) in cols}


def build(where: Path) -> tuple[Path, Path]:
    """``raw.duckdb`` (the oracle's plain tables) and ``dodb.duckdb`` (sales tables private)."""
    import duckdb

    import dodb

    raw, prot = where / "raw.duckdb", where / "dodb.duckdb"
    for f in (raw, prot):
        f.unlink(missing_ok=True)
    for path in (raw, prot):
        con = duckdb.connect(str(path))
        for p in sorted((where / "tables").glob("*.parquet")):
            con.execute(f'CREATE TABLE "{p.stem}" AS SELECT * FROM read_parquet(?)', [str(p)])
        con.close()
    db = dodb.connect(str(prot))
    db.set_budget(epsilon=1e6, delta=0.5)
    # c_customer_id is TPC-DS's business key of a customer (unique; verified at protect): queries
    # group by it (Q4, Q11, Q74's year_total), and the key lets the planner see those groups are
    # one per customer (docs/design.md §Degrees from structure)
    db.protect("customer", privacy_unit="c_customer_sk", max_contributions=1,
               keys=[["c_customer_sk"], ["c_customer_id"]],
               widths=_widths(db.con, "customer"))
    for table, fk, key in SALES:
        most = db.con.execute(f"SELECT max(c) FROM (SELECT count(*) AS c FROM {table} "
                              f"WHERE {fk} IS NOT NULL GROUP BY {fk})").fetchall()[0][0]
        db.protect(table, privacy_unit=fk, parent=("customer", "c_customer_sk"), max_contributions=int(most),
                   keys=[key], widths=_widths(db.con, table))
    db.close()
    return raw, prot


def _norm(v):
    if isinstance(v, (float, decimal.Decimal)):
        f = float(v)
        return round(f, 6 - int(math.floor(math.log10(abs(f))))) if f and math.isfinite(f) else f
    return v


def compare(got: list[tuple], expected: list[tuple]) -> str:
    a = [tuple(map(_norm, r)) for r in got]
    b = [tuple(map(_norm, r)) for r in expected]
    if a == b:
        return "equal"
    if sorted(a, key=repr) == sorted(b, key=repr):
        return "equal (order of ties differs)"
    return "WRONG"


def run_one(q: int, where: Path, epsilon: float) -> dict:
    """One query in this process: DuckDB's answer, then dodb's on a copy of the private file."""
    import duckdb

    import dodb

    sql = (where / "queries" / f"q{q:02d}.sql").read_text()
    expected = duckdb.connect(str(where / "raw.duckdb"), read_only=True).sql(sql).fetchall()
    out: dict = {"query": q}
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "dodb.duckdb"
        shutil.copy(where / "dodb.duckdb", copy)
        db = dodb.connect(str(copy))
        t0 = time.perf_counter()
        try:
            with PeakMemory(release_heap=True) as peak:
                got = db.sql(sql, epsilon=epsilon).fetchall()
            out.update(status=compare(got, expected), seconds=time.perf_counter() - t0, peak_bytes=peak.peak_bytes,
                       rows=len(expected))
        except Exception as e:  # recorded, not raised: the report lists every refusal
            out.update(status="refused" if type(e).__module__.startswith("dodb") else "error",
                       seconds=time.perf_counter() - t0, error=f"{type(e).__name__}: {str(e).splitlines()[0][:240]}")
        db.close()
    return out


def run(args: argparse.Namespace) -> int:
    where = generate(args.data, args.scale)
    build(where)
    rows = []
    for q in _query_numbers(args.queries):
        cmd = [sys.executable, "-m", "benchmarks.tpcds", "--one", str(q), str(where), str(args.epsilon)]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                               cwd=Path(__file__).resolve().parent.parent)
            line = (p.stdout.strip().splitlines() or [""])[-1]
            row = json.loads(line) if line.startswith("{") else {
                "query": q, "status": "crash", "error": (p.stderr.strip().splitlines() or ["no output"])[-1][:240]}
        except subprocess.TimeoutExpired:
            row = {"query": q, "status": "timeout", "seconds": args.timeout}
        rows.append(row)
        print(f"q{q:02d} {row['status']:<10} {row.get('seconds', 0):7.2f}s {row.get('error', '')}", flush=True)
    data = {"benchmark": "tpcds", "scale": args.scale, "epsilon": args.epsilon, "timeout": args.timeout,
            "machine": machine_info(), "command": "python -m benchmarks tpcds " + " ".join(sys.argv[2:]), "rows": rows}
    name = f"tpcds_sf{args.scale:g}{('_' + args.tag) if args.tag else ''}"
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / f"{name}.json", data)
    (args.out / f"{name}.md").write_text(render(data))
    print(f"wrote {args.out / (name + '.md')}")
    return 1 if any(r["status"] == "WRONG" for r in rows) else 0


def render(data: dict) -> str:
    rows = data["rows"]
    equal = sum(r["status"].startswith("equal") for r in rows)
    lines = [f"# TPC-DS sf {data['scale']:g}: dodb (sales tables private) vs DuckDB", "",
             f"Command: `{data['command']}`", "", *machine_lines(data["machine"]), "",
             f"**{equal} of {len(rows)} queries equal DuckDB's answer**; "
             f"wrong: {sum(r['status'] == 'WRONG' for r in rows)}; "
             f"refused: {sum(r['status'] == 'refused' for r in rows)}; "
             f"other failures (error, crash, timeout > {data['timeout']:g} s): "
             f"{sum(r['status'] in ('error', 'crash', 'timeout') for r in rows)}.  ε = {data['epsilon']:g} per query.",
             "", "| query | status | seconds | peak memory | refusal / error |", "| :--- | :--- | ---: | ---: | :--- |"]
    for r in rows:
        sec = f"{r['seconds']:.2f}" if "seconds" in r else ""
        lines.append(f"| q{r['query']:02d} | {r['status']} | {sec} | {fmt_bytes(r.get('peak_bytes'))} | "
                     f"{r.get('error', '').replace('|', '/')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        print(json.dumps(run_one(int(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4])), default=str))
    else:
        ap = argparse.ArgumentParser()
        add_arguments(ap)
        sys.exit(run(ap.parse_args()))
