"""The ``dodb`` command line: demo, warmup, query, explain, budget, history, protect, unprotect,
token, serve, gateway, audit.

User errors (bad SQL, unknown tables, budget exceeded, invalid parameters) print one
clear line on stderr and exit with status 2 — no traceback.  ``--json`` prints machine-
readable output for scripts.  A database file must exist unless ``--create`` is given;
``query``/``explain``/``budget`` also take ``grpc://host:port`` with ``--token`` (or
``DODB_TOKEN``) to talk to a dodb server (docs/design.md §Served mode).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from .errors import DodbError

CLI_WAIT = 60.0  # seconds a command waits for another process to release the database file

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
    from .compare import table_rows

    rows = table_rows(table)
    cols = table.column_names
    cells = [[str(v) for v in r] for r in rows[:limit]]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    print("  " + " | ".join(c.ljust(w) for c, w in zip(cols, widths)))
    print("  " + "-+-".join("-" * w for w in widths))
    for row in cells:
        print("  " + " | ".join(v.ljust(w) for v, w in zip(row, widths)))
    if len(rows) > limit:
        print(f"  … {len(rows) - limit} more rows")


def _demo(args: argparse.Namespace) -> int:
    import dodb
    from .accountant import BudgetExceededError
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


def _warmup(args: argparse.Namespace) -> int:
    from .oblivious.kernel_cache import cache_dir, quiet
    from .warmup import warmup

    quiet()  # this command says what it compiles itself

    tty = sys.stderr.isatty()
    print(f"dodb warmup: compiling the oblivious kernels for this CPU into {cache_dir()}", file=sys.stderr)

    def progress(i: int, n: int, label: str) -> None:
        bar = "#" * (20 * i // n) + "-" * (20 - 20 * i // n)
        line = f"[{bar}] {i}/{n} {label}"
        if tty:
            sys.stderr.write("\r" + line[:100].ljust(100))
            sys.stderr.flush()
        else:
            print(line, file=sys.stderr, flush=True)

    secs = warmup(progress)
    if tty:
        sys.stderr.write("\n")
    print(f"dodb warmup: done in {secs:.1f}s (later processes load the kernels from the cache)", file=sys.stderr)
    return 0


def _open(args, *, allow_insecure: bool = False):
    """The database named on the command line: a file (it must exist unless ``--create``) or a server."""
    import dodb

    path = args.db
    if path.startswith(("grpc://", "grpc+tcp://", "grpc+tls://")):
        if getattr(args, "cluster", None):
            raise DodbError("--cluster is for a database file: a dodb server runs its own executor")
        return dodb.connect(path, token=getattr(args, "token", None) or os.environ.get("DODB_TOKEN"))
    if getattr(args, "token", None):
        raise DodbError("--token is for a dodb server (grpc://host:port)")
    # short commands take turns on a file another process holds (docs/design.md §Concurrency)
    return dodb.connect(path, allow_insecure=allow_insecure, create=getattr(args, "create", False), wait=CLI_WAIT,
                        cluster=getattr(args, "cluster", None))


def _query(args) -> int:
    if args.allow_insecure and args.mode != "plain":
        raise DodbError("--allow-insecure only applies to --mode plain")
    db = _open(args, allow_insecure=args.allow_insecure)
    try:
        with _progress("running"):
            res = db.sql(args.sql, epsilon=args.epsilon, delta=args.delta, mode=args.mode)
        rep = res.privacy
        if args.json:
            print(json.dumps({"columns": res.columns, "rows": res.arrow().to_pylist(), "epsilon_used": rep.charged_epsilon,
                              "delta_used": rep.charged_delta, "privacy": rep.as_dict()}, default=str))
        else:
            _print_table(res.arrow(), limit=args.limit)
            print(rep.verbose() if args.verbose else rep)
        used = f"ε used: {rep.charged_epsilon:.4g} (δ {rep.charged_delta:.3g}" + \
            (f", query #{rep.query_id})" if rep.query_id else f"; {_why_free(rep)}: nothing charged)")
        print(used, file=sys.stderr if args.json else sys.stdout)
    finally:
        db.close()
    return 0


def _explain(args) -> int:
    db = _open(args)
    try:
        out = db.explain(args.sql, epsilon=args.epsilon, delta=args.delta, mode=args.mode, as_dict=args.json)
        print(json.dumps(out, default=str) if args.json else out)
    finally:
        db.close()
    return 0


def _budget(args) -> int:
    db = _open(args)
    try:
        if args.set is not None or args.horizon is not None:
            if not hasattr(db, "set_budget"):
                raise DodbError("the budget is the owner's: set it on the database file, not through a server")
            eps, delta = args.set if args.set is not None else db.budget["budget"]
            db.set_budget(eps, delta, horizon=args.horizon, force=args.force)  # an owner action, recorded
        elif args.force:
            raise DodbError("--force only applies to --set")
        info: dict[str, Any] = db.budget
        if args.plot:
            from .budgetplot import plot_budget

            drawn = plot_budget(db.history(), info["budget"], args.plot)
            print(json.dumps({"plot": args.plot, "charges": drawn}) if args.json
                  else f"wrote {args.plot} ({drawn} charges)")
            return 0
        if args.json:
            print(json.dumps(info, default=str))
        else:
            print(f"budget ε={info['budget'][0]:g} δ={info['budget'][1]:g} (filter {info['filter']})")
            print(f"spent  ε={info['spent'][0]:.4g} δ={info['spent'][1]:.3g} (the sum of the charges in "
                  f"'dodb history', {info['queries']} charges)")
            print(f"left   ε={info['remaining'][0]:.4g} δ={info['remaining'][1]:.3g} (what the next query can get)")
            print(f"default query δ={info['default_delta']:.3g} (sized for {info['horizon']} queries)")
            parts = info.get("partitions") or {}
            if parts:  # docs/design.md §Partitions
                top = info["partition_max_spent"]
                print(f"partitions: {len(parts)} charged, the most spent ε={top[0]:.4g} δ={top[1]:.3g}")
                for name, p in sorted(parts.items()):
                    print(f"  {name}: spent ε={p['spent'][0]:.4g}, left ε={p['remaining'][0]:.4g}")
    finally:
        db.close()
    return 0


def _history(args) -> int:
    db = _open(args)
    remote = db.__class__.__name__ == "RemoteDatabase"  # a server shows an analyst their own charges only
    try:
        rows = db.history() if remote else db.history(owner_actions=True)
    finally:
        db.close()
    if args.json:
        print(json.dumps(rows, default=str))
        return 0
    if remote:
        if not rows:
            print("no queries charged to you yet")
        for r in rows[-args.limit:] if args.limit else rows:
            print(f"{str(r['charged_at'])[:19]}  query  #{r['query_id']} ε={r['epsilon']:.4g} δ={r['delta']:.3g} "
                  f"{r['status']}: {r['sql']}")
        return 0
    if not rows:
        print("no queries and no owner actions yet")
    for r in rows[-args.limit:] if args.limit else rows:
        at = str(r["at"])[:19]
        if r["type"] == "owner action":
            change = f"{_short(r['old'])} -> {_short(r['new'])}"
            forced = f"  FORCED: {'; '.join(r['forced'])}" if r["forced"] else ""
            charge = f" (charge #{r['charge_id']})" if r["charge_id"] else ""
            print(f"{at}  owner    {r['what']}: {change}{charge}{forced}")
        else:
            who = "owner " if r["type"] == "owner release" else "query "
            print(f"{at}  {who} #{r['id']} ε={r['epsilon']:.4g} δ={r['delta']:.3g} {r['status']}: {r['what']}")
    return 0


def _short(v: Any, limit: int = 100) -> str:
    text = json.dumps(v, default=str) if not isinstance(v, str) else v
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unprotect(args) -> int:
    db = _open(args)
    try:
        db.unprotect(args.table, force=args.force)
        print(f"{args.table} is public again (recorded in the owner history)")
    finally:
        db.close()
    return 0


def _token(args) -> int:
    from . import tokens

    db = _open(args)
    try:
        if args.action == "add":
            print(tokens.add_token(db, args.name))
            print(f"(a new token for {args.name}: shown once, stored hashed; give it to the analyst)", file=sys.stderr)
        elif args.action == "revoke":
            tokens.revoke_token(db, args.name)
            print(f"revoked the token of {args.name}")
        else:
            for t in tokens.list_tokens(db):
                state = f"revoked {str(t['revoked_at'])[:19]}" if t["revoked_at"] else "active"
                print(f"{t['name']}  issued {str(t['created_at'])[:19]}  {state}")
    finally:
        db.close()
    return 0


def _serve(args) -> int:
    from .serve import is_loopback, open_server

    server = open_server(args.db, args.host, args.port, tls_cert=args.tls_cert, tls_key=args.tls_key)
    if not is_loopback(args.host) and args.tls_cert is None:
        print("dodb: warning: serving beyond this host without TLS: tokens and answers travel in the clear "
              "(use --tls-cert/--tls-key)", file=sys.stderr)

    return _serve_until_stopped(server, f"dodb: serving {args.db} at {server.location} (Ctrl-C to stop)",
                                "dodb: server stopped")


def _serve_until_stopped(server, started: str, stopped: str) -> int:
    """Serve until SIGTERM or Ctrl-C (``dodb serve``, ``dodb gateway``), then close the server."""
    def stop(signum, frame):  # noqa: ARG001 - signal handler signature
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(started, flush=True)
    try:
        server.serve()
    finally:
        server.close()
    print(stopped, file=sys.stderr)
    return 0


def _gateway(args) -> int:
    """``dodb gateway``: Flight SQL for local tools, forwarding to a dodb engine (docs/served.md)."""
    from .gateway.server import open_gateway
    from .serve import is_loopback

    host = args.host if args.host is not None else "127.0.0.1"
    if args.host is not None and not is_loopback(host):
        print(f"dodb: warning: the gateway listens on {host}: anyone who reaches it spends your budget with your "
              "token, and answers travel in the clear (it has no TLS; keep it on loopback)", file=sys.stderr)
    token = args.token or os.environ.get("DODB_TOKEN")
    roots = None
    if args.tls_root_certs:
        with open(args.tls_root_certs, "rb") as f:
            roots = f.read()
    server = open_gateway(args.engine, token, epsilon=args.epsilon, delta=args.delta, host=host, port=args.port,
                          tls_root_certs=roots)

    delta = f", δ={args.delta:g}" if args.delta is not None else ""
    return _serve_until_stopped(server, f"dodb: gateway at {server.location} for the engine at {args.engine}; "
                                f"every query is charged ε={args.epsilon:g}{delta} (Ctrl-C to stop)",
                                "dodb: gateway stopped")


def _protect(args) -> int:
    db = _open(args)
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
                     capacity=args.capacity, epsilon=args.epsilon, orphans=args.orphans,
                     null_units=args.null_units)
    info = db.catalog.table(args.table)
    msg = {"table": args.table, "stability": db.catalog.stability(args.table), "unit_path": db.catalog.unit_path(args.table),
           "max_contributions": info.max_contributions, "keys": info.keys, "max_degree": info.max_degree,
           "widths": info.widths, "policy": info.policy, "capacity": info.capacity,
           "capacity_source": info.capacity_source,
           "charged_epsilon": out.charged_epsilon, "charged_delta": out.charged_delta, "ledger_id": out.charge_id,
           "null_unit_rows": out.null_unit_rows, "orphan_rows": out.orphan_rows}
    print(json.dumps(msg) if args.json else _protected_words(msg))
    db.close()
    return 0


def _why_free(rep) -> str:
    """Why a query charged nothing (it may still have read private tables)."""
    if not rep.tables:
        return "public tables only"
    if rep.mode == "plain":
        return "plain mode, which protects nothing"
    if rep.mode == "oblivious":
        return "fully oblivious: it released no size"
    return "it released no size"


def _protected_words(msg: dict) -> str:
    """What ``dodb protect`` declared and charged, in lines (``--json`` gives the fields)."""
    via = " -> ".join(msg["unit_path"])
    lines = [f"protected {msg['table']}: privacy unit reached via {via}, at most {msg['max_contributions']} "
             f"row(s) per unit (stability {msg['stability']})"]
    if msg["capacity_source"] == "dp":
        lines.append(f"  capacity: {msg['capacity']} slots, released under DP (charged ε={msg['charged_epsilon']:.4g}, "
                     f"δ={msg['charged_delta']:.3g}, ledger #{msg['ledger_id']})")
    else:
        lines.append(f"  capacity: {msg['capacity']} slots ({msg['capacity_source']}; nothing charged)")
    for label, key in (("keys", "keys"), ("degree bounds", "max_degree"), ("string widths", "widths")):
        if msg[key]:
            lines.append(f"  {label}: {json.dumps(msg[key])}")
    policy = msg["policy"] or {}
    kept = lambda count: "" if not count else f" ({count} kept)"  # noqa: E731
    lines.append("  rows without a parent: " + policy.get("orphans", "keep") + kept(msg.get("orphan_rows"))
                 + "; rows with a NULL unit: " + policy.get("null_units", "keep") + kept(msg.get("null_unit_rows")))
    return "\n".join(lines)


def _shard(args) -> int:
    db = _open(args)
    try:
        reports = db.shard(args.workers, epsilon=args.epsilon)
        if args.json:
            print(json.dumps(reports))
        else:
            for r in reports:
                print(f"sharded {r['table']}: {r['rows']} rows into {r['workers']} shards of capacities "
                      f"{', '.join(str(c) for c in r['capacities'])}")
            print(f"shards in {db.shard_directory()}; run queries with --cluster local:{args.workers}")
    finally:
        db.close()
    return 0


def _version() -> str:
    from . import __version__

    return __version__


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dodb", description="Differentially oblivious SQL for DuckDB")
    p.add_argument("--version", action="version", version=f"dodb {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="private query session on a built-in TPC-H sample")
    d.add_argument("--scale", type=float, default=0.01)
    d.add_argument("--db", default=None, help="database file (default: in memory)")
    d.add_argument("--budget", type=float, default=5.0)
    sub.add_parser("warmup", help="compile the oblivious kernels once, ahead of the first query (cached per user)")
    q = sub.add_parser("query", help="run a private query")
    ex = sub.add_parser("explain", help="show the plan without running or charging")
    for sp in (q, ex):
        sp.add_argument("db", help="database file, or grpc://host:port of a dodb server")
        sp.add_argument("sql")
        sp.add_argument("--epsilon", type=float, default=1.0, help="the query's ε (default 1.0)")
        sp.add_argument("--delta", type=float, default=None, help="default: the dataset's default query δ")
        sp.add_argument("--mode", choices=["do", "oblivious", "plain"], default="do")
        sp.add_argument("--json", action="store_true")
        sp.add_argument("--token", help="analyst token for a dodb server (or DODB_TOKEN)")
    for sp in (q, ex):
        sp.add_argument("--cluster", metavar="SPEC", help="run on workers over the shards ('dodb shard' first): "
                        "local:P starts P Ray workers here, inline:P runs them in this process, ray://HOST:PORT joins "
                        "a cluster (docs/distributed.md)")
    q.add_argument("--limit", type=int, default=50)
    q.add_argument("--verbose", action="store_true", help="privacy report with every release's ε/δ and theorems")
    q.add_argument("--allow-insecure", action="store_true", help="needed for --mode plain on private tables")
    b = sub.add_parser("budget", help="show (or set: an owner action, recorded) the dataset's privacy budget")
    b.add_argument("db")
    b.add_argument("--set", nargs=2, type=float, metavar=("EPSILON", "DELTA"))
    b.add_argument("--horizon", type=int, help="queries the default query δ is sized for (default 10000)")
    b.add_argument("--force", action="store_true", help="allow lowering the budget below what was spent (recorded)")
    b.add_argument("--json", action="store_true")
    b.add_argument("--plot", metavar="FILE", help="draw spending over time to FILE (.png/.svg/.pdf; needs matplotlib)")
    b.add_argument("--token", help="analyst token for a dodb server (or DODB_TOKEN)")
    h = sub.add_parser("history", help="past queries, owner releases and owner actions")
    h.add_argument("db")
    h.add_argument("--limit", type=int, default=0, help="only the last N entries")
    h.add_argument("--json", action="store_true")
    h.add_argument("--token", help="analyst token for a dodb server (or DODB_TOKEN): your own queries")
    u = sub.add_parser("unprotect", help="make a private table public again (owner action, recorded)")
    u.add_argument("db")
    u.add_argument("table")
    u.add_argument("--force", action="store_true", help="needed once anything was charged (recorded)")
    t = sub.add_parser("token", help="issue, revoke or list analyst tokens for 'dodb serve'")
    t.add_argument("action", choices=["add", "revoke", "list"])
    t.add_argument("db")
    t.add_argument("name", nargs="?", default=None)
    sv = sub.add_parser("serve", help="serve the database to analysts over Arrow Flight (token auth)")
    sv.add_argument("db")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=47470, help="0 picks a free port (printed)")
    sv.add_argument("--tls-cert", help="PEM certificate (with --tls-key): serve grpc+tls://")
    sv.add_argument("--tls-key")
    gw = sub.add_parser("gateway", help="serve Flight SQL (ADBC, JDBC, BI tools) on this machine, forwarding "
                        "queries to a dodb server with your token",
                        description="An analyst-side Arrow Flight SQL endpoint: local tools connect to it; it sends "
                        "each query to the dodb server at --engine with your token, charges every query the "
                        "--epsilon given here, strips the dummy rows and answers. 'SELECT * FROM dodb_last_report' "
                        "shows the last query's privacy report. See docs/served.md.")
    gw.add_argument("--engine", required=True, metavar="URL", help="the dodb server, grpc://HOST:PORT (or grpc+tls://)")
    gw.add_argument("--token", default=None, help="your analyst token (default: $DODB_TOKEN)")
    gw.add_argument("--epsilon", type=float, required=True, help="ε charged for every query (required)")
    gw.add_argument("--delta", type=float, default=None,
                    help="δ for every query (default: the dataset's default query δ)")
    gw.add_argument("--port", type=int, default=47471, help="port to listen on (default: 47471; 0 picks a free one, printed)")
    gw.add_argument("--host", default=None, help="address to listen on (default: 127.0.0.1; "
                    "anything else warns: whoever reaches the gateway spends your budget)")
    gw.add_argument("--tls-root-certs", metavar="PEM", default=None, help="CA certificate of a grpc+tls:// engine")
    sh = sub.add_parser("shard", help="cut the private tables into shards by privacy unit, for --cluster "
                                       "(owner action; the shard sizes are released and charged)")
    sh.add_argument("db")
    sh.add_argument("--workers", type=int, required=True)
    sh.add_argument("--epsilon", type=float, help="ε for the released shard sizes (default: as for protect)")
    sh.add_argument("--json", action="store_true")
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
    pr.add_argument("--orphans", choices=["keep", "refuse"], default="keep",
                    help="rows whose --parent key names no parent row: kept in the unit their key names (default)")
    pr.add_argument("--null-units", choices=["keep", "refuse"], default="keep",
                    help="rows whose unit key is NULL: each a unit of its own (default)")
    pr.add_argument("--json", action="store_true")
    for sp in (q, ex, b, h, u, t, pr, sh):
        sp.add_argument("--create", action="store_true", help="create the database file if it does not exist")
    from .audit import command as audit_command

    audit_command.add_arguments(sub.add_parser(
        "audit", help="coupled-neighbour audit of queries on a TPC-H sample (exit 1 if any view differs)"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # the engine loads only once a command runs: `dodb --help` stays fast (issue 26)
    import duckdb

    from .accountant import AccountantError
    from .audit import command as audit_command

    handlers = {"demo": _demo, "warmup": _warmup, "query": _query, "explain": _explain, "budget": _budget, "protect": _protect,
                "history": _history, "unprotect": _unprotect, "token": _token, "serve": _serve, "gateway": _gateway,
                "shard": _shard,
                "audit": audit_command.run}
    if args.command == "token" and args.action != "list" and not args.name:
        print(f"dodb: error: dodb token {args.action} FILE NAME", file=sys.stderr)
        return 2
    try:
        return handlers[args.command](args)
    except (DodbError, AccountantError, ValueError, duckdb.Error) as e:
        print(f"dodb: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dodb: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
