"""The coupled-neighbour audit: does a query's view stay the same when one unit changes?

See docs/design.md §Audit.  :func:`audit` is the Python entry point; ``dodb audit`` the
command line.
"""
from importlib import import_module as _import_module

# loaded on first use: the CLI defines `dodb audit`'s arguments without loading the engine
_LAZY = {"AuditError": "neighbour", "Neighbourhood": "neighbour", "AuditReport": "run", "PairResult": "run",
         "QueryAudit": "run", "audit": "run"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dodb.audit' has no attribute {name!r}")
    value = getattr(_import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value

__all__ = ["audit", "AuditReport", "QueryAudit", "PairResult", "AuditError", "Neighbourhood"]
