"""dodb's privacy accountant (docs/design.md §Accounting).

* :mod:`.events`   — :class:`PrivacyEvent`: what leaked (mechanism, sensitivity, operator).
* accountants      — one per composition method, common interface
  ``compose(events)``, ``get_epsilon(delta)``, ``get_delta(epsilon)``:
  :class:`BasicAccountant` (004 Thm 1.3), :class:`AdvancedAccountant` (Thm 1.4),
  :class:`OptimalAccountant` (Remark 4.3 / KOV15), :class:`RenyiAccountant`
  (Thms 6.3, 6.5), :class:`GaussianAccountant` (Thm 6.16), :class:`PLDAccountant`
  (Thm 6.13, numerically), :class:`BestAccountant`; :func:`compose_all` reports all.
* :mod:`._closed`  — closed forms / proven bounds for the padding noise, so that no
  accountant's cost depends on the shift, scale or sensitivity (no pmf over the support).
* :mod:`.filters`  — adaptive privacy filters used across queries.
* :mod:`.ledger`   — :class:`Ledger`, the per-dataset budget in DuckDB.

Where each bound is used: inside one query (parameters fixed by the plan before it
runs) the tightest fixed-sequence bound (``compose_all(...).best``) prices the query;
across queries the ledger's adaptive filter (basic / advanced / Rényi / their union)
decides admission, because later queries are chosen after seeing earlier answers.
"""
from .advanced import AdvancedAccountant
from .base import Accountant
from .basic import BasicAccountant
from .best import METHODS, BestAccountant, Bound, CompositionReport, compose_all, make_accountant
from .errors import (
    AccountantError,
    Budget,
    BudgetExceededError,
    BudgetNotSetError,
    LedgerError,
    NotApplicableError,
)
from .events import PrivacyEvent
from .filters import (
    FILTERS,
    AdvancedFilter,
    BasicFilter,
    PrivacyFilter,
    QueryCharge,
    RenyiFilter,
    UnionFilter,
    make_filter,
)
from .choice import ChoiceOfDatabasesAccountant, DatasetGroup
from .gaussian import GaussianAccountant
from .ledger import BudgetInfo, Charge, Ledger
from .optimal import OptimalAccountant
from .pld import DiscretePLD, PLDAccountant
from .renyi import RenyiAccountant, rdp_to_delta, rdp_to_epsilon

__all__ = [
    "Accountant", "AccountantError", "AdvancedAccountant", "AdvancedFilter", "BasicAccountant",
    "BasicFilter", "BestAccountant", "Bound", "ChoiceOfDatabasesAccountant", "DatasetGroup", "Budget", "BudgetExceededError", "BudgetInfo",
    "BudgetNotSetError", "Charge", "CompositionReport", "DiscretePLD", "FILTERS", "GaussianAccountant",
    "Ledger", "LedgerError", "METHODS", "NotApplicableError", "OptimalAccountant", "PLDAccountant",
    "PrivacyEvent", "PrivacyFilter", "QueryCharge", "RenyiAccountant", "RenyiFilter", "UnionFilter",
    "compose_all", "make_accountant", "make_filter", "rdp_to_delta", "rdp_to_epsilon",
]
