"""The coupled-neighbour audit: does a query's view stay the same when one unit changes?

See docs/design.md §Audit.  :func:`audit` is the Python entry point; ``dodb audit`` the
command line.
"""
from .neighbour import AuditError, Neighbourhood
from .run import AuditReport, PairResult, QueryAudit, audit

__all__ = ["audit", "AuditReport", "QueryAudit", "PairResult", "AuditError", "Neighbourhood"]
