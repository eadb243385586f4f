"""The ``dodb`` commands' handlers: demo, warmup, query, explain, budget, history, protect, unprotect,
token, serve, gateway, audit.

User errors (bad SQL, unknown tables, budget exceeded, invalid parameters) print one
clear line on stderr and exit with status 2 — no traceback.  ``--json`` prints machine-
readable output for scripts.  A database file must exist unless ``--create`` is given;
``query``/``explain``/``budget`` also take ``grpc://host:port`` with ``--token`` (or
``DODB_TOKEN``) to talk to a dodb server (docs/design.md §Served mode).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

from ..errors import DodbError
from .common import open_database, progress


DEMO_QUERIES = [
    ("pricing summary (TPC-H Q1)", 1),
    ("top unshipped orders by revenue (TPC-H Q3)", 3),
    ("customers by order count (TPC-H Q13)", 13),
]


def _print_table(table, limit: int = 20) -> None:
    """An Arrow table in DuckDB's box lines (drawn by rich), indented under the demo's headings."""
    from ..compare import table_rows
    from .render import grid

    print("\n".join("  " + line for line in grid(table.column_names, table_rows(table), limit=limit,
                                                   frame="square").splitlines()))


def _demo(args: Any) -> int:
    import dodb
    from ..accountant import BudgetExceededError
    from ..compare import same_answer, snapshot
    from ..datasets import generate_tpch, protect_tpch, tpch_query

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
        with progress("running"):
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
    from .render import budget_headline

    print(f"budget now: {budget_headline(b)}; ε={b['remaining'][0]:.3g} left for the next query")
    print("== asking for more than is left (ε=30):")
    try:
        db.sql("SELECT o_orderpriority, count(*) AS n FROM orders GROUP BY o_orderpriority", epsilon=30.0)
    except BudgetExceededError as e:
        print(f"  refused before running: {e}")
        after = db.budget
        print(f"  nothing was charged: the charges still sum to ε={after['spent'][0]:.3f}")
    return 0


def _warmup(args: Any) -> int:
    from ..oblivious.kernel_cache import cache_dir, quiet
    from ..warmup import warmup

    quiet()  # this command says what it compiles itself

    print(f"dodb warmup: compiling the oblivious kernels for this CPU into {cache_dir()}", file=sys.stderr)
    if not sys.stderr.isatty():  # a log: one line per step
        secs = warmup(lambda i, n, label: print(f"{i}/{n} {label}", file=sys.stderr, flush=True))
    else:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"),
                      console=Console(file=sys.stderr, force_jupyter=False)) as bar:
            task = bar.add_task("", total=None)

            def step(i: int, n: int, label: str) -> None:
                bar.update(task, completed=i, total=n, description=label)

            secs = warmup(step)
    print(f"dodb warmup: done in {secs:.1f}s (later processes load the kernels from the cache)", file=sys.stderr)
    return 0


def _query(args) -> int:
    if args.allow_insecure and args.mode != "plain":
        raise DodbError("--allow-insecure only applies to --mode plain")
    db = open_database(args, allow_insecure=args.allow_insecure)
    try:
        with progress("running"):
            res = db.sql(args.sql, epsilon=args.epsilon, delta=args.delta, mode=args.mode, params=_params(args))
        rep = res.privacy
        if args.json:
            print(json.dumps({"columns": res.columns, "rows": res.arrow().to_pylist(), "epsilon_used": rep.charged_epsilon,
                              "delta_used": rep.charged_delta, "privacy": rep.as_dict()}, default=str))
        else:
            from .render import render

            print(render(res, args.format, limit=args.limit))
            # csv and json keep standard output to the data (a pipe to a file or another tool)
            print(rep.verbose() if args.verbose else rep, file=sys.stderr if _data_only(args) else sys.stdout)
        used = f"ε used: {rep.charged_epsilon:.4g} (δ {rep.charged_delta:.3g}" + \
            (f", query #{rep.query_id})" if rep.query_id else f"; {rep.free_reason()}: nothing charged)")
        print(used, file=sys.stderr if args.json or _data_only(args) else sys.stdout)
    finally:
        db.close()
    return 0


def _data_only(args) -> bool:
    """Whether standard output carries the answer alone (``--format csv`` or ``json``)."""
    return getattr(args, "format", "box") in ("csv", "json")


def _explain(args) -> int:
    db = open_database(args)
    try:
        out = db.explain(args.sql, epsilon=args.epsilon, delta=args.delta, mode=args.mode, as_dict=args.json,
                         params=_params(args))
        print(json.dumps(out, default=str) if args.json else out)
    finally:
        db.close()
    return 0


def _budget(args) -> int:
    db = open_database(args, owner_calls=True)
    try:
        if args.set is not None or args.horizon is not None:
            if db.__class__.__name__ == "OwnerAdmin":
                raise DodbError(f"'dodb serve' holds {args.db}: stop it to set the budget (reading the budget, "
                                "the history and the tokens works while it runs)")
            if not hasattr(db, "set_budget"):
                raise DodbError("the budget is the owner's: set it on the database file, not through a server")
            eps, delta = args.set if args.set is not None else db.budget["budget"]
            db.set_budget(eps, delta, horizon=args.horizon, force=args.force)  # an owner action, recorded
        elif args.force:
            raise DodbError("--force only applies to --set")
        info: dict[str, Any] = db.budget
        if args.plot:
            from ..budgetplot import plot_budget

            drawn = plot_budget(db.history(), info["budget"], args.plot)
            print(json.dumps({"plot": args.plot, "charges": drawn}) if args.json
                  else f"wrote {args.plot} ({drawn} charges)")
            return 0
        if args.json:
            print(json.dumps(info, default=str))
        else:
            from .render import budget_lines

            print("\n".join(budget_lines(info)))
    finally:
        db.close()
    return 0


def _params(args) -> list | dict | None:
    """``--params JSON``: a list for ``?``/``$1`` placeholders, an object for ``$name`` ones."""
    if getattr(args, "params", None) is None:
        return None
    try:
        value = json.loads(args.params)
    except ValueError as e:
        raise DodbError(f"--params is not JSON ({e}): give a list like '[1, \"a\"]' or an object like "
                        "'{\"n\": 1}'") from None
    if not isinstance(value, (list, dict)):
        raise DodbError("--params: give a JSON list (for ? or $1) or a JSON object (for $name)")
    return value


def _tables(args) -> int:
    """``dodb tables``: each table's protection, privacy unit path and capacity."""
    from .render import table_listing_lines

    db = open_database(args)
    try:
        tables = db.tables()
    finally:
        db.close()
    print(json.dumps(tables, default=str) if args.json else "\n".join(table_listing_lines(tables)))
    return 0


def _shell(args) -> int:
    from .shell import run_shell

    return run_shell(args)


def _history(args) -> int:
    db = open_database(args, owner_calls=True)
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
                  f"{r['status']}: {_one_line(r['sql'])}")
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
            print(f"{at}  {who} #{r['id']} ε={r['epsilon']:.4g} δ={r['delta']:.3g} {r['status']}: {_one_line(r['what'])}")
    return 0


def _rounded(v: Any) -> Any:
    """``v`` with its floats at 6 significant digits, for display (a stored 0.15 may read
    0.14999999284338458)."""
    if isinstance(v, float):
        return float(f"{v:.6g}")
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_rounded(x) for x in v]
    return v


def _one_line(sql: str) -> str:
    """A statement on one line of the history listing."""
    return " ".join(str(sql).split())


def _short(v: Any, limit: int = 100) -> str:
    text = json.dumps(_rounded(v), default=str) if not isinstance(v, str) else v
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unprotect(args) -> int:
    db = open_database(args)
    try:
        db.unprotect(args.table, force=args.force)
        print(f"{args.table} is public again (recorded in the owner history)")
    finally:
        db.close()
    return 0


def _token(args) -> int:
    from .. import tokens

    db = open_database(args, owner_calls=True)
    served = db.__class__.__name__ == "OwnerAdmin"  # 'dodb serve' holds the file: its owner actions
    try:
        if args.action == "add":
            print(db.add_token(args.name) if served else tokens.add_token(db, args.name))
            print(f"(a new token for {args.name}: shown once, stored hashed; give it to the analyst)", file=sys.stderr)
        elif args.action == "revoke":
            if served:
                db.revoke_token(args.name)
            else:
                tokens.revoke_token(db, args.name)
            print(f"revoked the token of {args.name}" + (" (the server refuses it from its next request)"
                                                        if served else ""))
        else:
            for t in db.list_tokens() if served else tokens.list_tokens(db):
                state = f"revoked {str(t['revoked_at'])[:19]}" if t["revoked_at"] else "active"
                print(f"{t['name']}  issued {str(t['created_at'])[:19]}  {state}")
    finally:
        db.close()
    return 0


def _serve(args) -> int:
    from ..serve import is_loopback, open_server

    log = None if args.request_log == "none" else args.request_log or ""
    server = open_server(args.db, args.host, args.port, tls_cert=args.tls_cert, tls_key=args.tls_key, request_log=log)
    if not is_loopback(args.host) and args.tls_cert is None:
        print("dodb: warning: serving beyond this host without TLS: tokens and answers travel in the clear "
              "(use --tls-cert/--tls-key)", file=sys.stderr)
    logged = f"requests logged to {server.request_log.path}" if server.request_log is not None else "no request log"
    print(f"dodb: {logged}; dodb budget/history/token {args.db} reach this server while it runs", file=sys.stderr)
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
    from ..gateway.server import open_gateway
    from ..serve import is_loopback

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
    db = open_database(args)
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
    db = open_database(args)
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
