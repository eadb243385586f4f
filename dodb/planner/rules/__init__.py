"""Rewrite passes, one rule per module, each a function from expression to expression
(modelled on sqlglot's optimizer).  :func:`dodb.planner.optimize.optimize` runs them
between sqlglot's own rules."""
from sqlglot import exp

from .aggregate_filter import aggregate_filter
from .correlated_count import correlated_count
from .correlated_value import correlated_value
from .factor_disjunctions import factor_disjunctions
from .group_by_all import group_by_all
from .grouping_sets import grouping_sets
from .in_values import in_values
from .local_disjunctions import local_disjunctions
from .null_rejecting_joins import null_rejecting_joins
from .one_row_source import one_row_source
from .quantified_comparison import quantified_comparison
from .reject_unsupported import reject_unsupported
from .unnest_exists import unnest_exists
from .within_group import within_group

__all__ = ["aggregate_filter", "correlated_count", "correlated_value", "factor_disjunctions", "group_by_all", "grouping_sets",
           "in_values", "local_disjunctions", "null_rejecting_joins", "one_row_source", "quantified_comparison", "reject_unsupported", "rewrite_grouping", "unnest_exists",
           "within_group"]


def rewrite_grouping(expression: exp.Expression) -> exp.Expression:
    """The grouping rules that run on the parsed query, before the guard (docs/design.md §Grouping):
    GROUP BY ALL, WITHIN GROUP quantiles, aggregate FILTER clauses, then grouping sets."""
    return grouping_sets(aggregate_filter(within_group(group_by_all(expression))))
