"""What the oracle shares with the engine, checked against what it does not share.

The oracle (``kleene.reference``) shares only the parser and the AST with the
engine (``tests/api/test_architecture.py`` enforces it).  Two cross-checks make
that sharing safe:

* the parser: hand-written query texts with the AST each must give, built by
  hand from the precedence rules of docs/semantics.md, and the printed form
  that must read back as the same AST.  The printer round trip of
  ``tests/language/test_parser.py`` cannot see a parser and a printer that are
  wrong the same way; a tree written by hand can;
* the semantic helpers: the oracle's own (``kleene.reference.semantics``,
  written from the definitions) and the engine's (``kleene.language.variables``
  and ``kleene.language.conditions``) must agree, on hand-written cases whose
  answer is stated here and on generated queries.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generators import condition_patterns, patterns, queries
from kleene.language import ast, conditions, variables
from kleene.language.parser import parse_query
from kleene.language.printer import pattern_to_ceql, to_ceql
from kleene.reference import semantics
from paper_cases import alt, as_, atom, cmp, et, filt, plus, seq

A, B, C = et("A"), et("B"), et("C")


def where(text: str) -> ast.Pattern:
    return parse_query(f"SELECT * FROM S WHERE {text}").where


# ------------------------------------------------------------ parser and printer

PARSES: list[tuple[str, ast.Pattern]] = [
    ("A ; B OR C", alt(seq(A, B), C)),  # ; binds tighter than OR
    ("A OR B ; C", alt(A, seq(B, C))),
    ("A ; B ; C", seq(seq(A, B), C)),  # left-associative
    ("A : B ; C", ast.Seq(A, seq(B, C), True)),  # ; binds tighter than :
    ("A ; B : C", ast.Seq(seq(A, B), C, True)),
    ("A ; B+", seq(A, plus(B))),  # postfix binds tightest
    ("(A ; B)+", plus(seq(A, B))),
    ("A:+", plus(A, contiguous=True)),
    ("A ; B*", seq(A, ast.Star(B))),
    ("A ; B{2}", seq(A, ast.Repeat(B, 2, 2))),
    ("B{2,} AS x", as_(ast.Repeat(B, 2, None), "x")),
    ("B AS x{2}", ast.Repeat(as_(B, "x"), 2, 2)),
    ("B?", ast.Repeat(B, 0, 1)),
    ("B{,3}", ast.Repeat(B, 0, 3)),
    ("B:{1,3}", ast.Repeat(B, 1, 3, True)),
    ("A AS x ; B AS y", seq(as_(A, "x"), as_(B, "y"))),
    ("A ; B AS y", seq(A, as_(B, "y"))),
    ("A AND B OR C", alt(ast.And(A, B), C)),  # AND/ALL/UNLESS bind tighter than OR
    ("A ; B AND C", ast.And(seq(A, B), C)),  # ... and looser than ;
    ("A ALL B ; C", ast.All(A, seq(B, C))),
    ("A ; B UNLESS C", ast.Unless(seq(A, B), C)),
    ("A UNLESS B AND C", ast.And(ast.Unless(A, B), C)),  # one level, left-associative
    ("A ; NOT(B) ; C", seq(seq(A, ast.NotEvent(B)), C)),
    ("S>A ; _", seq(ast.EventType("A", "S"), et("_"))),
    (
        "A AS x ; B AS y FILTER x[v > 1]",  # FILTER takes the whole sequence
        filt(seq(as_(A, "x"), as_(B, "y")), atom("x", cmp("v", ">", 1))),
    ),
    (
        "A AS x ; B FILTER x[v > 1] AND B[v = 2]",  # FILTER θ1 AND θ2: both atoms
        filt(seq(as_(A, "x"), B), atom("x", cmp("v", ">", 1)), atom("B", cmp("v", "==", 2))),
    ),
    (
        "A AS x FILTER x[v > 1] OR x[v < 0]",
        ast.Filter(
            as_(A, "x"),
            ast.FilterOr(atom("x", cmp("v", ">", 1)), atom("x", cmp("v", "<", 0))),
        ),
    ),
    (
        "(A AS x FILTER x[v > 1 AND NOT v = 3 OR v < 0]) ; B",  # NOT > AND > OR in predicates
        seq(
            filt(
                as_(A, "x"),
                atom(
                    "x",
                    ast.POr(
                        ast.PAnd(cmp("v", ">", 1), ast.PNot(cmp("v", "==", 3))),
                        cmp("v", "<", 0),
                    ),
                ),
            ),
            B,
        ),
    ),
    (
        "A AS a ; B AS b FILTER b[v > a.v + 1 AND v > prev(b).v]",
        filt(
            seq(as_(A, "a"), as_(B, "b")),
            atom(
                "b",
                ast.PAnd(
                    ast.Compare(
                        ">",
                        ast.Attr("v"),
                        ast.BinOp("+", ast.VarAttr("a", "v"), ast.Const(1)),
                    ),
                    ast.Compare(">", ast.Attr("v"), ast.VarAttr("b", "v", prev=True)),
                ),
            ),
        ),
    ),
]


@pytest.mark.parametrize(("text", "expected"), PARSES, ids=[t for t, _ in PARSES])
def test_query_text_parses_to_the_tree_written_by_hand(text: str, expected: ast.Pattern) -> None:
    assert where(text) == expected


@pytest.mark.parametrize(("text", "expected"), PARSES, ids=[t for t, _ in PARSES])
def test_printed_form_reads_back_as_the_same_tree(text: str, expected: ast.Pattern) -> None:
    printed = pattern_to_ceql(expected)
    assert where(printed) == expected, printed
    query = parse_query(f"SELECT * FROM S WHERE {text} WITHIN 5 EVENTS")
    assert parse_query(to_ceql(query)) == query


def test_a_wrong_tree_is_told_apart() -> None:
    """The comparison sees precedence: the other grouping is a different tree."""
    assert where("A ; B OR C") != seq(A, alt(B, C))
    assert where("A : B ; C") != ast.Seq(seq(A, B, contiguous=True), C)


# ------------------------------------------------------------- semantic helpers

NULLABLE: list[tuple[str, bool]] = [
    ("A", False),
    ("A*", True),
    ("A?", True),
    ("A{0,3}", True),
    ("A{2}", False),
    ("(A*){2,4}", True),  # copies of a nullable pattern
    ("A* ; B*", True),
    ("A* ; B", False),
    ("A* : B?", True),
    ("A OR B*", True),
    ("(A*)+", True),
    ("A+", False),
    ("A* AS x", False),  # AS, FILTER, AND, ALL, UNLESS keep the non-empty matches
    ("A* AND B*", False),
    ("A* ALL B*", False),
    ("A* UNLESS B", False),
    ("NOT(A)", False),
    ("(A AS x)* FILTER x[v > 1]", False),
]


@pytest.mark.parametrize(("text", "expected"), NULLABLE, ids=[t for t, _ in NULLABLE])
def test_nullable_on_hand_written_cases(text: str, expected: bool) -> None:
    p = where(text)
    assert semantics.nullable(p) is expected
    assert variables.nullable(p) is expected


def test_shortest_counts_events() -> None:
    assert semantics.shortest(where("A ; B{3} ; C*")) == 4
    assert semantics.shortest(where("(A ; B) OR C")) == 1
    assert semantics.shortest(where("(A ; B ; C) ALL D")) == 3
    assert semantics.shortest(where("(A ; B*) AS x")) == 1


SINGLE: list[tuple[str, bool]] = [
    ("A", True),
    ("_", True),
    ("A AS x", True),
    ("(A OR B AS y) AS x", True),
    ("A AS x FILTER x[v > 1]", True),
    ("A ; B", False),
    ("A+", False),
    ("A{1}", False),  # one event, but not of the allowed forms (docs/semantics.md)
    ("A AND A", False),
    ("A UNLESS B", False),
    ("NOT(A)", False),
    ("A*", False),
]


@pytest.mark.parametrize(("text", "expected"), SINGLE, ids=[t for t, _ in SINGLE])
def test_single_event_on_hand_written_cases(text: str, expected: bool) -> None:
    p = where(text)
    assert semantics.single_event(p) is expected
    assert variables.single_event(p) is expected


def _atom_pred(text: str) -> ast.Pred:
    p = where(text)
    assert isinstance(p, ast.Filter) and isinstance(p.condition, ast.FilterAtom)
    return p.condition.pred


REFS: list[tuple[str, list[tuple[str, str, bool]], int, bool]] = [
    # (pattern, references left to right, number of top-level conjuncts, reads prev)
    ("A AS x FILTER x[v > 1]", [], 1, False),
    ("A AS a ; B AS b FILTER b[v > a.v]", [("a", "v", False)], 1, False),
    (
        "A AS a ; B AS b FILTER b[v > prev(b).v AND w IN RANGE(a.lo, a.hi) AND v < 3]",
        [("b", "v", True), ("a", "lo", False), ("a", "hi", False)],
        3,
        True,
    ),
    (
        "A AS a ; B AS b FILTER b[(v > a.v OR -a.w < 1) AND NOT name LIKE 'x.*']",
        [("a", "v", False), ("a", "w", False)],
        2,
        False,
    ),
    (
        "A AS a ; B AS b FILTER b[v * 2 IN {1, 2} AND (v > 1 AND (w > a.w AND v != prev(b).v))]",
        [("a", "w", False), ("b", "v", True)],
        4,
        True,
    ),
]


@pytest.mark.parametrize(("text", "refs", "parts", "prev"), REFS, ids=[r[0] for r in REFS])
def test_condition_helpers_on_hand_written_cases(
    text: str, refs: list[tuple[str, str, bool]], parts: int, prev: bool
) -> None:
    pred = _atom_pred(text)
    for module in (semantics, conditions):
        assert [(r.var, r.name, r.prev) for r in module.var_attrs(pred)] == refs
        assert len(module.conjuncts(pred)) == parts
        assert module.reads_prev(pred) is prev


SAFETY: list[tuple[str, list[str]]] = [
    # The CEL thesis §5.1 (spec §13 #25): φ1...φ4 and φ6 are safe, ψ is not.
    ("T AS x ; T AS x", ["x"]),
    ("(T AS x ; H AS y) FILTER x[v > 1] AND y[v < 2]", []),  # φ1
    ("((T AS x ; H AS y) OR (H AS y ; T AS x))", []),  # φ2 reuses x, y across OR only
    ("H AS x ; (T AS y)+ ; H AS z", []),  # φ3
    ("H AS x ; (T AS y FILTER y[id = x.id])+ ; H AS z", []),  # φ4
    ("T AS x ; ((T AS y) OR (H AS y))", []),  # φ6
    ("(T AS x)+ ; (T AS x)+", []),  # vdef₊ leaves out what is under +
    ("T AS x ALL H AS x", ["x"]),
    ("T AS x AND T AS x", ["x"]),
    ("(T AS x ; H) UNLESS (T AS x)", []),  # UNLESS is not restricted
    ("(T AS x){2}", ["x"]),  # two copies joined by ;
    ("(T AS x){1,}", []),  # one copy, then under *
    ("T ; T", []),  # event types are not the thesis's variables
]


@pytest.mark.parametrize(("text", "shared"), SAFETY, ids=[t for t, _ in SAFETY])
def test_safety_on_the_thesis_formulas(text: str, shared: list[str]) -> None:
    found = semantics.safety_violations(where(text))
    assert sorted({v for _, vs in found for v in vs}) == shared


# ----------------------------------------------------------- generated queries

seen: Counter[str] = Counter()
"""How often each helper answered True (or, for "nodes"/"preds", was asked) on generated input."""


def _all_patterns(p: ast.Pattern) -> list[ast.Pattern]:
    out = [p]
    for name in ("pattern", "left", "right"):
        child = getattr(p, name, None)
        if child is not None:
            out += _all_patterns(child)
    return out


def _all_preds(p: ast.Pattern) -> list[ast.Pred]:
    preds: list[ast.Pred] = []
    for node in _all_patterns(p):
        if isinstance(node, ast.Filter):
            todo: list[ast.FilterExpr] = [node.condition]
            while todo:
                c = todo.pop()
                if isinstance(c, ast.FilterAtom):
                    preds.append(c.pred)
                else:
                    todo += [c.left, c.right]
    return preds


def _compare_helpers(where_: ast.Pattern) -> None:
    for node in _all_patterns(where_):
        seen["nodes"] += 1
        mine, theirs = semantics.nullable(node), variables.nullable(node)
        assert mine == theirs, pattern_to_ceql(node)
        seen["nullable"] += mine
        mine, theirs = semantics.single_event(node), variables.single_event(node)
        assert mine == theirs, pattern_to_ceql(node)
        # where a FILTER naming an outer variable is evaluated (issue 18): the same scopes
        assert semantics.binds(node) == variables.bound_variables(node), pattern_to_ceql(node)
        seen["single_event"] += mine
    for pred in _all_preds(where_):
        assert list(semantics.var_attrs(pred)) == list(conditions.var_attrs(pred))
        assert semantics.conjuncts(pred) == conditions.conjuncts(pred)
        assert semantics.reads_prev(pred) == conditions.reads_prev(pred)
        seen["preds"] += 1
        seen["var_attrs"] += bool(list(semantics.var_attrs(pred)))
        seen["reads_prev"] += semantics.reads_prev(pred)
        seen["conjuncts>1"] += len(semantics.conjuncts(pred)) > 1


def test_helpers_agree_on_generated_queries() -> None:
    """Engine and oracle helpers agree on every sub-pattern and predicate of generated queries;
    each helper meets both answers (counted, printed, asserted)."""
    seen.clear()

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(queries(max_depth=5, full_cel=True))
    def whole_language(query: ast.Query) -> None:
        _compare_helpers(query.where)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.one_of(condition_patterns(4, conjunctions=True), patterns(5, full_cel=True)))
    def with_conditions(where_: ast.Pattern) -> None:
        _compare_helpers(where_)

    whole_language()
    with_conditions()
    print(dict(seen))
    for name in ("nodes", "nullable", "single_event", "preds", "var_attrs", "reads_prev", "conjuncts>1"):
        assert seen[name] > 0, name
    assert seen["nullable"] < seen["nodes"] and seen["single_event"] < seen["nodes"]
