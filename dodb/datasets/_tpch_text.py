"""Vocabularies and vectorised string builders for the TPC-H generator.

The word lists are the TPC-H 2.x ``dists.dss`` distributions (spec clause 4.2.2.13).
Every builder here produces an Arrow string array straight from a numpy byte buffer,
so no Python code runs per row: rows become fixed-width byte matrices that are masked
down to their real lengths and flattened (row-major order keeps the rows contiguous).
"""
from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
# (name, regionkey) in nationkey order 0..24, as in the spec / dbgen.
NATIONS = [
    ("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4),
    ("ETHIOPIA", 0), ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2),
    ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0),
    ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2), ("ROMANIA", 3),
    ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
INSTRUCTIONS = ["DELIVER IN PERSON", "COLLECT COD", "TAKE BACK RETURN", "NONE"]
SHIP_MODES = ["REG AIR", "AIR", "RAIL", "TRUCK", "MAIL", "FOB", "SHIP"]
TYPES = [
    f"{a} {b} {c}"
    for a in ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO")
    for b in ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED")
    for c in ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER")
]
CONTAINERS = [
    f"{a} {b}"
    for a in ("SM", "LG", "MED", "JUMBO", "WRAP")
    for b in ("CASE", "BOX", "BAG", "JAR", "PACK", "PKG", "CAN", "DRUM")
]
COLORS = (
    "almond antique aquamarine azure beige bisque black blanched blue blush brown "
    "burlywood burnished chartreuse chiffon chocolate coral cornflower cornsilk cream "
    "cyan dark deep dim dodger drab firebrick floral forest frosted gainsboro ghost "
    "goldenrod green grey honeydew hot indian ivory khaki lace lavender lawn lemon "
    "light lime linen magenta maroon medium metallic midnight mint misty moccasin "
    "navajo navy olive orange orchid pale papaya peach peru pink plum powder puff "
    "purple red rose rosy royal saddle salmon sandy seashell sienna sky slate smoke "
    "snow spring steel tan thistle tomato turquoise violet wheat white yellow"
).split()
assert len(COLORS) == 92 and len(TYPES) == 150 and len(CONTAINERS) == 40

# Pseudo-text grammar (word|weight lists of dists.dss).  Multi-word entries keep
# their "_" placeholder until the sentence is assembled.
_WORDS: dict[str, list[tuple[str, int]]] = {
    "N": [("packages", 40), ("requests", 40), ("accounts", 40), ("deposits", 40),
          ("foxes", 20), ("ideas", 20), ("theodolites", 20), ("pinto_beans", 20),
          ("instructions", 20), ("dependencies", 10), ("excuses", 10),
          ("platelets", 10), ("asymptotes", 10), ("courts", 5), ("dolphins", 5)]
    + [(w, 1) for w in (
        "multipliers sauternes warthogs frets dinos attainments somas Tiresias "
        "patterns forges braids frays warhorses dugouts notornis epitaphs pearls "
        "tithes waters orbits gifts sheaves depths sentiments decoys realms pains "
        "grouches escapades hockey_players").split()],
    "V": [("sleep", 20), ("wake", 20), ("are", 20), ("cajole", 20), ("haggle", 20),
          ("nag", 10), ("use", 10), ("boost", 10), ("affix", 5), ("detect", 5),
          ("integrate", 5)]
    + [(w, 1) for w in (
        "maintain nod was lose sublate solve thrash promise engage hinder print "
        "x-ray breach eat grow impress mold poach serve run dazzle snooze doze "
        "unwind kindle play hang believe doubt").split()],
    "D": [("furiously", 50), ("slyly", 50), ("carefully", 50), ("blithely", 40),
          ("quickly", 30), ("fluffily", 20)]
    + [(w, 1) for w in (
        "sometimes always never slowly quietly ruthlessly thinly closely doggedly "
        "daringly bravely stealthily permanently enticingly idly busily regularly "
        "finally ironically evenly boldly silently").split()],
    "J": [("special", 20), ("pending", 20), ("unusual", 20), ("express", 20),
          ("regular", 50), ("final", 40), ("ironic", 40), ("even", 30), ("bold", 20),
          ("silent", 10)]
    + [(w, 1) for w in (
        "furious sly careful blithe quick fluffy slow quiet ruthless thin close "
        "dogged daring brave stealthy permanent enticing idle busy").split()],
    "P": [("about", 50), ("above", 50), ("according_to", 50), ("across", 50),
          ("after", 50), ("against", 40), ("along", 40), ("alongside_of", 30),
          ("among", 30), ("around", 20), ("at", 10)]
    + [(w, 1) for w in (
        "atop before behind beneath beside besides between beyond by despite during "
        "except for from in_place_of inside instead_of into near of on outside over "
        "past since through throughout to toward under until up upon without with "
        "within").split()],
    "X": [(w, 1) for w in (
        "do may might shall will would can could should ought_to must will_have_to "
        "shall_have_to could_have_to should_have_to must_have_to need_to try_to"
    ).split()],
    "T": [(".", 50), (";", 1), (":", 1), ("?", 1), ("!", 1), ("--", 1)],
}
_GRAMMAR = [("N V T", 3), ("N V P T", 3), ("N V N T", 3), ("N P V N T", 1),
            ("N P V P T", 1)]
_NP = [("N", 10), ("J N", 20), ("J, J N", 10), ("D J N", 50)]
_VP = [("V", 30), ("X V", 1), ("V D", 40), ("X V D", 1)]

TEXT_POOL_BYTES = 1 << 20
_POOL_SEED = 0x7C3D_4E1F  # the pool is fixed, like dbgen's; rows pick random slices


def _drawer(rng: np.random.Generator, table: list[tuple[str, int]], n: int):
    """Return a callable yielding weighted picks from ``table`` (drawn in bulk)."""
    words = np.array([w.replace("_", " ") for w, _ in table], dtype=object)
    weights = np.array([wt for _, wt in table], dtype=float)
    it = iter(words[rng.choice(len(words), size=n, p=weights / weights.sum())].tolist())
    return it.__next__


@functools.lru_cache(maxsize=1)
def text_pool() -> np.ndarray:
    """The shared pseudo-text pool (uint8), built once from the spec grammar.

    The loop is over sentences of a fixed-size pool, not over table rows.
    """
    rng = np.random.default_rng(_POOL_SEED)
    n = TEXT_POOL_BYTES // 4  # generous upper bound on picks per category
    pick = {k: _drawer(rng, v, n) for k, v in _WORDS.items()}
    grammar, np_, vp = (_drawer(rng, t, n) for t in (_GRAMMAR, _NP, _VP))

    def phrase(shape: str) -> str:
        return " ".join(pick[t[0]]() + t[1:] for t in shape.split())

    out: list[str] = []
    size = 0
    while size < TEXT_POOL_BYTES:
        words: list[str] = []
        for sym in grammar().split():
            if sym == "N":
                words.append(phrase(np_()))
            elif sym == "V":
                words.append(phrase(vp()))
            elif sym == "P":
                words.append(pick["P"]() + " the " + phrase(np_()))
            else:  # terminator sticks to the last word
                words[-1] += pick["T"]()
        sentence = " ".join(words) + " "
        out.append(sentence)
        size += len(sentence)
    return np.frombuffer("".join(out)[:TEXT_POOL_BYTES].encode("ascii"), dtype=np.uint8)


def strings_from_bytes(data: np.ndarray, lengths: np.ndarray) -> pa.StringArray:
    """Wrap a flat byte buffer plus per-row lengths as an Arrow string array."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    typ = pa.string() if offsets[-1] < 2**31 else pa.large_string()
    if typ == pa.string():
        offsets = offsets.astype(np.int32)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data))]
    return pa.Array.from_buffers(typ, len(lengths), buffers)


def strings_from_matrix(mat: np.ndarray, lengths: np.ndarray) -> pa.StringArray:
    """Rows of a (n, width) byte matrix, row i cut to ``lengths[i]`` bytes."""
    mask = np.arange(mat.shape[1]) < lengths[:, None]
    return strings_from_bytes(mat[mask], lengths)


def _slices(rng: np.random.Generator, n: int, lo: int, hi: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random pool slices: (sliding windows of width hi, start offsets, lengths)."""
    pool = text_pool()
    lengths = rng.integers(lo, hi + 1, size=n)
    starts = rng.integers(0, len(pool) - hi + 1, size=n)
    return np.lib.stride_tricks.sliding_window_view(pool, hi), starts, lengths


def text_matrix(rng: np.random.Generator, n: int, lo: int, hi: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """(n, hi) byte matrix of random pool slices and their lengths in [lo, hi]."""
    windows, starts, lengths = _slices(rng, n, lo, hi)
    return windows[starts], lengths


def text_column(rng: np.random.Generator, n: int, lo: int, hi: int,
                chunk: int = 1 << 20) -> pa.ChunkedArray:
    """Spec "text string [lo, hi]": random slices of the pseudo-text pool.

    All random numbers are drawn up front so the result does not depend on ``chunk``;
    chunking only bounds the size of the temporary byte matrix.
    """
    windows, starts, lengths = _slices(rng, n, lo, hi)
    parts = [strings_from_matrix(windows[starts[i:i + chunk]], lengths[i:i + chunk])
             for i in range(0, n, chunk)]
    return pa.chunked_array(parts, type=pa.string())


_ALNUM = np.frombuffer(
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,.", dtype=np.uint8
)


def vstring_column(rng: np.random.Generator, n: int, lo: int, hi: int) -> pa.StringArray:
    """Spec "v-string [lo, hi]": random characters from a 64-symbol alphabet."""
    lengths = rng.integers(lo, hi + 1, size=n)
    mat = _ALNUM[rng.integers(0, len(_ALNUM), size=(n, hi), dtype=np.uint8)]
    return strings_from_matrix(mat, lengths)


def join_words(vocab: list[str], idx: np.ndarray, sep: bytes = b" ") -> pa.StringArray:
    """Row i = ``sep.join(vocab[j] for j in idx[i])`` for an (n, k) index matrix."""
    enc = [w.encode("ascii") for w in vocab]
    width = max(map(len, enc))
    table = np.zeros((len(enc), width), dtype=np.uint8)
    for i, w in enumerate(enc):  # loop over the (small) vocabulary only
        table[i, :len(w)] = np.frombuffer(w, dtype=np.uint8)
    wlen = np.array([len(w) for w in enc])
    n, k = idx.shape
    sep_row = np.frombuffer(sep, dtype=np.uint8)
    mats, masks = [], []
    for j in range(k):
        if j:
            mats.append(np.broadcast_to(sep_row, (n, len(sep))))
            masks.append(np.ones((n, len(sep)), dtype=bool))
        mats.append(table[idx[:, j]])
        masks.append(np.arange(width) < wlen[idx[:, j]][:, None])
    mat, mask = np.concatenate(mats, axis=1), np.concatenate(masks, axis=1)
    return strings_from_bytes(mat[mask], mask.sum(axis=1))


def pick(vocab: list[str], idx: np.ndarray) -> pa.Array:
    """Categorical column: ``vocab[idx]`` as an Arrow string array (C++ take)."""
    return pa.array(vocab, type=pa.string()).take(pa.array(idx))
