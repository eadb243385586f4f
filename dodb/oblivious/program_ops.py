"""The instruction set of compiled predicate programs: public constants shared by the kernel
(:mod:`.compiled_program`) and the code that lowers a predicate tree to a program
(``operators.expressions.program``), importable without loading numba."""
from __future__ import annotations

__all__ = ["OPS", "CMP_CODES", "WIDTH", "BLOCK", "SLOTS64", "SLOTS32", "SLOTS_STR"]

BLOCK = 1024  # rows per block: a program's registers stay in L1/L2
WIDTH = 8     # fields per instruction
SLOTS64, SLOTS32, SLOTS_STR = 8, 8, 4  # leaf slots of each kind (fixed: one compiled signature)
OPS = {"LEAF64": 0, "LEAF32": 1, "CONST": 2, "CMP": 3, "LOGIC": 4, "NOT": 5, "ISNULL": 6, "BOTH": 7,
       "IN_START": 8, "IN_ITEM": 9, "IN_END": 10, "STR_EQ": 11, "STR_VALID": 12}
# comparison operator codes: which of (less, equal, greater) a comparison keeps
CMP_CODES = {"=": 0, "<>": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}
