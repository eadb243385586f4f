"""The coupled-neighbour audit: does a query's view stay the same when one unit changes?

See docs/design.md §Audit.  :func:`audit` is the Python entry point; ``dodb audit`` the
command line.
"""
from ..lazy import lazy_attributes

# loaded on first use: the CLI defines `dodb audit`'s arguments without loading the engine
_LAZY = {"AuditError": "neighbour", "Neighbourhood": "neighbour", "AuditReport": "run", "PairResult": "run",
         "QueryAudit": "run", "audit": "run"}
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)

__all__ = ["audit", "AuditReport", "QueryAudit", "PairResult", "AuditError", "Neighbourhood"]
