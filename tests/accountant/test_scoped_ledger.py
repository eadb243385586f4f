"""The ledger's partition-aware admission with every filter, and compatibility with older ledgers."""
from __future__ import annotations

import duckdb
import pytest

from dodb.accountant import BudgetExceededError, Ledger, LedgerError, PrivacyEvent
from dodb.oblivious.noise import ShiftedTruncatedDiscreteLaplace

FILTERS = ["basic", "advanced", "renyi", "best"]


def charge(eps):
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(eps, 1e-9, 1)
    return PrivacyEvent.padding(m, 1, operator="op")


def fits(ledger, ev, **kw):
    try:
        ledger.admit(ev, delta=1e-8, **kw)
        return True
    except BudgetExceededError:
        return False


def admissible(ledger, ev):
    return ledger.preview(ev, delta=1e-8)["admissible"]


@pytest.mark.parametrize("filt", FILTERS)
def test_disjoint_partitions_cost_one_under_add_remove(filt):
    """25 partitions charged alike admit exactly what one unpartitioned ledger admits."""
    lp, lo = Ledger(duckdb.connect()), Ledger(duckdb.connect())
    for led in (lp, lo):
        led.set_budget(2.0, 1e-3, filter=filt)
    for e in [0.3, 0.2, 0.35, 0.5, 0.4, 0.6, 0.7]:
        want = fits(lo, charge(e))
        assert [fits(lp, charge(e), partitions=frozenset({f"n={k}"})) for k in range(25)] == [want] * 25
    assert fits(lp, charge(0.3)) == fits(lo, charge(0.3))


@pytest.mark.parametrize("filt", FILTERS)
def test_disjoint_partitions_cost_the_worst_pair_under_replace(filt):
    """Replace: partition 0's charge meets the pair (0, j) = 2H + e; the others then 2H + 2e (Cor IV.13)."""
    lp, lo = Ledger(duckdb.connect()), Ledger(duckdb.connect())
    for led in (lp, lo):
        led.set_neighbour("replace")
        led.set_budget(2.0, 1e-3, filter=filt)
    rounds = 0
    for e in [0.1, 0.15, 0.2, 0.3, 0.4, 0.6]:
        first = fits(lp, charge(e), partitions=frozenset({"n=0"}))
        assert first == admissible(lo, charge(e))
        if not first:
            assert not any(fits(lp, charge(e), partitions=frozenset({f"n={k}"})) for k in range(1, 25))
            continue
        lo.admit(charge(e), delta=1e-8)
        second = admissible(lo, charge(e))
        assert [fits(lp, charge(e), partitions=frozenset({f"n={k}"})) for k in range(1, 25)] == [second] * 24
        if not second:
            break  # partition 0 is now ahead of the others: the histories are no longer alike
        lo.admit(charge(e), delta=1e-8)
        rounds += 1
    assert rounds >= 1


def test_partitioned_and_global_in_one_basic_ledger():
    led = Ledger(duckdb.connect())
    led.set_budget(2.0, 1e-3, filter="basic")
    for k in range(5):
        led.admit(PrivacyEvent.generic(1.0), delta=0.0, partitions=frozenset({f"p{k}"}))
    st = led.status()
    assert st["spent"].epsilon == pytest.approx(1.0) and len(st["partitions"]) == 5
    assert st["remaining"].epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        led.admit(PrivacyEvent.generic(1.1), delta=0.0)
    led.admit(PrivacyEvent.generic(1.0), delta=0.0)
    assert led.status()["spent"].epsilon == pytest.approx(2.0)
    with pytest.raises(LedgerError, match="below what was already spent"):
        led.set_budget(1.5, 1e-3)
    with pytest.raises(ValueError):
        led.admit(PrivacyEvent.generic(0.1), delta=0.0, partitions=frozenset())


def test_an_old_ledger_without_the_new_tables_still_reads(tmp_path):
    path = str(tmp_path / "old.duckdb")
    con = duckdb.connect(path)
    led = Ledger(con)
    led.set_budget(1.0, 1e-6, filter="basic")
    led.admit(PrivacyEvent.generic(0.25), delta=0.0)
    con.execute("DROP TABLE dodb_meta.ledger_scoped_cost")
    con.execute("DROP TABLE dodb_meta.analyst_sessions")
    con.close()
    ro = duckdb.connect(path, read_only=True)
    st = Ledger(ro).status()
    assert st["spent"].epsilon == pytest.approx(0.25) and st["partitions"] == {}
    assert Ledger(ro).sessions() == []
    ro.close()
    rw = duckdb.connect(path)  # opened read-write once: the tables appear, the history is intact
    led = Ledger(rw)
    led.admit(PrivacyEvent.generic(0.25), delta=0.0, partitions=frozenset({"a"}))
    assert led.status()["spent"].epsilon == pytest.approx(0.5)
