"""The benchmark harness runs end to end in a tiny configuration (CI smoke test, < 90 s).

``python -m benchmarks tpch --quick`` (sf 0.002, five queries, every engine), ``kernels``
and ``operators`` at 2^10–2^12 rows, each as a subprocess: exit code 0, reports written,
every dodb answer equal to DuckDB's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("matplotlib")
pytest.importorskip("tqdm")


def _run(*args: str, timeout: float = 80) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"exit code {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    return proc


def test_tpch_quick(tmp_path):
    _run("tpch", "--quick", "--out", str(tmp_path))
    data = json.loads((tmp_path / "tpch_sf0.002.json").read_text())
    md = (tmp_path / "tpch_sf0.002.md").read_text()
    assert "MISMATCH" not in md
    results = data["results"]
    engines = {r["label"] for r in results}
    assert {"duckdb", "plain", "do ε=1", "oblivious"} <= engines
    assert len(results) == 5 * 4
    for r in results:
        assert r["status"] == "ok", r
        assert r["match"], f"Q{r['query']} {r['label']} differs from DuckDB"
        assert r["seconds"] > 0 and r["peak_bytes"] >= 0
        if r["engine"] == "do":
            # a query charges budget exactly when it releases a size (Q6's filter only marks rows)
            assert 0 <= r["charged_epsilon"] <= 1.0 + 1e-9
            assert (r["charged_epsilon"] > 0) == (r["releases"] > 0), r
            # padded sizes are never below the real sizes
            assert all(o["padded_out"] >= o["real_out"] for o in r["ops"] if o.get("real_out") is not None)
    assert data["summary"]["pairs"]["do ε=1 / duckdb"]["queries"] == 5
    assert any(r["engine"] == "do" and r["releases"] > 0 for r in results)
    assert (tmp_path / "tpch_sf0.002_epsilon.png").stat().st_size > 0
    assert (tmp_path / "tpch_sf0.002_padding.png").stat().st_size > 0


def test_kernels_and_operators_tiny(tmp_path):
    _run("kernels", "--min-log2", "10", "--max-log2", "12", "--repeats", "1", "--warmup", "0",
         "--bandwidth-mib", "16", "--out", str(tmp_path))
    k = json.loads((tmp_path / "kernels.json").read_text())
    assert {r["kernel"] for r in k["rows"]} >= {"sort (packed 1-word key, key_bits)", "sort (2-word key)",
                                                  "compact (all n rows)", "expand", "segmented_scan (sum)"}
    assert all(r["ns_per_elem"] > 0 and r["measured_over_bound"] > 0 for r in k["rows"])
    assert k["bandwidth"]["bytes_per_second"] > 0
    assert "Memory-bandwidth reference" in (tmp_path / "kernels.md").read_text()

    _run("operators", "--min-log2", "12", "--max-log2", "12", "--repeats", "1", "--warmup", "0",
         "--do-bin-sizes", "1024", "--out", str(tmp_path))
    o = json.loads((tmp_path / "operators.json").read_text())
    assert {r["operator"] for r in o["rows"]} == {"filter", "group_by", "join_pkfk", "join_mn", "order_by_limit",
                                                    "pipeline"}
    assert {r["engine"] for r in o["rows"]} >= {"do", "oblivious", "plain", "duckdb", "oblivious-compact"}
    bad = [r for r in o["rows"] if not r["correct"]]
    assert not bad, bad
    for r in o["rows"]:
        assert r["padded_out"] >= r["real_out"]
    assert o["ratios"] and all("oblivious_over_do" in r for r in o["ratios"])
    md = (tmp_path / "operators.md").read_text()
    assert "## Ratios" in md and "MISMATCH" not in md


def test_allocation_tiny(tmp_path):
    _run("allocation", "--scale", "0.002", "--queries", "3,5", "--repeats", "1", "--out", str(tmp_path))
    data = json.loads((tmp_path / "allocation_sf0.002.json").read_text())
    assert [r["query"] for r in data["rows"]] == [3, 5]
    for r in data["rows"]:
        for s in ("even", "cost"):
            assert r[s]["match"] and r[s]["padded_rows"] > 0 and r[s]["releases"] > 1
    s = data["summary"]
    assert s["all_match"] and s["queries_compared"] == 2
    assert "## Per query" in (tmp_path / "allocation_sf0.002.md").read_text()


def test_planning_tiny(tmp_path):
    _run("planning", "--scale", "0.002", "--repeats", "1", "--out", str(tmp_path))
    data = json.loads((tmp_path / "planning_sf0.002.json").read_text())
    assert [r["query"] for r in data["rows"]] == list(range(1, 23))
    assert all(r["cold_wall_ms"] > 0 and r["warm_wall_ms"] > 0 for r in data["rows"])
    assert any(r["releases"] > 0 and r["acct_warm_wall_ms"] > 0 for r in data["rows"])
    assert "Under 50 ms" in (tmp_path / "planning_sf0.002.md").read_text()


def test_orp_tiny(tmp_path):
    _run("orp", "--min-log2", "10", "--max-log2", "11", "--repeats", "1", "--warmup", "1", "--out", str(tmp_path))
    data = json.loads((tmp_path / "orp.json").read_text())
    assert [r["n"] for r in data["rows"]] == [1024, 2048]
    for r in data["rows"]:
        assert r["network_seconds"] > 0 and r["orp_seconds"] > 0 and r["delta_orp"] <= 2.0 ** -64
        assert r["orp_row_passes"] > r["network_row_passes"] > 0
    assert "orp / network" in (tmp_path / "orp.md").read_text()


def test_tpcds_report_compares_answers_like_the_oracle():
    """benchmarks/tpcds.py: floats to 1e-6 relative, tie order told apart, a wrong row caught."""
    from decimal import Decimal

    from benchmarks.tpcds import _query_numbers, compare

    assert _query_numbers("1-3,7") == [1, 2, 3, 7]
    assert compare([(1, 0.1 + 0.2)], [(1, 0.3)]) == "equal"
    assert compare([(1, Decimal("2.50"))], [(1, 2.5)]) == "equal"
    assert compare([(2, "b"), (1, "a")], [(1, "a"), (2, "b")]).startswith("equal (order")
    assert compare([(1, 0.3001)], [(1, 0.3)]) == "WRONG"
    assert compare([(1, None)], [(1, 0)]) == "WRONG"


def test_cluster_curves_tiny(tmp_path):
    """benchmarks/cluster_curves.py: three configurations run, one included, both plots written."""
    stop41 = ROOT / "benchmarks" / "results" / "stop41" / "cluster_sf1_p2.json"
    _run("cluster_curves", "--scales", "0.002,0.003", "--workers", "2", "--scale", "0.002", "--workers-list", "1,2",
         "--queries", "1,3", "--repeats", "1", "--no-ray", "--include", str(stop41), "--out", str(tmp_path))
    data = json.loads((tmp_path / "cluster_curves.json").read_text())
    points = {(pt["scale"], pt["workers"]): pt for pt in data["points"]}
    assert set(points) == {(0.002, 2), (0.003, 2), (0.002, 1), (1.0, 2)}  # (0.002, 2) run once
    assert not any(pt["error"] for pt in data["points"])
    assert data["common_queries"] == [1, 3]
    for key, pt in points.items():
        assert [r["query"] for r in pt["rows"]][:2] == [1, 3]
        assert all(r["embedded"] > 0 and r["inline"] > 0 and r["duckdb"] > 0 for r in pt["rows"])
        assert (pt["source"] == str(stop41)) == (key == (1.0, 2)) == all(r["ray"] for r in pt["rows"])
    g = {(s["scale"], s["workers"]): s["geomean"] for s in data["summary"]}
    assert g[(0.002, 1)]["ray"] is None and g[(1.0, 2)]["ray"] > g[(0.002, 2)]["inline"] > 0
    md = (tmp_path / "cluster_curves.md").read_text()
    assert "## Geomean seconds per configuration" in md and "more than 2 workers" in md
    for png in ("cluster_time_vs_scale.png", "cluster_time_vs_workers.png"):
        assert f"]({png})" in md and (tmp_path / png).stat().st_size > 0
    assert (tmp_path / "cluster_sf0.003_p2.md").exists()
