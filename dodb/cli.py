"""The ``dodb`` command line: demo, query, explain, budget, protect, audit.

User errors (bad SQL, unknown tables, budget exceeded, invalid parameters) print one
clear line on stderr and exit with status 2 — no traceback.  ``--json`` prints machine-
readable output for scripts.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

import duckdb

from .accountant import BudgetExceededError, BudgetNotSetError, LedgerError
from .errors import DodbError

DEMO_QUERIES = [
    ("pricing summary (TPC-H Q1)", 1),
    ("top unshipped orders by revenue (TPC-H Q3)", 3),
    ("customers by order count (TPC-H Q13)", 13),
]


@contextmanager
def _progress(label: str) -> Iterator[None]:
    """A spinner with elapsed seconds on stderr while a long query runs (terminals only)."""
    if not sys.stderr.isatty():
        yield
        return
    done = threading.Event()
    start = time.time()

    def spin() -> None:
        frames = "|/-\\"
        i = 0
        while not done.wait(0.2):
            sys.stderr.write(f"\r{frames[i % 4]} {label} {time.time() - start:5.1f}s")
            sys.stderr.flush()
            i += 1
        sys.stderr.write("\r" + " " * (len(label) + 12) + "\r")

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()


def _print_table(table, limit: int = 20) -> None:
    rows = table.to_pylist()
    cols = table.column_names
    cells = [[str(r[c]) for c in cols] for r in rows[:limit]]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    print("  " + " | ".join(c.ljust(w) for c, w in zip(cols, widths)))
    print("  " + "-+-".join("-" * w for w in widths))
    for row in cells:
        print("  " + " | ".join(v.ljust(w) for v, w in zip(row, widths)))
    if len(rows) > limit:
        print(f"  … {len(rows) - limit} more rows")


def _demo(args: argparse.Namespace) -> int:
    import dodb
    from .compare import same_answer, snapshot
    from .datasets import generate_tpch, protect_tpch, tpch_query

    print(f"dodb demo: building a TPC-H sample (scale factor {args.scale}) in {args.db or 'memory'} …")
    db = dodb.connect(args.db or ":memory:")
    counts = generate_tpch(db.con, args.scale)
    print("  tables: " + ", ".join(f"{t} ({n})" for t, n in counts.items()))
    oracle = snapshot(db.con)  # the demo owns the data: DuckDB on the raw copy shows the answers are exact
    db.set_budget(epsilon=args.budget, delta=1e-5)
    print(f"privacy budget: ε={args.budget}, δ=1e-5 for the whole dataset")
    print("protecting customer (privacy unit), orders and lineitem (reach customers by keys); "
          "part, partsupp, supplier, nation, region stay public")
    protect_tpch(db)
    for t in ("customer", "orders", "lineitem"):
        info = db.catalog.table(t)
        print(f"  {t}: stored in {info.capacity} slots (capacity released under DP, ledger #{info.capacity_charge})")
    print()
    for title, q in DEMO_QUERIES:
        print(f"== {title}, ε=1.0")
        with _progress("running"):
            t0 = time.time()
            res = db.sql(tpch_query(q), epsilon=1.0)
        secs = time.time() - t0
        _print_table(res.arrow(), limit=10)
        # the demo owns the data, so it can show that the private answer is DuckDB's exact answer
        same = same_answer(res.arrow(), oracle.sql(tpch_query(q)).to_arrow_table(), ordered=True)
        print(f"  ({len(res)} rows, {secs:.1f}s; identical to DuckDB's answer: {'yes' if same else 'NO'})")
        print(str(res.privacy).replace("\n", "\n  "))
        print()
    b = db.budget
    print(f"budget now: spent ε={b['spent'][0]:.3f}, remaining ε={b['remaining'][0]:.3f}")
    print("== asking for more than is left (ε=100):")
    try:
        db.sql("SELECT o_orderpriority, count(*) AS n FROM orders GROUP BY o_orderpriority", epsilon=100.0)
    except BudgetExceededError as e:
        print(f"  refused before running: {e}")
        after = db.budget
        print(f"  nothing was charged: spent ε still {after['spent'][0]:.3f}")
    return 0


def _open(path: str, allow_insecure: bool = False):
    import dodb

    return dodb.connect(path, allow_insecure=allow_insecure)


def _query(args) -> int:
    db = _open(args.db, allow_insecure=args.mode == "plain")
    with _progress("running"):
        res = db.sql(args.sql, epsilon=args.epsilon, delta=args.delta, mode=args.mode)
    if args.json:
        print(json.dumps({"columns": res.columns, "rows": res.arrow().to_pylist(),
                          "privacy": res.privacy.as_dict()}, default=str))
    else:
        _print_table(res.arrow(), limit=args.limit)
        print(res.privacy)
    db.close()
    return 0


def _explain(args) -> int:
    db = _open(args.db)
    out = db.explain(args.sql, epsilon=args.epsilon, delta=args.delta or 1e-6, mode=args.mode, as_dict=args.json)
    print(json.dumps(out, default=str) if args.json else out)
    db.close()
    return 0


def _budget(args) -> int:
    db = _open(args.db)
    if args.set is not None:
        db.set_budget(args.set[0], args.set[1])
    info: dict[str, Any] = db.budget
    if args.json:
        print(json.dumps(info, default=str))
    else:
        print(f"budget ε={info['budget'][0]:g} δ={info['budget'][1]:g} (filter {info['filter']})")
        print(f"spent  ε={info['spent'][0]:.4g} δ={info['spent'][1]:.3g}")
        print(f"left   ε={info['remaining'][0]:.4g} δ={info['remaining'][1]:.3g}")
    db.close()
    return 0


def _protect(args) -> int:
    db = _open(args.db)
    parent = tuple(args.parent.split(".", 1)) if args.parent else None
    degrees = {}
    for item in args.max_degree or []:
        col, _, val = item.partition("=")
        degrees[col] = int(val) if val else None
    widths = {}
    for item in args.width or []:
        col, _, val = item.partition("=")
        try:
            widths[col] = int(val)
        except ValueError:
            raise DodbError(f"--width {item!r}: give COL=BYTES") from None
    out = db.protect(args.table, args.privacy_unit, parent=parent, max_contributions=args.max_contributions,
                     keys=[k.split(",") for k in (args.key or [])], max_degree=degrees, widths=widths,
                     capacity=args.capacity, epsilon=args.epsilon)
    info = db.catalog.table(args.table)
    msg = {"table": args.table, "stability": db.catalog.stability(args.table), "unit_path": db.catalog.unit_path(args.table),
           "max_contributions": info.max_contributions, "keys": info.keys, "max_degree": info.max_degree,
           "widths": info.widths, "capacity": info.capacity, "capacity_source": info.capacity_source,
           "charged_epsilon": out.charged_epsilon, "charged_delta": out.charged_delta, "ledger_id": out.charge_id}
    print(json.dumps(msg) if args.json else f"protected {args.table}: {msg}")
    db.close()
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dodb", description="Differentially oblivious SQL for DuckDB")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="private query session on a built-in TPC-H sample")
    d.add_argument("--scale", type=float, default=0.01)
    d.add_argument("--db", default=None, help="database file (default: in memory)")
    d.add_argument("--budget", type=float, default=5.0)
    q = sub.add_parser("query", help="run a private query")
    for sp in (q, sub.add_parser("explain", help="show the plan without running or charging")):
        sp.add_argument("db")
        sp.add_argument("sql")
        sp.add_argument("--epsilon", type=float, default=1.0)
        sp.add_argument("--delta", type=float, default=None)
        sp.add_argument("--mode", choices=["do", "oblivious", "plain"], default="do")
        sp.add_argument("--json", action="store_true")
    q.add_argument("--limit", type=int, default=50)
    b = sub.add_parser("budget", help="show (or set) the dataset's privacy budget")
    b.add_argument("db")
    b.add_argument("--set", nargs=2, type=float, metavar=("EPSILON", "DELTA"))
    b.add_argument("--json", action="store_true")
    pr = sub.add_parser("protect", help="declare a table private")
    pr.add_argument("db")
    pr.add_argument("table")
    pr.add_argument("--privacy-unit", required=True)
    pr.add_argument("--parent", help="TABLE.KEY the privacy unit column references")
    pr.add_argument("--max-contributions", type=int)
    pr.add_argument("--key", action="append", help="unique key columns, comma-separated (repeatable)")
    pr.add_argument("--max-degree", action="append", help="COL=N (or COL= for a bound released under DP)")
    pr.add_argument("--width", action="append", help="COL=BYTES: public width of a string column (repeatable)")
    pr.add_argument("--capacity", type=int, help="a public capacity (>= rows): nothing is charged for the size")
    pr.add_argument("--epsilon", type=float, help="ε for the released size (default: 5%% of the budget)")
    pr.add_argument("--json", action="store_true")
    from .audit import command as audit_command

    audit_command.add_arguments(sub.add_parser(
        "audit", help="coupled-neighbour audit of queries on a TPC-H sample (exit 1 if any view differs)"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .audit import command as audit_command

    handlers = {"demo": _demo, "query": _query, "explain": _explain, "budget": _budget, "protect": _protect,
                "audit": audit_command.run}
    try:
        return handlers[args.command](args)
    except (DodbError, BudgetExceededError, BudgetNotSetError, LedgerError, ValueError, duckdb.Error) as e:
        print(f"dodb: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dodb: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
