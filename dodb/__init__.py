"""dodb — differentially oblivious SQL for DuckDB.

    >>> import dodb
    >>> db = dodb.connect()                      # or dodb.connect("file.duckdb"), dodb.attach(con)
    >>> _ = db.con.execute("CREATE TABLE t AS SELECT range % 7 AS k, range AS v FROM range(100)")
    >>> db.set_budget(epsilon=3.0, delta=1e-6)
    >>> stored = db.protect("t", privacy_unit="v", max_contributions=1)   # size released under DP
    >>> res = db.sql("SELECT k, count(*) AS n FROM t GROUP BY k ORDER BY k", epsilon=0.5)
    >>> res.fetchall()[:2]
    [(0, 15), (1, 15)]
"""
from .errors import (CatalogError, ClusterError, DatabaseBusyError, DodbError, InvalidParameterError,
                     MemoryLimitError, PlanningError, QueryExecutionError, ReadOnlyError, StaleShardsError,
                     UnsupportedQueryError)
from .lazy import lazy_attributes

# The engine (numpy, DuckDB, sqlglot, pyarrow and dodb's planner) loads on first use, so
# ``import dodb`` and ``dodb --help`` stay fast (issue 26); ``dodb.connect`` is the usual first use.
_LAZY = {name: "session" for name in ("Database", "PrivacyReport", "Result", "attach", "connect")}
_LAZY.update({name: "accountant" for name in ("BudgetExceededError", "BudgetNotSetError", "LedgerError")})
_LAZY.update({"set_threads": "oblivious.threads"})  # kernel threads for the process (docs/design.md §Threads)
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)

__version__ = "0.1.0"

__all__ = [
    "connect", "attach", "Database", "Result", "PrivacyReport", "set_threads",
    "DodbError", "UnsupportedQueryError", "PlanningError", "CatalogError", "InvalidParameterError",
    "QueryExecutionError", "MemoryLimitError",
    "BudgetExceededError", "BudgetNotSetError", "LedgerError", "ReadOnlyError", "DatabaseBusyError",
    "StaleShardsError", "ClusterError",
]
