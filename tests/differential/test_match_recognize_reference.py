"""The MATCH_RECOGNIZE reference evaluator on every worked example of the spec note.

Each test is a fact from a published source (or derived by hand where the note says
so): the rows in, the rows out.  Section numbers (E1 ... E17) are those of
``/work/shared/spec/match-recognize.md``; sources are named in each docstring.
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any

import pyarrow as pa
import pytest

from kleene.language.errors import DataError, QueryError
from kleene.reference.match_recognize import SearchBudgetError, match_recognize


def run(rows: list[dict[str, Any]] | pa.Table, query: str) -> list[dict[str, Any]]:
    return match_recognize(rows, query).to_pylist()  # type: ignore[no-any-return]


def cols(out: list[dict[str, Any]], *names: str) -> list[tuple[Any, ...]]:
    return [tuple(r[n] for n in names) for r in out]


def id_value(*values: int) -> list[dict[str, Any]]:
    return [{"id": i + 1, "value": v} for i, v in enumerate(values)]


# ---------------------------------------------------------------- E1, E2: Oracle's V shape

ACME = [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 14, 24, 23, 22]
TICKER = [{"symbol": "ACME", "tstamp": dt.date(2011, 4, d + 1), "price": p}
          for d, p in enumerate(ACME)]
V_SHAPE = """
PARTITION BY symbol ORDER BY tstamp
MEASURES STRT.tstamp AS start_tstamp, LAST(DOWN.tstamp) AS bottom_tstamp,
         LAST(UP.tstamp) AS end_tstamp
ONE ROW PER MATCH
AFTER MATCH SKIP TO LAST UP
PATTERN (STRT DOWN+ UP+)
DEFINE DOWN AS DOWN.price < PREV(DOWN.price),
       UP AS UP.price > PREV(UP.price)
"""


def apr(day: int) -> dt.date:
    return dt.date(2011, 4, day)


def test_e1_oracle_v_shape_one_row_per_match() -> None:
    """ORA-DOC: three matches starting 05-APR-11, 10-APR-11, 14-APR-11."""
    out = match_recognize(TICKER, V_SHAPE)
    assert out.column_names == ["symbol", "start_tstamp", "bottom_tstamp", "end_tstamp"]
    assert cols(out.to_pylist(), "symbol", "start_tstamp", "bottom_tstamp", "end_tstamp") == [
        ("ACME", apr(5), apr(6), apr(10)),
        ("ACME", apr(10), apr(12), apr(13)),
        ("ACME", apr(14), apr(16), apr(18)),
    ]


def test_e1_from_an_arrow_table_in_shuffled_order() -> None:
    """The same facts from a pyarrow Table whose rows are not in ORDER BY order."""
    shuffled = TICKER[10:] + TICKER[:10]
    out = run(pa.Table.from_pylist(shuffled), V_SHAPE)
    assert [r["start_tstamp"] for r in out] == [apr(5), apr(10), apr(14)]


def test_e2_all_rows_per_match_with_final_and_running() -> None:
    """ORA-DOC's ALL ROWS variant [derived in the note]: 15 rows, 10-Apr twice."""
    query = V_SHAPE.replace("ONE ROW PER MATCH", "ALL ROWS PER MATCH").replace(
        "MEASURES STRT.tstamp AS start_tstamp, LAST(DOWN.tstamp) AS bottom_tstamp,\n"
        "         LAST(UP.tstamp) AS end_tstamp",
        "MEASURES MATCH_NUMBER() AS match_num, CLASSIFIER() AS var_match, "
        "STRT.tstamp AS start_tstamp, FINAL LAST(DOWN.tstamp) AS bottom_tstamp, "
        "FINAL LAST(UP.tstamp) AS end_tstamp, FINAL COUNT(UP.tstamp) AS up_days, "
        "FINAL COUNT(tstamp) AS total_days, RUNNING COUNT(tstamp) AS cnt_days")
    out = match_recognize(TICKER, query)
    assert out.column_names[:3] == ["symbol", "tstamp", "match_num"]
    assert out.column_names[-1] == "price"
    got = cols(out.to_pylist(), "tstamp", "match_num", "var_match", "bottom_tstamp",
               "end_tstamp", "up_days", "total_days", "cnt_days")
    expected = []
    for number, labelled, bottom, end, up, total in [
        (1, [(5, "STRT"), (6, "DOWN"), (7, "UP"), (8, "UP"), (9, "UP"), (10, "UP")], 6, 10, 4, 6),
        (2, [(10, "STRT"), (11, "DOWN"), (12, "DOWN"), (13, "UP")], 12, 13, 1, 4),
        (3, [(14, "STRT"), (15, "DOWN"), (16, "DOWN"), (17, "UP"), (18, "UP")], 16, 18, 2, 5),
    ]:
        for i, (day, label) in enumerate(labelled):
            expected.append((apr(day), number, label, apr(bottom), apr(end), up, total, i + 1))
    assert got == expected
    assert len(got) == 15


# ---------------------------------------------------------------- E3

def test_e3_running_and_final_per_variable() -> None:
    """T-TEST testRunningAndFinal."""
    out = run(id_value(90, 80, 70, 100, 200), """
        ORDER BY id
        MEASURES CLASSIFIER() AS label, FINAL LAST(CLASSIFIER()) AS final_label,
                 RUNNING LAST(value) AS r_value, FINAL LAST(value) AS f_value,
                 RUNNING LAST(B.value) AS r_b, FINAL LAST(B.value) AS f_b,
                 RUNNING LAST(C.value) AS r_c, FINAL LAST(C.value) AS f_c,
                 RUNNING LAST(A.value) AS r_a, FINAL LAST(A.value) AS f_a
        ALL ROWS PER MATCH
        PATTERN (A B+ C+)
        DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value)""")
    assert cols(out, "id", "label", "final_label", "r_value", "f_value", "r_b", "f_b",
                "r_c", "f_c") == [
        (1, "A", "C", 90, 200, None, 70, None, 200),
        (2, "B", "C", 80, 200, 80, 70, None, 200),
        (3, "B", "C", 70, 200, 70, 70, None, 200),
        (4, "C", "C", 100, 200, 70, 70, 100, 200),
        (5, "C", "C", 200, 200, 70, 70, 200, 200),
    ]
    assert {(r["r_a"], r["f_a"]) for r in out} == {(90, 90)}


# ---------------------------------------------------------------- E4

FLINK_PRICES = [{"symbol": "XYZ", "t": i, "price": p} for i, p in enumerate([10, 11, 12, 13, 14, 16])]
E4 = """PARTITION BY symbol ORDER BY t MEASURES C.price AS lastPrice
        PATTERN ({pattern}) DEFINE A AS A.price > 10, B AS B.price < 15, C AS C.price > 12"""


def test_e4_greedy_versus_reluctant() -> None:
    """FLINK-DOC "Greedy & Reluctant Quantifiers"."""
    assert [r["lastPrice"] for r in run(FLINK_PRICES, E4.format(pattern="A B* C"))] == [16]
    assert [r["lastPrice"] for r in run(FLINK_PRICES, E4.format(pattern="A B*? C"))] == [13, 16]


QUANT = """ORDER BY id MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS label
           ALL ROWS PER MATCH PATTERN ({pattern}) DEFINE B AS B.value <= PREV(B.value)"""


@pytest.mark.parametrize("pattern, expected", [
    ("B*", [(1, 1, None), (2, 2, "B"), (3, 2, "B"), (4, 2, "B")]),
    ("B*?", [(1, 1, None), (2, 2, None), (3, 3, None), (4, 4, None)]),
    ("B+?", [(2, 1, "B"), (3, 2, "B"), (4, 3, "B")]),
    ("B{2,}?", [(2, 1, "B"), (3, 1, "B")]),
    ("B{,2}", [(1, 1, None), (2, 2, "B"), (3, 2, "B"), (4, 3, "B")]),
])
def test_e4_quantifiers(pattern: str, expected: list[tuple[Any, ...]]) -> None:
    """T-TEST testPatternQuantifiers, rows 90 80 70 70 (empty matches shown with NULL label)."""
    assert cols(run(id_value(90, 80, 70, 70), QUANT.format(pattern=pattern)),
                "id", "m", "label") == expected


class _Letters:
    """PATTERN over variables A-D, each defined as ``c = its lower-case letter``."""

    def format(self, pattern: str) -> str:
        used = sorted({ch for ch in pattern if ch in "ABCD"})
        defines = ", ".join(f"{v} AS c = '{v.lower()}'" for v in used)
        return (f"ORDER BY id MEASURES CLASSIFIER() AS label ALL ROWS PER MATCH "
                f"PATTERN ({pattern}) DEFINE {defines}")


LETTERS = _Letters()


def letters(text: str) -> list[dict[str, Any]]:
    return [{"id": i + 1, "c": ch} for i, ch in enumerate(text)]


def test_e4_preference_is_not_length() -> None:
    """DDB-BT: (A | A B) over a b matches only a; (A | A B)(C | B C D) gives A B C D."""
    assert cols(run(letters("ab"), LETTERS.format(pattern="A | A B")), "id", "label") == [(1, "A")]
    assert cols(run(letters("abcd"), LETTERS.format(pattern="(A | A B)(C | B C D)")),
                "label") == [("A",), ("B",), ("C",), ("D",)]


# ---------------------------------------------------------------- E5

E5 = """ORDER BY id MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS label
        ALL ROWS PER MATCH AFTER MATCH SKIP {skip}
        PATTERN (A B+ C+ D?) SUBSET U = (C, D)
        DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value), D AS false"""
E5_ROWS = id_value(90, 80, 70, 80, 70, 80)
FIRST_TWO = [(1, 1, "A"), (2, 1, "B"), (3, 1, "B"), (4, 1, "C"),
             (4, 2, "A"), (5, 2, "B"), (6, 2, "C")]


@pytest.mark.parametrize("skip, expected", [
    ("PAST LAST ROW", FIRST_TWO[:4]),
    ("TO NEXT ROW", FIRST_TWO[:4] + [(2, 2, "A"), (3, 2, "B"), (4, 2, "C"),
                                     (4, 3, "A"), (5, 3, "B"), (6, 3, "C")]),
    ("TO FIRST C", FIRST_TWO),
    ("TO LAST B", FIRST_TWO),
    ("TO B", FIRST_TWO),
    ("TO U", FIRST_TWO),
])
def test_e5_every_skip_mode(skip: str, expected: list[tuple[Any, ...]]) -> None:
    """T-TEST testAfterMatchSkip."""
    assert cols(run(E5_ROWS, E5.format(skip=skip)), "id", "m", "label") == expected


def test_e5_skip_to_the_first_row_is_an_error() -> None:
    """Here A is every match's first and only A row: a static error, with a caret."""
    with pytest.raises(QueryError, match="every match starts with A, its only row") as err:
        run(E5_ROWS, E5.format(skip="TO A"))
    assert (err.value.line, err.value.column) == (2, 48)  # at "A" in "SKIP TO A"


def test_skip_to_the_first_row_is_a_runtime_error_when_the_data_decides() -> None:
    """T-TEST: "cannot skip to first row of match"; here only the second match starts with A."""
    rows = letters("bcac")
    query = """ORDER BY id MEASURES MATCH_NUMBER() AS m AFTER MATCH SKIP TO FIRST A
               PATTERN ((A | B) C) DEFINE A AS c = 'a', B AS c = 'b', C AS c = 'c'"""
    with pytest.raises(DataError, match="cannot skip to the first row of match 1") as err:
        run(rows[2:], query)
    assert err.value.row == 0
    with pytest.raises(DataError, match="pattern variable A is not present in match 1") as err:
        run(rows, query)
    assert err.value.row == 0


def test_e5_skip_to_an_absent_variable_is_an_error() -> None:
    with pytest.raises(DataError, match="pattern variable D is not present in match 1"):
        run(E5_ROWS, E5.format(skip="TO D"))


# ---------------------------------------------------------------- E6, E7

E6_ROWS = [{"rowtime": dt.datetime(2026, 1, 1, 10, 0, s + 1), "price": p}
           for s, p in enumerate([7, 9, 10, 5, 10, 7, 14])]
E6 = """ORDER BY rowtime
        MEASURES SUM(A.price) AS sumPrice, FIRST(rowtime) AS startTime, LAST(rowtime) AS endTime
        ONE ROW PER MATCH AFTER MATCH SKIP {skip}
        PATTERN (A+ C) DEFINE A AS SUM(A.price) < 30"""


def sums_and_rows(out: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    return [(r["sumPrice"], r["startTime"].second, r["endTime"].second) for r in out]


def test_e6_skip_modes_with_an_aggregate_in_define() -> None:
    """FLINK-DOC "After Match Strategy"; TO NEXT ROW with the batch answer of E7."""
    assert sums_and_rows(run(E6_ROWS, E6.format(skip="PAST LAST ROW"))) == [(26, 1, 4), (17, 5, 7)]
    assert sums_and_rows(run(E6_ROWS, E6.format(skip="TO NEXT ROW"))) == [
        (26, 1, 4), (24, 2, 5), (25, 3, 6), (22, 4, 7), (17, 5, 7), (7, 6, 7)]


def test_e7_skip_to_last_a_fails_at_the_end_of_the_data_in_batch() -> None:
    """E7 [derived]: under the standard the match from row 6 is A = row 6 only, and
    SKIP TO LAST A targets its first row: an error, where Flink's streaming run
    stops at three rows."""
    with pytest.raises(DataError, match="cannot skip to the first row of match 4"):
        run(E6_ROWS, E6.format(skip="TO LAST A"))
    with pytest.raises(QueryError, match="every match starts with A"):
        run(E6_ROWS, E6.format(skip="TO FIRST A"))  # Flink: a runtime error; here static


# ---------------------------------------------------------------- E8

DAYS = [dt.date(2009, 6, d) for d in (8, 9, 10, 11, 12, 15, 16, 17, 18, 19, 22, 23, 24)]
XYZ = [{"Symbol": "XYZ", "Tradeday": d, "Price": p}
       for d, p in zip(DAYS, [50, 60, 49, 40, 35, 45, 45, 45, 43, 47, 52, 70, 60], strict=True)]
E8A = """PARTITION BY Symbol ORDER BY Tradeday
         MEASURES MATCH_NUMBER() AS Matchno, FIRST(A.Price) AS Startp, LAST(A.Price) AS Endp,
                  CLASSIFIER() AS Label
         {rows}
         PATTERN (A*) DEFINE A AS A.Price > PREV(A.Price)"""


def test_e8a_empty_matches_one_row_per_match() -> None:
    """DDB-ISO (ISO/IEC 19075-5 §4.12): eleven rows, three non-empty matches."""
    out = run(XYZ, E8A.format(rows="ONE ROW PER MATCH"))
    assert cols(out, "Matchno", "Startp", "Endp") == [
        (1, None, None), (2, 60, 60), (3, None, None), (4, None, None), (5, None, None),
        (6, 45, 45), (7, None, None), (8, None, None), (9, None, None), (10, 47, 70),
        (11, None, None)]


def test_e8b_show_empty_matches() -> None:
    out = run(XYZ, E8A.format(rows="ALL ROWS PER MATCH SHOW EMPTY MATCHES"))
    assert cols(out, "Tradeday", "Matchno", "Label") == [
        (DAYS[0], 1, None), (DAYS[1], 2, "A"), (DAYS[2], 3, None), (DAYS[3], 4, None),
        (DAYS[4], 5, None), (DAYS[5], 6, "A"), (DAYS[6], 7, None), (DAYS[7], 8, None),
        (DAYS[8], 9, None), (DAYS[9], 10, "A"), (DAYS[10], 10, "A"), (DAYS[11], 10, "A"),
        (DAYS[12], 11, None)]
    assert run(XYZ, E8A.format(rows="ALL ROWS PER MATCH")) == out


def test_e8c_omit_empty_matches_keeps_the_numbering_gaps() -> None:
    out = run(XYZ, E8A.format(rows="ALL ROWS PER MATCH OMIT EMPTY MATCHES"))
    assert cols(out, "Tradeday", "Matchno") == [
        (DAYS[1], 2), (DAYS[5], 6), (DAYS[9], 10), (DAYS[10], 10), (DAYS[11], 10)]


E8D = """PARTITION BY Symbol ORDER BY Tradeday
         MEASURES MATCH_NUMBER() AS Matchno, CLASSIFIER() AS Classy, A.Price AS Startp,
                  FINAL AVG(U.Price) AS Avgp
         ALL ROWS PER MATCH WITH UNMATCHED ROWS
         PATTERN (A B+ C+) SUBSET U = (A, B, C)
         DEFINE B AS B.Price < PREV(B.Price), C AS C.Price > PREV(C.Price)"""


def test_e8d_with_unmatched_rows() -> None:
    out = run(XYZ, E8D)
    assert len(out) == 13
    got = [(r["Tradeday"], r["Matchno"], r["Classy"], r["Startp"],
            None if r["Avgp"] is None else round(r["Avgp"], 6)) for r in out]
    assert got == [
        (DAYS[0], None, None, None, None),
        (DAYS[1], 1, "A", 60, 45.8), (DAYS[2], 1, "B", 60, 45.8), (DAYS[3], 1, "B", 60, 45.8),
        (DAYS[4], 1, "B", 60, 45.8), (DAYS[5], 1, "C", 60, 45.8),
        (DAYS[6], None, None, None, None),
        (DAYS[7], 2, "A", 45, 51.4), (DAYS[8], 2, "B", 45, 51.4), (DAYS[9], 2, "C", 45, 51.4),
        (DAYS[10], 2, "C", 45, 51.4), (DAYS[11], 2, "C", 45, 51.4),
        (DAYS[12], None, None, None, None)]


def test_e8d_one_row_per_match_summary() -> None:
    """ISO/IEC 19075-5 §4.3 via DDB-ISO: (1, 60, 35, 45, 45.8) and (2, 45, 43, 70, 51.4)."""
    out = run(XYZ, """PARTITION BY Symbol ORDER BY Tradeday
        MEASURES MATCH_NUMBER() AS m, A.Price AS startp, LAST(B.Price) AS bottomp,
                 LAST(C.Price) AS endp, AVG(U.Price) AS avgp
        PATTERN (A B+ C+) SUBSET U = (A, B, C)
        DEFINE B AS B.Price < PREV(B.Price), C AS C.Price > PREV(C.Price)""")
    assert [(r["m"], r["startp"], r["bottomp"], r["endp"], round(r["avgp"], 6)) for r in out] == [
        (1, 60, 35, 45, 45.8), (2, 45, 43, 70, 51.4)]


OUTPUT_MODES = """ORDER BY id MEASURES MATCH_NUMBER() AS m, RUNNING LAST(value) AS val,
                  CLASSIFIER() AS label {rows} PATTERN ({pattern}) DEFINE B AS B.value < PREV(B.value)"""


def test_e8_trino_output_modes() -> None:
    """T-TEST testOutputModes, rows 90 80 70 70."""
    rows = id_value(90, 80, 70, 70)
    one = run(rows, OUTPUT_MODES.format(rows="ONE ROW PER MATCH", pattern="B*"))
    assert cols(one, "m", "val", "label") == [(1, None, None), (2, 70, "B"), (3, None, None)]
    omit = run(rows, OUTPUT_MODES.format(rows="ALL ROWS PER MATCH OMIT EMPTY MATCHES", pattern="B*"))
    assert cols(omit, "id", "m") == [(2, 2), (3, 2)]
    unmatched = run(rows, OUTPUT_MODES.format(rows="ALL ROWS PER MATCH WITH UNMATCHED ROWS",
                                              pattern="B+"))
    assert cols(unmatched, "id", "m", "val", "label") == [
        (1, None, None, None), (2, 1, 80, "B"), (3, 1, 70, "B"), (4, None, None, None)]


# ---------------------------------------------------------------- E9

def test_e9_unmatched_rows_with_overlapping_matches() -> None:
    """T-TEST testEmptyMatches: rows inside an earlier match are not output as unmatched."""
    out = run(id_value(100, 100, 90, 80, 70, 100), """
        ORDER BY id MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS label
        ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B{2}) DEFINE B AS B.value < PREV(B.value)""")
    assert cols(out, "id", "m", "value", "label") == [
        (1, None, 100, None), (2, 1, 100, "A"), (3, 1, 90, "B"), (4, 1, 80, "B"),
        (3, 2, 90, "A"), (4, 2, 80, "B"), (5, 2, 70, "B"), (6, None, 100, None)]


# ---------------------------------------------------------------- E10

def test_e10_permute() -> None:
    """DDB-ORA (Oracle 23ai results) and T-TEST testRowPattern."""
    rows = letters("aabac")
    assert cols(run(rows, LETTERS.format(pattern="PERMUTE(A, B, C)")), "id", "label") == [
        (3, "B"), (4, "A"), (5, "C")]
    xy = """ORDER BY id MEASURES CLASSIFIER() AS label ALL ROWS PER MATCH PATTERN (PERMUTE(X, Y))
            DEFINE X AS c IN ('a', 'b', 'c'), Y AS c IN ('a', 'b', 'c')"""
    assert cols(run(rows, xy), "id", "label") == [(1, "X"), (2, "Y"), (3, "X"), (4, "Y")]
    assert cols(run(rows, LETTERS.format(pattern="PERMUTE(A+, B)")), "id", "label") == [
        (1, "A"), (2, "A"), (3, "B")]
    both = """ORDER BY id MEASURES CLASSIFIER() AS label ALL ROWS PER MATCH PATTERN (PERMUTE(B, C))
              DEFINE B AS B.value < PREV(B.value), C AS C.value < PREV(C.value)"""
    assert cols(run(id_value(90, 80, 70, 70), both), "id", "label") == [(2, "B"), (3, "C")]


# ---------------------------------------------------------------- E11

E11 = """ORDER BY id MEASURES RUNNING LAST(value) AS val, FINAL COUNT(*) AS n
         ALL ROWS PER MATCH PATTERN ({pattern})
         DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value)"""
E11_ROWS = id_value(90, 80, 70, 80, 90, 50, 40, 60)


@pytest.mark.parametrize("pattern, ids", [
    ("A B+ C+", [1, 2, 3, 4, 5, 6, 7, 8]),
    ("A {- B+ -} C+", [1, 4, 5, 6, 8]),
    ("{- A -} {- B+ -} C+", [4, 5, 8]),
    ("A {- {- B+ -} C+ -}", [1, 6]),
    ("{- A B+ C+ -}", []),
    ("A B+ {- ()* -} C+", [1, 2, 3, 4, 5, 6, 7, 8]),
    ("A {- C -}{2,3} {- B -}{2,3}", [3]),
])
def test_e11_exclusion(pattern: str, ids: list[int]) -> None:
    """T-TEST testExclusionSyntax."""
    assert [r["id"] for r in run(E11_ROWS, E11.format(pattern=pattern))] == ids


def test_e11_excluded_rows_still_count() -> None:
    """DDB-ORA "exclusion": FINAL COUNT(*) counts the excluded rows [derived on E11's rows]."""
    out = run(E11_ROWS, E11.format(pattern="{- A -} B+ C+"))
    assert cols(out, "id", "n") == [(2, 5), (3, 5), (4, 5), (5, 5), (7, 3), (8, 3)]


def test_exclusion_has_no_effect_on_one_row_per_match() -> None:
    query = "ORDER BY id MEASURES COUNT(*) AS n PATTERN ({- A -} B+) DEFINE B AS value < PREV(value)"
    assert [r["n"] for r in run(E11_ROWS, query)] == [3, 3]


# ---------------------------------------------------------------- E12

def test_e12_subset_classifier() -> None:
    """T-TEST testUnionVariable."""
    out = run(id_value(90, 80, 70, 80), """
        ORDER BY id MEASURES MATCH_NUMBER() AS m, CLASSIFIER(U) AS u, CLASSIFIER(W) AS w
        ALL ROWS PER MATCH PATTERN ((L | H) A) SUBSET U = (L, H), W = (A, L, H)
        DEFINE A AS A.value = 80, L AS L.value < 80, H AS H.value > 80""")
    assert cols(out, "id", "m", "u", "w") == [
        (1, 1, "H", "H"), (2, 1, "H", "A"), (3, 2, "L", "L"), (4, 2, "L", "A")]


# ---------------------------------------------------------------- E13

def test_e13a_aggregate_sees_the_tentative_label() -> None:
    """T-AGG testTentativeLabelMatch."""
    out = run(id_value(4, 6, 0), """
        ORDER BY id MEASURES RUNNING AVG(B.value) AS avg, CLASSIFIER() AS label
        ALL ROWS PER MATCH PATTERN ((A | B)*) DEFINE A AS AVG(B.value) = 5""")
    assert cols(out, "id", "label", "avg") == [(1, "B", 4.0), (2, "B", 5.0), (3, "A", 5.0)]
    own = run(id_value(4, 6, 0, 5), """
        ORDER BY id MEASURES CLASSIFIER() AS label
        ALL ROWS PER MATCH PATTERN ((A | B)*) DEFINE A AS AVG(A.value) = 5""")
    assert [r["label"] for r in own] == ["B", "B", "B", "A"]


def test_e13b_flink_running_average() -> None:
    """FLINK-DOC: (10:00:00, 10:00:03, 14.5) and (10:00:05, 10:00:10, 13.5)."""
    prices = [12, 17, 13, 16, 25, 2, 4, 10, 15, 25, 25, 30]
    rows = [{"rowtime": dt.datetime(2026, 1, 1, 10, 0, s), "price": p} for s, p in enumerate(prices)]
    out = run(rows, """ORDER BY rowtime
        MEASURES FIRST(A.rowtime) AS start_tstamp, LAST(A.rowtime) AS end_tstamp,
                 AVG(A.price) AS avgPrice
        PATTERN (A+ B) DEFINE A AS AVG(A.price) < 15""")
    assert [(r["start_tstamp"].second, r["end_tstamp"].second, r["avgPrice"]) for r in out] == [
        (0, 3, 14.5), (5, 10, 13.5)]


# ---------------------------------------------------------------- E14, E15

def test_e14_back_references_decide_earlier_labels() -> None:
    """T-TEST testBackReference: the same row is A in one query and B in the other."""
    rows = [{"value": 1}, {"value": 1}]
    query = "MEASURES CLASSIFIER() AS label ALL ROWS PER MATCH PATTERN ((A | B)* X) DEFINE X AS {c}"
    assert [r["label"] for r in run(rows, query.format(c="value = A.value"))] == ["A", "X"]
    assert [r["label"] for r in run(rows, query.format(c="value = B.value"))] == ["B", "X"]


def test_e15_match_number_in_define() -> None:
    """DDB-ISO (ISO/IEC 19075-5 §5.8): failed attempts do not use a number."""
    rows = [{"i": i, "price": p} for i, p in zip(range(1, 7), [10, 20, 15, 12, 18, 25], strict=True)]
    out = run(rows, """ORDER BY i MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS label
        ALL ROWS PER MATCH PATTERN (A+ | B+)
        DEFINE A AS MOD(MATCH_NUMBER(), 2) = 1 AND price > PREV(price),
               B AS MOD(MATCH_NUMBER(), 2) = 0 AND price < PREV(price)""")
    assert cols(out, "i", "m", "label") == [
        (2, 1, "A"), (3, 2, "B"), (4, 2, "B"), (5, 3, "A"), (6, 3, "A")]


# ---------------------------------------------------------------- E16

ANCHORS = """ORDER BY id MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS label ALL ROWS PER MATCH
             PATTERN ({pattern}) {define}"""


@pytest.mark.parametrize("pattern, expected", [
    ("^A", [(1, 1, "A")]),
    ("A$", [(4, 1, "A")]),
    ("A^", []), ("^A^", []), ("$A", []), ("$A$", []),
    ("^+ | B", [(1, 1, None), (2, 2, "B"), (3, 3, "B")]),
    ("$+ | B", [(2, 1, "B"), (3, 2, "B")]),
    ("B A $+", [(3, 1, "B"), (4, 1, "A")]),
])
def test_e16_anchors(pattern: str, expected: list[tuple[Any, ...]]) -> None:
    """T-TEST testRowPattern, testEmptyCycle."""
    define = "DEFINE B AS B.value < PREV(B.value)" if "B" in pattern else ""
    query = ANCHORS.format(pattern=pattern, define=define)
    assert cols(run(id_value(90, 80, 70, 70), query), "id", "m", "label") == expected


# ---------------------------------------------------------------- E17

def test_e17_physical_navigation_leaves_the_match_not_the_partition() -> None:
    """T-TEST: match on rows 3-4; PREV(B.value, 3) is row 1, PREV(B.value, 4) is NULL."""
    out = run(id_value(10, 20, 30, 30, 40), """ORDER BY id
        MEASURES PREV(B.value, 2) AS p2, PREV(B.value, 3) AS p3, PREV(B.value, 4) AS p4,
                 NEXT(B.value) AS n1, NEXT(B.value, 2) AS n2, FIRST(A.id) AS start
        PATTERN (A B) DEFINE B AS B.value = PREV(B.value)""")
    assert cols(out, "start", "p2", "p3", "p4", "n1", "n2") == [(3, 20, 10, None, 40, None)]


def test_e17_running_first_and_last_with_offsets() -> None:
    """DDB-ORA / T-26981: RUNNING FIRST(price, 1) is NULL on the first row (Oracle's answer)."""
    rows = [{"t": i, "price": p} for i, p in enumerate([10, 8, 6, 4])]
    out = run(rows, """ORDER BY t MEASURES FIRST(price, 1) AS f1, LAST(price, 1) AS l1
        ALL ROWS PER MATCH PATTERN (A+)""")
    assert cols(out, "f1", "l1") == [(None, None), (8, 10), (8, 8), (8, 6)]


def test_nested_navigation_logical_then_physical() -> None:
    """T-DOC: PREV(LAST(A.v, 1), 3) takes the logical step first, then the physical one."""
    rows = id_value(1, 2, 3, 4, 5, 6)
    out = run(rows, """ORDER BY id MEASURES PREV(LAST(A.value, 1), 2) AS x,
                       NEXT(FIRST(A.value), 2) AS y, PREV(FIRST(A.value), 1) AS z
                       PATTERN (B A+) DEFINE B AS value = 3""")
    # B = row 3, A = rows 4-6: LAST(A, 1) = row 5, two back = row 3; FIRST(A) = row 4,
    # two on = row 6; one before row 4 = row 3.
    assert cols(out, "x", "y", "z") == [(3, 6, 3)]


# ---------------------------------------------------------------- more semantics

def test_define_reads_null_for_a_variable_without_rows() -> None:
    """DDB-ERR: A AS B.value > 0 in PATTERN (A B) never holds (B has no row yet)."""
    out = run(id_value(1, 2, 3), "MEASURES COUNT(*) AS n PATTERN (A B) DEFINE A AS B.value > 0")
    assert out == []


def test_last_of_the_variable_in_its_own_define_is_the_current_row() -> None:
    """RW-DOC: A.v > LAST(A.v) compares the row with itself; LAST(A.v, 1) is the previous A."""
    rows = id_value(1, 2, 3)
    never = run(rows, "ORDER BY id MEASURES COUNT(*) AS n PATTERN (A A+) DEFINE A AS value > LAST(A.value)")
    assert never == []
    rising = run(rows, "ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+) "
                       "DEFINE A AS LAST(A.value, 1) IS NULL OR value > LAST(A.value, 1)")
    assert rising == [{"n": 3}]


def test_next_classifier_in_define_is_null() -> None:
    """T-TEST testClassifierFunctionPastCurrentRow: labels after the current row do not exist."""
    out = run(id_value(1, 2, 3), """ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+)
        DEFINE A AS NEXT(CLASSIFIER()) IS NULL""")
    assert out == [{"n": 3}]


def test_partitions_are_independent_and_match_numbers_restart() -> None:
    rows = [{"k": k, "t": t, "v": v} for k, t, v in
            [("x", 1, 5), ("y", 1, 1), ("x", 2, 4), ("y", 2, 2), ("x", 3, 3), ("y", 3, 1)]]
    out = run(rows, """PARTITION BY k ORDER BY t MEASURES MATCH_NUMBER() AS m, COUNT(*) AS n
        AFTER MATCH SKIP TO NEXT ROW PATTERN (D+) DEFINE D AS v < PREV(v)""")
    assert cols(out, "k", "m", "n") == [("x", 1, 2), ("x", 2, 1), ("y", 1, 1)]


def test_order_by_descending_and_nulls() -> None:
    rows = [{"t": t, "v": v} for t, v in [(1, 10), (3, 30), (None, 0), (2, 20)]]
    out = run(rows, "ORDER BY t DESC MEASURES ARRAY_AGG(t) AS ts PATTERN (A+)")
    assert out == [{"ts": [3, 2, 1, None]}]
    first = run(rows, "ORDER BY t NULLS FIRST MEASURES ARRAY_AGG(t) AS ts PATTERN (A+)")
    assert first == [{"ts": [None, 1, 2, 3]}]


def test_aggregates_over_empty_and_null_values() -> None:
    """Over an empty row set COUNT is 0, the others NULL (DDB-ORA); NULLs are skipped."""
    rows = [{"t": 1, "v": None}, {"t": 2, "v": 4}, {"t": 3, "v": 8}]
    out = run(rows, """ORDER BY t MEASURES COUNT(B.v) AS nb, SUM(B.v) AS sb, COUNT(v) AS nv,
        COUNT(*) AS n, SUM(v) AS s, AVG(v) AS a, MIN(v) AS lo, MAX(v) AS hi, ARRAY_AGG(v) AS vs,
        COUNT(A.*) AS na PATTERN (A+ B*) DEFINE B AS false""")
    assert out == [{"nb": 0, "sb": None, "nv": 2, "n": 3, "s": 12, "a": 6.0, "lo": 4, "hi": 8,
                    "vs": [None, 4, 8], "na": 3}]


def test_within_drops_candidates_spanning_too_long() -> None:
    """Flink's WITHIN: a candidate whose last row is the bound or more after its first is
    dropped (Flink's NFA prunes at ``timestamp - start >= window``)."""
    base = dt.datetime(2026, 1, 1, 10, 0, 0)
    rows = [{"ts": base + dt.timedelta(seconds=s), "v": v}
            for s, v in [(0, 1), (5, 2), (20, 3), (22, 4), (23, 5)]]
    query = "ORDER BY ts MEASURES ARRAY_AGG(v) AS vs PATTERN (A B+) {within}"
    assert [r["vs"] for r in run(rows, query.format(within=""))] == [[1, 2, 3, 4, 5]]
    assert [r["vs"] for r in run(rows, query.format(within="WITHIN INTERVAL '10' SECOND"))] == [
        [1, 2], [3, 4, 5]]
    assert run(rows, query.format(within="WITHIN 10 seconds")) == run(
        rows, query.format(within="WITHIN INTERVAL '10' SECOND"))
    numeric = [{"t": t, "v": t} for t in (0, 5, 20, 22, 23)]
    assert [r["vs"] for r in run(numeric, "ORDER BY t MEASURES ARRAY_AGG(v) AS vs "
                                          "PATTERN (A B+) WITHIN 10")] == [[0, 5], [20, 22, 23]]


def test_within_excludes_a_span_equal_to_the_bound() -> None:
    """docs/semantics.md, MATCH_RECOGNIZE: the span must be shorter than WITHIN's bound, as in
    Flink (CEQL's WITHIN is inclusive; this clause follows the engine it comes from)."""
    rows = [{"t": t} for t in (0, 5, 10, 11)]
    query = "ORDER BY t MEASURES ARRAY_AGG(t) AS ts PATTERN (A B+) WITHIN {n}"
    assert [r["ts"] for r in run(rows, query.format(n=10))] == [[0, 5], [10, 11]]
    assert [r["ts"] for r in run(rows, query.format(n=11))] == [[0, 5, 10], ]
    base = dt.datetime(2026, 1, 1)
    timed = [{"t": base + dt.timedelta(seconds=s)} for s in (0, 5, 10, 11)]
    assert [len(r["ts"]) for r in run(timed, query.format(n="INTERVAL '10' SECOND"))] == [2, 2]


def test_within_checks_the_key_type() -> None:
    numeric = [{"t": 1, "v": 1}]
    with pytest.raises(QueryError, match="needs a timestamp or date ORDER BY key"):
        run(numeric, "ORDER BY t MEASURES COUNT(*) AS n PATTERN (A) WITHIN INTERVAL '1' SECOND")
    dated = [{"t": dt.date(2026, 1, 1)}]
    with pytest.raises(QueryError, match="needs a numeric ORDER BY key"):
        run(dated, "ORDER BY t MEASURES COUNT(*) AS n PATTERN (A) WITHIN 3")


def test_unknown_and_ambiguous_columns_point_at_the_reference() -> None:
    rows = [{"Price": 1, "price": 2, "v": 3}]
    with pytest.raises(QueryError, match="unknown column 'nope'") as err:
        run(rows, "MEASURES A.nope AS x PATTERN (A)")
    assert (err.value.line, err.value.column) == (1, 10)
    with pytest.raises(QueryError, match="ambiguous"):
        run(rows, "MEASURES A.PRICE AS x PATTERN (A)")
    assert run(rows, 'MEASURES A."Price" AS x, A.V AS y PATTERN (A)') == [{"x": 1, "y": 3}]


def test_measure_named_like_an_input_column_in_all_rows() -> None:
    with pytest.raises(QueryError, match="measure 'v' has the name of an output column"):
        run([{"v": 1}], "MEASURES COUNT(*) AS v ALL ROWS PER MATCH PATTERN (A)")


def test_a_define_that_gives_no_boolean_is_an_error() -> None:
    rows = [{"t": 1, "flag": True, "n": 3}]
    assert run(rows, "ORDER BY t MEASURES COUNT(*) AS c PATTERN (A) DEFINE A AS flag") == [{"c": 1}]
    with pytest.raises(DataError, match="DEFINE A: the condition gave 3, not true or false"):
        run(rows, "ORDER BY t MEASURES COUNT(*) AS c PATTERN (A) DEFINE A AS n")


def test_within_on_date64_keys() -> None:
    day = 86400 * 1000
    table = pa.table({"d": pa.array([0, day, 5 * day], type=pa.date64())})
    out = run(table, "ORDER BY d MEASURES COUNT(*) AS n PATTERN (A B*) WITHIN INTERVAL '2' DAY")
    assert [r["n"] for r in out] == [2, 1]


def test_bad_values_name_the_row() -> None:
    rows = [{"t": 1, "a": 1, "b": None}, {"t": 2, "a": 1, "b": "x"}]
    with pytest.raises(DataError, match="cannot evaluate") as err:
        run(rows, "ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS a + b > 0")
    assert err.value.row == 1


def test_runaway_backtracking_hits_the_step_budget() -> None:
    """(A+)+ B over rows with no B: exponential for a plain backtracker (DDB-BT)."""
    rows = [{"t": i, "c": "a"} for i in range(40)]
    with pytest.raises(SearchBudgetError, match="max_steps"):
        match_recognize(rows, "ORDER BY t MEASURES COUNT(*) AS n PATTERN ((A+)+ B) "
                              "DEFINE A AS c = 'a', B AS c = 'b'", max_steps=20_000)


def test_the_empty_iteration_rule_ends_loops() -> None:
    """T-TEST: (A??)* B terminates; ((){5,} | B) and (()* | B) produce empty matches."""
    rows = id_value(1, 2, 3)
    out = run(rows, """ORDER BY id MEASURES ARRAY_AGG(CLASSIFIER()) AS labels
                       PATTERN ((A??)* B) DEFINE B AS value = 3""")
    assert [r["labels"] for r in out] == [["A", "A", "B"]]
    for pattern in ("(){5,} | B", "()* | B"):
        out = run(rows, f"ORDER BY id MEASURES MATCH_NUMBER() AS m, COUNT(*) AS n PATTERN ({pattern})")
        assert cols(out, "m", "n") == [(1, 0), (2, 0), (3, 0)]


def test_quoted_variables_keep_their_case() -> None:
    """T-TEST: CLASSIFIER() returns 'A' for a and 'b' for "b"."""
    out = run(id_value(1, 2), 'ORDER BY id MEASURES CLASSIFIER() AS l ALL ROWS PER MATCH '
                              'PATTERN (a "b")')
    assert [r["l"] for r in out] == ["A", "b"]


def test_case_between_in_and_scalar_functions() -> None:
    rows = id_value(-7, 2, 5)
    out = run(rows, """ORDER BY id MEASURES
        CASE WHEN value BETWEEN 0 AND 3 THEN 'low' WHEN value IN (5, 6) THEN 'five' ELSE 'neg' END AS k,
        MOD(value, 3) AS m, ABS(value) AS a, value / 2 AS half, COALESCE(NULL, value) AS c
        ALL ROWS PER MATCH PATTERN (A)""")
    assert cols(out, "k", "m", "a", "half", "c") == [
        ("neg", -1, 7, -3, -7), ("low", 2, 2, 1, 2), ("five", 2, 5, 2, 5)]


def test_the_readme_and_docs_examples_run() -> None:
    """The Python snippets of README.md's MATCH_RECOGNIZE section and docs/match_recognize.md."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    section = readme.split("\n## MATCH_RECOGNIZE\n", 1)[1]
    snippet = section.split("```python", 1)[1].split("```", 1)[0]
    scope: dict[str, Any] = {"table": pa.Table.from_pylist(TICKER)}
    exec(snippet.replace("match_recognize(table", "result = match_recognize(table"), scope)
    # SKIP PAST LAST ROW (the default): the second V starts the day after the first ends
    assert [r["start"] for r in scope["result"].to_pylist()] == [apr(5), apr(11), apr(14)]
    page = (root / "docs" / "match_recognize.md").read_text()
    snippet = page.split("```python", 1)[1].split("```", 1)[0]
    scope = {"rows_or_arrow_table": TICKER}
    exec(snippet, scope)
    assert [r["start_tstamp"] for r in scope["table"].to_pylist()] == [apr(5), apr(10), apr(14)]


def test_long_matches_run_on_a_deep_stack_and_too_long_ones_are_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The search nests frames per matched row: it runs in a thread with a large stack, and
    past MAX_DEPTH it stops with SearchBudgetError instead of overflowing the C stack.
    (70,000 rows with the default depth give the same error in ~5 s, measured by hand.)"""
    import kleene.reference.match_recognize as reference

    limit = sys.getrecursionlimit()
    rows = [{"t": i} for i in range(3000)]
    query = "ORDER BY t MEASURES COUNT(*) AS n PATTERN (A+ B) DEFINE B AS t = 2999"
    assert run(rows, query) == [{"n": 3000}]
    monkeypatch.setattr(reference, "MAX_DEPTH", 2000)
    with pytest.raises(SearchBudgetError, match="nests too deep"):
        run(rows, query)
    assert sys.getrecursionlimit() == limit  # restored


def test_small_inputs_fall_back_to_the_deep_stack_when_the_search_nests_deeply(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import kleene.reference.match_recognize as reference

    rows = [{"t": i} for i in range(300)]
    query = "ORDER BY t MEASURES COUNT(*) AS n PATTERN (((A+)+)+ B) DEFINE B AS t = 299"
    monkeypatch.setattr(reference, "SHALLOW_DEPTH", 400)
    assert run(rows, query) == [{"n": 300}]
    monkeypatch.setattr(reference, "MAX_DEPTH", 400)
    with pytest.raises(reference.SearchDepthError):
        run(rows, query)


def test_trino_broadcast_v_shape_per_customer() -> None:
    """Trino Community Broadcast 23 (trino.io/episodes/23.html): its query and rows, two
    partitions interleaved in the input.  The expected rows are derived by hand (the page's
    printed table could not be retrieved): cust_1 falls 200 -> 100 -> 50 and rises to 100;
    cust_2 falls 8 -> 4 and rises to 6; cust_1's first day (100 then 200) cannot start."""
    day = lambda d: dt.date(2020, 5, d)  # noqa: E731
    orders = [("cust_1", 11, 100), ("cust_1", 12, 200), ("cust_2", 13, 8), ("cust_1", 14, 100),
              ("cust_2", 15, 4), ("cust_1", 16, 50), ("cust_1", 17, 100), ("cust_2", 18, 6)]
    rows = [{"customer_id": c, "order_date": day(d), "price": p} for c, d, p in orders]
    out = run(rows, """PARTITION BY customer_id ORDER BY order_date
        MEASURES START.price AS start_price, LAST(DOWN.price) AS bottom_price,
                 LAST(UP.price) AS final_price, START.order_date AS start_date,
                 LAST(UP.order_date) AS final_date
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (START DOWN+ UP+)
        DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)""")
    assert cols(out, "customer_id", "start_price", "bottom_price", "final_price", "start_date",
                "final_date") == [("cust_1", 200, 50, 100, day(12), day(17)),
                                  ("cust_2", 8, 4, 6, day(13), day(18))]


def test_output_columns_in_the_standards_order() -> None:
    """T-TEST testOutputLayout: ONE ROW gives partition columns then measures; ALL ROWS gives
    partition columns, order columns, measures, then the other input columns in input order.
    A column named twice (in PARTITION BY and ORDER BY, or twice in ORDER BY) comes once."""
    rows = [{"z": 1, "ordering": 2, "partitioning": 3, "a": 4}]
    one = match_recognize(rows, "PARTITION BY partitioning ORDER BY ordering "
                                "MEASURES CLASSIFIER() AS c PATTERN (A)")
    assert one.column_names == ["partitioning", "c"]
    every = match_recognize(rows, "PARTITION BY partitioning ORDER BY ordering, partitioning, "
                                  "ordering MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A)")
    assert every.column_names == ["partitioning", "ordering", "c", "z", "a"]
    assert every.to_pylist() == [{"partitioning": 3, "ordering": 2, "c": "A", "z": 1, "a": 4}]
    bare = match_recognize(rows, "ALL ROWS PER MATCH PATTERN (A)")
    assert bare.column_names == ["z", "ordering", "partitioning", "a"]
