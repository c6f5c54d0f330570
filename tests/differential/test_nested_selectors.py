"""Nested selectors: ``STRICT(p)``, ``NEXT(p)``/``NXT(p)``, ``LAST(p)``, ``MAX(p)`` inside a pattern.

docs/semantics.md, "Nested selectors": a selector keeps the matches of its pattern that its
strategy chooses among the matches of that pattern *read from the same position* (the CEL
thesis's ``⟦ρ⟧(S, i)``: after the left side of ``;``; at the start of the pattern, the first
position of the window) that end on the same event.  The oracle evaluates that definition
(kleene.reference.oracle, ``_at``); the engines rewrite STRICT into ``:``, take a selector on the
whole pattern as the query's strategy, and compile NEXT/LAST/MAX after ``;`` in place
(kleene.automata.selection).  Hand-worked examples, the refusals, and random queries against the
oracle.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kleene
from against_oracle import aimed, check_against_oracle, feature_changed, oracle, without
from generators import TYPES, VARIABLES, patterns, streams, thresholds, types_in_order
from kleene.language import ast
from kleene.language.errors import LimitError, UnsupportedError
from kleene.language.parser import parse_query
from kleene.language.printer import to_ceql
from kleene.reference.oracle import evaluate
from refusals import assert_refused


def _events(types: str) -> list[dict[str, Any]]:
    return [{"type": t, "v": k} for k, t in enumerate(types)]


def _oracle(text: str, types: str) -> set[tuple[int, ...]]:
    return {positions for _, _, positions in evaluate(parse_query(text), _events(types))}


def _engine(text: str, types: str) -> set[tuple[int, ...]]:
    return {tuple(m.positions) for m in kleene.compile(text).matches(_events(types))}


# Worked by hand; each is checked on the oracle and on the engine.
EXAMPLES = [
    # T+ read from after H (0): its matches ending at 3 are {1,3}, {3} and... {1,3} contains
    # every other one; so MAX keeps {1,3} (ends at 3) and {1} (ends at 1).  Without MAX,
    # {0,3,4} would be a match too.
    ("SELECT * WHERE H ; MAX(T+) ; H", "HTXTH", {(0, 1, 3, 4), (0, 1, 4)}),
    ("SELECT * WHERE H ; T+ ; H", "HTXTH", {(0, 1, 3, 4), (0, 1, 4), (0, 3, 4)}),
    # The context matters: B+ ; C read from after A (1) has only {2,3}; read from the stream's
    # start, NEXT would choose {0,2,3}, which cannot follow A, and nothing would be output.
    ("SELECT * WHERE A ; NEXT(B+ ; C)", "BABC", {(1, 2, 3)}),
    ("SELECT * WHERE A ; NXT(B+ ; C)", "BABC", {(1, 2, 3)}),
    # NEXT: earliest events win; LAST: latest events win (ends at 3: {1,3} vs {2,3}).
    ("SELECT * WHERE A ; NEXT(B ; C)", "ABBC", {(0, 1, 3)}),
    ("SELECT * WHERE A ; LAST(B ; C)", "ABBC", {(0, 2, 3)}),
    ("SELECT * WHERE A ; MAX(B ; C)", "ABBC", {(0, 1, 3), (0, 2, 3)}),
    # STRICT: B ; C with nothing between them (in the stream), anywhere in the pattern.
    ("SELECT * WHERE A ; STRICT(B ; C)", "ABXCBC", {(0, 4, 5)}),
    ("SELECT * WHERE STRICT(A ; B+) ; C", "ABBXBC", {(0, 1, 2, 5), (0, 1, 5)}),
    # Under an iteration each iteration is read from after the previous one ({4} alone is not
    # a maximal B+ after A at 0, so there is no {0, 3, 4, 5}).
    ("SELECT * WHERE (A ; MAX(B+))+ ; C", "ABBABC", {
        (0, 1, 2, 3, 4, 5), (0, 1, 2, 5), (0, 1, 2, 4, 5), (0, 1, 5), (0, 1, 3, 4, 5), (3, 4, 5),
    }),
    # A selector starting an iteration: the first one is read after X, each later one after
    # the previous iteration (ends at 3: {1,3} beats {2,3}; at 5: {1,5}, and {4,5} after {1,3}).
    ("SELECT * WHERE X ; (NEXT(A ; B))+", "XAABAB", {(0, 1, 3), (0, 1, 5), (0, 1, 3, 4, 5)}),
    # Under OR, and a selector inside another.
    ("SELECT * WHERE A ; (MAX(B+) OR C) ; D", "ABCBD", {(0, 1, 3, 4), (0, 1, 4), (0, 2, 4)}),
    ("SELECT * WHERE A ; MAX(B ; NEXT(C+)) ; D", "ABCBCCD", {
        (0, 1, 2, 4, 5, 6), (0, 1, 2, 4, 6), (0, 1, 2, 6), (0, 3, 4, 5, 6), (0, 3, 4, 6),
    }),
    # A FILTER inside the selector is part of its pattern; one outside filters what it chose.
    ("SELECT * WHERE A ; MAX(B+ ; C FILTER B[v > 1]) ; D", "ABBCBCD", {
        (0, 2, 3, 6), (0, 2, 4, 5, 6),
    }),
    # (here MAX chose {1,2,3} and {1,2,4,5}, and the B at 1 has v = 1: nothing is left)
    ("SELECT * WHERE A ; (MAX(B+ ; C) FILTER B[v > 1]) ; D", "ABBCBCD", set()),
    # At the start of the pattern, without a window: read from the stream's start, so T+ is
    # every T from the start up to its last one (the automaton is anchored there).
    ("SELECT * WHERE MAX(T+) ; H", "TTTH", {(0, 3), (0, 1, 3), (0, 1, 2, 3)}),
    ("SELECT * WHERE MAX(T+) ; H", "TXTHTTH", {
        (0, 3), (0, 2, 3), (0, 6), (0, 2, 6), (0, 2, 4, 6), (0, 2, 4, 5, 6),
    }),
    # NEXT from the start: the A at 0 beats the A at 2 for every end; LAST: the later A wins
    # where it can ({2,3,5} beats {0,1,5} only through B at 3... at the last difference).
    ("SELECT * WHERE NEXT(A ; B+) ; C", "ABABBC", {(0, 1, 5), (0, 1, 3, 5), (0, 1, 3, 4, 5)}),
    ("SELECT * WHERE LAST(A ; B+) ; C", "ABABBC", {(0, 1, 5), (2, 3, 5), (2, 3, 4, 5)}),
    # Under OR (the other side starts anywhere) and starting an iteration.
    ("SELECT * WHERE MAX(T+) ; H OR A ; H", "TAXTH", {(0, 4), (0, 3, 4), (1, 4)}),  # not {3,4}
    ("SELECT * WHERE (NEXT(A ; B))+ ; C", "AABABC", {(0, 2, 5), (0, 4, 5), (0, 2, 3, 4, 5)}),
    # At the start of a side of AND or of UNLESS's left side: entered where the product is.
    # MAX(B+) after A is {1,2,3} at 3; AND B+ keeps it ({2,3}, {3} are not maximal).
    ("SELECT * WHERE A ; (MAX(B+) AND B+)", "ABBB", {(0, 1), (0, 1, 2), (0, 1, 2, 3)}),
    # NEXT(B+) after A: {1}, {1,2}, {1,2,4} (not {1,4}: {1,2,4} wins at 2); no C inside.
    ("SELECT * WHERE A ; (NEXT(B+) UNLESS C) ; D", "ABBCBD", {(0, 1, 5), (0, 1, 2, 5)}),
    ("SELECT * WHERE (NEXT(B+) AND B+ ; B) ; D", "BBBD", {(0, 1, 3), (0, 1, 2, 3)}),
    # After a pattern that may match nothing: entered after each B* match and where the
    # sequence is (after A): {1} ends at 1 and {3,4} is read after B at 2; not {3} or {4}.
    ("SELECT * WHERE A ; (B* ; MAX(C+))", "ACBCC", {
        (0, 1), (0, 1, 3), (0, 1, 3, 4), (0, 2, 3), (0, 2, 3, 4),
    }),
    ("SELECT * WHERE B* ; MAX(C+) ; E", "CBCCE", {
        (0, 4), (0, 2, 4), (0, 2, 3, 4), (1, 2, 4), (1, 2, 3, 4),
    }),
    # The whole pattern: the query's strategy.
    ("SELECT * WHERE MAX(A ; B)", "AAB", {(0, 2), (1, 2)}),
    ("SELECT * WHERE NEXT(A ; B) AS x", "AAB", {(0, 2)}),
    ("SELECT * WHERE NEXT(A ; B) WITHIN 1 EVENTS", "AAB", {(1, 2)}),
]


@pytest.mark.parametrize(("text", "types", "expected"), EXAMPLES)
def test_hand_worked_examples(text: str, types: str, expected: set[tuple[int, ...]]) -> None:
    assert _oracle(text, types) == expected
    assert _engine(text, types) == expected


def test_a_selector_at_the_start_reads_from_the_window_start() -> None:
    """``MAX(T+) ; H``: without a window the T+ part is every T from the start up to its last
    one (engine and oracle); with ``WITHIN 2 EVENTS`` (H at 3: the window starts at 1) every T
    from 1 on ({2} alone is not maximal there, {1} is): oracle only, the engine refuses it."""
    assert _oracle("SELECT * WHERE MAX(T+) ; H", "TTTH") == {(0, 3), (0, 1, 3), (0, 1, 2, 3)}
    assert _engine("SELECT * WHERE MAX(T+) ; H", "TTTH") == {(0, 3), (0, 1, 3), (0, 1, 2, 3)}
    assert _oracle("SELECT * WHERE T+ ; H", "TTTH") != {(0, 3), (0, 1, 3), (0, 1, 2, 3)}
    assert _oracle("SELECT * WHERE MAX(T+) ; H WITHIN 2 EVENTS", "TTTH") == {(1, 3), (1, 2, 3)}
    # Why no bounded construction under the window: at H (3) {2} is dominated by {1,2}, but
    # were the whole match to end at 4 the window would start at 2 and {2} would be chosen:
    # the choice among the T+ matches depends on where the whole match ends.
    assert _oracle("SELECT * WHERE MAX(T+) ; H ; H WITHIN 2 EVENTS", "TTTHH") == {(2, 3, 4)}


def test_an_anchored_selector_per_partition_and_projected() -> None:
    """Anchored at each partition's first event (its runs are kept while they wait), and a
    projection taken from the chosen whole matches; ``explain`` says so."""
    events = [{"type": t, "k": k, "v": i} for i, (t, k) in enumerate(zip("TTTHTHH", "abaabab"))]
    text = "SELECT * WHERE MAX(T+) ; H PARTITION BY [k]"
    found = {tuple(m.positions) for m in kleene.compile(text).matches(events)}
    assert found == {p for _, _, p in evaluate(parse_query(text), events)}
    # a: T0 T2 H3 H5; b: T1 T4 H6 ({4,6} is not maximal from b's first event)
    assert {(0, 2, 3), (1, 4, 6), (1, 6)} <= found and (4, 6) not in found
    text = "SELECT T WHERE MAX(T+) ; H"
    found = {tuple(m.positions) for m in kleene.compile(text).matches(_events("TXTHTTH"))}
    assert found == {(0,), (0, 2), (0, 2, 4), (0, 2, 4, 5)} == _oracle(text, "TXTHTTH")
    assert "anchored: a selector starts the pattern" in kleene.compile("SELECT * WHERE MAX(T+) ; H").explain()


def test_an_anchored_selector_fed_event_by_event() -> None:
    """The waiting runs live across batches: pushing one event at a time (each its own batch,
    partitioned, with events of no pattern type between) gives the whole run's complex events."""
    types = "TXTTHYTHTTH"
    events = [{"type": t, "k": i % 2, "v": i} for i, t in enumerate(types)]
    text = "SELECT * WHERE LAST(T+) ; H PARTITION BY [k]"
    whole = {tuple(m.positions) for m in kleene.compile(text).matches(events)}
    query = kleene.compile(text)
    pushed = {tuple(m.positions) for e in events for m in query.push(e)}
    assert pushed == whole == {p for _, _, p in evaluate(parse_query(text), events)}
    assert whole  # LAST keeps, per end, the T+ with the latest Ts since the partition's start


@pytest.mark.parametrize("strategy", ["STRICT", "NEXT", "LAST", "MAX"])
@pytest.mark.parametrize(
    ("pattern", "types"),
    [("A ; B+", "ABABB"), ("A ; B ; C", "AABBCC"), ("(A OR B)+ ; C", "ABBAC"), ("A+", "AXAA")],
)
def test_selector_on_the_whole_pattern_is_the_query_strategy(
    strategy: str, pattern: str, types: str
) -> None:
    nested = f"SELECT * WHERE {strategy}({pattern}) WITHIN 3 EVENTS"
    top = f"SELECT {strategy} * WHERE {pattern} WITHIN 3 EVENTS"
    assert _oracle(nested, types) == _oracle(top, types)
    assert _engine(nested, types) == _oracle(top, types)


def test_strategies_compose_on_the_whole_pattern() -> None:
    """NEXT(MAX(p)) is NEXT(p), MAX(LAST(p)) is LAST(p): one chosen match per end, maximal."""
    types = "ABABB"
    cases = [("NEXT", "MAX", "NEXT"), ("MAX", "LAST", "LAST"), ("LAST", "NEXT", "NEXT"), ("MAX", "MAX", "MAX")]
    for outer, inner, same in cases:
        text = f"SELECT * WHERE {outer}({inner}(A ; B+))"
        assert _oracle(text, types) == _oracle(f"SELECT {same} * WHERE A ; B+", types)
        assert _engine(text, types) == _oracle(text, types)
    for text, same in [("SELECT MAX * WHERE NEXT(A ; B+)", "NEXT"), ("SELECT NEXT * WHERE LAST(A ; B+)", "LAST")]:
        assert _engine(text, types) == _oracle(text, types) == _oracle(f"SELECT {same} * WHERE A ; B+", types)


def test_parsing_and_printing() -> None:
    q = parse_query("SELECT * WHERE A ; nxt(B+) ; Max (C) ; strict(D)")
    assert to_ceql(q).endswith("WHERE (((A ; NEXT((B +))) ; MAX(C)) ; STRICT(D))")
    assert parse_query(to_ceql(q)) == q
    # The names stay event types where no "(" follows.
    assert _engine("SELECT * WHERE max ; last", ["max", "last"]) == {(0, 1)}  # type: ignore[arg-type]


REFUSED = [
    ("SELECT * WHERE MAX(T+) ; H WITHIN 2 EVENTS", "MAX(T+)", "with WITHIN, its matches are chosen among"),
    ("SELECT * WHERE (NEXT(A ; B))+ ; C WITHIN 5 EVENTS", "NEXT(A ; B)", "without WITHIN it runs"),
    ("SELECT * WHERE MAX(T+) ; H CONSUME BY ANY", "MAX(T+)", "CONSUME BY would discard the runs"),
    ("SELECT MAX * WHERE NEXT(T+) ; H", "NEXT(T+)", "SELECT MAX chooses again among whole matches"),
    ("SELECT T WHERE MAX(NEXT(T+) ; A) ; H", "MAX(NEXT", "itself starting with a selector"),
    ("SELECT * WHERE A ; (LAST(B+) ALL C)", "LAST(B+)", "LAST(...) here is not supported"),
    ("SELECT * WHERE A ; (B+ UNLESS MAX(C+))", "MAX(C+)", "MAX(...) here is not supported"),
    ("SELECT * WHERE A ; (B* : MAX(C+))", "MAX(C+)", "MAX(...) here is not supported"),
    ("SELECT * WHERE STRICT(A ; MAX(B+))", "MAX(B+)", "STRICT over MAX(...) is not supported"),
    ("SELECT * WHERE STRICT(A ALL B)", "A ALL B", "STRICT(... ALL ...) is not supported"),
    ("SELECT * WHERE A ; NOT(MAX(B)) ; C", "MAX(B)", "NOT(...) takes a single-event pattern"),
    ("SELECT STRICT * WHERE MAX(A ; B)", "MAX(A ; B)", "SELECT STRICT keeps the contiguous matches"),
    ("SELECT * WHERE NEXT(A ; B) CONSUME BY ANY", "NEXT(A ; B)", "CONSUME BY removes matches"),
    ("SELECT * WHERE MAX(A ; B) WITHIN 3 [v]", "MAX(A ; B)", "does not say where a match may start"),
    (  # not inside ALL with conditions between events (tests/differential/test_register_selectors.py)
        "SELECT * WHERE A AS a ; ((D ; MAX(B+)) ALL E) ; C AS c FILTER c[v > a.v]",
        "MAX(B+)",
        "evaluated by the tECS engine only, and this query has conditions between events",
    ),
    (  # the condition reads the selector's events: no finite product (not only not built)
        "SELECT * WHERE A AS a ; MAX(B AS b ; C AS c FILTER c[v > b.v]) ; D",
        "MAX(B AS b",
        "which no finite product of states tracks",
    ),
    ("SELECT * WHERE A AS a ; MAX(B+ ; C AS c FILTER c[v > a.v]) ; D", "MAX(B+", "on its events is not supported"),
]


@pytest.mark.parametrize(("text", "needle", "message"), REFUSED)
def test_refused_with_a_caret_at_the_selector(
    text: str, needle: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_refused(text, needle, message, capsys, UnsupportedError)


def test_cli_runs_a_nested_selector(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from kleene.cli import main

    data = tmp_path / "events.csv"
    data.write_text("type,v\n" + "\n".join(f"{t},{k}" for k, t in enumerate("HTXTH")) + "\n")
    assert main(["run", "SELECT * WHERE H ; MAX(T+) ; H", "--input", str(data), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 2  # {0,1,3,4} and {0,1,4}; {0,3,4} is not maximal
    # At the start of the pattern (anchored): every T+ from the first T, counted too.
    data.write_text("type,v\n" + "\n".join(f"{t},{k}" for k, t in enumerate("TTTH")) + "\n")
    text = "SELECT * WHERE MAX(T+) ; H"
    assert main(["run", text, "--input", str(data), "--no-progress"]) == 0
    assert capsys.readouterr().out.count("\n") == 3  # {0,3}, {0,1,3}, {0,1,2,3}
    assert main(["run", text, "--input", str(data), "--no-progress", "--count"]) == 0
    assert capsys.readouterr().out.strip().endswith("3")
    assert main(["run", text + " WITHIN 2 EVENTS", "--input", str(data), "--no-progress"]) == 2
    assert "with WITHIN, its matches are chosen among" in capsys.readouterr().err


# ----------------------------------------------------------------- random queries

SELECTORS = ("STRICT", "NEXT", "LAST", "MAX")


@st.composite
def bodies(draw: st.DrawFn, several: bool = False) -> ast.Pattern:
    """What a selector applies to: mostly shapes with several matches per end (``several``:
    only those)."""
    x, y = (ast.EventType(draw(st.sampled_from(TYPES))) for _ in range(2))
    shape = draw(st.integers(0, 5 if several else 6))
    if shape == 0:
        return ast.Iter(x)
    if shape == 1:
        return ast.Seq(ast.Iter(x), y)
    if shape == 2:
        return ast.Seq(x, ast.Iter(y))
    if shape == 3:
        return ast.Iter(ast.Or(x, y))
    if shape == 4:
        return ast.Seq(x, y)
    if shape == 5:
        return ast.Filter(ast.Seq(ast.Iter(x), y), ast.FilterAtom(x.name, draw(thresholds())))
    return draw(patterns(2))


@st.composite
def selector_wheres(draw: st.DrawFn, at_start: bool = False) -> tuple[ast.Pattern, bool]:
    """A pattern with a selector where the engine evaluates it (after ``;``/``:``, under OR,
    AS, FILTER, starting an iteration or a repetition there, a side of AND/ALL after its start,
    UNLESS's left; at the start of the pattern), and whether a selector starts the pattern
    (then the query has no window: the engine refuses one there)."""
    name = draw(st.sampled_from(SELECTORS))
    sel = ast.Selector(name, draw(bodies()))
    if draw(st.integers(0, 3)) == 0:  # a selector inside the selector
        inner = ast.Selector(draw(st.sampled_from(SELECTORS[1:])), draw(bodies()))
        sel = ast.Selector(draw(st.sampled_from(SELECTORS[1:])), ast.Seq(sel.pattern, inner))
    leaf = ast.EventType(draw(st.sampled_from(TYPES)))
    after = ast.EventType(draw(st.sampled_from(TYPES)))
    shape = draw(st.integers(11, 15) if at_start else st.integers(0, 17))
    if shape >= 11:  # at the start of the pattern or of a side of AND / UNLESS's left
        if name == "STRICT" or isinstance(sel.pattern, ast.EventType):
            # aimed: a choosing selector on a body with several matches per end
            sel = ast.Selector(draw(st.sampled_from(SELECTORS[1:])), draw(bodies(several=True)))
        if shape in (15, 16):  # after a pattern that may match nothing (B* ; sel(ρ), B? ; sel(ρ))
            empty = draw(st.sampled_from((ast.Star(leaf), ast.Repeat(leaf, 0, 1))))
            tail = ast.Seq(empty, ast.Seq(sel, after))
            return (tail, True) if shape == 15 else (ast.Seq(after, tail), False)
        if shape == 11:
            return ast.Seq(sel, after), True
        if shape == 12:
            return ast.Or(ast.Seq(sel, after), ast.Seq(leaf, after)), True
        if shape == 13:
            return ast.Seq(draw(st.sampled_from((ast.Iter(sel), ast.Star(sel)))), after), True
        # AND: the other side has the same events (ρ ; X, or any two events ; X); UNLESS: its
        # right side is another event type, or a sequence inside the match
        other = draw(st.sampled_from((
            ast.Seq(sel.pattern, after),
            ast.Seq(ast.Iter(ast.EventType(draw(st.sampled_from(TYPES)))), after),
        )))
        op = ast.And(ast.Seq(sel, after), other)
        if draw(st.booleans()):
            op = ast.Unless(ast.Seq(sel, after), draw(st.sampled_from((leaf, ast.Seq(after, leaf)))))
        if shape == 14:
            return op, True
        return ast.Seq(leaf, op), False  # shape 17: a side entered after the left side of ';'
    return _inside(draw, name, sel, leaf, after, shape), False


def _inside(
    draw: st.DrawFn, name: str, sel: ast.Selector, leaf: ast.Pattern, after: ast.Pattern, shape: int
) -> ast.Pattern:
    if shape <= 2:
        return ast.Seq(leaf, sel)
    if shape == 3:
        return ast.Seq(ast.Seq(leaf, sel, contiguous=True), after)
    if shape == 4:
        return ast.Seq(ast.Iter(ast.Seq(leaf, sel)), after)
    if shape == 5:
        return ast.Seq(ast.Seq(leaf, ast.Or(sel, after)), leaf)
    if shape == 6:
        var = draw(st.sampled_from(VARIABLES))
        return ast.Filter(ast.Seq(leaf, ast.As(sel, var)), ast.FilterAtom(var, draw(thresholds())))
    if shape == 7:
        op = draw(st.sampled_from((ast.And, ast.All, ast.Unless)))
        other = ast.Seq(leaf, sel.pattern) if op is ast.And else after
        return op(ast.Seq(leaf, sel), other)
    if shape == 8 and name != "STRICT":  # the whole pattern: the query's strategy
        return ast.Selector(name, ast.Seq(leaf, sel.pattern))
    if shape == 9:  # starting an iteration or a repetition
        repeated = draw(
            st.sampled_from((ast.Iter(sel), ast.Iter(sel, True), ast.Repeat(sel, 1, 2), ast.Star(sel)))
        )
        return ast.Seq(ast.Seq(leaf, repeated), after)
    return ast.Seq(ast.Seq(leaf, sel), after)


@st.composite
def selector_cases(
    draw: st.DrawFn, at_start: bool = False
) -> tuple[ast.Query, list[dict[str, Any]], list[int]]:
    where, anchored = draw(selector_wheres(at_start))
    within = draw(st.sampled_from((None, None, ast.EventsWindow(4), ast.EventsWindow(7))))
    if anchored:
        within = None
    partition = (("k",),) if draw(st.integers(0, 4)) == 0 else ()
    items = None
    if draw(st.integers(0, 4)) == 0:  # a projection: the selectors still see whole matches
        items = (ast.SelectItem(draw(st.sampled_from([e.name for e in types_in_order(where)]))),)
    query = ast.Query(ast.Select("ALL", items), (), where, partition, within)
    events, times = draw(streams(max_size=12, min_size=12))
    # Planted: the pattern's event types in order, each repeated, so that the selectors have
    # several matches to choose between (on a uniform stream most cases have none).
    names = [n.name for n in types_in_order(where)]
    wanted: list[str] = []
    while len(wanted) < 12:
        for name in names:
            wanted += [name] * draw(st.integers(1, 3))
            if draw(st.integers(0, 4)) == 0:
                wanted.append(draw(st.sampled_from(TYPES)))
    events = [dict(e, type=t) for e, t in zip(events, wanted)]
    return query, events, times



def _supported(query: ast.Query) -> bool:
    try:
        kleene.compile(to_ceql(query))
    except UnsupportedError:
        return False
    return True


def _check(case: tuple[ast.Query, list[dict[str, Any]], list[int]], feature: str) -> None:
    query = case[0]
    assert _supported(query), to_ceql(query)
    expected = oracle(case)
    if expected is not None:
        plain = without(query, "nested selector")
        feature_changed(feature, evaluate(plain, case[1], times=case[2]) != expected)
    check_against_oracle(case, aim_at=[])


@aimed("nested selector")
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(selector_cases())
def test_nested_selectors_equal_oracle(case: tuple[ast.Query, list[dict[str, Any]], list[int]]) -> None:
    """Engine against oracle; prints and asserts how often the selectors changed the result (the
    same query with every selector taken out)."""
    _check(case, "nested selector")


@aimed("selector at the start")
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(selector_cases(at_start=True))
def test_selectors_at_the_start_equal_oracle(
    case: tuple[ast.Query, list[dict[str, Any]], list[int]],
) -> None:
    """A NEXT/LAST/MAX at the start of the pattern (anchored at the stream's start, no window),
    engine against oracle; the share of cases the selectors changed, printed and asserted."""
    assert kleene.compile(to_ceql(case[0])).plan.cea.anchored  # type: ignore[union-attr]
    _check(case, "selector at the start")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from(("NEXT", "LAST", "MAX", "STRICT")),
    patterns(3, top=True),
    st.sampled_from((None, ast.EventsWindow(3), ast.DurationWindow(2 * 10**9))),
    streams(max_size=10),
)
def test_whole_pattern_selector_equals_query_strategy_in_the_oracle(
    strategy: str, where: ast.Pattern, within: ast.Window | None, stream: tuple[list[dict[str, Any]], list[int]]
) -> None:
    """The oracle's two definitions agree: ``SELECT S * WHERE p`` and ``SELECT * WHERE S(p)``."""
    events, times = stream
    top = ast.Query(ast.Select(strategy, None), (), where, (), within)  # type: ignore[arg-type]
    nested = replace(top, select=ast.Select("ALL", None), where=ast.Selector(strategy, where))  # type: ignore[arg-type]
    assert evaluate(nested, events, times=times) == evaluate(top, events, times=times)


def test_strict_is_planned_as_contiguous_operators() -> None:
    """STRICT(p) is p with ':' for ';', ':+' for '+' and ':{0,}' for '*' (Thm 7.4 on the
    formula); the plan holds that form, and a whole-pattern selector as the strategy."""
    plan = kleene.compile("SELECT * WHERE A ; STRICT(B ; C+ ; D*)").plan
    assert plan.query.where == parse_query("SELECT * WHERE A ; (B : C:+ : D:{0,})").where
    plan = kleene.compile("SELECT * WHERE MAX(A ; B) AS x").plan
    assert plan.query.select.strategy == "MAX"
    assert plan.query.where == parse_query("SELECT * WHERE (A ; B) AS x").where


def test_the_product_stops_at_max_states() -> None:
    """The selector's product grows with the sub-pattern's automaton (classes of runs are sets of
    its states): it is built only where reached, and stopped by max_states like any product."""
    text = "SELECT * WHERE A ; LAST((A OR B)+ ; (B OR C)+ ; C)"
    assert "87 states" in kleene.compile(text).explain()
    with pytest.raises(LimitError) as info:
        kleene.compile(text, max_states=30)
    assert info.value.limit == "max_states"
