"""Order-preserving key encoding: columns → bit fields → packed ``uint64`` words.

A sort or grouping key is a bitstring whose unsigned big-endian order equals SQL order:
for each key column an optional NULL flag bit (NULLS LAST, DuckDB's default for both
directions), then the value's order-preserving bits (sign-flipped integers, IEEE total
order for floats, two's-complement-flipped 128-bit decimals, string bytes then length),
complemented for DESC.  The fields are concatenated and cut into 64-bit words, so a
key of at most 64 bits is a single word and the sorting network compares one word.
All transforms are element-wise over every row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

from .table import UnsupportedTypeError, Column
from ..oblivious.select import as_float64, select

__all__ = ["KeyField", "column_fields", "pack_fields", "encode_keys", "EncodedKey", "normalise_key", "word_bit",
           "word_field", "run_starts"]

_SIGN64 = np.uint64(1 << 63)


@dataclass(frozen=True)
class KeyField:
    """``bits`` low bits of ``values`` (uint64), most significant first."""

    values: np.ndarray
    bits: int


def normalise_key(c: Column) -> Column:
    """Integers of any width and dates compare as int64, so that two sides encode alike."""
    if (pa.types.is_integer(c.type) and c.type != pa.int64()) or pa.types.is_date32(c.type):
        return Column(pa.int64(), c.values.astype(np.int64), c.valid)
    return c


def _mask(bits: int) -> np.uint64:
    return np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)


def _int_field(v: np.ndarray) -> KeyField:
    bits = v.dtype.itemsize * 8
    if np.issubdtype(v.dtype, np.signedinteger):
        u = v.astype(np.int64).view(np.uint64) + np.uint64(1 << (bits - 1))
        return KeyField(u & _mask(bits), bits)
    return KeyField(v.astype(np.uint64), bits)


def _float_field(v: np.ndarray) -> KeyField:
    f = as_float64(v)
    f = select(f == 0, 0.0, f)  # -0.0 and 0.0 are equal in SQL
    u = f.view(np.uint64)
    neg = (u >> np.uint64(63)) == 1
    return KeyField(select(neg, ~u, u | _SIGN64), 64)


def _string_fields(c: Column) -> list[KeyField]:
    w = c.values.shape[1]
    padded = (w + 7) // 8 * 8
    mat = np.zeros((c.values.shape[0], padded), dtype=np.uint8)
    mat[:, :w] = c.values
    words = mat.view(">u8").astype(np.uint64)  # (n, padded/8) big-endian words
    out = []
    for j in range(words.shape[1]):
        bits = 64 if (j + 1) * 8 <= w else (w - j * 8) * 8
        out.append(KeyField(words[:, j] >> np.uint64(64 - bits) if bits < 64 else words[:, j], bits))
    # the length breaks ties between strings that differ only in trailing NUL bytes
    out.append(KeyField(c.lengths.astype(np.uint64), max(1, int(w).bit_length())))
    return out


def column_fields(c: Column, descending: bool = False, nullable: bool = True,
                  nulls_first: bool = False) -> list[KeyField]:
    """Order-preserving fields of one column (NULL flag first; NULLS LAST unless asked)."""
    t = c.type
    if t == pa.month_day_nano_interval():  # DuckDB orders and groups them normalised: not yet here
        raise UnsupportedTypeError("INTERVAL values as sort, group, join or MIN/MAX keys are not supported yet")
    if c.is_string:
        fields = _string_fields(c)
    elif pa.types.is_decimal(t):
        lo = c.values[:, 0]
        hi = c.values[:, 1] ^ _SIGN64
        fields = [KeyField(hi, 64), KeyField(lo, 64)] if t.precision > 18 else [KeyField(lo ^ _SIGN64, 64)]
    elif pa.types.is_boolean(t):
        fields = [KeyField(c.values.astype(np.uint64), 1)]
    elif pa.types.is_null(t):
        fields = []
    elif np.issubdtype(c.values.dtype, np.floating):
        fields = [_float_field(c.values)]
    else:
        fields = [_int_field(c.values)]
    valid = c.valid
    fields = [KeyField(select(valid, f.values, np.uint64(0)), f.bits) for f in fields]
    if descending:
        fields = [KeyField(~f.values & _mask(f.bits), f.bits) for f in fields]
    if nullable:
        fields = [KeyField((valid if nulls_first else ~valid).astype(np.uint64), 1)] + fields
    return fields


def pack_fields(fields: Sequence[KeyField], n: int) -> tuple[list[np.ndarray], int]:
    """Concatenate fields into big-endian 64-bit words; returns ``(words, total_bits)``."""
    words: list[np.ndarray] = []
    cur = np.zeros(n, dtype=np.uint64)
    used = 0
    total = 0
    for f in fields:
        v = f.values.astype(np.uint64) & _mask(f.bits)
        remaining = f.bits
        total += f.bits
        while remaining > 0:
            room = 64 - used
            take = min(room, remaining)
            part = (v >> np.uint64(remaining - take)) & _mask(take)
            cur = (cur << np.uint64(take)) | part if take < 64 else part
            used += take
            remaining -= take
            if used == 64:
                words.append(cur)
                cur = np.zeros(n, dtype=np.uint64)
                used = 0
    if used or not words:
        # left-align the last partial word so that comparison stays lexicographic
        words.append(cur << np.uint64(64 - used) if 0 < used < 64 else cur)
    return words, total


def word_bit(words: Sequence[np.ndarray], i: int) -> np.ndarray:
    """Bit ``i`` of every row's packed key (counted from the first field's top bit, as
    :func:`pack_fields` lays fields out), as booleans.

    >>> words, _ = pack_fields([KeyField(np.array([2, 1], np.uint64), 2), KeyField(np.array([1, 0], np.uint64), 1)], 2)
    >>> word_bit(words, 0).tolist(), word_bit(words, 2).tolist()
    ([True, False], [True, False])
    """
    return word_field(words, i, 1).astype(bool)


def word_field(words: Sequence[np.ndarray], start: int, bits: int) -> np.ndarray:
    """The ``bits``-bit field (at most 64) that begins at bit ``start`` of every row's packed
    key (bits counted from the top, as :func:`pack_fields` lays fields out).

    >>> words, _ = pack_fields([KeyField(np.array([1, 2], np.uint64), 60), KeyField(np.array([5, 6], np.uint64), 9)], 2)
    >>> word_field(words, 60, 9).tolist()
    [5, 6]
    """
    w, s = divmod(int(start), 64)
    end = s + int(bits)
    low = np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    if end <= 64:  # lint: public field places (the key's widths)
        return (words[w] >> np.uint64(64 - end)) & low  # lint: public word index (the field's place)
    spill = end - 64  # the field's last bits open the next word
    head = words[w] << np.uint64(spill)  # lint: public word index (the field's place)
    return (head | (words[w + 1] >> np.uint64(64 - spill))) & low  # lint: public word index (the field's place)

def run_starts(words: Sequence[np.ndarray], bits: int | None = None) -> np.ndarray:
    """Rows whose first ``bits`` key bits (all of them by default) differ from the previous
    row's (row 0 starts a run): the runs of equal keys in sorted rows, also of a packed key
    that has more fields after them.

    >>> words, _ = pack_fields([KeyField(np.array([1, 1, 2], np.uint64), 2), KeyField(np.array([0, 1, 0], np.uint64), 1)], 3)
    >>> run_starts(words, 2).tolist(), run_starts(words).tolist()
    ([True, False, True], [True, True, True])
    """
    bits = 64 * len(words) if bits is None else int(bits)
    n = int(words[0].shape[0])
    starts = np.zeros(n, dtype=bool)
    if not n:
        return starts
    starts[0] = True
    for w in range(-(-bits // 64)):
        take = min(64, bits - 64 * w)  # this word's share of the prefix, from its top
        a = words[w] & np.uint64(((1 << take) - 1) << (64 - take))  # lint: public word index (the key's width)
        # not ``|=``: numpy's in-place OR of one-element bool arrays branches on the value
        starts[1:] = starts[1:] | (a[1:] != a[:-1])
    return starts

@dataclass
class EncodedKey:
    words: list[np.ndarray]
    bits: int

    @property
    def single_word_bits(self) -> int | None:
        """Bit width for the sort's packed fast path, when the key is one word."""
        return self.bits if len(self.words) == 1 and self.bits <= 64 else None

    def with_position(self) -> "EncodedKey":
        """The key with each row's position appended as a last field (all keys distinct)."""
        n = int(self.words[0].shape[0])
        fields = [KeyField(w, 64) for w in self.words[:-1]]
        rem = self.bits - 64 * (len(self.words) - 1)
        if rem > 0:
            fields.append(KeyField(self.words[-1] >> np.uint64(64 - rem) if rem < 64 else self.words[-1], rem))
        pos_bits = max(1, (max(1, n) - 1).bit_length())
        fields.append(KeyField(np.arange(n, dtype=np.uint64), pos_bits))
        words, bits = pack_fields(fields, n)
        return EncodedKey(words, bits)

    def packed_single(self) -> np.ndarray:
        """The single key word right-aligned (value < 2^bits), for ``key_bits`` sorting."""
        return self.words[0] >> np.uint64(64 - self.bits) if 0 < self.bits < 64 else self.words[0]


def encode_keys(columns: Sequence[Column], descending: Sequence[bool] | None = None,
                leading: Sequence[KeyField] = (), n: int | None = None,
                nulls_first: Sequence[bool] | None = None) -> EncodedKey:
    """Encode key columns (with optional leading fields such as a dummy flag)."""
    descending = list(descending) if descending is not None else [False] * len(columns)
    nulls_first = list(nulls_first) if nulls_first is not None else [False] * len(columns)
    fields = list(leading)
    for c, d, nf in zip(columns, descending, nulls_first):
        fields.extend(column_fields(c, d, nulls_first=nf))
    if n is None:
        n = int(columns[0].valid.shape[0]) if columns else int(leading[0].values.shape[0])
    words, bits = pack_fields(fields, n)
    return EncodedKey(words, bits)
