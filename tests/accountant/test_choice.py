"""c of k datasets (paper 002 §V-A), against the paper's formulas evaluated directly."""
from __future__ import annotations

import math

import pytest

from dodb.accountant import PrivacyEvent
from dodb.accountant.choice import ChoiceOfDatabasesAccountant, DatasetGroup
from dodb.errors import InvalidParameterError


def test_example_2_subsidiaries():
    """c = 1: max_i ε_i (unbounded / add-remove), max_{i≠j} ε_i + ε_j (bounded / replace)."""
    eps = {"north": 0.5, "south": 0.3, "east": 0.2, "west": 0.45}
    for neighbour, want in (("add_remove", 0.5), ("replace", 0.95)):
        acc = ChoiceOfDatabasesAccountant(1, neighbour, methods=["basic"])
        for name, e in eps.items():
            acc.compose(name, PrivacyEvent.generic(e))
        assert acc.report(1e-9)["basic"].epsilon == pytest.approx(want)
    everyone = ChoiceOfDatabasesAccountant(4, "add_remove", methods=["basic"])  # c = k: classic composition
    for name, e in eps.items():
        everyone.compose(name, PrivacyEvent.generic(e))
    assert everyone.get_epsilon(1e-9) == pytest.approx(sum(eps.values()))


def _thm14(eps: float, m: int, delta_leak: float, delta: float) -> float:
    """004 Thm 1.4 evaluated directly: ε sqrt(2m ln 1/δ') + 2mε², δ' = δ - m δ_leak."""
    slack = delta - m * delta_leak
    return eps * math.sqrt(2 * m * math.log(1 / slack)) + 2 * m * eps * eps


@pytest.mark.parametrize("neighbour, m", [("add_remove", 365), ("replace", 730)])
def test_example_1_hospitals(neighbour, m):
    """k = 1000 hospitals, a patient in at most c = 365: compose 365 (730) mechanisms, not 1000."""
    eps, d, delta = 0.01, 1e-9, 1e-5
    acc = ChoiceOfDatabasesAccountant(365, neighbour)
    for i in range(1000):
        acc.compose(f"hospital{i}", PrivacyEvent.generic(eps, d))
    rep = acc.report(delta)
    assert rep["basic"].epsilon == pytest.approx(m * eps)
    assert rep["advanced"].epsilon == pytest.approx(_thm14(eps, m, d, delta), rel=1e-9)
    assert acc.get_epsilon(delta) <= rep["advanced"].epsilon
    assert acc.get_epsilon(delta) < _thm14(eps, 1000, d, delta)  # better than composing all k


def test_worst_subset_by_enumeration_and_the_dominating_bound():
    """Heterogeneous datasets: the exact worst pair (enumerated) vs. the largest terms (dominating)."""
    eps = [0.1, 0.4, 0.2, 0.3, 0.05, 0.25]
    acc = ChoiceOfDatabasesAccountant(2, "add_remove", ["basic", "advanced"])
    for i, e in enumerate(eps):
        acc.compose(f"d{i}", [PrivacyEvent.generic(e, 1e-9), PrivacyEvent.generic(e / 2, 1e-9)])
    exact = acc.report(1e-6)
    assert exact["basic"].epsilon == pytest.approx(1.5 * (0.4 + 0.3))
    s2 = 1.25 * (0.4 ** 2 + 0.3 ** 2)
    slack = 1e-6 - 4e-9
    assert exact["advanced"].epsilon == pytest.approx(math.sqrt(2 * s2 * math.log(1 / slack)) + 2 * s2, rel=1e-9)
    coarse = ChoiceOfDatabasesAccountant(2, "add_remove", ["basic", "advanced"], exact_limit=1)
    coarse._events = acc._events
    dom = coarse.report(1e-6)
    assert dom["basic"].epsilon == pytest.approx(exact["basic"].epsilon)  # same ranking here
    assert dom["advanced"].epsilon >= exact["advanced"].epsilon * (1 - 1e-12)


def test_dataset_group_of_budgets():
    group = DatasetGroup({"a": (1.0, 1e-7), "b": (0.6, 1e-7), "c": (0.8, 1e-7)}, c=1)
    assert group.guarantee(1e-6) == pytest.approx(1.0, rel=1e-5)  # one person is in one dataset: the largest budget
    assert group.fits(1.0, 1e-6) and not group.fits(0.9, 1e-6)
    assert DatasetGroup({"a": (1.0, 1e-7), "b": (0.6, 1e-7), "c": (0.8, 1e-7)}, c=1,
                        neighbour="replace").guarantee(1e-6) == pytest.approx(1.8, rel=1e-5)
    with pytest.raises(InvalidParameterError):
        DatasetGroup({"a": (1.0, 1e-7)}, c=2)
    with pytest.raises(InvalidParameterError):
        ChoiceOfDatabasesAccountant(0)


def test_dataset_group_reads_database_budgets():
    import dodb

    dbs = {}
    for name, e in (("x", 1.0), ("y", 2.0)):
        db = dodb.connect(":memory:")
        db.set_budget(epsilon=e, delta=1e-7)
        dbs[name] = db
    assert DatasetGroup(dbs, c=1).guarantee(1e-6) == pytest.approx(2.0, rel=1e-5)
    assert DatasetGroup(dbs, c=2).guarantee(1e-6) <= 3.0 + 1e-9


def test_dataset_group_of_database_files(tmp_path):
    import dodb

    paths = {}
    for name, e in (("x", 0.7), ("y", 0.4)):
        path = str(tmp_path / f"{name}.duckdb")
        db = dodb.connect(path)
        db.set_budget(epsilon=e, delta=1e-7)
        db.close()
        paths[name] = path
    assert DatasetGroup(paths, c=1, neighbour="replace").guarantee(1e-6) == pytest.approx(1.1, rel=1e-5)
