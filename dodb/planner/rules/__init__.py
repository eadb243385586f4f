"""Rewrite passes, one rule per module, each a function from expression to expression
(modelled on sqlglot's optimizer).  :func:`dodb.planner.optimize.optimize` runs them
between sqlglot's own rules."""
from .factor_disjunctions import factor_disjunctions
from .reject_unsupported import reject_unsupported
from .unnest_exists import unnest_exists

__all__ = ["factor_disjunctions", "reject_unsupported", "unnest_exists"]
