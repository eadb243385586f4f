"""``dodb budget FILE --plot OUT.png``: the dataset's spending over time.

Cumulative ε (and δ, on a second axis) of the charges in ``db.history()`` — the same
plain sums the budget's *spent* reports (docs/design.md §Budget defaults) — with owner
releases and queries marked apart and the budget's ε as a line.  matplotlib is an
optional extra (``pip install dodb[plot]``); without it a :class:`DodbError` says so.
"""
from __future__ import annotations

from typing import Any

from .errors import DodbError

__all__ = ["spending_series", "plot_budget"]


def spending_series(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per charge, in time order: when, what, its (ε, δ) and the running sums."""
    out, eps, delta = [], 0.0, 0.0
    for h in sorted(history, key=lambda r: (r["charged_at"], r["query_id"])):
        eps += float(h["epsilon"])
        delta += float(h["delta"])
        out.append({"at": h["charged_at"], "query_id": h["query_id"], "kind": h.get("kind", "query"),
                    "sql": h["sql"], "epsilon": float(h["epsilon"]), "spent_epsilon": eps, "spent_delta": delta})
    return out


def plot_budget(history: list[dict[str, Any]], budget: tuple[float, float] | None, path: str) -> int:
    """Write the spending plot to ``path`` (format from its suffix); returns the charges drawn."""
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        raise DodbError("--plot needs matplotlib: pip install 'dodb[plot]' (or matplotlib)") from None
    series = spending_series(history)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if series:
        times = [s["at"] for s in series]
        ax.step(times, [s["spent_epsilon"] for s in series], where="post", label="ε spent")
        for kind, marker in (("owner", "s"), ("query", "o")):
            pts = [s for s in series if (s["kind"] == "owner") == (kind == "owner")]
            ax.scatter([s["at"] for s in pts], [s["spent_epsilon"] for s in pts], marker=marker, s=18,
                       label="owner releases" if kind == "owner" else "queries")
        ax2 = ax.twinx()
        ax2.step(times, [s["spent_delta"] for s in series], where="post", color="grey", alpha=0.5, label="δ spent")
        ax2.set_ylabel("δ spent")
    if budget is not None:
        ax.axhline(budget[0], color="red", linestyle="--", label=f"budget ε={budget[0]:g}")
    ax.set_xlabel("time")
    ax.set_ylabel("ε spent (sum of charges)")
    ax.set_title(f"privacy budget spending ({len(series)} charges)")
    ax.legend(loc="upper left")
    fig.autofmt_xdate()
    try:
        fig.savefig(path)
    except (OSError, ValueError) as e:
        raise DodbError(f"cannot write the plot to {path!r}: {e}") from None
    finally:
        plt.close(fig)
    return len(series)
