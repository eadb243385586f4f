"""The 200 scalar functions, operators and constructs an analyst reaches for most (issue 30:
"at least 90% of the 200 most used"), each with probe calls, classified like the catalog
sweep (tests/functions/catalog.py) over its private table of ordinary and extreme rows.

The list is a judgment, written down so it can be argued with: the SQL every dashboard and
notebook uses (operators, comparisons, CASE/COALESCE, casts), DuckDB's documented numeric,
text, date and time functions minus the exotic (ICU collations, JSON, lists, file paths,
bit strings), and the hashing and regular expressions analysts clean data with.  No usage
statistics were available offline; the order is by family, not by rank.

An entry is **ok** when every probe answers as DuckDB, **partial** when some do, **refused**
when none does (by name), **wrong** when any answer differs.

    python -m tests.functions.top_functions --out docs/top_functions.md
"""
from __future__ import annotations

import argparse
import collections

import duckdb

from tests.functions import catalog

TOP: dict[str, list[str]] = {
    # operators and comparisons
    "+": ["i + b", "d + f", "dt + 3"], "-": ["i - b", "d - 1.5", "dt - dt"], "*": ["i * 3", "d * d"],
    "/": ["i / 3", "f / 2"], "//": ["b // 7"], "%": ["b % 5", "d % 2"], "^ / **": ["f ^ 2", "2 ** i"],
    "unary -": ["-i", "-d"], "=": ["i = b", "s = 'ab'"], "<> / !=": ["i <> 3", "s != n"], "<": ["i < b", "dt < DATE '2000-01-01'"],
    "<=": ["f <= 1.5"], ">": ["d > 1"], ">=": ["ts >= TIMESTAMP '2000-01-01'"], "BETWEEN": ["i BETWEEN 0 AND 10"],
    "IN": ["i IN (1, 2, 3)", "s IN ('ab', 'x')"], "NOT IN": ["i NOT IN (1, 2)"], "IS NULL": ["s IS NULL"],
    "IS NOT NULL": ["d IS NOT NULL"], "IS DISTINCT FROM": ["i IS DISTINCT FROM b"], "AND": ["k AND i > 0"],
    "OR": ["k OR i > 0"], "NOT": ["NOT k"], "||": ["s || n", "s || i"], "LIKE": ["s LIKE 'a%'", "s LIKE n"],
    "NOT LIKE": ["s NOT LIKE '%b'"], "ILIKE": ["s ILIKE 'A%'"], "SIMILAR TO": ["s SIMILAR TO 'a.*'"],
    "GLOB": ["s GLOB 'a*'"], "^@ (starts with)": ["s ^@ 'a'"],
    # conditionals
    "CASE": ["CASE WHEN i > 0 THEN s ELSE n END", "CASE i WHEN 3 THEN 'x' ELSE 'y' END"],
    "COALESCE": ["coalesce(i, b, 0)", "coalesce(s, n)"], "NULLIF": ["nullif(i, 0)"], "IFNULL": ["ifnull(s, 'z')"],
    "IF / IFF": ["if(i > 0, 1, 2)"], "GREATEST": ["greatest(i, b)", "greatest(s, n)"], "LEAST": ["least(d, f)"],
    # casts
    "CAST to INTEGER": ["CAST(d AS INTEGER)", "CAST(n AS INTEGER)"], "CAST to BIGINT": ["CAST(f AS BIGINT)"],
    "CAST to DOUBLE": ["CAST(d AS DOUBLE)", "CAST(n AS DOUBLE)"], "CAST to DECIMAL": ["CAST(f AS DECIMAL(18,3))"],
    "CAST to VARCHAR": ["CAST(i AS VARCHAR)", "CAST(d AS VARCHAR)", "CAST(dt AS VARCHAR)", "CAST(f AS VARCHAR)"],
    "CAST to DATE": ["CAST(ts AS DATE)", "CAST(n AS DATE)"], "CAST to TIMESTAMP": ["CAST(dt AS TIMESTAMP)"],
    "CAST to BOOLEAN": ["CAST(i AS BOOLEAN)"], "TRY_CAST": ["TRY_CAST(n AS INTEGER)", "TRY_CAST(s AS DATE)"],
    ":: shorthand": ["i::BIGINT", "ts::DATE"], "DATE literal": ["DATE '2020-02-29'"],
    "TIMESTAMP literal": ["TIMESTAMP '2013-07-04 10:00:00'"], "INTERVAL literal": ["ts + INTERVAL 3 HOUR"],
    # numeric
    "abs": ["abs(i)", "abs(d)"], "round": ["round(d, 1)", "round(f)", "round(d, i % 3)"], "ceil": ["ceil(d)"],
    "ceiling": ["ceiling(f)"], "floor": ["floor(d)"], "trunc": ["trunc(f)", "trunc(d)"], "sign": ["sign(i)"],
    "sqrt": ["sqrt(f)"], "cbrt": ["cbrt(f)"], "power": ["power(f, 2)"], "pow": ["pow(i, 2)"], "exp": ["exp(f)"],
    "ln": ["ln(f)"], "log": ["log(f)", "log(2, f)"], "log10": ["log10(f)"], "log2": ["log2(f)"], "mod": ["mod(b, 7)"],
    "fmod": ["fmod(f, 2)"], "pi": ["pi() * f"], "sin": ["sin(f)"], "cos": ["cos(f)"], "tan": ["tan(f)"],
    "asin": ["asin(f / 1e300)"], "acos": ["acos(f / 1e300)"], "atan": ["atan(f)"], "atan2": ["atan2(i, f)"],
    "cot": ["cot(f)"], "degrees": ["degrees(f)"], "radians": ["radians(f)"], "sinh": ["sinh(f)"],
    "cosh": ["cosh(f)"], "tanh": ["tanh(f)"], "isnan": ["isnan(f)"], "isinf": ["isinf(f)"],
    "isfinite": ["isfinite(f)"], "even": ["even(f)"], "gcd": ["gcd(b, i)"], "lcm": ["lcm(i, t16)"],
    "factorial": ["factorial((t8 % 10 + 10) % 10)"], "round_even": ["round_even(d, 1)"], "signbit": ["signbit(f)"], "bit_count": ["bit_count(b)"], "& (bitwise and)": ["b & 7"],
    "| (bitwise or)": ["b | 7"], "xor": ["xor(b, 7)"], "<< / >>": ["b >> 2", "1 << (t8 % 8)"], "~ (bitwise not)": ["~b"],
    "random-free hash": ["hash(s)"], "add": ["add(i, b)"], "subtract": ["subtract(i, b)"], "multiply": ["multiply(i, 3)"],
    "divide": ["divide(b, 7)"],
    # text
    "length": ["length(s)"], "char_length": ["char_length(s)"], "strlen": ["strlen(s)"], "octet_length": ["octet_length(encode(s))"],
    "bit_length": ["bit_length(s)"], "lower": ["lower(s)"], "upper": ["upper(s)"], "lcase / ucase": ["lcase(s)", "ucase(s)"],
    "substring": ["substring(s, 2, 3)", "substring(s, i % 4, 2)"], "substr": ["substr(s, 2)"],
    "left": ["left(s, 2)", "left(s, t8 % 5)"], "right": ["right(s, 2)"], "concat": ["concat(s, '-', i)"],
    "concat_ws": ["concat_ws(',', s, n)"], "trim": ["trim(s)", "trim(s, 'a')"], "ltrim": ["ltrim(s)"], "rtrim": ["rtrim(s)"],
    "replace": ["replace(s, 'a', 'xy')", "replace(s, n, 'x')"], "reverse": ["reverse(s)"],
    "repeat": ["repeat(s, 2)"], "lpad": ["lpad(s, 5, '*')"], "rpad": ["rpad(s, 5, '*')"],
    "strpos": ["strpos(s, 'b')", "strpos(s, n)"], "position": ["position('b' IN s)"], "instr": ["instr(s, 'b')"],
    "contains": ["contains(s, 'b')"], "starts_with": ["starts_with(s, 'a')"], "ends_with": ["ends_with(s, 'c')"],
    "prefix": ["prefix(s, 'a')"], "suffix": ["suffix(s, 'b')"], "split_part": ["split_part(s, ' ', 2)"],
    "ascii": ["ascii(s)"], "chr": ["chr(65 + t8 % 26)"], "unicode": ["unicode(s)"], "ord": ["ord(s)"],
    "format": ["format('{}-{}', s, i)"], "printf": ["printf('%s-%d', s, i)"], "translate": ["translate(s, 'ab', 'xy')"],
    "strip_accents": ["strip_accents(s)"], "md5": ["md5(s)"], "sha256": ["sha256(s)"],
    "to_hex": ["to_hex(b)"], "hex": ["hex(s)"], "levenshtein": ["levenshtein(s, n)"], "regexp_matches": ["regexp_matches(s, 'a.')"],
    "regexp_replace": ["regexp_replace(s, '[0-9]', '#')"], "regexp_extract": ["regexp_extract(s, '[a-z]+')"],
    "regexp_full_match": ["regexp_full_match(s, '[a-z]*')"], "string_split / list": ["len(string_split(s, ' '))"],
    "like_escape": ["s LIKE 'a!%' ESCAPE '!'"], "base64": ["to_base64(encode(s))"],
    # dates and times
    "year": ["year(dt)", "year(ts)"], "month": ["month(dt)"], "day": ["day(ts)"], "hour": ["hour(ts)"],
    "minute": ["minute(ts)"], "second": ["second(ts)"], "millisecond": ["millisecond(ts)"],
    "microsecond": ["microsecond(ts)"], "quarter": ["quarter(dt)"], "week": ["week(dt)"], "weekofyear": ["weekofyear(ts)"],
    "dayofweek": ["dayofweek(dt)"], "isodow": ["isodow(dt)"], "dayofyear": ["dayofyear(dt)"], "dayofmonth": ["dayofmonth(dt)"],
    "weekday": ["weekday(dt)"], "yearweek": ["yearweek(dt)"], "isoyear": ["isoyear(dt)"], "decade": ["decade(dt)"],
    "century": ["century(ts)"], "dayname": ["dayname(dt)"],
    "monthname": ["monthname(ts)"], "last_day": ["last_day(dt)"],
    "extract": ["extract(year FROM dt)", "extract(hour FROM ts)", "extract(epoch FROM ts)"],
    "date_part": ["date_part('month', ts)", "date_part('minute', ts)"],
    "date_trunc": ["date_trunc('month', dt)", "date_trunc('hour', ts)", "date_trunc('week', ts)"],
    "date_diff": ["date_diff('day', dt, DATE '2000-01-01')", "date_diff('hour', ts, TIMESTAMP '2000-01-01')",
                  "date_diff('month', dt, ts)"],
    "datediff": ["datediff('year', dt, DATE '2000-01-01')"],
    "date_sub": ["date_sub('day', dt, DATE '2000-01-01')"], "date_add": ["date_add(dt, INTERVAL 3 DAY)"],
    "age": ["age(ts, TIMESTAMP '2000-01-01')"], "make_date": ["make_date(2013, t8 % 12 + 1, 1)"],
    "make_timestamp": ["make_timestamp(2013, 7, 4, (t8 % 24 + 24) % 24, 0, 0.0)"],
    "make_time": ["make_time((t8 % 24 + 24) % 24, 0, 0.0)"],
    "epoch": ["epoch(ts)"], "epoch_ms": ["epoch_ms(ts)"], "epoch_us": ["epoch_us(ts)"],
    "to_timestamp": ["to_timestamp(i)"], "strftime": ["strftime(dt, '%Y-%m-%d')", "strftime(ts, '%H:%M')"],
    "strptime": ["strptime(CASE WHEN k THEN '2013-07-04' ELSE '2000-01-01' END, '%Y-%m-%d')"], "try_strptime": ["try_strptime(n, '%Y')"],
    "date + integer": ["dt + 30"], "date - date": ["dt - DATE '2000-01-01'"], "timestamp - interval": ["ts - INTERVAL 90 MINUTE"],
    "date + interval": ["dt + INTERVAL 1 MONTH"], "to_days / to_hours": ["ts + to_hours(i % 100)"],
    "current_date (constant)": ["dt < current_date"],
}


def run() -> list[tuple[str, str, list[catalog.Outcome]]]:
    """``(name, status, outcomes)`` for every entry (probes DuckDB cannot bind are left out)."""
    t, pt = catalog.table()
    con = duckdb.connect()
    con.register("t", t)
    out = []
    for name, probes in TOP.items():
        outcomes = [o for o in (catalog.classify(catalog.Call(name, name, p), t, pt, con) for p in probes) if o]
        kinds = collections.Counter(o.status for o in outcomes)
        if kinds["wrong"] or kinds["error"]:
            status = "wrong"
        elif not outcomes:
            status = "not bound"
        elif kinds["ok"] == len(outcomes):
            status = "ok"
        elif kinds["ok"]:
            status = "partial"
        else:
            status = "refused"
        out.append((name, status, outcomes))
    return out


def report(rows) -> str:
    counted = [r for r in rows if r[1] != "not bound"]
    kinds = collections.Counter(r[1] for r in counted)
    ok = kinds["ok"]
    lines = ["# The top-200 scalar functions: coverage", "",
             "Generated by `python -m tests.functions.top_functions --out docs/top_functions.md` (the list and why it "
             "is this list: tests/functions/top_functions.py).", "",
             f"- entries: {len(TOP)}; counted (DuckDB binds a probe): {len(counted)}",
             f"- **ok {ok} ({100 * ok / max(1, len(counted)):.1f}%)**, partial {kinds['partial']}, refused "
             f"{kinds['refused']}, wrong {kinds['wrong']}", "",
             "| entry | status | probes ok | first problem |", "| --- | --- | ---: | --- |"]
    for name, status, outcomes in rows:
        bad = next((o for o in outcomes if o.status != "ok"), None)
        why = "" if bad is None else f"{bad.status}: `{bad.call.sql}` {bad.detail}"[:160]
        okc = sum(o.status == "ok" for o in outcomes)
        lines.append(f"| `{name}` | {status} | {okc}/{len(outcomes)} | {why.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    text = report(run())
    if args.out:
        open(args.out, "w").write(text)
    print("\n".join(text.splitlines()[:6]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
