"""The top-200 list (tests/functions/top_functions.py, docs/top_functions.md): no entry answers
wrongly, every entry's probes bind in DuckDB, and the share answered does not fall below what
main measured last (a ratchet: raise FLOOR with the table, never lower it)."""
from __future__ import annotations

from tests.functions import top_functions

FLOOR = 197  # entries ok on main (docs/top_functions.md)


def test_no_wrong_answers_and_coverage_holds():
    rows = top_functions.run()
    assert len(rows) == 200
    wrong = [f"{name}: {[o.detail for o in outs if o.status != 'ok'][:1]}" for name, status, outs in rows
             if status == "wrong"]
    assert not wrong, wrong
    assert not [name for name, status, _ in rows if status == "not bound"]
    ok = sum(status == "ok" for _, status, _ in rows)
    assert ok >= FLOOR, f"top-200 coverage fell to {ok} (was {FLOOR})"
