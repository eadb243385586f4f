"""``dodb audit --database FILE``: the coupled-neighbour audit on the owner's own data (issue 28).

The built-in audit generates TPC-H data; the owner's data has its own orphans, NULL
units, skew and bounds met exactly, which is where a leak would show.  This module

* copies the protected database into a temporary file (DuckDB's ``COPY FROM DATABASE``
  from a read-only attachment: the owner's file is never written, and the audit, which
  rewrites private slots to build each neighbour, works on the copy);
* picks units that stress the declared bounds (:meth:`Neighbourhood.stress_units`: the
  busiest unit, the owner of each table's last real slot, a unit at
  ``max_contributions``, a unit in the heaviest value of each degree-bounded column, an
  orphan and a NULL-key unit) plus ``pairs`` sampled ones;
* audits the queries given, or, without any, a default set made from the schema: per
  private table its count, a GROUP BY on each of its first columns, and its join to
  its parent.

Owner tooling: it reads private rows in the clear; it charges nothing.
"""
from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Hashable

from sqlglot import exp

from ..errors import DodbError

__all__ = ["copy_database", "default_queries", "audit_units"]


def copy_database(path: Path, into: Path):
    """A DuckDB connection to a copy of the database file ``path`` (written at ``into``)."""
    import duckdb

    if not path.is_file():
        raise DodbError(f"--database: no database file at {path}")
    con = duckdb.connect(str(into))
    src = exp.to_identifier("__dodb_audit_source", quoted=True).sql("duckdb")
    try:
        con.execute(f"ATTACH {exp.Literal.string(str(path.resolve())).sql('duckdb')} AS {src} (READ_ONLY)")
        target = con.execute("SELECT current_database()").fetchall()[0][0]
        con.execute(f"COPY FROM DATABASE {src} TO {exp.to_identifier(target, quoted=True).sql('duckdb')}")
        con.execute(f"DETACH {src}")
    except duckdb.Error as e:
        con.close()
        raise DodbError(f"--database: cannot copy {path}: {str(e).splitlines()[0]}") from None
    return con


def default_queries(catalog) -> list[str]:
    """Queries over every private table, made from the schema (column names only)."""
    out: list[str] = []
    for name, info in sorted(catalog.tables.items()):
        if not info.private:
            continue
        t = exp.to_identifier(name, quoted=True).sql("duckdb")
        out.append(f"SELECT count(*) FROM {t}")
        for c in list(info.columns)[:3]:
            q = exp.to_identifier(c, quoted=True).sql("duckdb")
            out.append(f"SELECT {q}, count(*) FROM {t} GROUP BY {q}")
        if info.parent is not None:
            p, key = (exp.to_identifier(x, quoted=True).sql("duckdb") for x in info.parent)
            unit = exp.to_identifier(info.privacy_unit, quoted=True).sql("duckdb")
            out.append(f"SELECT count(*) FROM {t} AS c JOIN {p} AS p ON c.{unit} = p.{key}")
    return out


def audit_units(nb, pairs: int, seed: int) -> list[tuple[Hashable, str]]:
    """The stress units, then sampled units up to ``pairs`` more."""
    chosen = nb.stress_units()
    have = {u for u, _ in chosen}
    rest = [u for u in nb.root_units() if u not in have]
    rng = random.Random(seed)
    chosen += [(u, "sampled") for u in rng.sample(rest, min(pairs, len(rest)))]
    return chosen


def temporary_copy_path() -> Path:
    return Path(tempfile.mkdtemp(prefix="dodb-audit-")) / "audit.duckdb"
