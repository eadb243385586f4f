"""Oblivious kernels (docs/design.md §Invariants, 2) and the exact noise samplers.

Everything in this package touches memory in patterns fixed by public sizes: sorting
networks, fixed-stride shifts, linear scans and element-wise selects.  ``tests/oblivious``
parses these modules and fails on banned calls (see ``test_lint.py``).
"""
from .compact import compact, distribute
from .expand import expand
from .noise import (
    DiscreteGaussian,
    DiscreteLaplace,
    ShiftedTruncatedDiscreteGaussian,
    ShiftedTruncatedDiscreteLaplace,
)
from .rng import enable_seeding, new_rng, seeded_mode
from .scan import forward_fill, segment_ends, segment_ids, segmented_lex_scan, segmented_scan
from .sort import oblivious_merge, oblivious_sort
from .trace import Trace, TraceEvent

__all__ = [
    "Trace",
    "TraceEvent",
    "oblivious_sort",
    "oblivious_merge",
    "compact",
    "distribute",
    "expand",
    "segmented_scan",
    "segmented_lex_scan",
    "segment_ids",
    "segment_ends",
    "forward_fill",
    "DiscreteLaplace",
    "DiscreteGaussian",
    "ShiftedTruncatedDiscreteLaplace",
    "ShiftedTruncatedDiscreteGaussian",
    "new_rng",
    "enable_seeding",
    "seeded_mode",
]
