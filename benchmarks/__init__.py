"""dodb benchmark harness: ``python -m benchmarks {kernels,operators,tpch,allocation}``.

* :mod:`benchmarks.kernels` — oblivious kernels vs numpy and a memory-bandwidth bound;
* :mod:`benchmarks.operators` — every operator in modes do / oblivious / plain and DuckDB;
* :mod:`benchmarks.tpch` — TPC-H end to end (DuckDB, dodb plain, do at several ε, oblivious);
* :mod:`benchmarks.allocation` — even vs cost-aware budget split at equal total ε (TPC-H, do mode);
* :mod:`benchmarks.report` — Markdown tables and matplotlib plots;
* :mod:`benchmarks.common` — timing (warm-up + median), peak memory, machine info.

``python -m benchmarks all`` runs the three at their defaults (``--quick``: tiny versions);
``python -m benchmarks report`` re-renders every Markdown report and plot from the JSON.
Results go to ``benchmarks/results/`` (or ``--out``).
"""
