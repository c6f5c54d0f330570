"""The MATCH_RECOGNIZE language: what parses to what, round trips, and every error with its caret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kleene.language.errors import QueryError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.parser import parse, parse_unchecked
from kleene.language.match_recognize.printer import to_text

ROOT = Path(__file__).resolve().parents[2]

ROUND_TRIPS = [
    "MEASURES 1 AS a PATTERN (A)",
    "MEASURES 1 AS a PATTERN ()",
    "MEASURES 1 AS a PATTERN (A B+ C*? D? E?? F{2} G{2,} H{,3} I{2,4}? J{,}) DEFINE B AS true",
    "MEASURES 1 AS a PATTERN ((A | B C)+ | PERMUTE(A, B C, D+) | ^ A $ | {- A -} {- -} | ((A)))",
    "MEASURES 1 AS a PATTERN (A {- {- B+ -} C+ -}{2,3}?)",
    "PARTITION BY s, \"K\" ORDER BY t DESC, u NULLS FIRST, v ASC NULLS LAST MEASURES A.x AS y "
    "PATTERN (A)",
    "MEASURES FINAL LAST(A.x, 2) AS a, RUNNING FIRST(x) AS b, PREV(A.x, 0) AS c, NEXT(x) AS d, "
    "PREV(LAST(A.x, 1), 3) AS e, NEXT(FINAL FIRST(CLASSIFIER(U)), 2) AS f, "
    "CLASSIFIER() AS g, CLASSIFIER(A) AS h, MATCH_NUMBER() AS i, COUNT(*) AS j, COUNT(A.*) AS k, "
    "COUNT() AS k2, FINAL SUM(A.x * 2) AS l, AVG(x) AS m, MIN(A.x) AS n, MAX(x) AS o, "
    "ARRAY_AGG(CLASSIFIER()) AS p, RUNNING COUNT(A.x) + FINAL COUNT(A.x) AS q "
    "ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH SKIP TO FIRST W "
    "PATTERN (A B) SUBSET U = (A, B), W = (B)",
    "MEASURES 1 AS a ALL ROWS PER MATCH OMIT EMPTY MATCHES AFTER MATCH SKIP TO NEXT ROW PATTERN (A)",
    "MEASURES 1 AS a ALL ROWS PER MATCH SHOW EMPTY MATCHES AFTER MATCH SKIP TO LAST A PATTERN (A+)",
    "MEASURES 1 AS a AFTER MATCH SKIP TO A PATTERN (B A)",
    "ORDER BY t MEASURES 1 AS a PATTERN (A) WITHIN INTERVAL '1' HOUR",
    "ORDER BY t MEASURES 1 AS a PATTERN (A) WITHIN 2.5 seconds",
    "ORDER BY t MEASURES 1 AS a PATTERN (A) WITHIN 10",
    "MEASURES 1 AS a PATTERN (A B) DEFINE A AS x > 1 AND NOT y <= 2 OR z <> 3 AND w != 4, "
    "B AS (x + 1) * 2 - -3 / 4 % 5 >= 1.5e3 AND x IS NULL AND y IS NOT NULL "
    "AND x BETWEEN 1 AND 2 AND y NOT BETWEEN -1 AND 1 AND z IN ('a', 'it''s') "
    "AND w NOT IN (1, NULL) AND CASE WHEN x = 1 THEN TRUE WHEN x = 2 THEN FALSE ELSE NULL END "
    "AND MOD(x, 2) = ABS(-1) AND COALESCE(x, y, 0) = ROUND(x, 2) AND LOWER(s) = UPPER(s)",
    'MEASURES A."weird col" AS "Out Name" PATTERN ("a" A) DEFINE "a" AS "a"."weird col" > 0',
]


@pytest.mark.parametrize("text", ROUND_TRIPS)
def test_round_trip(text: str) -> None:
    tree = parse(text)
    printed = to_text(tree)
    assert parse(printed) == tree
    assert to_text(parse(printed)) == printed


def test_the_wrapped_form_parses_to_the_same_tree() -> None:
    body = "PARTITION BY s ORDER BY t MEASURES A.x AS y PATTERN (A B+) DEFINE B AS x > PREV(x)"
    assert parse(f"MATCH_RECOGNIZE (\n{body}\n)") == parse(body)


def test_defaults_and_shorthands() -> None:
    tree = parse("MEASURES 1 AS a PATTERN (A)")
    assert tree.rows_per_match is ast.RowsPerMatch.ONE
    assert tree.skip == ast.Skip(ast.SkipKind.PAST_LAST_ROW)
    assert parse("MEASURES 1 AS a AFTER MATCH SKIP TO A PATTERN (B A)").skip == ast.Skip(
        ast.SkipKind.TO_LAST, "A")
    assert parse("MEASURES 1 AS a ALL ROWS PER MATCH PATTERN (A)").rows_per_match is \
        ast.RowsPerMatch.ALL_SHOW_EMPTY
    star = parse("MEASURES 1 AS a PATTERN (A{,})").pattern
    assert star == parse("MEASURES 1 AS a PATTERN (A*)").pattern == ast.Quantified(
        ast.Var("A"), 0, None)
    assert parse("MEASURES 1 AS a PATTERN (A{,3}?)").pattern == ast.Quantified(
        ast.Var("A"), 0, 3, greedy=False)


def test_pattern_precedence() -> None:
    """Alternation is loosest, then concatenation, then the quantified primary."""
    p = parse("MEASURES 1 AS a PATTERN (A B* | C)").pattern
    assert p == ast.Alternation((ast.Concat((ast.Var("A"), ast.Quantified(ast.Var("B"), 0, None))),
                                 ast.Var("C")))


def test_expression_precedence() -> None:
    d = parse("MEASURES 1 AS a PATTERN (A) DEFINE A AS NOT x = 1 OR y + 2 * 3 > 4 AND TRUE")
    cond = d.defines[0].condition
    assert isinstance(cond, ast.BinOp) and cond.op == "OR"
    assert isinstance(cond.left, ast.Not)
    right = cond.right
    assert isinstance(right, ast.BinOp) and right.op == "AND"
    cmp_ = right.left
    assert isinstance(cmp_, ast.BinOp) and cmp_.op == ">"
    assert cmp_.left == ast.BinOp("+", ast.Column(None, "y"), ast.BinOp(
        "*", ast.Literal(2), ast.Literal(3)))


def test_identifiers_fold_and_keywords_are_case_insensitive() -> None:
    tree = parse('measures last(up.Price) as p all rows per match pattern (strt up+ "q") '
                 'define up as up.Price > prev(up.Price)')
    assert tree.defines[0].var == "UP"
    assert tree.measures[0] == ast.Measure(ast.Nav("LAST", ast.Column("UP", "Price")), "p")
    assert ast.Var("q") in tree.pattern.items  # type: ignore[union-attr]


def test_keywords_can_name_columns_and_measures_where_only_a_name_fits() -> None:
    tree = parse("MEASURES A.first AS end, LAST(A.rows) AS last PATTERN (A)")
    assert [m.name for m in tree.measures] == ["end", "last"]
    assert tree.measures[0].expr == ast.Column("A", "first")


def test_within_amounts() -> None:
    within = parse("ORDER BY t MEASURES 1 AS a PATTERN (A) WITHIN INTERVAL '90' MINUTE").within
    assert within is not None and within.nanos == 90 * 60 * 10**9
    within = parse("ORDER BY t MEASURES 1 AS a PATTERN (A) WITHIN INTERVAL '2 hours'").within
    assert within is not None and within.nanos == 2 * 3600 * 10**9
    within = parse("ORDER BY t MEASURES 1 AS a PATTERN (A) WITHIN 7").within
    assert within == ast.Within(7, None)


def test_comments_are_ignored() -> None:
    assert parse("-- one\nMEASURES /* two */ 1 AS a PATTERN (A) -- three") == parse(
        "MEASURES 1 AS a PATTERN (A)")


# ---------------------------------------------------------------- errors

ERRORS = [
    # (text, message part, line, column)
    ("MEASURES 1 AS a PATTERN (A B", "unexpected end of query", 1, 29),
    ("MEASURES 1 AS a\nPATTERN (A B))", "unexpected ')'", 2, 14),
    ("MEASURES 1 AS a PATTERN (A) DEFINE", "unexpected end of query", 1, 35),
    ("MEASURES 1 AS a PATTERN (A #)", "unexpected character '#'", 1, 28),
    ("MEASURES x AS y PATTERN (A|)", "unexpected ')', expected a pattern variable, '('", 1, 28),
    ("MEASURES x AS y PATTERN (A) DEFINE A AS x >", "expected an expression", 1, 44),
    ("MEASURES x PATTERN (A)", "unexpected 'PATTERN', expected", 1, 12),
    ("MEASURES x AS y ONE ROWS PER MATCH PATTERN (A)", "unexpected 'ROWS', expected ROW", 1, 21),
    ("MEASURES 1 AS a PATTERN (A) DEFINE A AS x = 'abc", "unterminated string", 1, 45),
    ("PATTERN (A B) DEFINE A AS x > 1", "no column to return", 1, 1),
    ("MEASURES 1 AS a PATTERN (A B) DEFINE C AS x > 1", "C is not a variable of PATTERN", 1, 38),
    ("MEASURES 1 AS a PATTERN (A B) DEFINE A AS x > 1,\n  A AS x < 1", "A is defined twice", 2, 3),
    ("MEASURES 1 AS a PATTERN (A B) SUBSET U = (A, C)", "SUBSET U: C is not a variable", 1, 46),
    ("MEASURES 1 AS a PATTERN (A B) SUBSET A = (B)", "already a pattern variable", 1, 38),
    ("MEASURES 1 AS a PATTERN (A B) SUBSET U = (A), U = (B)", "declared twice", 1, 47),
    ("MEASURES 1 AS a PATTERN (A B) SUBSET U = (A) DEFINE U AS x > 1",
     "a SUBSET name, which cannot be defined", 1, 53),
    ("MEASURES 1 AS a AFTER MATCH SKIP TO FIRST C PATTERN (A B)", "C is not a variable", 1, 43),
    ("MEASURES 1 AS a AFTER MATCH SKIP TO C PATTERN (A B)", "C is not a variable", 1, 37),
    ("MEASURES 1 AS a AFTER MATCH SKIP TO FIRST A PATTERN (^ {- A -} B+)",
     "every match starts with A, so the search would restart", 1, 43),
    ("MEASURES 1 AS a AFTER MATCH SKIP TO U PATTERN ((A | B) C) SUBSET U = (A, B)",
     "every match starts with U, its only row", 1, 37),
    ("MEASURES C.x AS a PATTERN (A B)", "C is not a pattern variable", 1, 10),
    ("MEASURES CLASSIFIER(C) AS a PATTERN (A B)", "C is not a pattern variable", 1, 10),
    ("MEASURES COUNT(C.*) AS a PATTERN (A B)", "C is not a pattern variable", 1, 10),
    ("MEASURES 1 AS a PATTERN (A B) DEFINE A AS C.x > 0", "C is not a pattern variable", 1, 43),
    ("MEASURES 1 AS a PATTERN (A) DEFINE A AS x + 1", "a condition must be true or false", 1, 41),
    ("MEASURES 1 AS a PATTERN (A) DEFINE A AS COUNT(*)", "a condition must be true or false", 1, 41),
    ("MEASURES 1 AS a PATTERN (A) DEFINE A AS 'yes'", "a condition must be true or false", 1, 41),
    ("MEASURES 1 AS a PATTERN (A) DEFINE A AS FINAL LAST(A.x) > 1", "FINAL is not allowed in DEFINE",
     1, 41),
    ("MEASURES 1 AS a PATTERN (A) DEFINE A AS FINAL COUNT(*) > 1", "FINAL is not allowed in DEFINE",
     1, 41),
    ("MEASURES RUNNING PREV(x) AS a PATTERN (A)", "applies only to FIRST, LAST and aggregates", 1, 10),
    ("MEASURES FINAL x AS a PATTERN (A)", "unexpected 'AS', expected '('", 1, 18),
    ("MEASURES SUM(COUNT(x)) AS a PATTERN (A)", "nested inside another aggregate", 1, 14),
    ("MEASURES SUM(PREV(x)) AS a PATTERN (A)", "PREV cannot be used inside an aggregate", 1, 14),
    ("MEASURES LAST(SUM(x)) AS a PATTERN (A)", "aggregate cannot be nested inside LAST", 1, 15),
    ("MEASURES FIRST(PREV(x)) AS a PATTERN (A)", "PREV cannot be nested inside FIRST", 1, 16),
    ("MEASURES PREV(NEXT(x)) AS a PATTERN (A)", "NEXT cannot be nested inside PREV", 1, 15),
    ("MEASURES PREV(LAST(x) + 1) AS a PATTERN (A)", "must be its whole first argument", 1, 15),
    ("MEASURES LAST(A.x + B.x) AS a PATTERN (A B)", "must all name the same pattern variable", 1, 10),
    ("MEASURES SUM(A.x + x) AS a PATTERN (A B)", "must all name the same pattern variable", 1, 10),
    ("MEASURES LAST(1) AS a PATTERN (A)", "must read a column or CLASSIFIER()", 1, 10),
    ("MEASURES PREV(x, -1) AS a PATTERN (A)", "must not be negative", 1, 18),
    ("MEASURES PREV(x, y) AS a PATTERN (A)", "must be a whole number constant", 1, 18),
    ("MEASURES LAST(x, 1.5) AS a PATTERN (A)", "must be a whole number constant", 1, 18),
    ("MEASURES PREV(x, 1, 2) AS a PATTERN (A)", "takes an expression and an optional offset", 1, 10),
    ("MEASURES 1 AS a PATTERN (A{3,2})", "the minimum is above the maximum", 1, 27),
    ("MEASURES 1 AS a PATTERN (A{1.5})", "whole number", 1, 28),
    ("MEASURES 1 AS a ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A {- B -})",
     "exclusion {- -} cannot be used with ALL ROWS PER MATCH WITH UNMATCHED ROWS", 1, 67),
    ("MEASURES 1 AS a PATTERN (A) WITHIN 10", "WITHIN needs ORDER BY", 1, 29),
    ("ORDER BY t DESC MEASURES 1 AS a PATTERN (A) WITHIN 10", "first ORDER BY key ascending", 1, 10),
    ("ORDER BY t MEASURES 1 AS a PATTERN (A) WITHIN INTERVAL 'soon'", "expected an interval", 1, 56),
    ("ORDER BY t MEASURES 1 AS a PATTERN (A) WITHIN INTERVAL '5'", "needs one time unit", 1, 56),
    ("MEASURES 1 AS a, 2 AS A PATTERN (A)", "measure 'A' is named twice", 1, 23),
    ("MEASURES frobnicate(x) AS a PATTERN (A)", "unknown function 'frobnicate'", 1, 10),
    ("MEASURES SUM(*) AS a PATTERN (A)", "only COUNT takes *", 1, 10),
    ("MEASURES MAX(A.*) AS a PATTERN (A)", "only COUNT takes X.*", 1, 10),
    ("MEASURES SUM() AS a PATTERN (A)", "SUM() needs an argument", 1, 10),
    ("MEASURES SUM(x, y) AS a PATTERN (A)", "SUM takes one argument", 1, 10),
    ("MEASURES MOD(x) AS a PATTERN (A)", "MOD takes 2 argument", 1, 10),
    ("MEASURES CLASSIFIER(A.x) AS a PATTERN (A)", "CLASSIFIER takes no argument or one", 1, 10),
    ("MEASURES MATCH_NUMBER(A) AS a PATTERN (A)", "MATCH_NUMBER takes no argument", 1, 10),
]


@pytest.mark.parametrize("text, message, line, column", ERRORS)
def test_errors_name_line_and_column(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(QueryError) as err:
        parse(text)
    assert message in err.value.message
    assert (err.value.line, err.value.column) == (line, column)
    rendered = str(err.value).splitlines()
    assert rendered[1] == "  " + text.splitlines()[line - 1]
    assert rendered[2] == "  " + " " * (column - 1) + "^"


@pytest.mark.parametrize("text", [
    "MEASURES 1 AS a AFTER MATCH SKIP TO A PATTERN (A+ B)",  # LAST A may be a later row
    "MEASURES 1 AS a AFTER MATCH SKIP TO FIRST A PATTERN (A? B)",  # a match may start with B
    "MEASURES 1 AS a AFTER MATCH SKIP TO FIRST A PATTERN (PERMUTE(A, B))",
    "MEASURES 1 AS a AFTER MATCH SKIP TO LAST B PATTERN (A B)",
])
def test_skip_targets_that_may_move_on_are_accepted(text: str) -> None:
    assert parse(text).skip.var is not None


def test_unchecked_parse_skips_the_static_rules() -> None:
    text = "MEASURES 1 AS a PATTERN (A) DEFINE B AS true"
    assert parse_unchecked(text).defines[0].var == "B"
    with pytest.raises(QueryError):
        parse(text)


def test_non_text_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="is text"):
        parse(b"PATTERN (A)")  # type: ignore[arg-type]


def test_import_kleene_does_not_load_match_recognize() -> None:
    """The second front end costs nothing until a MATCH_RECOGNIZE text is parsed."""
    script = """
import json, sys
import kleene, kleene.api, kleene.cli
before = sorted(m for m in sys.modules if "match_recognize" in m)
from kleene.language.match_recognize.parser import parse
parse("MEASURES 1 AS a PATTERN (A)")
after = sorted(m for m in sys.modules if "match_recognize" in m)
print(json.dumps([before, after]))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    before, after = json.loads(proc.stdout.splitlines()[-1])
    assert before == []
    assert "kleene.language.match_recognize.parser" in after


def test_random_clauses_round_trip() -> None:
    """Printed random patterns (every pattern construct, greedy and reluctant) and DEFINEs
    parse back to the same tree, and print the same text again."""
    from hypothesis import HealthCheck, given, settings

    from match_recognize_generators import Case, cases

    seen: set[str] = set()

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases(exclusion=True))
    def check(case: Case) -> None:
        tree = parse_unchecked(case.query("MATCH_NUMBER() AS m, COUNT(*) AS n",
                                          "ALL ROWS PER MATCH"))
        # (nested concatenations and alternations print flat: same language, same preference)
        printed = to_text(tree)
        again = parse_unchecked(printed)
        assert again == tree
        assert to_text(again) == printed
        seen.update(type(n).__name__ for n in _pattern_nodes(tree.pattern))

    check()
    assert seen >= {"Var", "Concat", "Alternation", "Quantified", "Permute", "Exclude", "Anchor"}


def _pattern_nodes(p: ast.Pattern) -> list[ast.Pattern]:
    out = [p]
    if isinstance(p, ast.Concat | ast.Alternation | ast.Permute):
        for item in p.items:
            out += _pattern_nodes(item)
    elif isinstance(p, ast.Quantified | ast.Exclude):
        out += _pattern_nodes(p.body)
    return out


def test_the_built_parser_is_cached_on_disk_under_its_own_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As CEQL's: built once, saved (privately), loaded later; a bad or foreign-writable file
    is rebuilt, never loaded."""
    from kleene.language.match_recognize import parser as mr_parser

    monkeypatch.setenv("KLEENE_CACHE_DIR", str(tmp_path))
    text = "MEASURES A.x AS y PATTERN (A B+) DEFINE B AS x > PREV(x)"
    built = mr_parser._lark.__wrapped__()
    [saved] = list(tmp_path.iterdir())
    assert saved.name.startswith("match-recognize-parser-")
    assert not saved.stat().st_mode & 0o022
    loads: list[object] = []
    real_load = mr_parser.Lark.load

    def counting_load(f: object) -> object:
        loads.append(f)
        return real_load(f)  # type: ignore[arg-type]

    monkeypatch.setattr(mr_parser.Lark, "load", counting_load)
    loaded = mr_parser._lark.__wrapped__()
    assert len(loads) == 1 and loaded.parse(text) == built.parse(text)
    saved.chmod(0o666)
    mr_parser._lark.__wrapped__()
    assert len(loads) == 1  # writable by others: rebuilt instead
    saved.write_bytes(b"not a parser")
    saved.chmod(0o600)
    rebuilt = mr_parser._lark.__wrapped__()
    assert rebuilt.parse(text) == built.parse(text)
    assert saved.read_bytes() != b"not a parser"
