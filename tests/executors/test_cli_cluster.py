"""``dodb shard`` and ``--cluster`` on the command line (docs/distributed.md §Sharded execution)."""
from __future__ import annotations

import json

import duckdb

from dodb.cli import main

SQL = "SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g ORDER BY g"


def test_shard_then_query_on_workers_gives_the_embedded_answer(tmp_path, capsys):
    db = str(tmp_path / "c.duckdb")
    con = duckdb.connect(db)
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 4 AS g, range % 9 AS v FROM range(200)")
    want = con.execute(SQL).fetchall()
    con.close()
    assert main(["budget", db, "--set", "20", "1e-6"]) == 0
    assert main(["protect", db, "t", "--privacy-unit", "id", "--max-contributions", "1"]) == 0
    # before any shard exists, a cluster query is refused with a one-line error, nothing charged
    capsys.readouterr()
    assert main(["query", db, SQL, "--epsilon", "1", "--cluster", "inline:2"]) == 2
    assert "shard" in capsys.readouterr().err
    assert main(["shard", db, "--workers", "2", "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["table"] == "t" and report["workers"] == 2 and len(report["capacities"]) == 2
    assert sum(report["capacities"]) >= 200
    for args in ([], ["--cluster", "inline:2"]):
        assert main(["query", db, SQL, "--epsilon", "1", "--json", *args]) == 0
        got = json.loads(capsys.readouterr().out)
        # JSON writes the HUGEINT sum as text
        assert [tuple(str(x) for x in r.values()) for r in got["rows"]] == [tuple(map(str, r)) for r in want]
    assert main(["explain", db, SQL, "--cluster", "inline:2"]) == 0
    assert "worker" in capsys.readouterr().out
    assert main(["query", "grpc://127.0.0.1:1", SQL, "--epsilon", "1", "--cluster", "inline:2"]) == 2
    assert "--cluster is for a database file" in capsys.readouterr().err
    assert main(["query", db, SQL, "--epsilon", "1", "--cluster", "mars:3"]) == 2
    assert "is not one of" in capsys.readouterr().err
