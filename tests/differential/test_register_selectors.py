"""Nested selectors in the register engine: ``A AS a ; MAX(C+) ; B AS b FILTER b[v < a.v]``.

docs/semantics.md, "Nested selectors" ("In the register engine"): when no condition between
events reads an event the selector chooses, the selector's product (the tECS construction,
finite, over unary predicates) rides in the register automaton's states, entered right after
the left side of ``;`` or ``:`` (kleene.registers.selectors).  Hand-worked examples on engine
and oracle, the positions still refused (message, caret, exit 2), and random queries against
the oracle, aimed so that both the selector and the condition between events change the result.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kleene
from against_oracle import aimed, check_against_oracle, feature_changed, oracle, without
from generators import TYPES, streams, types_in_order
from kleene.language import ast
from kleene.language.errors import UnsupportedError
from kleene.language.parser import parse_query
from kleene.language.printer import to_ceql
from kleene.reference.oracle import evaluate
from refusals import assert_refused


def _events(types: str, values: list[int]) -> list[dict[str, Any]]:
    return [{"type": t, "v": v} for t, v in zip(types, values, strict=True)]


def _oracle(text: str, events: list[dict[str, Any]]) -> set[tuple[int, ...]]:
    return {positions for _, _, positions in evaluate(parse_query(text), events)}


def _engine(text: str, events: list[dict[str, Any]]) -> set[tuple[int, ...]]:
    query = kleene.compile(text)
    assert query.plan.engine == ("registers" if " FILTER b[" in text else "tecs")
    return {tuple(m.positions) for m in query.matches(events)}


PAIR = "A AS a ; {sel}(C+) ; B AS b FILTER b[v < a.v]"

# Worked by hand; each is checked on the oracle and on the engine.
EXAMPLES = [
    # The selector changes the result: C+ read from after A (0), ending at 3, has {1,3} and
    # {3}; MAX keeps {1,3} only, so (0,3,4) is gone.  b (3) < a (5) holds throughout.
    (PAIR.format(sel="MAX"), "ACXCB", [5, 1, 0, 2, 3], {(0, 1, 3, 4), (0, 1, 4)}),
    (PAIR.format(sel=""), "ACXCB", [5, 1, 0, 2, 3], {(0, 1, 3, 4), (0, 1, 4), (0, 3, 4)}),
    # The condition changes it: the A at 1 (v = 1) has no B below it; the A at 0 (v = 5) has.
    # MAX(C+) after A at 0, ending at 2: {2}; at 3: {2,3} ({3} is contained).
    (PAIR.format(sel="MAX"), "AACCB", [5, 1, 0, 0, 3], {(0, 2, 4), (0, 2, 3, 4)}),
    (
        "A AS a ; MAX(C+) ; B AS b",
        "AACCB",
        [5, 1, 0, 0, 3],
        {(0, 2, 4), (0, 2, 3, 4), (1, 2, 4), (1, 2, 3, 4)},
    ),
    # NEXT and LAST on C ; C after A, ending at 3: {1,3} or {2,3} (and {1,2} at 2).
    ("A AS a ; NEXT(C ; C) ; B AS b FILTER b[v < a.v]", "ACCCB", [5, 1, 0, 2, 3], {
        (0, 1, 2, 4), (0, 1, 3, 4),
    }),
    ("A AS a ; LAST(C ; C) ; B AS b FILTER b[v < a.v]", "ACCCB", [5, 1, 0, 2, 3], {
        (0, 1, 2, 4), (0, 2, 3, 4),
    }),
    # STRICT is ':' (no product): C : C with nothing between them.
    ("A AS a ; STRICT(C ; C) ; B AS b FILTER b[v < a.v]", "ACXCCB", [5, 1, 0, 2, 3, 4], {
        (0, 3, 4, 5),
    }),
    # After ':' the selector may not wait: C+ starts right after A (so not at 3, after X).
    (
        "A AS a : MAX(C+) ; B AS b FILTER b[v < a.v]",
        "ACXCB",
        [5, 1, 0, 2, 3],
        {(0, 1, 3, 4), (0, 1, 4)},
    ),
    ("A AS a : MAX(C+) ; B AS b FILTER b[v < a.v]", "AXCCB", [5, 1, 0, 2, 3], set()),
    # Under AS with a unary FILTER outside it (filters what MAX chose: {1,2} has v 1 at 1),
    # and both sides of an OR starting with a selector.
    (
        "A AS a ; (MAX(C+) AS m FILTER m[v > 1]) ; B AS b FILTER b[v < a.v]",
        "ACCXB",
        [5, 1, 2, 0, 3],
        set(),
    ),
    (
        "A AS a ; (MAX(C+) OR NEXT(D ; D)) ; B AS b FILTER b[v < a.v]",
        "ACCDDDB",
        [5, 1, 2, 0, 0, 0, 3],
        {(0, 1, 6), (0, 1, 2, 6), (0, 3, 4, 6), (0, 3, 5, 6)},
    ),
    # At the start of the pattern (no window): C+ read from the stream's start, so MAX keeps
    # every C up to the last one taken ({1,2} and {2} are dominated by {0,1,2}).
    ("MAX(C+) ; A AS a ; B AS b FILTER b[v < a.v]", "CCCAB", [0, 0, 0, 5, 3], {
        (0, 3, 4), (0, 1, 3, 4), (0, 1, 2, 3, 4),
    }),
    ("C+ ; A AS a ; B AS b FILTER b[v < a.v]", "CCCAB", [0, 0, 0, 5, 3], {
        (0, 3, 4), (0, 1, 3, 4), (0, 1, 2, 3, 4), (1, 3, 4), (1, 2, 3, 4), (0, 2, 3, 4),
        (2, 3, 4),
    }),
    # One side of an OR (the other waits as after ';'), and starting an iteration: each turn
    # is read after the previous one (NEXT(C ; D) after A at 0: {1,3}, then after 3: {4,5}).
    ("A AS a ; (MAX(C+) OR D) ; B AS b FILTER b[v < a.v]", "ACDCB", [5, 0, 0, 0, 3], {
        (0, 1, 4), (0, 1, 3, 4), (0, 2, 4),
    }),
    ("A AS a ; NEXT(C ; D)+ ; B AS b FILTER b[v < a.v]", "ACCDCDB", [5, 0, 0, 0, 0, 0, 3], {
        (0, 1, 3, 6), (0, 1, 5, 6), (0, 1, 3, 4, 5, 6),
    }),
    # At the start of a side of AND: both sides wait together (MAX(C+) after A at 0 ending at
    # 3 is {1,2,3}; AND C+ keeps it, not {2,3} or {3}); and after ';' inside a side.
    ("A AS a ; (MAX(C+) AND C+) ; B AS b FILTER b[v < a.v]", "ACCCB", [5, 0, 0, 0, 3], {
        (0, 1, 4), (0, 1, 2, 4), (0, 1, 2, 3, 4),
    }),
    ("A AS a ; ((D ; MAX(C+)) AND (D ; C+)) ; B AS b FILTER b[v < a.v]", "ADCXCB", [5, 0, 0, 0, 0, 3], {
        (0, 1, 2, 5), (0, 1, 2, 4, 5),
    }),
    # A selector inside the selector (its product is the tECS engine's, nested as there).
    (
        "A AS a ; MAX(C ; NEXT(D+)) ; B AS b FILTER b[v < a.v]",
        "ACDCDB",
        [5, 0, 0, 0, 0, 3],
        {(0, 1, 2, 4, 5), (0, 1, 2, 5), (0, 3, 4, 5)},
    ),
]


@pytest.mark.parametrize(("where", "types", "values", "expected"), EXAMPLES)
def test_hand_worked_examples(
    where: str, types: str, values: list[int], expected: set[tuple[int, ...]]
) -> None:
    text = f"SELECT * FROM S WHERE {where}"
    events = _events(types, values)
    assert _oracle(text, events) == expected
    assert _engine(text, events) == expected


def test_projection_window_and_partitions() -> None:
    """SELECT b (the selector still chooses among whole matches of C+), a window, PARTITION BY."""
    events = [
        {"type": t, "v": v, "k": k}
        for t, v, k in zip("AACCCBB", [5, 1, 0, 0, 0, 3, 4], [0, 1, 0, 1, 0, 0, 1], strict=True)
    ]
    for text in (
        "SELECT b FROM S WHERE A AS a ; MAX(C+) AS c ; B AS b FILTER b[v < a.v]",
        "SELECT c FROM S WHERE A AS a ; LAST(C+) AS c ; B AS b FILTER b[v < a.v]",
        "SELECT * FROM S WHERE A AS a ; NEXT(C+) ; B AS b FILTER b[v < a.v] WITHIN 5 EVENTS",
        "SELECT * FROM S WHERE A AS a ; MAX(C+) ; B AS b FILTER b[v <= a.v] PARTITION BY [k]",
        "SELECT MAX * FROM S WHERE A AS a ; NEXT(C+) ; B AS b FILTER b[v < a.v]",
    ):
        expected = _oracle(text, events)
        assert expected, text
        assert _engine(text, events) == expected, text


def test_explain_names_the_selector_and_the_runtime() -> None:
    text = f"SELECT * FROM S WHERE {PAIR.format(sel='MAX')}"
    plan = kleene.compile(text).plan
    assert plan.srt is not None and plan.srt.selectors == ("MAX",)
    assert plan.register_runtime == "runs"
    explained = kleene.compile(text).explain()
    assert "nested selectors: MAX" in explained
    assert "merged runs and the run index do not apply" in " ".join(explained.split())
    assert "run index: off" in explained


def test_anchored_per_partition_and_fed_event_by_event() -> None:
    """A selector at the start of the pattern: one run per partition from its first event
    (``explain`` says "anchored"); pushing one event at a time gives the whole run's output."""
    text = "SELECT * FROM S WHERE LAST(C+) ; A AS a ; B AS b FILTER b[v < a.v] PARTITION BY [k]"
    types = "CXCCAYCABBAB"
    events = [{"type": t, "k": i % 2, "v": (7 * i) % 10} for i, t in enumerate(types)]
    expected = _oracle(text, events)
    assert expected
    assert _engine(text, events) == expected
    query = kleene.compile(text)
    assert query.plan.srt is not None and query.plan.srt.anchored
    assert "anchored: a selector starts the pattern" in query.explain()
    assert {tuple(m.positions) for e in events for m in query.push(e)} == expected


def test_only_the_plain_runs_take_a_selector() -> None:
    """Merged runs and the windowed runtime cannot carry the product: asking for them fails."""
    query = kleene.compile(f"SELECT * FROM S WHERE {PAIR.format(sel='MAX')} WITHIN 5 EVENTS")
    for runtime in ("merged", "windowed"):
        with pytest.raises(ValueError, match="nested selector's product runs on the plain runs"):
            query.tuned(register_runtime=runtime)


def test_cli_runs_it(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from kleene.cli import main

    data = tmp_path / "events.csv"
    data.write_text("type,v\n" + "".join(f"{t},{v}\n" for t, v in zip("AACCB", [5, 1, 0, 0, 3])))
    text = f"SELECT * FROM S WHERE {PAIR.format(sel='MAX')}"
    assert main(["run", text, "--input", str(data), "--no-progress", "--count"]) == 0
    assert capsys.readouterr().out.strip().endswith("2")  # (0,2,4), (0,2,3,4)


REFUSED = [
    (
        "SELECT * FROM S WHERE A AS a ; ((D ; MAX(C+)) ALL E) ; B AS b FILTER b[v < a.v]",
        "MAX(C+)",
        "MAX(...) inside a side of ALL is evaluated by the tECS engine only",
    ),
    (
        "SELECT * FROM S WHERE A AS a ; (D ; MAX(C+) UNLESS E) ; B AS b FILTER b[v < a.v]",
        "MAX(C+)",
        "MAX(...) inside UNLESS is evaluated",
    ),
    (
        "SELECT * FROM S WHERE A AS a ; (NEXT(C ; D) ; E):+ ; B AS b FILTER b[v < a.v]",
        "NEXT(C ; D)",
        "NEXT(...) at the start of an iteration after ':' or of a ':+' iteration",
    ),
    (
        "SELECT * FROM S WHERE A AS a : LAST(C+)+ ; B AS b FILTER b[v < a.v]",
        "LAST(C+)",
        "LAST(...) at the start of an iteration after ':'",
    ),
    (  # a condition on the selector's events: no finite product, not only not built
        "SELECT * FROM S WHERE A AS a ; MAX(C AS c ; D+) ; B AS b FILTER b[v < c.v]",
        "MAX(C AS c",
        "which no finite product of states tracks",
    ),
]


@pytest.mark.parametrize(("text", "needle", "message"), REFUSED)
def test_refused_with_a_caret_at_the_selector(
    text: str, needle: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = assert_refused(text, needle, message, capsys, UnsupportedError)
    assert "conditions between events" in err.message or "finite product" in err.message
    # Without the condition between events the tECS engine takes the same position.
    plain = text.split(" FILTER b[")[0]
    if "c.v" not in text:
        assert kleene.compile(plain).plan.engine == "tecs"


# ----------------------------------------------------------------- random queries

CHOOSING = ("NEXT", "LAST", "MAX")


@st.composite
def bodies(draw: st.DrawFn, strategy: str) -> ast.Pattern:
    """What a selector applies to: shapes with several matches per end (else it has nothing
    to choose between; for MAX, one of them contains another)."""
    x, y = (ast.EventType(draw(st.sampled_from(TYPES[1:]))) for _ in range(2))
    shape = draw(st.integers(0, 3 if strategy == "MAX" else 4))
    if shape == 0:
        return ast.Iter(x)
    if shape == 1:
        return ast.Seq(ast.Iter(x), y)
    if shape == 2:
        return ast.Seq(x, ast.Iter(y))
    if shape == 3:
        return ast.Iter(ast.Or(x, y))
    return ast.Seq(x, y)


def _condition(draw: st.DrawFn) -> ast.Pred:
    attr = draw(st.sampled_from(("v", "w")))
    return ast.Compare(
        draw(st.sampled_from(("<", "<=", ">", ">="))), ast.Attr(attr), ast.VarAttr("a", attr)
    )


@st.composite
def register_selector_cases(
    draw: st.DrawFn,
) -> tuple[ast.Query, list[dict[str, Any]], list[int]]:
    """``A AS a ; sel(ρ) ; X AS b FILTER b[... a ...]`` (sel: NEXT, LAST, MAX, and now and then
    STRICT) and the other positions the register
    engine takes: under AS with a unary FILTER, an OR of two selectors or of a selector and an
    event, after ':', after ``A ; B``, starting an iteration or a repetition, starting a side
    of AND, at the start of the pattern (anchored: no window) and after ``B*`` there; with a projection, a window or
    PARTITION BY now and then; the stream planted with the pattern's types, repeated."""
    strategy = draw(st.sampled_from((*CHOOSING, *CHOOSING, "STRICT")))  # STRICT: ':' for ';'
    sel: ast.Pattern = ast.Selector(strategy, draw(bodies(strategy)))
    shape = draw(st.integers(0, 10))
    if shape == 1:
        sel = ast.Filter(ast.As(sel, "m"), ast.FilterAtom("m", ast.Compare(
            ">", ast.Attr("w"), ast.Const(draw(st.integers(0, 4)))
        )))
    elif shape == 2:
        other = draw(st.sampled_from(CHOOSING))
        sel = ast.Or(sel, ast.Selector(other, draw(bodies(other))))
    elif shape == 6:
        sel = ast.Or(sel, ast.EventType(draw(st.sampled_from(TYPES[1:]))))
    elif shape == 7:
        sel = draw(st.sampled_from((ast.Iter(sel), ast.Iter(ast.Seq(sel, ast.EventType("C"))))))
    elif shape == 8:
        sel = ast.Repeat(sel, draw(st.integers(0, 1)), draw(st.sampled_from((1, 2, None))))
    elif shape == 10 and isinstance(sel, ast.Selector):  # a side of AND (the other: same events)
        other = draw(st.sampled_from((sel.pattern, ast.Iter(ast.EventType(draw(st.sampled_from(TYPES[1:])))))))
        sel = ast.And(sel, other) if draw(st.booleans()) else ast.And(other, sel)
    first = ast.As(ast.EventType("A"), "a")
    last = ast.As(ast.EventType(draw(st.sampled_from(("A", "B")))), "b")
    head: ast.Pattern = ast.Seq(first, sel, contiguous=shape == 3)
    if shape == 4:  # the selector between two further events
        head = ast.Seq(ast.Seq(first, ast.EventType("B")), sel)
    elif shape == 5:  # at the start of the pattern
        head = ast.Seq(sel, first)
    elif shape == 9:  # at the start, after a pattern that may match nothing
        head = ast.Seq(ast.Seq(ast.Star(ast.EventType("C")), sel), first)
    where = ast.Filter(ast.Seq(head, last), ast.FilterAtom("b", _condition(draw)))
    within = draw(st.sampled_from((None, None, None, ast.EventsWindow(8))))
    if shape in (5, 9):
        within = None  # a window is refused there (by both engines)
    partition = (("k",),) if draw(st.integers(0, 7)) == 0 else ()
    items = None
    if draw(st.integers(0, 7)) == 0:
        items = (ast.SelectItem(draw(st.sampled_from(("a", "b")))),)
    query = ast.Query(ast.Select("ALL", items), (), where, partition, within)
    size = 12
    events, times = draw(streams(max_size=size, min_size=size))
    # Planted: the pattern's types in order, each repeated (a whole pass fits in the stream),
    # so that the selectors have several matches to choose between, then more passes.
    names = [e.name for e in types_in_order(where)]
    counts = [draw(st.integers(1, 3)) for _ in names]
    while sum(counts) > size:
        counts[counts.index(max(counts))] -= 1
    wanted = [name for name, n in zip(names, counts) for _ in range(n)]
    while len(wanted) < size:
        for name in names:
            wanted += [name] * draw(st.integers(1, 2))
            if draw(st.integers(0, 4)) == 0:
                wanted.append(draw(st.sampled_from(TYPES)))
    events = [dict(e, type=t, k=e["k"] % 2) for e, t in zip(events, wanted)]
    return query, events, times



@aimed("nested selector", "conditions")
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(register_selector_cases())
def test_register_selectors_equal_oracle(
    case: tuple[ast.Query, list[dict[str, Any]], list[int]],
) -> None:
    """Engine (register automaton with the selector's product) against oracle; prints and
    asserts how often the selector (the same query with every selector taken out) and the
    condition between events (made TRUE) changed the result."""
    query, events, times = case
    assert kleene.compile(to_ceql(query)).plan.engine == "registers", to_ceql(query)
    expected = oracle(case)
    if expected is not None:
        for feature in ("nested selector", "conditions"):
            other = evaluate(without(query, feature), events, times=times)
            feature_changed(feature, other != expected)
    check_against_oracle(case, aim_at=[])


def test_streams_and_unary_predicates_renumbered() -> None:
    """The product is built over the tECS numbering of bits and renumbered into the register
    automaton's (unary predicates numbered as met, streams after every predicate): a FILTER
    before the selector, one inside it, and stream bits on both sides."""
    text = (
        "SELECT * FROM S1, S2 WHERE (S1>A AS a FILTER a[w > 2]) ; "
        "MAX(S2>C+ AS c FILTER c[w > 3]) ; B AS b FILTER b[v < a.v]"
    )
    rows = [("A", 5, 3, "S1"), ("C", 0, 4, "S2"), ("C", 0, 9, "S1"), ("C", 0, 2, "S2"),
            ("C", 0, 5, "S2"), ("B", 3, 0, "S1"), ("B", 7, 0, "S2")]
    events = [{"type": t, "v": v, "w": w, "stream": s} for t, v, w, s in rows]
    expected = {p for _, _, p in evaluate(parse_query(text), events, stream_key="stream")}
    # C+ from S2 with w > 3 after A: {1}, {1,4}; the C at 2 is S1's, the one at 3 has w 2.
    assert expected == {(0, 1, 5), (0, 1, 4, 5)}
    query = kleene.compile(text, stream_column="stream")
    assert query.plan.engine == "registers"
    assert {tuple(m.positions) for m in query.matches(events)} == expected


def test_the_product_stops_at_max_states() -> None:
    """The product is built by the tECS construction under the query's limits: a large one
    stops with a LimitError, in the register engine too."""
    from kleene.language.errors import LimitError

    text = "SELECT * FROM S WHERE A AS a ; LAST((A OR B)+ ; (B OR C)+ ; C) ; B AS b FILTER b[v < a.v]"
    assert kleene.compile(text).plan.engine == "registers"
    with pytest.raises(LimitError) as info:
        kleene.compile(text, max_states=30)
    assert info.value.limit == "max_states"
