"""Degree bounds inferred from a plan's structure: equality filters shrink unique keys.

(docs/design.md §Degrees from structure.)  A GROUP BY output is unique on its keys, a
DISTINCT output on its columns, a declared key on itself (planner/build.py records these
as a node's ``unique`` sets).  A filter ``g = constant`` keeps only rows that agree on
``g``, so among the rows it keeps, a unique set ``{g} ∪ R`` is unique on ``R`` alone, and a
degree bound on ``{g} ∪ R`` bounds ``R``: grouped by (county, qoy, year) then filtered
``qoy = 1 AND year = 2000`` is unique on county, so a join on county has degree 1.

Both facts hold in every database, so they are public facts of the plan (never of the data)
and a neighbouring database satisfies them too: the join stability ``s_L·deg_R + s_R·deg_L``
(docs/design.md §Operators and stability) stays an upper bound.  Soundness needs the filter's equality to be no coarser
than the grouping's: ``varchar_col = 1`` casts the column and keeps '1', '01' and ' 1', three
distinct groups, so only a literal of the column's own type family fixes it; an untyped
column fixes nothing.

>>> from sqlglot import parse_one
>>> p = parse_one("qoy = 1 AND year = 2000 AND name LIKE 'a%'")
>>> for c in p.find_all(exp.Column): c.type = exp.DataType.build("INT")
>>> sorted(fixed_columns([p.left.left, p.left.right, p.right]))
[('', 'qoy'), ('', 'year')]
>>> reduce_unique([frozenset({"county", "qoy", "year"})], {"qoy", "year"})[1]
frozenset({'county'})
"""
from __future__ import annotations

from sqlglot import exp

__all__ = ["fixed_columns", "reduce_unique", "reduce_degrees", "unique_reason", "window_unique", "shifted_column",
           "rename_keys", "unique_degrees", "substituted_degrees", "closure", "fd_unique", "key_fds",
           "project_fds", "aggregate_fds", "literal_value", "literal_fixes", "union_unique", "union_literals"]

_NUMERIC = exp.DataType.NUMERIC_TYPES
_TEXT = exp.DataType.TEXT_TYPES
_INTEGER = exp.DataType.INTEGER_TYPES - {exp.DataType.Type.BIT}
_SHIFT_LIMIT = 1 << 62  # a larger literal could make DuckDB type the sum as something wider than an integer


def _literal_fixes(col: exp.Column, lit: exp.Expression) -> bool:
    """Whether ``col = lit`` leaves a single grouping value of ``col`` (see module doc)."""
    if not isinstance(lit, exp.Literal):
        return False
    ctype = col.type
    if ctype is None or ctype.this in (exp.DataType.Type.UNKNOWN, None):
        return False
    if lit.is_string:
        return ctype.this in _TEXT
    return ctype.this in _NUMERIC


def _fixed_by(pred: exp.Expression) -> tuple[str, str] | None:
    if isinstance(pred, exp.Paren):
        return _fixed_by(pred.this)
    if not isinstance(pred, exp.EQ):
        return None
    a, b = pred.left, pred.right
    if isinstance(b, exp.Column):
        a, b = b, a
    if isinstance(a, exp.Column) and _literal_fixes(a, b):
        return a.table, a.name
    return None


def fixed_columns(preds: list[exp.Expression]) -> set[tuple[str, str]]:
    """Columns ``(table, name)`` an AND of ``preds`` fixes to one value.

    Only top-level conjuncts ``column = literal`` (either side) with the literal in the
    column's type family count; anything else fixes nothing.
    """
    return {c for p in preds if (c := _fixed_by(p)) is not None}


def reduce_unique(unique: list[frozenset[str]], fixed: set[str]) -> list[frozenset[str]]:
    """Unique sets after a filter fixing ``fixed``: each set, and each set minus ``fixed``."""
    out = list(unique)
    for u in unique:
        smaller = frozenset(u - fixed)
        if smaller != u and smaller not in out:
            out.append(smaller)
    return out


def reduce_degrees(degrees: dict, fixed: set[str]) -> dict:
    """Degree bounds after a filter fixing ``fixed``: a bound on key set K bounds K minus ``fixed``.

    >>> reduce_degrees({frozenset({"a", "b"}): 3, "c": 2}, {"b"})["a"]
    3
    """
    out = dict(degrees)
    for k, d in degrees.items():
        if not isinstance(k, frozenset):
            continue
        rest = k - fixed
        if rest == k or not rest:  # an empty key set would bound the whole relation: not claimed
            continue
        key = next(iter(rest)) if len(rest) == 1 else frozenset(rest)
        out[key] = min(d, out.get(key, d))
    return out


def unique_reason(unique: list[frozenset[str]], cols: list[str]) -> str | None:
    """EXPLAIN's reason for degree 1 on ``cols``: the unique set it comes from, if any.

    >>> unique_reason([frozenset({"ss1.ca_county"})], ["ss1.ca_county"])
    'unique key (ss1.ca_county)'
    """
    for u in unique:
        if u <= frozenset(cols):
            return f"unique key ({', '.join(sorted(u)) or 'at most one row'})"
    return None


def window_unique(unique: list[frozenset[str]], partition: tuple[str, ...], order: tuple[str, ...],
                  funcs: list[tuple[str, str]]) -> list[frozenset[str]]:
    """Unique sets a window adds: its PARTITION BY columns with a numbering column.

    ROW_NUMBER numbers the rows of a partition 1, 2, … with no repeat, so (partition, rn) is
    unique whatever the data.  RANK and DENSE_RANK repeat only on ties in the ORDER BY, so
    they are unique with the partition when (partition ∪ order) is already unique (NULLs
    compare equal both in a unique set and among ORDER BY peers).  ``funcs`` is
    ``(function, output column)`` pairs; ``order`` the ORDER BY columns (plain columns only).

    >>> window_unique([frozenset({"p", "d"})], ("p",), ("d",), [("rank", "rk"), ("sum", "s")]) == [{"p", "rk"}]
    True
    >>> window_unique([frozenset({"p", "d", "e"})], ("p",), ("d",), [("rank", "rk")])
    []
    """
    no_ties = any(u <= frozenset(partition) | frozenset(order) for u in unique)
    out = []
    for func, name in funcs:
        if func == "row_number" or (func in ("rank", "dense_rank") and no_ties):
            out.append(frozenset(partition) | {name})
    return out


def _int_literal(e: exp.Expression) -> bool:
    """An integer literal (``7``, ``-7``), not ``7.0``, ``'7'`` or a huge constant."""
    if isinstance(e, exp.Paren):
        return _int_literal(e.this)
    if isinstance(e, exp.Neg):
        return _int_literal(e.this)
    return (isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit()
            and int(e.this) < _SHIFT_LIMIT)


def shifted_column(e: exp.Expression) -> exp.Column | None:
    """The column ``x`` when ``e`` is an injective integer shift of it, else ``None``.

    ``x + c``, ``c + x``, ``x - c``, ``c - x`` and ``-x`` (nested too) with ``c`` an integer
    literal and ``x`` typed as an integer are one-to-one on ``x``'s values, NULL to NULL and
    an overflow an error (DuckDB's and the evaluator's), so a bound on rows per value of
    ``x`` bounds rows per value of ``e`` (docs/design.md §Degrees from structure).  Floats,
    decimals, strings, casts, untyped columns, ``x * c`` and ``x % c`` are never claimed:
    ``x * 0`` and ``x % 7`` merge values, and floats round.

    >>> from sqlglot import parse_one
    >>> e = parse_one("rn - 1"); e.this.type = exp.DataType.build("BIGINT")
    >>> shifted_column(e).name
    'rn'
    >>> e = parse_one("rn * 2"); e.this.type = exp.DataType.build("BIGINT")
    >>> shifted_column(e) is None
    True
    """
    if isinstance(e, exp.Paren):
        return shifted_column(e.this)
    if isinstance(e, exp.Column):
        t = e.type
        return e if t is not None and t.this in _INTEGER else None
    if isinstance(e, exp.Neg):
        return shifted_column(e.this)
    if isinstance(e, (exp.Add, exp.Sub)):
        a, b = e.left, e.right
        if _int_literal(b):
            return shifted_column(a)
        if _int_literal(a):
            return shifted_column(b)
    return None


def rename_keys(degrees: dict, unique: list[frozenset[str]], same: dict[str, str]
                ) -> tuple[dict, list[frozenset[str]]]:
    """Degree keys and unique sets that also hold with a column replaced by one that is
    an injective function of it (``same`` maps the new column to the old).

    >>> degrees, unique = rename_keys({"x": 3}, [frozenset({"p", "x"})], {"k": "x"})
    >>> degrees, [sorted(u) for u in unique]
    ({'x': 3, 'k': 3}, [['p', 'x'], ['k', 'p']])
    """
    degrees, unique = dict(degrees), list(unique)
    for new, old in same.items():
        for k, d in list(degrees.items()):
            if k == old:
                degrees[new] = min(d, degrees.get(new, d))
            elif isinstance(k, frozenset) and old in k:
                nk = (k - {old}) | {new}
                degrees[nk] = min(d, degrees.get(nk, d))
        unique += [(u - {old}) | {new} for u in list(unique) if old in u]
    return degrees, unique


def _as_key(cols: frozenset[str]):
    return next(iter(cols)) if len(cols) == 1 else cols


def unique_degrees(unique: list[frozenset[str]], times: int) -> dict:
    """Degree bounds a side's unique sets leave after a join in which each of its rows
    appears at most ``times`` times (the other side's degree): ``times`` rows per value.

    >>> unique_degrees([frozenset({"wk", "store"}), frozenset({"id"}), frozenset()], 7) == {frozenset({"wk", "store"}): 7, "id": 7}
    True
    """
    return {_as_key(u): times for u in unique if u}


def substituted_degrees(degrees: dict, unique: list[frozenset[str]], key: str, per_value: dict[str, int]) -> dict:
    """Bounds after joining on ``key`` to a relation unique on its key, whose column ``c``
    has at most ``per_value[c]`` rows per value: a bound ``d`` on ``{key} ∪ R`` gives
    ``d · per_value[c]`` on ``{c} ∪ R``.  Rows sharing (R, c = v) come from the right rows
    with c = v (at most ``per_value[c]``, each with its own key value), each matched by at
    most ``d`` left rows sharing (R, key).

    >>> substituted_degrees({frozenset({"wk", "sk"}): 7}, [], "sk", {"store_id": 2})[frozenset({"wk", "store_id"})]
    14
    """
    out: dict = {}
    bounds = [(k, d) for k, d in degrees.items() if isinstance(k, frozenset)] + [(u, 1) for u in unique]
    for k, d in bounds:
        if key not in k or len(k) < 2:
            continue
        rest = k - {key}
        for c, per in per_value.items():
            nk = _as_key(rest | {c})
            out[nk] = min(d * max(per, 1), out.get(nk, d * max(per, 1)))
    return out


# -- functional dependencies from declared keys (docs/design.md §Degrees from structure) -----------

FD = tuple[frozenset[str], frozenset[str]]


def key_fds(keys: list[frozenset[str]], columns: list[str]) -> list[FD]:
    """A table unique on ``K`` (a declared key, verified counting NULLs as one value at protect
    time) determines all of its columns: two rows agreeing on ``K`` are the same row."""
    return [(k, frozenset(columns)) for k in keys if k]


def closure(cols: frozenset[str], fds: list[FD]) -> frozenset[str]:
    """Every column that ``cols`` determines under ``fds`` (Armstrong's axioms).

    >>> sorted(closure(frozenset({"id"}), [(frozenset({"id"}), frozenset({"name"})), (frozenset({"name"}), frozenset({"x"}))]))
    ['id', 'name', 'x']
    """
    out = set(cols)
    changed = True
    while changed:
        changed = False
        for lhs, rhs in fds:
            if lhs <= out and not rhs <= out:
                out |= rhs
                changed = True
    return frozenset(out)


def fd_unique(keys: list[str], fds: list[FD]) -> list[frozenset[str]]:
    """Smaller unique sets of a GROUP BY on ``keys`` whose input satisfies ``fds``.

    For each dependency ``L → R`` with ``L ⊆ G`` (the keys), the groups are unique on
    ``U = L ∪ (G − closure(L))``: two groups agreeing on ``U`` have input rows agreeing on ``L``,
    hence on ``closure(L)``, hence on all of ``G`` — the same group.  TPC-DS Q4's year_total
    groups by (c_customer_id, c_first_name, …, d_year); ``c_customer_id`` is a declared key of
    customer, so it is unique on (c_customer_id, d_year).

    >>> fds = [(frozenset({"id"}), frozenset({"id", "first", "last"}))]
    >>> [sorted(u) for u in fd_unique(["id", "first", "last", "year"], fds)]
    [['id', 'year']]
    >>> fd_unique(["first", "last", "year"], fds)
    []
    """
    g = frozenset(keys)
    out: list[frozenset[str]] = []
    for lhs, _ in fds:
        if not lhs <= g:
            continue
        u = lhs | (g - closure(lhs, fds))
        if u != g and u not in out:
            out.append(u)
    return out


def project_fds(fds: list[FD], names: dict[str, list[str]]) -> list[FD]:
    """Dependencies after a projection; ``names`` maps an input column to the output names
    that are that column unchanged.  A dependency survives when every column of its left side
    is kept (under one of its names; a dropped key determines nothing any more); its right side
    keeps the columns still present, under every name."""
    out: list[FD] = []
    for lhs, rhs in fds:
        if not all(c in names for c in lhs):
            continue
        new_lhs = frozenset(names[c][0] for c in lhs)
        new_rhs = frozenset(n for c in rhs | lhs if c in names for n in names[c])
        if new_rhs - new_lhs:
            out.append((new_lhs, new_rhs))
    return out


def aggregate_fds(fds: list[FD], keys: list[str]) -> list[FD]:
    """Dependencies among the group keys still hold between the groups (each group's keys
    are the values of its input rows)."""
    g = frozenset(keys)
    return [(lhs, rhs & g) for lhs, rhs in fds if lhs <= g and (rhs & g) - lhs]


# -- UNION ALL with a literal discriminator ---------------------------------------------------------

def literal_value(e: exp.Expression) -> tuple | None:
    """A literal column value the planner can reason about: a string, or an integer (not a
    decimal, float, NULL or cast).  ``('text', s)`` or ``('int', n)``.

    >>> literal_value(exp.Literal.string("s")), literal_value(exp.Literal.number(7))
    (('text', 's'), ('int', 7))
    >>> literal_value(exp.Literal.number("7.0")) is None
    True
    """
    if isinstance(e, exp.Paren):
        return literal_value(e.this)
    if isinstance(e, exp.Neg):
        v = literal_value(e.this)
        return ("int", -v[1]) if v is not None and v[0] == "int" else None
    if isinstance(e, exp.Literal):
        if e.is_string:
            return ("text", e.this)
        if e.this.isdigit() and int(e.this) < _SHIFT_LIMIT:
            return ("int", int(e.this))
    return None


def literal_fixes(values: frozenset, lit: exp.Expression) -> bool:
    """Whether ``col = lit`` fixes a column every row of which holds one of the literal
    ``values``: all of one kind (so the column is VARCHAR, or an integer type), compared with a
    literal of that same kind, keeps rows of one value only."""
    v = literal_value(lit)
    return v is not None and bool(values) and all(x[0] == v[0] for x in values)


def _distinct_values(a: frozenset, b: frozenset) -> bool:
    """No value of ``a`` can equal one of ``b``: one kind throughout, and for strings distinct
    even case-folded (a conservative margin against case-insensitive comparison)."""
    kinds = {x[0] for x in a | b}
    if len(kinds) != 1:
        return False
    fold = (lambda x: x[1].casefold()) if kinds == {"text"} else (lambda x: x[1])
    return not ({fold(x) for x in a} & {fold(x) for x in b})


def union_literals(left: dict[str, frozenset], right: dict[str, frozenset], lcols: list[str], rcols: list[str]
                   ) -> dict[str, frozenset]:
    """Literal value sets of a UNION ALL's columns (named as the left side's): a column holding
    literals on both sides holds one of their union, when both sides are of one kind."""
    out = {}
    for lc, rc in zip(lcols, rcols):
        if lc in left and rc in right and len({x[0] for x in left[lc] | right[rc]}) == 1:
            out[lc] = left[lc] | right[rc]
    return out


def union_unique(lu: list[frozenset[str]], ru: list[frozenset[str]], left: dict[str, frozenset],
                 right: dict[str, frozenset], lcols: list[str], rcols: list[str]) -> list[frozenset[str]]:
    """Unique sets of ``L UNION ALL R`` (named as the left side's columns).

    A column ``D`` whose literal values on the left and on the right can never be equal tells
    the sides apart (a discriminator: ``'s' AS sale_type`` in one branch, ``'w'`` in the other).
    With ``L`` unique on ``U_L`` and ``R`` on ``U_R``, the union is unique on ``U_L ∪ U_R ∪ {D}``:
    two rows agreeing on ``D`` come from one side (no NULL: every row holds a literal), and
    agreeing on that side's unique set they are the same row.  Nested unions carry the value
    sets, so three branches work too (TPC-DS Q4's year_total).

    >>> l = {"t": frozenset({("text", "s")})}; r = {"t": frozenset({("text", "w")})}
    >>> [sorted(u) for u in union_unique([frozenset({"id", "y"})], [frozenset({"id2", "y2"})], l, r, ["id", "y", "t"], ["id2", "y2", "t"])]
    [['id', 't', 'y']]
    >>> union_unique([frozenset({"id"})], [frozenset({"id"})], l, l, ["id", "t"], ["id", "t"])
    []
    """
    to_left = dict(zip(rcols, lcols))
    rights = [frozenset(to_left[c] for c in u) for u in ru if all(c in to_left for c in u)]
    out: list[frozenset[str]] = []
    for lc, rc in zip(lcols, rcols):
        if not (lc in left and rc in right and _distinct_values(left[lc], right[rc])):
            continue
        for a in lu:
            for b in rights:
                u = a | b | {lc}
                if u not in out and len(out) < 16:
                    out.append(u)
    return out
