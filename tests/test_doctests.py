"""The docstring examples (planner rules, widths, the package tour) run as written."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "dodb",
    "dodb.planner.rules.reject_unsupported",
    "dodb.planner.rules.list_outputs",
    "dodb.planner.rules.unnest_exists",
    "dodb.planner.rules.factor_disjunctions",
    "dodb.planner.widths",
    "dodb.planner.degrees",
    "dodb.planner.group_bounds",
    "dodb.planner.projection",
    "dodb.planner.expr_keys",
    "dodb.planner.rules.mark_scalar_sources",
    "dodb.operators.theta_join",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
