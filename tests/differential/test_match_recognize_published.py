"""Every MATCH_RECOGNIZE example with a published result that kleene can run, as a unit test.

Facts only: the rows in and the rows out, transcribed from the source named with each
example (never computed with kleene); four Oracle examples whose printed tables were not
retrievable carry rows out worked out by hand from the published input, marked [derived].
Sources:

- ``ORA``: Oracle Database Data Warehousing Guide, chapter "SQL for Pattern Matching",
  https://docs.oracle.com/pls/topic/lookup?ctx=dblatest&id=GUID-136DAC89-DA17-45C6-9E37-C9892723AC79
- ``FLINK``: apache/flink ``docs/content/docs/dev/table/sql/queries/match_recognize.md``
  (https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/match_recognize/)
- ``TRINO``: trinodb/trino
  ``core/trino-main/src/test/java/io/trino/sql/query/TestRowPatternMatching.java`` (Trino's
  reference page ``docs/src/main/sphinx/sql/match-recognize.md`` prints no result rows, so its
  published results are its test suite's).  Trino's ``matches`` compares rows as a multiset;
  so does :func:`same_rows`.
- ``SF-REF``: Snowflake, https://docs.snowflake.com/en/sql-reference/constructs/match_recognize
  (§"Examples"); ``SF-INTRO``: https://docs.snowflake.com/en/user-guide/match-recognize-introduction
  (both read from a public Markdown copy of the pages in the code index).
- ``TRINO-AGG``: trinodb/trino
  ``core/trino-main/src/test/java/io/trino/sql/query/TestAggregationsInRowPatternMatching.java``.

Each example runs through every evaluator of :data:`EVALUATORS` (the reference evaluator and
``kleene sql`` over a temporary Parquet file of the input rows); adding an evaluator (the
linear-time engine) is one line there.  Adaptations (a missing comma, an ORDER BY column for
an example whose input has none, dates as Python values instead of Oracle's printed
``05-APR-11``) are stated in the example's note; published results kleene does not reproduce
are divergences, each explained (docs/semantics.md, "MATCH_RECOGNIZE"); the two ``kleene sql``
bugs these examples found (``$A$`` in PATTERN read as a dollar-quoted string, an empty
Parquet file read without its columns) are fixed.  The list of
examples is in docs/match_recognize.md, "Published examples".

Size: over 500 lines because it is a catalogue of transcribed data (one entry per published
example); the machinery is the first hundred lines.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kleene.language.errors import DataError, QueryError
from kleene.reference.match_recognize import match_recognize

Row = dict[str, Any]


# ---------------------------------------------------------------- evaluators

def by_reference(table: pa.Table, clause: str) -> pa.Table:
    """The reference evaluator (the standard's semantics by backtracking)."""
    return match_recognize(table, clause)


def by_kleene_sql(table: pa.Table, clause: str) -> pa.Table:
    """``kleene sql``'s entry point over a Parquet file of the input rows."""
    from kleene.sql.duckdb_engine import run_sql

    with tempfile.TemporaryDirectory(prefix="kleene-published-") as tmp:
        path = Path(tmp) / "input.parquet"
        pq.write_table(table, path)
        return run_sql(f"SELECT * FROM '{path}' MATCH_RECOGNIZE (\n{clause}\n) AS m")


def by_engine(table: pa.Table, clause: str) -> pa.Table:
    """The linear-time engine, through the public call ``kleene.match_recognize``."""
    import kleene

    return kleene.match_recognize(table, clause)


EVALUATORS: list[Any] = [
    pytest.param(by_reference, id="reference"),
    pytest.param(by_kleene_sql, id="kleene-sql"),
    pytest.param(by_engine, id="engine"),
]
"""One entry per evaluator."""


# ---------------------------------------------------------------- examples

@dataclass(frozen=True)
class Example:
    """One published example: input rows, the clause, and the published output rows."""

    name: str
    source: str
    rows: pa.Table
    clause: str
    columns: tuple[str, ...]
    expected: list[tuple[Any, ...]]
    note: str = ""
    only: Callable[[Row], bool] | None = None
    """Keep only the output rows the source prints (e.g. one match of several)."""
    extra: list[tuple[Any, ...]] = field(default_factory=list)
    """Rows kleene adds to the published ones: a documented divergence (see ``note``)."""


def table(rows: Sequence[Row], schema: pa.Schema | None = None) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=schema)


def id_value(*values: int) -> pa.Table:
    return table([{"id": i + 1, "value": v} for i, v in enumerate(values)])


def hashable(value: Any) -> Any:
    """Lists (ARRAY_AGG) as tuples, so that rows can be counted."""
    return tuple(hashable(v) for v in value) if isinstance(value, list) else value


def same_rows(out: pa.Table, example: Example) -> tuple[Counter[tuple[Any, ...]],
                                                         Counter[tuple[Any, ...]]]:
    rows = [r for r in out.to_pylist() if example.only is None or example.only(r)]
    got = Counter(tuple(hashable(r[c]) for c in example.columns) for r in rows)
    return got, Counter(example.expected + example.extra)


EXAMPLES: list[Example] = []


def example(*args: Any, **kwargs: Any) -> None:
    EXAMPLES.append(Example(*args, **kwargs))


# ---------------------------------------------------------------- Oracle

ACME = [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 14, 24, 23, 22]
TICKER = table([{"symbol": "ACME", "tstamp": dt.date(2011, 4, d + 1), "price": p}
                for d, p in enumerate(ACME)])


def apr11(day: int) -> dt.date:
    return dt.date(2011, 4, day)


example(
    "oracle_v_shape", "ORA Example 'Pattern Match: Simple V-Shape with 1 Row Output per Match'",
    TICKER, """
    PARTITION BY symbol ORDER BY tstamp
    MEASURES STRT.tstamp AS start_tstamp, LAST(DOWN.tstamp) AS bottom_tstamp,
             LAST(UP.tstamp) AS end_tstamp
    ONE ROW PER MATCH
    AFTER MATCH SKIP TO LAST UP
    PATTERN (STRT DOWN+ UP+)
    DEFINE DOWN AS DOWN.price < PREV(DOWN.price), UP AS UP.price > PREV(UP.price)""",
    ("symbol", "start_tstamp", "bottom_tstamp", "end_tstamp"),
    [("ACME", apr11(5), apr11(6), apr11(10)),
     ("ACME", apr11(10), apr11(12), apr11(13)),
     ("ACME", apr11(14), apr11(16), apr11(18))],
    note="published as 05-APR-11 etc. (Oracle's DD-MON-RR); here Python dates",
)

example(
    "oracle_running_versus_final_avg", "ORA §'Running Versus Final Semantics and Keywords'",
    table([{"id": i + 1, "price": p} for i, p in enumerate([10, 16, 13, 9])]), """
    ORDER BY id
    MEASURES MATCH_NUMBER() AS mno, RUNNING AVG(A.price) AS r_avg, FINAL AVG(A.price) AS f_avg
    ALL ROWS PER MATCH
    PATTERN (A+)
    DEFINE A AS A.price >= AVG(A.price)""",
    ("id", "r_avg", "f_avg"),
    [(1, 10.0, 13.0), (2, 13.0, 13.0), (3, 13.0, 13.0)],
    note="the chapter's table R1-R4 (prices 10 16 13 9), read from a public Korean study "
         "note that reproduces the chapter (code index; the chapter's own page was reachable "
         "only in part): R1-R3 map to A with running averages 10, 13, 13 and final 13, R4 "
         "fails (9 < 12); the table shows that one match, so only match 1 is compared (R4 "
         "starts another). ORDER BY id added: the table gives rows, not a key",
    only=lambda r: r["mno"] == 1,
)


# Oracle examples whose printed tables were not retrievable here: the queries and input rows
# as published (read from the Korean study note above, which reproduces the chapter's
# CREATE/INSERT statements and queries), the rows out derived by hand from them [derived].
DERIVED = ("[derived] the rows out worked out by hand from the published input and query, "
           "since the chapter's printed table was not retrievable here")
TICKER3WAVE = table([{"symbol": "ACME", "tstamp": apr11(d + 1), "price": float(p)} for d, p in
                     enumerate([1000, 775, 900, 775, 900, 775, 900, 775, 800, 550, 900, 800, 1100,
                                800, 550, 800, 875, 950, 600, 300])])
example(
    "oracle_large_price_dips", "ORA §'Examples of Pattern Matching', large price dips",
    TICKER3WAVE, """
    PARTITION BY symbol ORDER BY tstamp
    MEASURES B.tstamp AS timestamp, A.price AS Aprice, B.price AS Bprice,
             ((B.price - A.price) * 100) / A.price AS PctDrop
    ONE ROW PER MATCH
    AFTER MATCH SKIP TO B
    PATTERN (A B)
    DEFINE B AS (B.price - A.price) / A.price < -0.24""",
    ("symbol", "timestamp", "Aprice", "Bprice", "PctDrop"),
    [("ACME", apr11(10), 800.0, 550.0, -31.25),
     ("ACME", apr11(14), 1100.0, 800.0, (800 - 1100) * 100 / 1100),
     ("ACME", apr11(15), 800.0, 550.0, -31.25),
     ("ACME", apr11(19), 950.0, 600.0, (600 - 950) * 100 / 950),
     ("ACME", apr11(20), 600.0, 300.0, -50.0)],
    note=DERIVED + "; prices as floats: Oracle's NUMBER divides exactly, where kleene's "
                   "integer / truncates",
)
example(
    "oracle_drop_and_recovery", "ORA §'Examples of Pattern Matching', a drop of more than 8% "
    "and the recovery", TICKER3WAVE, """
    PARTITION BY symbol ORDER BY tstamp
    MEASURES A.tstamp AS start_timestamp, A.price AS start_price, B.price AS drop_price,
             COUNT(C.*) + 1 AS cnt_days, D.tstamp AS end_timestamp, D.price AS end_price
    ONE ROW PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B C* D)
    DEFINE B AS (B.price - A.price) / A.price < -0.08,
           C AS C.price < A.price,
           D AS D.price >= A.price""",
    ("symbol", "start_timestamp", "start_price", "drop_price", "cnt_days", "end_timestamp",
     "end_price"),
    [("ACME", apr11(1), 1000.0, 775.0, 11, apr11(13), 1100.0),
     ("ACME", apr11(14), 800.0, 550.0, 1, apr11(16), 800.0)],
    note=DERIVED + "; prices as floats (see oracle_large_price_dips); from 18 Apr the drop to "
                   "600 never recovers",
)
TICKERVU = table([{"symbol": "ACME", "tstamp": apr11(d + 1), "price": p} for d, p in
                  enumerate([12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 12,
                             24, 23, 22])])
example(
    "oracle_v_or_u_shape", "ORA §'Examples of Pattern Matching', V or U shape (TickerVU)",
    TICKERVU, """
    PARTITION BY symbol ORDER BY tstamp
    MEASURES STRT.tstamp AS start_tstamp, DOWN.tstamp AS bottom_tstamp, UP.tstamp AS end_tstamp
    ONE ROW PER MATCH
    AFTER MATCH SKIP TO LAST UP
    PATTERN (STRT DOWN+ FLAT* UP+)
    DEFINE DOWN AS DOWN.price < PREV(DOWN.price), FLAT AS FLAT.price = PREV(FLAT.price),
           UP AS UP.price > PREV(UP.price)""",
    ("symbol", "start_tstamp", "bottom_tstamp", "end_tstamp"),
    [("ACME", apr11(5), apr11(6), apr11(10)), ("ACME", apr11(10), apr11(12), apr11(13)),
     ("ACME", apr11(14), apr11(16), apr11(18))],
    note=DERIVED + "; the U is 16-17 Apr (12, 12): FLAT maps 17 Apr, DOWN's last row is 16",
)
example(
    "oracle_w_shape_all_rows", "ORA §'Pattern Match for a W-Shape'", TICKER, """
    PARTITION BY symbol ORDER BY tstamp
    MEASURES MATCH_NUMBER() AS match_num, CLASSIFIER() AS var_match,
             STRT.tstamp AS start_tstamp, FINAL LAST(UP.tstamp) AS end_tstamp
    ALL ROWS PER MATCH
    AFTER MATCH SKIP TO LAST UP
    PATTERN (STRT DOWN+ UP+ DOWN+ UP+)
    DEFINE DOWN AS DOWN.price < PREV(DOWN.price), UP AS UP.price > PREV(UP.price)""",
    ("symbol", "tstamp", "match_num", "var_match", "start_tstamp", "end_tstamp"),
    [("ACME", apr11(d), 1, label, apr11(5), apr11(13)) for d, label in zip(
        range(5, 14), ["STRT", "DOWN", "UP", "UP", "UP", "UP", "DOWN", "DOWN", "UP"])],
    note=DERIVED + "; one W, 05-13 Apr; from 14 Apr the second rise never comes",
)

# ---------------------------------------------------------------- Flink

def flink_ticker(start: dt.datetime, step: dt.timedelta, symbol: str,
                 price_tax: Sequence[tuple[int, int]]) -> pa.Table:
    return table([{"symbol": symbol, "rowtime": start + i * step, "price": p, "tax": t}
                  for i, (p, t) in enumerate(price_tax)])


SECOND = dt.timedelta(seconds=1)
APR1 = dt.datetime(2011, 4, 1, 10, 0, 0)
SEP17 = dt.datetime(2018, 9, 17, 10, 0, 0)


def at(base: dt.datetime, seconds: int) -> dt.datetime:
    return base + seconds * SECOND


example(
    "flink_intro_falling_period", "FLINK §'Examples'",
    flink_ticker(APR1, SECOND, "ACME", [(12, 1), (17, 2), (19, 1), (21, 3), (25, 2), (18, 1),
                                        (15, 1), (14, 2), (24, 2), (25, 2), (19, 1)]), """
    PARTITION BY symbol ORDER BY rowtime
    MEASURES START_ROW.rowtime AS start_tstamp, LAST(PRICE_DOWN.rowtime) AS bottom_tstamp,
             LAST(PRICE_UP.rowtime) AS end_tstamp
    ONE ROW PER MATCH
    AFTER MATCH SKIP TO LAST PRICE_UP
    PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
    DEFINE PRICE_DOWN AS (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price)
                         OR PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1),
           PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1)""",
    ("symbol", "start_tstamp", "bottom_tstamp", "end_tstamp"),
    [("ACME", at(APR1, 4), at(APR1, 7), at(APR1, 8))],
    note="published as 01-APR-11 10:00:04; here Python datetimes",
)

example(
    "flink_aggregation_avg_below_15", "FLINK §'Aggregations'",
    flink_ticker(APR1, SECOND, "ACME", [(12, 1), (17, 2), (13, 1), (16, 3), (25, 2), (2, 1),
                                        (4, 1), (10, 2), (15, 2), (25, 2), (25, 1), (30, 1)]), """
    PARTITION BY symbol ORDER BY rowtime
    MEASURES FIRST(A.rowtime) AS start_tstamp, LAST(A.rowtime) AS end_tstamp,
             AVG(A.price) AS avgPrice
    ONE ROW PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A+ B)
    DEFINE A AS AVG(A.price) < 15""",
    ("symbol", "start_tstamp", "end_tstamp", "avgPrice"),
    [("ACME", at(APR1, 0), at(APR1, 3), 14.5), ("ACME", at(APR1, 5), at(APR1, 10), 13.5)],
)

XYZ_GREEDY = flink_ticker(at(SEP17, 2), SECOND, "XYZ",
                          [(10, 1), (11, 2), (12, 1), (13, 2), (14, 1), (16, 2)])
GREEDY = """
    PARTITION BY symbol ORDER BY rowtime
    MEASURES C.price AS lastPrice
    ONE ROW PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B{q} C)
    DEFINE A AS A.price > 10, B AS B.price < 15, C AS C.price > 12"""
example("flink_greedy", "FLINK §'Greedy & Reluctant Quantifiers'", XYZ_GREEDY,
        GREEDY.replace("{q}", "*"), ("symbol", "lastPrice"), [("XYZ", 16)])
example("flink_reluctant", "FLINK §'Greedy & Reluctant Quantifiers'", XYZ_GREEDY,
        GREEDY.replace("{q}", "*?"), ("symbol", "lastPrice"), [("XYZ", 13), ("XYZ", 16)])

FLINK_WITHIN_ROWS = flink_ticker(APR1, 20 * 60 * SECOND, "ACME", [
    (20, 1), (17, 2), (18, 1), (11, 3), (14, 2), (9, 1), (15, 1), (14, 2), (24, 2), (1, 2),
    (19, 1)])
FLINK_WITHIN = """
    PARTITION BY symbol ORDER BY rowtime
    MEASURES C.rowtime AS dropTime, A.price - C.price AS dropDiff
    ONE ROW PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B* C) WITHIN {bound}
    DEFINE B AS B.price > A.price - 10,
           C AS C.price < A.price - 10"""
FLINK_WITHIN_PUBLISHED = [("ACME", dt.datetime(2011, 4, 1, 13, 0, 0), 14)]
example(
    "flink_within_bound_plus_one_second", "FLINK §'Time constraint'", FLINK_WITHIN_ROWS,
    FLINK_WITHIN.format(bound="INTERVAL '3601' SECOND"), ("symbol", "dropTime", "dropDiff"),
    FLINK_WITHIN_PUBLISHED,
    note="published with WITHIN INTERVAL '1' HOUR and without the comma after B's condition "
         "(a typo; added). The published match spans exactly one hour (12:00 to 13:00); "
         "Flink's NFA prunes a partial match at t - start >= window, and kleene follows it "
         "(docs/semantics.md), so the published row needs a bound one second longer here; "
         "test_flink_within_published_bound pins the divergence",
)

example(
    "flink_output_mode", "FLINK §'Output Mode'",
    flink_ticker(at(SEP17, 2), SECOND, "XYZ", [(10, 1), (12, 2), (13, 1), (11, 2)]), """
    PARTITION BY symbol ORDER BY rowtime
    MEASURES FIRST(A.price) AS startPrice, LAST(A.price) AS topPrice, B.price AS lastPrice
    ONE ROW PER MATCH
    PATTERN (A+ B)
    DEFINE A AS LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1),
           B AS B.price < LAST(A.price)""",
    ("symbol", "startPrice", "topPrice", "lastPrice"), [("XYZ", 10, 13, 11)],
)

FLINK_NAV_ROWS = table([{"id": i + 1, "price": p} for i, p in enumerate([10, 15, 20, 31, 35])])
FLINK_SUMS = """
    ORDER BY id
    MEASURES CLASSIFIER() AS classy, A.price AS a_price, B.price AS b_price,
             SUM(price) AS sum_price, SUM(B.price) AS sum_b_price
    ALL ROWS PER MATCH
    PATTERN (A B+)
    DEFINE A AS A.price >= 10,
           B AS B.price > A.price AND SUM(price) < 100 AND SUM(B.price) < 80"""
NAV_NOTE = "the source gives prices only: an id column orders them; its table is shown here " \
           "as ALL ROWS PER MATCH with the table's expressions as RUNNING measures"
example("flink_pattern_variable_referencing_labels",
        "FLINK §'Pattern Variable Referencing'", FLINK_NAV_ROWS, FLINK_SUMS,
        ("id", "classy", "a_price"), [(1, "A", 10), (2, "B", 10), (3, "B", 10), (4, "B", 10)],
        note=NAV_NOTE + "; row #5 (35) is not mapped")
example("flink_pattern_variable_referencing_sums",
        "FLINK §'Pattern Variable Referencing'", FLINK_NAV_ROWS, FLINK_SUMS,
        ("id", "b_price", "sum_price", "sum_b_price"),
        [(2, 15, 25, 15), (3, 20, 45, 35), (4, 31, 76, 66)],
        note=NAV_NOTE + "; the table prints the sums on the B rows", only=lambda r: r["id"] > 1)

FLINK_OFFSETS = """
    ORDER BY id
    MEASURES CLASSIFIER() AS classy, LAST(B.price, 1) AS b_1, LAST(B.price, 2) AS b_2
    ALL ROWS PER MATCH
    PATTERN (A B+)
    DEFINE A AS A.price >= 10,
           B AS (LAST(B.price, 1) IS NULL OR B.price > LAST(B.price, 1)) AND
                (LAST(B.price, 2) IS NULL OR B.price > 2 * LAST(B.price, 2))"""
example("flink_logical_offsets_last_b", "FLINK §'Logical Offsets'", FLINK_NAV_ROWS,
        FLINK_OFFSETS, ("id", "classy", "b_1", "b_2"),
        [(2, "B", None, None), (3, "B", 15, None), (4, "B", 20, 15)],
        note=NAV_NOTE + "; row 10 is A (blank in the table), 35 is not mapped (35 < 2 * 20)",
        only=lambda r: r["classy"] == "B")
example("flink_logical_offsets_labels", "FLINK §'Logical Offsets'", FLINK_NAV_ROWS,
        FLINK_OFFSETS, ("id", "classy"), [(1, "A"), (2, "B"), (3, "B"), (4, "B")],
        note=NAV_NOTE)

FLINK_OPTIONAL = """
    ORDER BY id
    MEASURES CLASSIFIER() AS classy, LAST(price, 1) AS last_1
    ALL ROWS PER MATCH
    PATTERN (A B? C)
    DEFINE B AS B.price < 20, C AS LAST(price, 1) < C.price"""
for prices, labels, last_1 in [([10, 15, 20], ["A", "B", "C"], 15), ([10, 20], ["A", "C"], 10)]:
    rows = table([{"id": i + 1, "price": p} for i, p in enumerate(prices)])
    tag = "with_b" if len(prices) == 3 else "without_b"
    example(f"flink_logical_offsets_universal_{tag}_labels", "FLINK §'Logical Offsets'", rows,
            FLINK_OPTIONAL, ("id", "classy"), list(enumerate(labels, start=1)), note=NAV_NOTE)
    example(f"flink_logical_offsets_universal_{tag}_value", "FLINK §'Logical Offsets'", rows,
            FLINK_OPTIONAL, ("classy", "last_1"), [("C", last_1)], note=NAV_NOTE,
            only=lambda r: r["classy"] == "C")

FLINK_SKIP_ROWS = flink_ticker(at(SEP17, 1), SECOND, "XYZ", [
    (7, 1), (9, 2), (10, 1), (5, 2), (10, 2), (7, 2), (14, 2)])
FLINK_SKIP = """
    PARTITION BY symbol ORDER BY rowtime
    MEASURES SUM(A.price) AS sumPrice, FIRST(rowtime) AS startTime, LAST(rowtime) AS endTime
    ONE ROW PER MATCH
    AFTER MATCH SKIP {skip}
    PATTERN (A+ C)
    DEFINE A AS SUM(A.price) < 30"""
SKIP_COLUMNS = ("symbol", "sumPrice", "startTime", "endTime")


def xyz(total: int, first: int, last: int) -> tuple[Any, ...]:
    return ("XYZ", total, at(SEP17, first), at(SEP17, last))


example("flink_skip_past_last_row", "FLINK §'After Match Strategy'", FLINK_SKIP_ROWS,
        FLINK_SKIP.format(skip="PAST LAST ROW"), SKIP_COLUMNS, [xyz(26, 1, 4), xyz(17, 5, 7)])
example("flink_skip_to_next_row", "FLINK §'After Match Strategy'", FLINK_SKIP_ROWS,
        FLINK_SKIP.format(skip="TO NEXT ROW"), SKIP_COLUMNS,
        [xyz(26, 1, 4), xyz(24, 2, 5), xyz(25, 3, 6), xyz(22, 4, 7), xyz(17, 5, 7)],
        extra=[xyz(7, 6, 7)],
        note="kleene adds (7, 10:00:06, 10:00:07): with the whole partition known, the greedy "
             "A+ from row 6 (7, 14) finds no C and falls back to A = 7, C = 14 (the standard, "
             "Trino, Oracle); Flink's streaming matcher is still waiting for a row there "
             "(spec note E7; docs/semantics.md, the end of a partition)")

# ---------------------------------------------------------------- Trino TestRowPatternMatching

T_ROWS_4 = id_value(90, 80, 70, 70)
T_ROWS_8 = id_value(90, 80, 70, 80, 90, 50, 40, 60)
T_ALL = """
    ORDER BY id
    MEASURES MATCH_NUMBER() AS match, RUNNING LAST(value) AS val, CLASSIFIER() AS label
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    {pattern}"""
T_COLUMNS = ("id", "match", "val", "label")
EMPTY_4 = [(1, 1, None, None), (2, 2, None, None), (3, 3, None, None), (4, 4, None, None)]

example("trino_testSimpleQuery", "TRINO testSimpleQuery", T_ROWS_8, T_ALL.format(
    pattern="PATTERN (A B+ C+) DEFINE B AS B.value < PREV (B.value), "
            "C AS C.value > PREV (C.value)"), T_COLUMNS,
    [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C"), (5, 1, 90, "C"),
     (6, 2, 50, "A"), (7, 2, 40, "B"), (8, 2, 60, "C")])

ROW_PATTERN_CASES: list[tuple[str, list[tuple[Any, ...]]]] = [
    ("PATTERN (() | A) DEFINE A AS true", EMPTY_4),
    ("PATTERN (^A) DEFINE A AS true", [(1, 1, 90, "A")]),
    ("PATTERN (A^) DEFINE A AS true", []),
    ("PATTERN (^A^) DEFINE A AS true", []),
    ("PATTERN (A$) DEFINE A AS true", [(4, 1, 70, "A")]),
    ("PATTERN ($A) DEFINE A AS true", []),
    ("PATTERN ($A$) DEFINE A AS true", []),
    ("PATTERN (A B C) DEFINE B AS B.value < PREV (B.value), C AS C.value = PREV (C.value)",
     [(2, 1, 80, "A"), (3, 1, 70, "B"), (4, 1, 70, "C")]),
    ("PATTERN (B | C | A) DEFINE B AS B.value < PREV (B.value), "
     "C AS C.value <= PREV (C.value)",
     [(1, 1, 90, "A"), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, 70, "C")]),
    ("PATTERN (PERMUTE(B, C)) DEFINE B AS B.value < PREV (B.value), "
     "C AS C.value < PREV (C.value)", [(2, 1, 80, "B"), (3, 1, 70, "C")]),
    ("PATTERN (((A) (B (C)))) DEFINE B AS B.value < PREV (B.value), "
     "C AS C.value = PREV (C.value)", [(2, 1, 80, "A"), (3, 1, 70, "B"), (4, 1, 70, "C")]),
]
for pattern, expected in ROW_PATTERN_CASES:
    example(f"trino_testRowPattern {pattern.split(' DEFINE')[0]}", "TRINO testRowPattern",
            T_ROWS_4, T_ALL.format(pattern=pattern), T_COLUMNS, expected)

B_ALL = [(2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 70, "B")]
B_EACH = [(2, 1, 80, "B"), (3, 2, 70, "B"), (4, 3, 70, "B")]
B_TWO = [(2, 1, 80, "B"), (3, 1, 70, "B")]
E_THEN_B = [(1, 1, None, None), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 2, 70, "B")]
E_THEN_EACH = [(1, 1, None, None), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, 70, "B")]
QUANTIFIER_CASES: list[tuple[str, list[tuple[Any, ...]]]] = [
    ("B*", E_THEN_B), ("B*?", EMPTY_4), ("B+", B_ALL), ("B+?", B_EACH),
    ("B?", E_THEN_EACH), ("B??", EMPTY_4), ("B{,}", E_THEN_B), ("B{,}?", EMPTY_4),
    ("B{1,}", B_ALL), ("B{1,}?", B_EACH), ("B{2,}", B_ALL), ("B{2,}?", B_TWO),
    ("B{5,}", []), ("B{5,}?", []), ("B{,1}", E_THEN_EACH), ("B{,1}?", EMPTY_4),
    ("B{,2}", [(1, 1, None, None), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 3, 70, "B")]),
    ("B{,2}?", EMPTY_4), ("B{,5}", E_THEN_B), ("B{,5}?", EMPTY_4),
    ("B{1,1}", B_EACH), ("B{1,1}?", B_EACH), ("B{1,5}", B_ALL), ("B{1,5}?", B_EACH),
    ("B{5,7}", []), ("B{5,7}?", []), ("B{1}", B_EACH), ("B{1}?", B_EACH),
    ("B{2}", B_TWO), ("B{2}?", B_TWO), ("B{5}", []), ("B{5}?", []),
]
for quantified, expected in QUANTIFIER_CASES:
    example(f"trino_testPatternQuantifiers {quantified}", "TRINO testPatternQuantifiers",
            T_ROWS_4, T_ALL.format(
                pattern=f"PATTERN ({quantified}) DEFINE B AS B.value <= PREV (B.value)"),
            T_COLUMNS, expected)

M1 = [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C"), (5, 1, 90, "C")]
M2 = [(6, 2, 50, "A"), (7, 2, 40, "B"), (8, 2, 60, "C")]
A_ONLY = [(1, 1, 90, "A"), (6, 2, 50, "A")]
EXCLUSION_CASES: list[tuple[str, list[tuple[Any, ...]]]] = [
    ("A B+ C+", M1 + M2),
    ("A {- B+ -} C+", [M1[0], M1[3], M1[4], M2[0], M2[2]]),
    ("{- A -} {- B+ -} C+", [M1[3], M1[4], M2[2]]),
    ("A {- {- B+ -} C+ -}", A_ONLY),
    ("{- A B+ C+ -}", []),
    ("A B+ {- ()* -} C+", M1 + M2),
    ("A {- B -}+ {- C -}+", A_ONLY),
    ("A {- B -}* {- C -}*", A_ONLY),
    ("A {- B -}{1,2} {- C -}{1,2}", A_ONLY),
    ("A {- C -}{2,3} {- B -}{2,3}", [(3, 1, 70, "A")]),
]
for pattern, expected in EXCLUSION_CASES:
    example(f"trino_testExclusionSyntax {pattern}", "TRINO testExclusionSyntax", T_ROWS_8,
            T_ALL.format(pattern=f"PATTERN ({pattern}) DEFINE B AS B.value < PREV (B.value), "
                                 "C AS C.value > PREV (C.value)"), T_COLUMNS, expected)

ONES = table([{"value": 1}, {"value": 1}])
for target, label in [("A", "A"), ("B", "B")]:
    example(f"trino_testBackReference {target}", "TRINO testBackReference", ONES, f"""
        MEASURES CLASSIFIER() AS classy
        ALL ROWS PER MATCH
        PATTERN ((A | B)* X)
        DEFINE X AS value = {target}.value""", ("value", "classy"), [(1, label), (1, "X")],
            note="no ORDER BY, as published: the rows are equal, so any order gives them")
example("trino_testBackReference navigation", "TRINO testBackReference",
        table([{"value": v} for v in range(1, 7)]), """
    ORDER BY value
    MEASURES CLASSIFIER() AS classy,
             PREV(LAST(A.value), 3) + FIRST(A.value) + PREV(LAST(B.value), 2)
                 AS defining_condition
    ALL ROWS PER MATCH
    PATTERN ((A | B)* X)
    DEFINE X AS value = PREV(LAST(A.value), 3) + FIRST(A.value) + PREV(LAST(B.value), 2)""",
        ("value", "classy", "defining_condition"),
        [(1, "B", None), (2, "A", None), (3, "A", None), (4, "A", None), (5, "B", 6),
         (6, "X", 6)])
example("trino_testBackReference classifiers", "TRINO testBackReference",
        table([{"value": v} for v in range(1, 6)]), """
    ORDER BY value
    MEASURES CLASSIFIER() AS classy,
             PREV(CLASSIFIER(U), 1) = 'A' AND LAST(CLASSIFIER(), 3) = 'B'
                 AND FIRST(CLASSIFIER(U)) = 'B' AS defining_condition
    ALL ROWS PER MATCH
    PATTERN ((A | B)* X $)
    SUBSET U = (A, B)
    DEFINE X AS PREV(CLASSIFIER(U), 1) = 'A' AND LAST(CLASSIFIER(), 3) = 'B'
                AND FIRST(CLASSIFIER(U)) = 'B'""",
        ("value", "classy", "defining_condition"),
        [(1, "B", None), (2, "B", False), (3, "A", False), (4, "A", True), (5, "X", True)])

EMPTY_CYCLE_CASES: list[tuple[str, list[tuple[Any, ...]]]] = [
    ("()* | B", EMPTY_4), ("()+ | B", EMPTY_4), ("(){5,} | B", EMPTY_4),
    ("B | ()*", [(1, 1, None, None), (2, 2, 80, "B"), (3, 3, 70, "B"), (4, 4, None, None)]),
    ("(B ()*)*", [(1, 1, None, None), (2, 2, 80, "B"), (3, 2, 70, "B"), (4, 3, None, None)]),
    ("(B ()*)*?", EMPTY_4), ("^* | B", EMPTY_4),
    ("^+ | B", [(1, 1, None, None), (2, 2, 80, "B"), (3, 3, 70, "B")]),
    ("^* A B", [(1, 1, 90, "A"), (2, 1, 80, "B")]), ("$* | B", EMPTY_4),
    ("$+ | B", [(2, 1, 80, "B"), (3, 2, 70, "B")]),
    ("B A $+", [(3, 1, 70, "B"), (4, 1, 70, "A")]),
]
for pattern, expected in EMPTY_CYCLE_CASES:
    example(f"trino_testEmptyCycle {pattern}", "TRINO testEmptyCycle", T_ROWS_4,
            T_ALL.format(pattern=f"PATTERN ({pattern}) DEFINE B AS B.value < PREV (B.value)"),
            T_COLUMNS, expected)

T_MODES = """
    ORDER BY id
    MEASURES MATCH_NUMBER() AS match, RUNNING LAST(value) AS val, CLASSIFIER() AS label
    {rows}
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN ({pattern})
    DEFINE B AS B.value < PREV (B.value)"""
OUTPUT_MODE_CASES: list[tuple[str, str, list[tuple[Any, ...]]]] = [
    ("ONE ROW PER MATCH", "B*", [(1, None, None), (2, 70, "B"), (3, None, None)]),
    ("", "B*", [(1, None, None), (2, 70, "B"), (3, None, None)]),
    ("ONE ROW PER MATCH", "B+", [(1, 70, "B")]),
    ("ALL ROWS PER MATCH", "B*", [(1, None, None), (2, 80, "B"), (2, 70, "B"), (3, None, None)]),
    ("ALL ROWS PER MATCH", "B+", [(1, 80, "B"), (1, 70, "B")]),
    ("ALL ROWS PER MATCH SHOW EMPTY MATCHES", "B*",
     [(1, None, None), (2, 80, "B"), (2, 70, "B"), (3, None, None)]),
    ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "B*", [(2, 80, "B"), (2, 70, "B")]),
    ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", "B+", [(1, 80, "B"), (1, 70, "B")]),
    ("ALL ROWS PER MATCH WITH UNMATCHED ROWS", "B+",
     [(None, None, None), (1, 80, "B"), (1, 70, "B"), (None, None, None)]),
]
for rows_per_match, pattern, expected in OUTPUT_MODE_CASES:
    example(f"trino_testOutputModes {rows_per_match or 'default'} {pattern}",
            "TRINO testOutputModes", T_ROWS_4,
            T_MODES.format(rows=rows_per_match, pattern=pattern), ("match", "val", "label"),
            expected)

T_SKIP = """
    ORDER BY id
    MEASURES MATCH_NUMBER() AS match, RUNNING LAST(value) AS val, CLASSIFIER() AS label
    ALL ROWS PER MATCH
    AFTER MATCH SKIP {skip}
    PATTERN (A B+ C+ D?)
    SUBSET U = (C, D)
    DEFINE B AS B.value < PREV (B.value), C AS C.value > PREV (C.value), D AS false"""
T_SKIP_ROWS = id_value(90, 80, 70, 80, 70, 80)
FIRST_MATCH = [(1, 1, 90, "A"), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, 1, 80, "C")]
FROM_ROW_4 = [(4, 2, 80, "A"), (5, 2, 70, "B"), (6, 2, 80, "C")]
SKIP_CASES: list[tuple[str, list[tuple[Any, ...]]]] = [
    ("PAST LAST ROW", FIRST_MATCH),
    ("TO NEXT ROW", FIRST_MATCH + [(2, 2, 80, "A"), (3, 2, 70, "B"), (4, 2, 80, "C"),
                                   (4, 3, 80, "A"), (5, 3, 70, "B"), (6, 3, 80, "C")]),
    ("TO FIRST C", FIRST_MATCH + FROM_ROW_4), ("TO LAST B", FIRST_MATCH + FROM_ROW_4),
    ("TO B", FIRST_MATCH + FROM_ROW_4), ("TO U", FIRST_MATCH + FROM_ROW_4),
]
for skip, expected in SKIP_CASES:
    example(f"trino_testAfterMatchSkip {skip}", "TRINO testAfterMatchSkip", T_SKIP_ROWS,
            T_SKIP.format(skip=skip), T_COLUMNS, expected)

example("trino_testEmptyMatches", "TRINO testEmptyMatches", id_value(100, 100, 90, 80, 70, 100), """
    ORDER BY id
    MEASURES MATCH_NUMBER() AS match, CLASSIFIER() AS label
    ALL ROWS PER MATCH WITH UNMATCHED ROWS
    AFTER MATCH SKIP TO NEXT ROW
    PATTERN (A B{2})
    DEFINE B AS B.value < PREV (B.value)""", ("id", "match", "value", "label"),
        [(1, None, 100, None), (2, 1, 100, "A"), (3, 1, 90, "B"), (4, 1, 80, "B"),
         (3, 2, 90, "A"), (4, 2, 80, "B"), (5, 2, 70, "B"), (6, None, 100, None)])

example("trino_testUnionVariable", "TRINO testUnionVariable", id_value(90, 80, 70, 80), """
    ORDER BY id
    MEASURES MATCH_NUMBER() AS match, RUNNING LAST(value) AS val,
             CLASSIFIER(U) AS lower_or_higher, CLASSIFIER(W) AS label
    ALL ROWS PER MATCH
    PATTERN ((L | H) A)
    SUBSET U = (L, H), W = (A, L, H)
    DEFINE A AS A.value = 80, L AS L.value < 80, H AS H.value > 80""",
        ("id", "match", "val", "lower_or_higher", "label"),
        [(1, 1, 90, "H", "H"), (2, 1, 80, "H", "A"), (3, 2, 70, "L", "L"),
         (4, 2, 80, "L", "A")])

T_NAV = """
    ORDER BY id
    MEASURES {measure} AS measure
    ALL ROWS PER MATCH
    PATTERN (A+)
    DEFINE A AS true"""
NULL_3 = [(1, None), (2, None), (3, None)]
NAVIGATION_CASES: list[tuple[str, list[tuple[Any, ...]]]] = [
    ("value", [(1, 10), (2, 20), (3, 30)]),
    ("LAST(value)", [(1, 10), (2, 20), (3, 30)]),
    ("RUNNING LAST(value)", [(1, 10), (2, 20), (3, 30)]),
    ("FINAL LAST(value)", [(1, 30), (2, 30), (3, 30)]),
    ("FIRST(value)", [(1, 10), (2, 10), (3, 10)]),
    ("RUNNING FIRST(value)", [(1, 10), (2, 10), (3, 10)]),
    ("FINAL FIRST(value)", [(1, 10), (2, 10), (3, 10)]),
    ("FINAL LAST(value, 2)", [(1, 10), (2, 10), (3, 10)]),
    ("LAST(value, 10)", NULL_3),
    ("FIRST(value, 10)", NULL_3),
    ("PREV(value)", [(1, None), (2, 10), (3, 20)]),
    ("NEXT(value)", [(1, 20), (2, 30), (3, None)]),
    ("NEXT(FIRST(value), 2)", [(1, 30), (2, 30), (3, 30)]),
    ("NEXT(FIRST(value), 10)", NULL_3),
    ("PREV(FIRST(value), 10)", NULL_3),
    ("PREV(FIRST(value, 10), 2)", NULL_3),
    ("PREV(LAST(value, 10), 2)", NULL_3),
]
for measure, expected in NAVIGATION_CASES:
    example(f"trino_testNavigationFunctions {measure}", "TRINO testNavigationFunctions",
            id_value(10, 20, 30), T_NAV.format(measure=measure), ("id", "measure"), expected)

T_NAV_OUTSIDE = """
    ORDER BY id
    MEASURES {measure} AS measure
    ONE ROW PER MATCH
    PATTERN (A B)
    DEFINE B AS B.value = PREV(B.value)"""
for measure, value in [("PREV(B.value, 4)", None), ("PREV(B.value, 3)", 10),
                       ("PREV(B.value, 2)", 20), ("NEXT(B.value, 1)", 40),
                       ("NEXT(B.value, 2)", None)]:
    example(f"trino_testNavigationFunctions outside the match {measure}",
            "TRINO testNavigationFunctions", id_value(10, 20, 30, 30, 40),
            T_NAV_OUTSIDE.format(measure=measure), ("measure",), [(value,)])

example("trino_testClassifierFunctionPastCurrentRow measures",
        "TRINO testClassifierFunctionPastCurrentRow", id_value(90, 80, 70, 80), """
    ORDER BY id
    MEASURES CLASSIFIER() AS label, NEXT(CLASSIFIER()) AS next_label
    ALL ROWS PER MATCH
    PATTERN (A B+ C+)
    DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value)""",
        ("id", "value", "label", "next_label"),
        [(1, 90, "A", "B"), (2, 80, "B", "B"), (3, 70, "B", "C"), (4, 80, "C", None)])
example("trino_testClassifierFunctionPastCurrentRow define",
        "TRINO testClassifierFunctionPastCurrentRow", id_value(90, 80, 70, 80), """
    ORDER BY id
    MEASURES value AS val
    ALL ROWS PER MATCH
    PATTERN (A+)
    DEFINE A AS NEXT(CLASSIFIER()) = 'A'""", ("id", "val"), [])

example("trino_testCaseSensitiveLabels", "TRINO testCaseSensitiveLabels",
        id_value(90, 80, 70, 80), """
    ORDER BY id
    MEASURES CLASSIFIER() AS label
    ALL ROWS PER MATCH
    PATTERN (a "b"+ C+)
    DEFINE "b" AS "b".value < PREV("b".value), C AS C.value > PREV(C.value)""",
        ("id", "label"), [(1, "A"), (2, "b"), (3, "b"), (4, "C")])

example("trino_testRunningAndFinal", "TRINO testRunningAndFinal",
        id_value(90, 80, 70, 100, 200), """
    ORDER BY id
    MEASURES CLASSIFIER() AS label, FINAL LAST(CLASSIFIER()) AS final_label,
             RUNNING LAST(value) AS running_value, FINAL LAST(value) AS final_value,
             RUNNING LAST(A.value) AS A_running_value, FINAL LAST(A.value) AS A_final_value,
             RUNNING LAST(B.value) AS B_running_value, FINAL LAST(B.value) AS B_final_value,
             RUNNING LAST(C.value) AS C_running_value, FINAL LAST(C.value) AS C_final_value
    ALL ROWS PER MATCH
    PATTERN (A B+ C+)
    DEFINE B AS B.value < PREV (B.value), C AS C.value > PREV (C.value)""",
        ("id", "label", "final_label", "running_value", "final_value", "A_running_value",
         "A_final_value", "B_running_value", "B_final_value", "C_running_value",
         "C_final_value"),
        [(1, "A", "C", 90, 200, 90, 90, None, 70, None, 200),
         (2, "B", "C", 80, 200, 90, 90, 80, 70, None, 200),
         (3, "B", "C", 70, 200, 90, 90, 70, 70, None, 200),
         (4, "C", "C", 100, 200, 90, 90, 70, 70, 100, 200),
         (5, "C", "C", 200, 200, 90, 90, 70, 70, 200, 200)])

T_PARTS = """
    PARTITION BY part
    ORDER BY id
    MEASURES MATCH_NUMBER() AS match, PREV(RUNNING LAST(value)) AS val,
             CLASSIFIER() AS label
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (B+)
    DEFINE B AS B.value < PREV (B.value)"""
PART_SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("value", pa.int64())])


def id_part_value(*rows: tuple[int, str, int]) -> pa.Table:
    return table([{"id": i, "part": p, "value": v} for i, p, v in rows], PART_SCHEMA)


example("trino_testPartitioningAndOrdering partitions", "TRINO testPartitioningAndOrdering",
        id_part_value((1, "p1", 90), (2, "p1", 80), (6, "p1", 80), (2, "p2", 20), (2, "p3", 60),
                      (1, "p3", 50), (3, "p1", 70), (4, "p1", 80), (5, "p1", 90), (1, "p2", 20),
                      (3, "p3", 70), (3, "p2", 10)),
        T_PARTS, ("part", "id", "match", "val", "label"),
        [("p1", 2, 1, 90, "B"), ("p1", 3, 1, 80, "B"), ("p1", 6, 2, 90, "B"),
         ("p2", 3, 1, 20, "B")])
example("trino_testPartitioningAndOrdering empty input", "TRINO testPartitioningAndOrdering",
        id_part_value(), T_PARTS, ("part", "id", "match", "val", "label"), [])
example("trino_testPartitioningAndOrdering no partitioning",
        "TRINO testPartitioningAndOrdering",
        table([{"id": i, "value": v} for i, v in [(5, 10), (2, 90), (1, 80), (4, 20), (3, 30)]]),
        T_ALL.format(pattern="PATTERN (B+) DEFINE B AS B.value < PREV (B.value)"), T_COLUMNS,
        [(3, 1, 30, "B"), (4, 1, 20, "B"), (5, 1, 10, "B")])
example("trino_testPartitioningAndOrdering no measures", "TRINO testPartitioningAndOrdering",
        id_part_value((5, "p2", 10), (2, "p1", 90), (1, "p1", 80), (4, "p2", 20), (3, "p1", 30)),
        """
    PARTITION BY part
    ORDER BY id
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (B+)
    DEFINE B AS B.value < PREV (B.value)""", ("id", "part"), [(3, "p1"), (5, "p2")])

LAYOUT_ROW = table([{"id": "ordering", "part": "partitioning", "value": 90}])
T_LAYOUT = """
    PARTITION BY part
    ORDER BY {order}
    MEASURES CLASSIFIER() AS classy
    {rows}
    PATTERN (A)
    DEFINE A AS true"""
example("trino_testOutputLayout all rows", "TRINO testOutputLayout", LAYOUT_ROW,
        T_LAYOUT.format(order="id", rows="ALL ROWS PER MATCH"), ("*",),
        [("partitioning", "ordering", "A", 90)],
        note="SELECT *: the whole row in output column order")
example("trino_testOutputLayout one row", "TRINO testOutputLayout", LAYOUT_ROW,
        T_LAYOUT.format(order="id", rows="ONE ROW PER MATCH"), ("*",),
        [("partitioning", "A")], note="SELECT *: the whole row in output column order")

T_IN = """
    ORDER BY id
    MEASURES {measure} AS val
    ONE ROW PER MATCH
    AFTER MATCH SKIP TO NEXT ROW
    PATTERN (A+)
    DEFINE A AS true"""
for measure, values in [("FIRST(A.value) IN (300, LAST(A.value))", [False, False, True, True]),
                        ("CLASSIFIER() IN ('X', LOWER(CLASSIFIER()))", [False] * 4),
                        ("MATCH_NUMBER() IN (0, MATCH_NUMBER())", [True] * 4)]:
    example(f"trino_testInPredicateWithoutSubquery {measure}",
            "TRINO testInPredicateWithoutSubquery", id_value(100, 200, 300, 400),
            T_IN.format(measure=measure), ("val",), [(v,) for v in values])

example("trino_testExponentialMatch", "TRINO testExponentialMatch",
        table([{"value": v} for v in range(1, 10)]), """
    ORDER BY value
    MEASURES CLASSIFIER() AS classy
    ALL ROWS PER MATCH
    PATTERN ((A | B)+ LAST)
    DEFINE LAST AS FIRST(CLASSIFIER()) = 'B' AND FIRST(CLASSIFIER(), 1) = 'B' AND
                   FIRST(CLASSIFIER(), 2) = 'B' AND FIRST(CLASSIFIER(), 3) = 'B' AND
                   FIRST(CLASSIFIER(), 4) = 'B' AND FIRST(CLASSIFIER(), 5) = 'B' AND
                   FIRST(CLASSIFIER(), 6) = 'B' AND FIRST(CLASSIFIER(), 7) = 'B'""",
        ("classy",), [("B",)] * 8 + [("LAST",)])


# ---------------------------------------------------------------- Trino TestAggregationsInRowPatternMatching

def ids(n: int) -> pa.Table:
    return table([{"id": i} for i in range(1, n + 1)])


def part_rows(*rows: tuple[int, str, int]) -> pa.Table:
    return id_part_value(*rows)


AGG = "TRINO-AGG"
PARTS_12 = ((1, "p1", 1), (2, "p1", 1), (6, "p1", 1), (2, "p2", 10), (2, "p3", 100),
            (1, "p3", 100), (3, "p1", 1), (4, "p1", 1), (5, "p1", 1), (1, "p2", 10),
            (3, "p3", 100), (3, "p2", 10))
example(f"{AGG.lower()}_testSimpleQuery running sum", f"{AGG} testSimpleQuery", ids(8), """
    ORDER BY id
    MEASURES RUNNING SUM(id) AS running_sum
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A*)
    DEFINE A AS true""", ("id", "running_sum"),
        [(1, 1), (2, 3), (3, 6), (4, 10), (5, 15), (6, 21), (7, 28), (8, 36)])
example(f"{AGG.lower()}_testSimpleQuery running labels", f"{AGG} testSimpleQuery", ids(8), """
    ORDER BY id
    MEASURES RUNNING ARRAY_AGG(CLASSIFIER(A)) AS running_labels
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A*)
    DEFINE A AS true""", ("id", "running_labels"), [(i, ("A",) * i) for i in range(1, 9)])
example(f"{AGG.lower()}_testPartitioning running sum", f"{AGG} testPartitioning",
        part_rows(*PARTS_12), """
    PARTITION BY part
    ORDER BY id
    MEASURES RUNNING SUM(value) AS running_sum
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (B+)
    DEFINE B AS true""", ("part", "id", "running_sum"),
        [("p1", i, i) for i in range(1, 7)] + [("p2", i, 10 * i) for i in range(1, 4)]
        + [("p3", i, 100 * i) for i in range(1, 4)])
example(f"{AGG.lower()}_testPartitioning skip to next row", f"{AGG} testPartitioning",
        part_rows(*PARTS_12), """
    PARTITION BY part
    ORDER BY id
    MEASURES RUNNING SUM(value) AS running_sum, MATCH_NUMBER() AS match_no
    ALL ROWS PER MATCH
    AFTER MATCH SKIP TO NEXT ROW
    PATTERN (B+)
    DEFINE B AS true""", ("part", "match_no", "id", "running_sum"),
        [("p1", m, i, i - m + 1) for m in range(1, 7) for i in range(m, 7)]
        + [("p2", m, i, 10 * (i - m + 1)) for m in range(1, 4) for i in range(m, 4)]
        + [("p3", m, i, 100 * (i - m + 1)) for m in range(1, 4) for i in range(m, 4)],
        note="the 33 published rows, written as the ranges they enumerate")
example(f"{AGG.lower()}_testTentativeLabelMatch avg B", f"{AGG} testTentativeLabelMatch",
        id_value(4, 6, 0), """
    ORDER BY id
    MEASURES RUNNING AVG(B.value) AS running_avg_B, CLASSIFIER() AS classy
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN ((A | B)*)
    DEFINE A AS AVG(B.value) = 5""", ("id", "classy", "running_avg_B"),
        [(1, "B", 4.0), (2, "B", 5.0), (3, "A", 5.0)])
example(f"{AGG.lower()}_testTentativeLabelMatch avg A", f"{AGG} testTentativeLabelMatch",
        id_value(4, 6, 0, 5), """
    ORDER BY id
    MEASURES RUNNING AVG(A.value) AS running_avg_A, CLASSIFIER() AS classy
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN ((A | B)*)
    DEFINE A AS AVG(A.value) = 5""", ("id", "classy", "running_avg_A"),
        [(1, "B", None), (2, "B", None), (3, "B", None), (4, "A", 5.0)])
example(f"{AGG.lower()}_testTentativeLabelMatch sum above 1000",
        f"{AGG} testTentativeLabelMatch", part_rows(*PARTS_12), """
    PARTITION BY part
    ORDER BY id
    MEASURES RUNNING SUM(value) AS running_sum
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (B (A | B) B)
    DEFINE A AS SUM(value) > 1000""", ("part", "id", "running_sum"),
        [("p1", 1, 1), ("p1", 2, 2), ("p1", 3, 3), ("p1", 4, 1), ("p1", 5, 2), ("p1", 6, 3),
         ("p2", 1, 10), ("p2", 2, 20), ("p2", 3, 30), ("p3", 1, 100), ("p3", 2, 200),
         ("p3", 3, 300)])
FIVE_FIVE = part_rows(*[(i, "p1", 1) for i in range(1, 6)], *[(i, "p2", 2) for i in range(1, 6)])
example(f"{AGG.lower()}_testTentativeLabelMatch sum above 4", f"{AGG} testTentativeLabelMatch",
        FIVE_FIVE, """
    PARTITION BY part
    ORDER BY id
    MEASURES RUNNING SUM(value) AS running_sum, CLASSIFIER() AS classy
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN ((A | B)*)
    DEFINE A AS SUM(value) > 4""", ("part", "id", "classy", "running_sum"),
        [("p1", 1, "B", 1), ("p1", 2, "B", 2), ("p1", 3, "B", 3), ("p1", 4, "B", 4),
         ("p1", 5, "A", 5), ("p2", 1, "B", 2), ("p2", 2, "B", 4), ("p2", 3, "A", 6),
         ("p2", 4, "A", 8), ("p2", 5, "A", 10)])
RISING = part_rows(*[(i, "p1", i) for i in range(1, 6)], *[(i, "p2", 2 * i) for i in range(1, 6)])
RISING_EXPECTED = [("p1", 1, "B", 1), ("p1", 2, "B", 2), ("p1", 3, "B", 3), ("p1", 4, "B", 4),
                   ("p1", 5, "A", 5), ("p2", 1, "B", 2), ("p2", 2, "B", 4), ("p2", 3, "A", 6),
                   ("p2", 4, "A", 8), ("p2", 5, "A", 10)]
for condition, method in [("MAX(value) > 4", "testTentativeLabelMatch"),
                          ("MAX(value + MATCH_NUMBER()) > 5",
                           "testTentativeLabelMatchWithRuntimeEvaluatedAggregationArgument")]:
    example(f"{AGG.lower()}_{method} {condition}", f"{AGG} {method}", RISING, f"""
        PARTITION BY part
        ORDER BY id
        MEASURES RUNNING MAX(value) AS running_max, CLASSIFIER() AS classy
        ALL ROWS PER MATCH
        AFTER MATCH SKIP PAST LAST ROW
        PATTERN ((A | B)*)
        DEFINE A AS {condition}""", ("part", "id", "classy", "running_max"), RISING_EXPECTED)

LETTERS = table([{"id": i + 1, "value": v} for i, v in enumerate("abcd")])
example(f"{AGG.lower()}_testSelectiveAggregation", f"{AGG} testSelectiveAggregation", LETTERS, """
    ORDER BY id
    MEASURES ARRAY_AGG(U.id) AS measure_1, ARRAY_AGG(CLASSIFIER(U)) AS measure_2
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (X Y Z Y)
    SUBSET U = (X, Z)
    DEFINE X AS true""", ("id", "measure_1", "measure_2"),
        [(1, (1,), ("X",)), (2, (1,), ("X",)), (3, (1, 3), ("X", "Z")),
         (4, (1, 3), ("X", "Z"))],
        note="the third measure, ARRAY_AGG(U.value || CLASSIFIER(U)), is left out: kleene has "
             "no || operator")
example(f"{AGG.lower()}_testCountAggregation count star", f"{AGG} testCountAggregation",
        LETTERS, """
    ORDER BY id
    MEASURES COUNT(*) AS measure_1
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (X Y Z)
    DEFINE X AS id > 1""", ("id", "measure_1"), [(2, 1), (3, 2), (4, 3)],
        note="Trino's count() without an argument is left out (not SQL:2016)")
example(f"{AGG.lower()}_testCountAggregation running and final",
        f"{AGG} testCountAggregation", LETTERS, """
    ORDER BY id
    MEASURES RUNNING COUNT(*) AS measure_1, FINAL COUNT(*) AS measure_2
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B C D)
    DEFINE A AS true""", ("id", "measure_1", "measure_2"),
        [(1, 1, 4), (2, 2, 4), (3, 3, 4), (4, 4, 4)],
        note="Trino's count() without an argument is left out (not SQL:2016)")
example(f"{AGG.lower()}_testCountAggregation per variable", f"{AGG} testCountAggregation",
        LETTERS, """
    ORDER BY id
    MEASURES COUNT(C.*) AS measure_1, COUNT(U.*) AS measure_2
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B C D)
    SUBSET U = (B, D)
    DEFINE A AS true""", ("id", "measure_1", "measure_2"),
        [(1, 0, 0), (2, 0, 1), (3, 1, 1), (4, 1, 2)])
example(f"{AGG.lower()}_testLabelAndColumnNames", f"{AGG} testLabelAndColumnNames",
        table([{"id": 1, "A": "p"}, {"id": 2, "A": "q"}, {"id": 3, "A": None},
               {"id": 4, "A": "s"}]), """
    ORDER BY id
    MEASURES CLASSIFIER() AS classy, COUNT(A.A) AS measure_1, COUNT(A) AS measure_2,
             COUNT(A.*) AS measure_3
    ALL ROWS PER MATCH
    PATTERN (A B A A)
    DEFINE A AS true""", ("id", "classy", "measure_1", "measure_2", "measure_3"),
        [(1, "A", 1, 1, 1), (2, "B", 1, 2, 1), (3, "A", 1, 2, 2), (4, "A", 2, 3, 3)])
example(f"{AGG.lower()}_testExclusions", f"{AGG} testExclusions",
        table([{"part": p, "id": i, "value": f"{p[1]}{c}"} for p in ("p1", "p2")
               for i, c in enumerate("abcde", start=1)]), """
    PARTITION BY part
    ORDER BY id
    MEASURES ARRAY_AGG(value) AS measure_1
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (P {- Q R -} S)
    DEFINE P AS id > 1""", ("part", "measure_1"),
        [("p1", ("1b",)), ("p1", ("1b", "1c", "1d", "1e")), ("p2", ("2b",)),
         ("p2", ("2b", "2c", "2d", "2e"))],
        note="the second measure, ARRAY_AGG(value || CLASSIFIER()), is left out: kleene has "
             "no || operator")
example(f"{AGG.lower()}_testBalancingSums", f"{AGG} testBalancingSums",
        id_value(4, 6, 10, 1, 1, 1, 10, 5, 1), """
    ORDER BY id
    MEASURES RUNNING SUM(A.value) AS running_sum_A, RUNNING SUM(B.value) AS running_sum_B,
             CLASSIFIER() AS classy
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN ((A | B)*)
    DEFINE A AS SUM(A.value) - A.value <= SUM(B.value)""",
        ("id", "classy", "running_sum_A", "running_sum_B"),
        [(1, "B", None, 4), (2, "A", 6, 4), (3, "B", 6, 14), (4, "A", 7, 14), (5, "A", 8, 14),
         (6, "A", 9, 14), (7, "A", 19, 14), (8, "B", 19, 19), (9, "A", 20, 19)])
example(f"{AGG.lower()}_testPeriodLength", f"{AGG} testPeriodLength",
        table([{"user_id": u, "minute_of_the_day": m}
               for u, m in [(1, 3), (1, 4), (1, 5), (1, 8), (1, 9), (2, 2), (2, 3), (2, 4)]]), """
    PARTITION BY user_id
    ORDER BY minute_of_the_day
    MEASURES COALESCE(SUM(C.minute_of_the_day) - SUM(A.minute_of_the_day), 0) AS periods_total
    ONE ROW PER MATCH
    PATTERN ((A B* C | D)*)
    DEFINE B AS minute_of_the_day = PREV(minute_of_the_day) + 1,
           C AS minute_of_the_day = PREV(minute_of_the_day) + 1""",
        ("user_id", "periods_total"), [(1, 3), (2, 2)],
        note="the outer CAST(periods_total AS integer) is dropped: the measure is an integer")
example(f"{AGG.lower()}_testSetPartitioning two subsets", f"{AGG} testSetPartitioning", ids(8),
        """
    ORDER BY id
    MEASURES RUNNING ARRAY_AGG(CLASSIFIER()) AS running_labels
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (^(A | B)* (LAST_A | LAST_B)$)
    DEFINE LAST_A AS SUM(A.id) + id = SUM(B.id),
           LAST_B AS SUM(B.id) + id = SUM(A.id)""", ("id", "running_labels"),
        [(i + 1, tuple(["A"] * 4 + ["B"] * 3 + ["LAST_A"])[: i + 1]) for i in range(8)])
example(f"{AGG.lower()}_testSetPartitioning three subsets", f"{AGG} testSetPartitioning", ids(6),
        """
    ORDER BY id
    MEASURES RUNNING ARRAY_AGG(CLASSIFIER()) AS running_labels
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (^(A | B | C)* (LAST_A | LAST_B | LAST_C)$)
    DEFINE LAST_A AS SUM(A.id) + id = SUM(B.id) AND SUM(B.id) = SUM(C.id),
           LAST_B AS SUM(B.id) + id = SUM(A.id) AND SUM(A.id) = SUM(C.id),
           LAST_C AS SUM(C.id) + id = SUM(A.id) AND SUM(A.id) = SUM(B.id)""",
        ("id", "running_labels"),
        [(i + 1, ("A", "B", "C", "C", "B", "LAST_A")[: i + 1]) for i in range(6)])
example(f"{AGG.lower()}_testMultipleAggregationsInDefine",
        f"{AGG} testMultipleAggregationsInDefine", ids(8), """
    ORDER BY id
    MEASURES MATCH_NUMBER() AS match_no, ARRAY_AGG(CLASSIFIER()) AS labels
    ONE ROW PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN ((A | B){4})
    DEFINE A AS MAX(id - 2 * MATCH_NUMBER()) > 1 AND MAX(CLASSIFIER()) = 'B',
           B AS MIN(LOWER(CLASSIFIER())) = 'b' OR MIN(MATCH_NUMBER() + 100) < 0""",
        ("match_no", "labels"), [(1, ("B", "B", "B", "A")), (2, ("B", "A", "A", "A"))])
example(f"{AGG.lower()}_testRunningAndFinalAggregations",
        f"{AGG} testRunningAndFinalAggregations", ids(8), """
    ORDER BY id
    MEASURES MATCH_NUMBER() AS match, RUNNING ARRAY_AGG(CLASSIFIER()) AS running_labels,
             FINAL ARRAY_AGG(LOWER(CLASSIFIER())) AS final_labels,
             RUNNING SUM(MATCH_NUMBER() * 100) AS running_match,
             FINAL SUM(-MATCH_NUMBER()) AS final_match
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B C D)
    DEFINE A AS true""",
        ("id", "match", "running_labels", "final_labels", "running_match", "final_match"),
        [(i, 1 + (i - 1) // 4, ("A", "B", "C", "D")[: (i - 1) % 4 + 1], ("a", "b", "c", "d"),
          (1 + (i - 1) // 4) * 100 * ((i - 1) % 4 + 1), -4 * (1 + (i - 1) // 4))
         for i in range(1, 9)],
        note="the 8 published rows, written as the pattern they follow")


# ---------------------------------------------------------------- Snowflake

SF_PRICES = {"ABCD": [50, 36, 39, 42, 30, 47, 71, 80, 75, 63],
             "XYZ": [89, 24, 37, 63, 65, 56, 50, 54, 30, 32]}
SF_ROWS = [{"company": c, "price_date": dt.date(2020, 10, d + 1), "price": p}
           for d in range(10) for c, prices in SF_PRICES.items() for p in [prices[d]]]
STOCK = table(SF_ROWS)
ABCD_ONLY = table([r for r in SF_ROWS if r["company"] == "ABCD"])
STOCK_WITH_AVG = table([{**r, "avg_price": sum(SF_PRICES[r["company"]]) / 10} for r in SF_ROWS])
SF_REF = "SF-REF"
SF_INTRO = "SF-INTRO"
LAG_NOTE = "LAG(price) written PREV(price) (kleene has the standard's PREV, not Snowflake's LAG)"
SEQ_NOTE = "MATCH_SEQUENCE_NUMBER() left out (Snowflake's extension)"
AVG_NOTE = ("DEFINE's window function avg(price) OVER (rows between unbounded preceding and "
            "unbounded following) is given as an input column avg_price, the partition's mean "
            "of the published prices (ABCD 53.3, XYZ 50.0): kleene has no window functions")


def oct20(day: int) -> dt.date:
    return dt.date(2020, 10, day)


example("snowflake_v_shape_summary", f"{SF_REF} §'Report one summary row for each V shape'",
        STOCK, """
    PARTITION BY company
    ORDER BY price_date
    MEASURES MATCH_NUMBER() AS match_number, FIRST(price_date) AS start_date,
             LAST(price_date) AS end_date, COUNT(*) AS rows_in_sequence,
             COUNT(row_with_price_decrease.*) AS num_decreases,
             COUNT(row_with_price_increase.*) AS num_increases
    ONE ROW PER MATCH
    AFTER MATCH SKIP TO LAST row_with_price_increase
    PATTERN (row_before_decrease row_with_price_decrease+ row_with_price_increase+)
    DEFINE row_with_price_decrease AS price < PREV(price),
           row_with_price_increase AS price > PREV(price)""",
        ("company", "match_number", "start_date", "end_date", "rows_in_sequence",
         "num_decreases", "num_increases"),
        [("ABCD", 1, oct20(1), oct20(4), 4, 1, 2), ("ABCD", 2, oct20(4), oct20(8), 5, 1, 3),
         ("XYZ", 1, oct20(1), oct20(5), 5, 1, 3), ("XYZ", 2, oct20(5), oct20(8), 4, 2, 1),
         ("XYZ", 3, oct20(8), oct20(10), 3, 1, 1)], note=LAG_NOTE)
example("snowflake_all_rows_one_company", f"{SF_REF} §'Report all rows for all matches for one "
        "company'", ABCD_ONLY, """
    ORDER BY price_date
    MEASURES MATCH_NUMBER() AS match_number, CLASSIFIER() AS cl
    ALL ROWS PER MATCH
    PATTERN (ANY_ROW UP+)
    DEFINE ANY_ROW AS TRUE, UP AS price > PREV(price)""",
        ("price_date", "match_number", "price", "cl"),
        [(oct20(2), 1, 36, "ANY_ROW"), (oct20(3), 1, 39, "UP"), (oct20(4), 1, 42, "UP"),
         (oct20(5), 2, 30, "ANY_ROW"), (oct20(6), 2, 47, "UP"), (oct20(7), 2, 71, "UP"),
         (oct20(8), 2, 80, "UP")],
        note=f"{LAG_NOTE}; {SEQ_NOTE}; the source's subquery WHERE company = 'ABCD' is the input")
example("snowflake_omit_empty_matches", f"{SF_REF} §'Omit empty matches'", STOCK_WITH_AVG, """
    PARTITION BY company
    ORDER BY price_date
    MEASURES MATCH_NUMBER() AS match_number
    ALL ROWS PER MATCH OMIT EMPTY MATCHES
    PATTERN (OVERAVG*)
    DEFINE OVERAVG AS price > avg_price""", ("company", "price_date", "price", "match_number"),
        [("ABCD", oct20(7), 71, 7), ("ABCD", oct20(8), 80, 7), ("ABCD", oct20(9), 75, 7),
         ("ABCD", oct20(10), 63, 7), ("XYZ", oct20(1), 89, 1), ("XYZ", oct20(4), 63, 4),
         ("XYZ", oct20(5), 65, 4), ("XYZ", oct20(6), 56, 4), ("XYZ", oct20(8), 54, 6)],
        note=AVG_NOTE)
SF_UNMATCHED = {("ABCD", d): (1, "OVERAVG") for d in (7, 8, 9, 10)} | {
    ("XYZ", 1): (1, "OVERAVG"), ("XYZ", 4): (2, "OVERAVG"), ("XYZ", 5): (2, "OVERAVG"),
    ("XYZ", 6): (2, "OVERAVG"), ("XYZ", 8): (3, "OVERAVG")}
example("snowflake_with_unmatched_rows", f"{SF_REF} §'Demonstrate the WITH UNMATCHED ROWS "
        "option'", STOCK_WITH_AVG, """
    PARTITION BY company
    ORDER BY price_date
    MEASURES MATCH_NUMBER() AS match_number, CLASSIFIER() AS cl
    ALL ROWS PER MATCH WITH UNMATCHED ROWS
    PATTERN (OVERAVG+)
    DEFINE OVERAVG AS price > avg_price""",
        ("company", "price_date", "price", "match_number", "cl"),
        [(c, oct20(d), SF_PRICES[c][d - 1], *SF_UNMATCHED.get((c, d), (None, None)))
         for c in ("ABCD", "XYZ") for d in range(1, 11)],
        note=AVG_NOTE + "; the 20 published rows: the 9 above the mean in matches 1 (ABCD) and "
                        "1-3 (XYZ), the rest unmatched with NULL measures")
example("snowflake_symbol_predicates_in_measures", f"{SF_REF} §'Demonstrate symbol predicates "
        "in the MEASURES clause'", STOCK, """
    PARTITION BY company
    ORDER BY price_date
    MEASURES FINAL FIRST(LT45.price) AS final_first_lt45, FINAL LAST(LT45.price) AS final_last_lt45
    ALL ROWS PER MATCH
    AFTER MATCH SKIP PAST LAST ROW
    PATTERN (LT45 LT45)
    DEFINE LT45 AS price < 45.00""",
        ("company", "price_date", "price", "final_first_lt45", "final_last_lt45"),
        [("ABCD", oct20(2), 36, 36, 39), ("ABCD", oct20(3), 39, 36, 39),
         ("ABCD", oct20(4), 42, 42, 30), ("ABCD", oct20(5), 30, 42, 30)],
        note="measure names without quotes; the outer WHERE company = 'ABCD' is applied to the "
             "output", only=lambda r: r["company"] == "ABCD")

SF_DIP = """
    PARTITION BY company
    ORDER BY price_date
    {measures}
    ALL ROWS PER MATCH
    PATTERN ({pattern})
    DEFINE LESS_THAN_45 AS price < 45.00,
           DECREASED_10_PERCENT AS PREV(price) * 0.90 >= price,
           INCREASED_05_PERCENT AS PREV(price) * 1.05 <= price"""
example("snowflake_dip_and_recovery", f"{SF_INTRO} §'Defining the Pattern of Rows to Match'",
        STOCK, SF_DIP.format(measures="", pattern="LESS_THAN_45 DECREASED_10_PERCENT "
                                                  "INCREASED_05_PERCENT"),
        ("company", "price_date", "price"),
        [("ABCD", oct20(4), 42), ("ABCD", oct20(5), 30), ("ABCD", oct20(6), 47)], note=LAG_NOTE)
example("snowflake_dip_and_recovery_excluded", f"{SF_INTRO} §'Excluding Rows from the Output'",
        STOCK, SF_DIP.format(measures="", pattern="LESS_THAN_45 {- DECREASED_10_PERCENT -} "
                                                  "INCREASED_05_PERCENT"),
        ("company", "price_date", "price"), [("ABCD", oct20(4), 42), ("ABCD", oct20(6), 47)],
        note=LAG_NOTE)
example("snowflake_match_information", f"{SF_INTRO} §'Basic Match Information'", STOCK,
        SF_DIP.format(measures="MEASURES MATCH_NUMBER() AS match_no, CLASSIFIER() AS symbol",
                      pattern="LESS_THAN_45 DECREASED_10_PERCENT INCREASED_05_PERCENT"),
        ("company", "price_date", "price", "match_no", "symbol"),
        [("ABCD", oct20(4), 42, 1, "LESS_THAN_45"), ("ABCD", oct20(5), 30, 1, "DECREASED_10_PERCENT"),
         ("ABCD", oct20(6), 47, 1, "INCREASED_05_PERCENT")],
        note=f"{LAG_NOTE}; {SEQ_NOTE}; CLASSIFIER written with its parentheses; plain names")
for pattern, define, rows in [("^ GT60", "GT60 AS price > 60.00", [("XYZ", oct20(1), 89, 1)]),
                              ("GT50 $", "GT50 AS price > 50.00", [("ABCD", oct20(10), 63, 1)])]:
    example(f"snowflake_anchor {pattern}", f"{SF_INTRO} §'Matching Patterns Relative to the "
            "Beginning or End of a Partition'", STOCK, f"""
        PARTITION BY company
        ORDER BY price_date
        MEASURES MATCH_NUMBER() AS match_no
        ALL ROWS PER MATCH
        PATTERN ({pattern})
        DEFINE {define}""", ("company", "price_date", "price", "match_no"), rows,
            note=SEQ_NOTE)
SF_UP_UP = """
    PARTITION BY company
    ORDER BY price_date
    MEASURES MATCH_NUMBER() AS match_no, COUNT(*) AS num_rows
    {rows}
    PATTERN (LESS_THAN_45 UP UP)
    DEFINE LESS_THAN_45 AS price < 45.00, UP AS price > PREV(price)"""
example("snowflake_all_rows_per_match", f"{SF_INTRO} §'Generating One Row for Each Match vs "
        "Generating All Rows for Each Match'", STOCK, SF_UP_UP.format(rows="ALL ROWS PER MATCH"),
        ("company", "price_date", "price", "match_no", "num_rows"),
        [("ABCD", oct20(2), 36, 1, 1), ("ABCD", oct20(3), 39, 1, 2), ("ABCD", oct20(4), 42, 1, 3),
         ("ABCD", oct20(5), 30, 2, 1), ("ABCD", oct20(6), 47, 2, 2), ("ABCD", oct20(7), 71, 2, 3)],
        note=f"{LAG_NOTE}; {SEQ_NOTE}; the outer WHERE company = 'ABCD' is applied to the output",
        only=lambda r: r["company"] == "ABCD")
example("snowflake_one_row_per_match", f"{SF_INTRO} §'Generating One Row for Each Match vs "
        "Generating All Rows for Each Match'", STOCK, SF_UP_UP.format(rows="ONE ROW PER MATCH"),
        ("company", "match_no", "num_rows"), [("ABCD", 1, 3), ("ABCD", 2, 3)],
        note=f"{LAG_NOTE}; {SEQ_NOTE}; the outer WHERE company = 'ABCD' is applied to the output",
        only=lambda r: r["company"] == "ABCD")
SF_UP_DOWN = """
    PARTITION BY company
    ORDER BY price_date
    ALL ROWS PER MATCH
    PATTERN ({pattern})
    DEFINE LESS_THAN_45 AS price < 45.00, UP AS price > PREV(price), DOWN AS price < PREV(price)"""
example("snowflake_rise_then_fall", f"{SF_INTRO} §'Excluding Rows from the Output'", STOCK,
        SF_UP_DOWN.format(pattern="LESS_THAN_45 UP UP* DOWN DOWN*"),
        ("company", "price_date", "price"),
        [("XYZ", oct20(d), SF_PRICES["XYZ"][d - 1]) for d in range(2, 8)],
        note=f"{LAG_NOTE}; the outer WHERE company = 'XYZ' is applied to the output",
        only=lambda r: r["company"] == "XYZ")
example("snowflake_rise_then_fall_excluded", f"{SF_INTRO} §'Excluding Rows from the Output'",
        STOCK, SF_UP_DOWN.format(pattern="{- LESS_THAN_45 -} UP {- UP* -} DOWN {- DOWN* -}"),
        ("company", "price_date", "price"), [("XYZ", oct20(3), 37)],
        extra=[("XYZ", oct20(6), 56)],
        note=f"{LAG_NOTE}; the outer WHERE company = 'XYZ' is applied to the output. The page's "
             "table shows only 10-03 (the first UP), but its text says the query shows 'the first "
             "day the stock rose ... and only the first day it dropped', and the match (10-02 to "
             "10-07, as the unexcluded query prints) maps DOWN to 10-06 outside any exclusion: "
             "kleene outputs both, as the text says",
        only=lambda r: r["company"] == "XYZ")
example("snowflake_frame_edges", f"{SF_INTRO} §'Windows, Window Frames, and Navigational "
        "Functions'", STOCK, """
    PARTITION BY company
    ORDER BY price_date
    MEASURES FIRST(price_date) AS first_date, LAST(price_date) AS last_date,
             MATCH_NUMBER() AS match_no, CLASSIFIER() AS classifier
    ALL ROWS PER MATCH
    AFTER MATCH SKIP TO NEXT ROW
    PATTERN (CURRENT_ROW T2 T3)
    DEFINE CURRENT_ROW AS TRUE, T2 AS TRUE, T3 AS TRUE""",
        ("company", "price_date", "first_date", "last_date", "match_no", "classifier"),
        [(c, oct20(m + k), oct20(m), oct20(m + k), m, ("CURRENT_ROW", "T2", "T3")[k])
         for c in ("ABCD", "XYZ") for m in range(1, 9) for k in range(3)],
        note="the 48 published rows, written as the ranges they enumerate. Lag(price_date) and "
             "Lead(price_date) are left out: Snowflake's LAG/LEAD in MEASURES see only the "
             "match (NULL at its edges), where the standard's PREV/NEXT read the partition")
example("snowflake_multi_day_increases", f"{SF_INTRO} §'Find Multi-Day Price Increases'", STOCK,
        """
    PARTITION BY company
    ORDER BY price_date
    MEASURES MATCH_NUMBER() AS match_no
    ALL ROWS PER MATCH
    PATTERN (MINIMUM_37 UP UP)
    DEFINE MINIMUM_37 AS price >= 37.00, UP AS price > PREV(price)""",
        ("company", "price_date", "price", "match_no"),
        [("ABCD", oct20(6), 47, 1), ("ABCD", oct20(7), 71, 1), ("ABCD", oct20(8), 80, 1),
         ("XYZ", oct20(3), 37, 1), ("XYZ", oct20(4), 63, 1), ("XYZ", oct20(5), 65, 1)],
        note=f"{LAG_NOTE}; {SEQ_NOTE}")
example("snowflake_permute", f"{SF_INTRO} §'Demonstrate the PERMUTE Operator'", STOCK, """
    PARTITION BY company
    ORDER BY price_date
    MEASURES MATCH_NUMBER() AS match_number, FIRST(price_date) AS start_date,
             LAST(price_date) AS end_date, COUNT(up.price) AS ups, COUNT(*) AS price_count,
             LAST(CLASSIFIER()) = 'DOWN' AS up_spike
    AFTER MATCH SKIP TO NEXT ROW
    PATTERN (ANY_ROW PERMUTE(UP{2}, DOWN+))
    DEFINE ANY_ROW AS TRUE, UP AS price > PREV(price), DOWN AS price < PREV(price)""",
        ("company", "match_number", "start_date", "end_date", "ups", "price_count", "up_spike"),
        [("ABCD", 1, oct20(1), oct20(4), 2, 4, False), ("ABCD", 2, oct20(2), oct20(5), 2, 4, True),
         ("ABCD", 3, oct20(4), oct20(7), 2, 4, False), ("ABCD", 4, oct20(6), oct20(10), 2, 5, True),
         ("XYZ", 1, oct20(1), oct20(4), 2, 4, False), ("XYZ", 2, oct20(3), oct20(7), 2, 5, True)],
        note=f"{LAG_NOTE}; measure names quoted in the source written plainly, AS added before "
             "up_spike")
example("snowflake_w_shapes_skip_to_next_row", f"{SF_INTRO} §'Demonstrate the SKIP TO NEXT ROW "
        "Option'", STOCK, """
    PARTITION BY company
    ORDER BY price_date
    MEASURES MATCH_NUMBER() AS match_number, FIRST(price_date) AS start_date,
             LAST(price_date) AS end_date, COUNT(*) AS price_count
    AFTER MATCH SKIP TO NEXT ROW
    PATTERN (ANY_ROW DOWN+ UP+ DOWN+ UP+)
    DEFINE ANY_ROW AS TRUE, UP AS price > PREV(price), DOWN AS price < PREV(price)""",
        ("company", "match_number", "start_date", "end_date", "price_count"),
        [("ABCD", 1, oct20(1), oct20(8), 8), ("XYZ", 1, oct20(1), oct20(8), 8),
         ("XYZ", 2, oct20(5), oct20(10), 6), ("XYZ", 3, oct20(6), oct20(10), 5)], note=LAG_NOTE)
example("snowflake_w_shapes_excluding_falls", f"{SF_INTRO} §'Exclusion Syntax'", STOCK, """
    PARTITION BY company
    ORDER BY price_date
    MEASURES MATCH_NUMBER() AS match_number, CLASSIFIER() AS cl, COUNT(*) AS price_count
    ALL ROWS PER MATCH
    PATTERN (ANY_ROW {- DOWN+ -} UP+ {- DOWN+ -} UP+)
    DEFINE ANY_ROW AS TRUE, UP AS price > PREV(price), DOWN AS price < PREV(price)""",
        ("company", "price_date", "price", "match_number", "cl", "price_count"),
        [("ABCD", oct20(1), 50, 1, "ANY_ROW", 1), ("ABCD", oct20(3), 39, 1, "UP", 3),
         ("ABCD", oct20(4), 42, 1, "UP", 4), ("ABCD", oct20(6), 47, 1, "UP", 6),
         ("ABCD", oct20(7), 71, 1, "UP", 7), ("ABCD", oct20(8), 80, 1, "UP", 8),
         ("XYZ", oct20(1), 89, 1, "ANY_ROW", 1), ("XYZ", oct20(3), 37, 1, "UP", 3),
         ("XYZ", oct20(4), 63, 1, "UP", 4), ("XYZ", oct20(5), 65, 1, "UP", 5),
         ("XYZ", oct20(8), 54, 1, "UP", 8)], note=LAG_NOTE)


# ---------------------------------------------------------------- published errors

@dataclass(frozen=True)
class ErrorExample:
    """A published example whose published outcome is an error."""

    name: str
    source: str
    rows: pa.Table
    clause: str
    error: type[Exception]
    message: str
    note: str = ""


ERRORS = [
    ErrorExample("trino_testAfterMatchSkip TO A", "TRINO testAfterMatchSkip", T_SKIP_ROWS,
                 T_SKIP.format(skip="TO A"), QueryError, "every match starts with A",
                 note="Trino: 'cannot skip to first row of match' when the first match is "
                      "found; kleene sees it in the pattern, before running"),
    ErrorExample("trino_testAfterMatchSkip TO D", "TRINO testAfterMatchSkip", T_SKIP_ROWS,
                 T_SKIP.format(skip="TO D"), DataError, "not present in match|absent|no row"),
    ErrorExample("flink_skip_to_first_a", "FLINK §'After Match Strategy'", FLINK_SKIP_ROWS,
                 FLINK_SKIP.format(skip="TO FIRST A"), QueryError, "every match starts with A",
                 note="Flink: a runtime exception; kleene sees it in the pattern"),
]


# ---------------------------------------------------------------- the tests

def output(out: pa.Table, example: Example) -> tuple[Counter[tuple[Any, ...]],
                                                      Counter[tuple[Any, ...]]]:
    if example.columns == ("*",):
        rows = [tuple(r.values()) for r in out.to_pylist()]
        return Counter(rows), Counter(example.expected + example.extra)
    return same_rows(out, example)


def example_params() -> list[Any]:
    """Every (example, evaluator) pair."""
    return [pytest.param(e, evaluator.values[0], id=f"{e.name}-{evaluator.id}")
            for e in EXAMPLES for evaluator in EVALUATORS]


@pytest.mark.parametrize(("example", "evaluate"), example_params())
def test_published_example(example: Example, evaluate: Callable[[pa.Table, str], pa.Table]) -> None:
    got, expected = output(evaluate(example.rows, example.clause), example)
    assert got == expected, f"{example.source}: {example.note}"


@pytest.mark.parametrize("evaluate", EVALUATORS)
@pytest.mark.parametrize("case", ERRORS, ids=[e.name for e in ERRORS])
def test_published_error(case: ErrorExample, evaluate: Callable[[pa.Table, str], pa.Table]) -> None:
    with pytest.raises(case.error, match=case.message):
        evaluate(case.rows, case.clause)


@pytest.mark.parametrize("evaluate", EVALUATORS)
def test_flink_within_published_bound(evaluate: Callable[[pa.Table, str], pa.Table]) -> None:
    """FLINK §'Time constraint' with its own bound, WITHIN INTERVAL '1' HOUR: the published row
    spans exactly the bound, which Flink's NFA prunes (``t - start >= window``) and kleene
    excludes too (docs/semantics.md, MATCH_RECOGNIZE).  The published text disagrees with
    Flink's code; kleene follows the code.  Without the 12:00 match the search reaches the
    12:20 start (A = 14, B = 24, C = 1): the same drop time, a difference of 13, which is
    what Flink's pruning rule gives too.  One second more admits exactly the published row
    (``flink_within_bound_plus_one_second``)."""
    out = evaluate(FLINK_WITHIN_ROWS, FLINK_WITHIN.format(bound="INTERVAL '1' HOUR"))
    assert [(r["dropTime"], r["dropDiff"]) for r in out.to_pylist()] == [
        (dt.datetime(2011, 4, 1, 13, 0, 0), 13)]


@pytest.mark.parametrize("evaluate", EVALUATORS)
def test_flink_skip_to_last_a_published_three_rows(
        evaluate: Callable[[pa.Table, str], pa.Table]) -> None:
    """FLINK §'After Match Strategy', SKIP TO LAST A, publishes three rows: (26, 1-4),
    (25, 3-6), (17, 5-7).  In batch the match from row 6 is A = row 6, C = row 7 (spec E7),
    and skipping to its last A is skipping to its first row: the standard's error.  Flink's
    streaming run never completes that match, so it never meets the error."""
    with pytest.raises(DataError, match="cannot skip to the first row"):
        evaluate(FLINK_SKIP_ROWS, FLINK_SKIP.format(skip="TO LAST A"))


@pytest.mark.parametrize("evaluate", EVALUATORS)
def test_trino_output_layout_repeated_order_column(
        evaluate: Callable[[pa.Table, str], pa.Table]) -> None:
    """TRINO testOutputLayout, ``ORDER BY id ASC, id DESC``: Trino publishes
    ('partitioning', 'ordering', 'ordering', 'A', 90), the ORDER BY column twice; kleene
    outputs a column named twice once, as the standard and Oracle do (docs/semantics.md)."""
    published = ("partitioning", "ordering", "ordering", "A", 90)
    out = evaluate(LAYOUT_ROW, T_LAYOUT.format(order="id ASC, id DESC", rows="ALL ROWS PER MATCH"))
    assert [tuple(r.values()) for r in out.to_pylist()] == [published[:1] + published[2:]]


@pytest.mark.parametrize("evaluate", EVALUATORS)
def test_trino_running_first_past_the_current_row(
        evaluate: Callable[[pa.Table, str], pa.Table]) -> None:
    """TRINO testNavigationFunctions, ``FIRST(value, 2)`` under ALL ROWS PER MATCH: the stored
    test publishes 30 on rows 1, 2 and 3.  RUNNING semantics see the match up to the current
    row, so on rows 1 and 2 the third row is not there yet: Oracle returns NULL, and Trino
    changed to NULL in PR #27006 (issue #26981, spec note E17); kleene follows Oracle
    (docs/semantics.md).  Row 3, where the row exists, agrees; FINAL gives 30 everywhere."""
    published = [(1, 30), (2, 30), (3, 30)]
    out = evaluate(id_value(10, 20, 30), T_NAV.format(measure="FIRST(value, 2)"))
    got = [(r["id"], r["measure"]) for r in out.to_pylist()]
    assert sorted(got) == [(1, None), (2, None), published[2]]
    final = evaluate(id_value(10, 20, 30), T_NAV.format(measure="FINAL FIRST(value, 2)"))
    assert sorted((r["id"], r["measure"]) for r in final.to_pylist()) == published


def test_every_example_names_its_source_and_the_count() -> None:
    """The catalogue in docs/match_recognize.md counts these; keep them in step."""
    assert all(e.source.split()[0] in {"ORA", "FLINK", "TRINO", "TRINO-AGG", "SF-REF", "SF-INTRO"}
               for e in EXAMPLES + ERRORS)
    names = [e.name for e in EXAMPLES] + [e.name for e in ERRORS]
    assert len(names) == len(set(names))
