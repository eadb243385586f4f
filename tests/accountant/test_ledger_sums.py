"""The ledger's kept sums (``accountant/ledger_sums.py``): exact, equal to a fresh read of
the rows, and never reused after another writer charged."""
from __future__ import annotations

import math
import random

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dodb.accountant import BudgetExceededError, Ledger, LedgerError, PrivacyEvent
from dodb.accountant.ledger_sums import ExactSum, read_sums
from dodb.accountant.records import _run

from dodb.oblivious.noise import ShiftedTruncatedDiscreteLaplace



def padding_query(eps: float) -> PrivacyEvent:
    m = ShiftedTruncatedDiscreteLaplace.for_privacy(eps, 1e-9, 1)
    return PrivacyEvent.compose([PrivacyEvent.padding(m, 1, operator=f"op#{i}") for i in range(2)])


FLOATS = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e200, max_value=1e200)


@settings(max_examples=200, deadline=None)
@given(st.lists(FLOATS, max_size=40), st.randoms())
def test_exact_sum_is_fsum_in_any_order(values, rnd):
    s = ExactSum()
    for v in values:
        s.add(v)
    shuffled = list(values)
    rnd.shuffle(shuffled)
    assert s.value() == math.fsum(values) == ExactSum(shuffled).value()


def test_exact_sum_keeps_what_a_float_loses():
    assert ExactSum([1e16, 1.0, -1e16]).value() == 1.0
    assert ExactSum([0.1] * 10).value() == math.fsum([0.1] * 10) == 1.0


def _fresh(led: Ledger, account: str = ""):
    cur = led._con.cursor()
    try:
        return read_sums(cur, led._s, account, led._has_scoped(cur), _run).state()
    finally:
        cur.close()


def test_kept_sums_equal_a_fresh_read_of_the_rows():
    con = duckdb.connect()
    led = Ledger(con)
    led.set_budget(1e6, 0.5, filter="basic")
    rnd = random.Random(7)
    for i in range(25):
        parts = None if rnd.random() < 0.5 else frozenset(rnd.sample(["a", "b", "c"], rnd.randint(1, 2)))
        led.admit(padding_query(rnd.uniform(0.001, 0.3)), partitions=parts)
        assert led._sums is not None and led._sums[1].state() == _fresh(led), f"after charge {i}"
    led.open_session("s1", 1.0, 1e-6)
    led.admit(padding_query(0.01), account="s1")  # a session's charge: the dataset's sums stay
    assert led._sums[1].state() == _fresh(led)
    ch = led.admit(padding_query(0.02), standing=True)
    assert (ch.spent, ch.remaining) == (led.status()["spent"], led.status()["remaining"])


def test_another_writer_is_never_missed():
    """Two ledgers on one database: each one's charges bound the other's admissions.
    Keeping the sums without the version check would admit the last charge."""
    con = duckdb.connect()
    first, second = Ledger(con), Ledger(con.cursor())
    first.set_budget(1.0, 1e-6, filter="basic")
    first.admit(PrivacyEvent.generic(0.4), delta=0.0)
    second.admit(PrivacyEvent.generic(0.4), delta=0.0)
    with pytest.raises(BudgetExceededError):
        first.admit(PrivacyEvent.generic(0.4), delta=0.0)
    first.admit(PrivacyEvent.generic(0.2), delta=0.0)
    assert first.spent().epsilon == pytest.approx(1.0) and second.spent().epsilon == pytest.approx(1.0)
    ids = [r["query_id"] for r in first.history()]
    assert ids == sorted(set(ids)) == [1, 2, 3]


def test_a_neighbour_change_is_seen_by_a_kept_state():
    con = duckdb.connect()
    first, second = Ledger(con), Ledger(con.cursor())
    first.set_budget(1.0, 1e-6, filter="basic")
    first.preview(PrivacyEvent.generic(0.1), delta=0.0)  # first keeps the sums and the relation
    first.status()
    second.set_neighbour("replace")
    with pytest.raises(LedgerError, match="planned for 'add_remove'"):
        first.admit(PrivacyEvent.generic(0.1), delta=0.0, neighbour="add_remove")
    first.admit(PrivacyEvent.generic(0.1), delta=0.0, neighbour="replace")


def test_a_charges_standing_is_the_state_it_left_whenever_read():
    """``Charge.spent``/``remaining`` are computed on first read (accountant/standing.py),
    from the state the charge's transaction left, not the ledger's state at reading time."""
    con = duckdb.connect()
    led = Ledger(con)
    led.set_budget(5.0, 1e-6)
    first = led.admit(padding_query(0.1), standing=True)
    st = led.status()
    want = (st["spent"], st["remaining"])
    led.admit(padding_query(0.3), standing=True)
    assert (first.spent, first.remaining) == want
    assert led.admit(padding_query(0.1)).spent is None  # not asked for: nothing deferred


def test_prices_are_shared_by_value_across_ledgers(monkeypatch):
    """A query's composition report is a pure function of its leaves' values, reused by every
    ledger of the process; a leaf with a custom loss curve (keyed by ``id()``) is never reused."""
    from dodb.accountant import ledger as ledger_mod

    calls = []
    real = ledger_mod.compose_all
    monkeypatch.setattr(ledger_mod, "compose_all", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(ledger_mod, "_PRICES", ledger_mod.OrderedDict())
    leds = [Ledger(duckdb.connect()) for _ in range(2)]
    for led in leds:
        led.set_budget(10.0, 1e-6)
        led.admit(padding_query(0.123))
    assert len(calls) == 1
    assert leds[0].history()[0]["epsilon"] == leds[1].history()[0]["epsilon"]
    # a key holding an id() (a custom curve) is never shared
    assert ledger_mod._by_value(padding_query(0.1).leaves()[0][0].privacy_key)
    assert not ledger_mod._by_value(("generic", None, 1, 0.1, 0.0, None, None, 140234, None))
