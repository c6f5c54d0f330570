"""Worked examples with known outputs, as a table any evaluator can be run on.

Each :class:`Case` holds a CEQL query text, a stream (a list of event dicts,
type under ``"type"``), optional times (nanoseconds) and the expected *set*
of complex events ``(start, end, positions)``.  The expected values come from
the papers, from CORE's own unit tests or from hand derivation (``source``
says which); none of them was produced by the reference oracle.  The oracle
test runs the table against the oracle; the lead can run the very same table
against the real engine.

``ast`` is the query built by hand.  It lets the oracle be tested before the
parser exists, and once it does, both the parsed text and the hand-built tree
must give the expected output.  Every query reads stream ``S``.

Streams used:

* ``FIG``: the Figure 1/3/4 stock stream of the CORE paper, reconstructed in
  the spec (MSFT sells at 0 and 1, INTC at 2 and 5, AMZN at 4 and 6).
* ``THESIS``: the running stream of the CEL thesis (§1 of its spec), with the
  sensor value under ``value`` for both T and H events.
* ``DEMO``: the pycer demo stream of ``core-pycer-notes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kleene.language import ast

Event = dict[str, Any]
ComplexEvent = tuple[int, int, tuple[int, ...]]


@dataclass(frozen=True)
class Case:
    name: str
    query: str
    events: tuple[Event, ...]
    expected: frozenset[ComplexEvent]
    ast: ast.Query
    times: tuple[int, ...] | None = None
    source: str = ""


# ------------------------------------------------------------------ builders


def et(name: str) -> ast.EventType:
    return ast.EventType(name)


def as_(pattern: ast.Pattern, var: str) -> ast.As:
    return ast.As(pattern, var)


def seq(*patterns: ast.Pattern, contiguous: bool = False) -> ast.Pattern:
    """Left-associated sequence of the patterns."""
    out = patterns[0]
    for p in patterns[1:]:
        out = ast.Seq(out, p, contiguous)
    return out


def alt(*patterns: ast.Pattern) -> ast.Pattern:
    out = patterns[0]
    for p in patterns[1:]:
        out = ast.Or(out, p)
    return out


def plus(pattern: ast.Pattern, contiguous: bool = False) -> ast.Iter:
    return ast.Iter(pattern, contiguous)


def cmp(attr: str, op: ast.CompareOp, const: int | float | str) -> ast.Compare:
    return ast.Compare(op, ast.Attr(attr), ast.Const(const))


def pand(*preds: ast.Pred) -> ast.Pred:
    out = preds[0]
    for p in preds[1:]:
        out = ast.PAnd(out, p)
    return out


def atom(var: str, pred: ast.Pred) -> ast.FilterAtom:
    return ast.FilterAtom(var, pred)


def fand(*conds: ast.FilterExpr) -> ast.FilterExpr:
    out = conds[0]
    for c in conds[1:]:
        out = ast.FilterAnd(out, c)
    return out


def filt(pattern: ast.Pattern, *conds: ast.FilterExpr) -> ast.Filter:
    """``pattern FILTER c1 AND c2 AND ...``."""
    return ast.Filter(pattern, fand(*conds))


def query(
    where: ast.Pattern,
    *,
    select: tuple[str, ...] | None = None,
    partition: tuple[tuple[str, ...], ...] = (),
    within: ast.Window | None = None,
    consume: ast.Consume = "NONE",
) -> ast.Query:
    items = None if select is None else tuple(ast.SelectItem(v) for v in select)
    return ast.Query(ast.Select("ALL", items), ("S",), where, partition, within, consume)


def m(*positions: int) -> ComplexEvent:
    """A complex event whose positions are all kept (SELECT *)."""
    return (min(positions), max(positions), tuple(sorted(positions)))


def ce(start: int, end: int, *positions: int) -> ComplexEvent:
    return (start, end, tuple(sorted(positions)))


def stock(kind: str, name: str, price: int = 0, volume: int = 0, **extra: Any) -> Event:
    return {"type": kind, "name": name, "price": price, "volume": volume, **extra}


def types(*kinds: str) -> tuple[Event, ...]:
    return tuple({"type": k} for k in kinds)


# ------------------------------------------------------------------- streams

FIG: tuple[Event, ...] = (
    stock("SELL", "MSFT", 101),
    stock("SELL", "MSFT", 102),
    stock("SELL", "INTC", 80),
    stock("BUY", "INTC", 80),
    stock("SELL", "AMZN", 1900),
    stock("SELL", "INTC", 81),
    stock("SELL", "AMZN", 1920),
)

THESIS: tuple[Event, ...] = tuple(
    {"type": t, "id": i, "value": v}
    for t, i, v in [
        ("H", 2, 35),
        ("T", 0, 45),
        ("H", 0, 20),
        ("H", 1, 25),
        ("T", 1, 40),
        ("T", 0, 42),
        ("T", 1, 25),
        ("H", 1, 70),
        ("H", 0, 18),
    ]
)

DEMO: tuple[Event, ...] = (
    stock("SELL", "MSFT", 101, 10),
    stock("BUY", "ORCL", 20, 5),
    stock("SELL", "IBM", 50, 7),
    stock("BUY", "AAPL", 300, 1),
    stock("SELL", "X", 150, 3),
    stock("BUY", "Y", 1, 1),
)

# CORE's consumption-policy unit test stream: (type, name, price, part).
CORE_PARTS: tuple[Event, ...] = tuple(
    stock(t, n, p, part=k)
    for t, n, p, k in [
        ("SELL", "MSFT", 101, 0),
        ("SELL", "MSFT", 101, 1),
        ("SELL", "MSFT", 102, 0),
        ("SELL", "MSFT", 102, 1),
        ("SELL", "INTL", 80, 0),
        ("SELL", "INTL", 80, 1),
        ("BUY", "INTL", 80, 0),
        ("BUY", "INTL", 80, 1),
        ("SELL", "AMZN", 1900, 0),
        ("SELL", "AMZN", 1900, 1),
        ("SELL", "INTL", 81, 0),
        ("SELL", "INTL", 81, 1),
        ("SELL", "AMZN", 1920, 0),
        ("SELL", "AMZN", 1920, 1),
    ]
)

PART3: tuple[Event, ...] = (stock("SELL", "MSFT"), stock("BUY", "IBM"), stock("BUY", "MSFT"))

SEC = 10**9

# ---------------------------------------------------------------- patterns

_Q1_WHERE = filt(
    seq(as_(et("SELL"), "msft"), as_(et("SELL"), "intel"), as_(et("SELL"), "amzn")),
    atom("msft", cmp("name", "==", "MSFT")),
    atom("msft", cmp("price", ">", 100)),
    atom("intel", cmp("name", "==", "INTC")),
    atom("amzn", cmp("name", "==", "AMZN")),
    atom("amzn", cmp("price", "<", 2000)),
)
_Q1_TEXT = """SELECT * FROM S
WHERE SELL AS msft; SELL AS intel; SELL AS amzn
FILTER msft[name = 'MSFT'] AND msft[price > 100]
   AND intel[name = 'INTC']
   AND amzn[name = 'AMZN'] AND amzn[price < 2000]"""

_CORE_Q1_WHERE = filt(
    seq(as_(et("SELL"), "msft"), as_(et("SELL"), "intel"), as_(et("SELL"), "amzn")),
    atom("msft", cmp("name", "==", "MSFT")),
    atom("msft", cmp("price", ">", 100)),
    atom("intel", cmp("name", "==", "INTL")),
    atom("amzn", cmp("name", "==", "AMZN")),
    atom("amzn", cmp("price", "<", 2000)),
)
_CORE_Q1_TEXT = _Q1_TEXT.replace("'INTC'", "'INTL'")

_MIXED_FILTERS = (
    atom("msft", cmp("name", "==", "MSFT")),
    atom("intel", cmp("name", "==", "INTL")),
    atom("amzn", cmp("name", "==", "AMZN")),
)
_MIXED_FILTER_TEXT = "FILTER msft[name = 'MSFT'] AND intel[name = 'INTL'] AND amzn[name = 'AMZN']"

_ALPHA_X = atom("x", pand(cmp("value", ">", 40), cmp("id", "==", 0)))
_ALPHA_Y = atom("y", pand(cmp("value", "<=", 25), cmp("id", "==", 0)))
_ALPHA_TEXT = "FILTER x[value > 40 AND id = 0] AND y[value <= 25 AND id = 0]"

_PHI3_X = atom("x", pand(cmp("value", "<", 30), cmp("id", "==", 1)))
_PHI3_Z = atom("z", pand(cmp("value", ">", 60), cmp("id", "==", 1)))
_PHI3_TEXT_FILTER = "FILTER x[value < 30 AND id = 1] AND z[value > 60 AND id = 1]"

_SELL_A_SEQ_BUY_B = seq(as_(et("SELL"), "a"), as_(et("BUY"), "b"))

# ------------------------------------------------------------------- cases

CASES: list[Case] = [
    # --- CORE paper, Figures 1, 3 and 4 (spec lines 600-615) ---------------
    Case(
        "fig3_q1_within_6",
        _Q1_TEXT + "\nWITHIN 6 EVENTS",
        FIG,
        frozenset({m(0, 2, 4), m(1, 2, 4), m(0, 2, 6), m(0, 5, 6), m(1, 2, 6), m(1, 5, 6)}),
        query(_Q1_WHERE, within=ast.EventsWindow(6)),
        source="CORE paper Fig. 3/4 and Example 2 (outputs at j=4 and j=6), spec lines 600-615",
    ),
    Case(
        "fig3_q1_within_5",
        _Q1_TEXT + "\nWITHIN 5 EVENTS",
        FIG,
        frozenset({m(0, 2, 4), m(1, 2, 4), m(1, 2, 6), m(1, 5, 6)}),
        query(_Q1_WHERE, within=ast.EventsWindow(5)),
        source="derived from the previous case: [0,6] has span 6 > 5 (window inclusive)",
    ),
    Case(
        "fig3_q1_no_window",
        _Q1_TEXT,
        FIG,
        frozenset({m(0, 2, 4), m(1, 2, 4), m(0, 2, 6), m(0, 5, 6), m(1, 2, 6), m(1, 5, 6)}),
        query(_Q1_WHERE),
        source="derived: no WITHIN means no bound",
    ),
    Case(
        "fig3_q1_consume_any",
        _Q1_TEXT + "\nCONSUME BY ANY",
        FIG,
        frozenset({m(0, 2, 4), m(1, 2, 4)}),
        query(_Q1_WHERE, consume="ANY"),
        source="CORE unit test consumption_policy.cpp #1 (same stream, INTL there)",
    ),
    Case(
        "fig1_q2_partition_duration_select_b",
        """SELECT b FROM S
WHERE (BUY OR SELL) AS s; (BUY OR SELL) AS b
PARTITION BY [name], [volume]
WITHIN 60 SECONDS""",
        (
            stock("BUY", "MSFT", 1, 10),
            stock("SELL", "INTC", 1, 10),
            stock("SELL", "MSFT", 1, 10),
            stock("BUY", "MSFT", 1, 20),
            stock("BUY", "MSFT", 1, 10),
            stock("SELL", "INTC", 1, 10),
        ),
        frozenset({ce(0, 2, 2), ce(2, 4, 4)}),
        query(
            seq(as_(alt(et("BUY"), et("SELL")), "s"), as_(alt(et("BUY"), et("SELL")), "b")),
            select=("b",),
            partition=(("name",), ("volume",)),
            within=ast.DurationWindow(60 * SEC),
        ),
        times=tuple(t * SEC for t in (0, 10, 30, 40, 90, 200)),
        source="CORE paper Fig. 1 Q2 on a hand-made stream; 60 s apart is inside (inclusive)",
    ),
    # --- CORE's own consumption-policy unit tests ----------------------------
    Case(
        "core_consume_any_contiguous_iteration",
        "SELECT * FROM S\nWHERE (SELL):+ AS msft; (SELL OR BUY) AS intel; SELL AS amzn\n"
        + _MIXED_FILTER_TEXT
        + "\nCONSUME BY ANY",
        (
            stock("SELL", "MSFT", 101),
            stock("SELL", "MSFT", 102),
            stock("SELL", "INTL", 80),
            stock("BUY", "INTL", 80),
            stock("SELL", "AMZN", 1900),
            stock("SELL", "MSFT", 105),
            stock("SELL", "INTL", 85),
            stock("SELL", "AMZN", 1901),
        ),
        frozenset(
            {
                m(1, 2, 4),
                m(0, 1, 2, 4),
                m(0, 2, 4),
                m(1, 3, 4),
                m(0, 1, 3, 4),
                m(0, 3, 4),
                m(5, 6, 7),
            }
        ),
        query(
            filt(
                seq(
                    as_(plus(et("SELL"), contiguous=True), "msft"),
                    as_(alt(et("SELL"), et("BUY")), "intel"),
                    as_(et("SELL"), "amzn"),
                ),
                *_MIXED_FILTERS,
            ),
            consume="ANY",
        ),
        source="CORE unit test consumption_policy.cpp #2",
    ),
    Case(
        "core_consume_any_contiguous_sequence",
        "SELECT * FROM S\nWHERE (SELL):+ AS msft: (SELL OR BUY) AS intel; SELL AS amzn\n"
        + _MIXED_FILTER_TEXT
        + "\nCONSUME BY ANY",
        (
            stock("SELL", "MSFT", 101),
            stock("SELL", "MSFT", 102),
            stock("BUY", "INTL", 80),
            stock("SELL", "INTL", 80),
            stock("SELL", "AMZN", 1900),
        ),
        frozenset({m(1, 2, 4), m(0, 1, 2, 4)}),
        # CORE's precedence: ';' binds tighter than ':' (both readings agree here).
        query(
            filt(
                ast.Seq(
                    as_(plus(et("SELL"), contiguous=True), "msft"),
                    seq(as_(alt(et("SELL"), et("BUY")), "intel"), as_(et("SELL"), "amzn")),
                    contiguous=True,
                ),
                *_MIXED_FILTERS,
            ),
            consume="ANY",
        ),
        source="CORE unit test consumption_policy.cpp #3",
    ),
    Case(
        "core_partition_consume_any",
        _CORE_Q1_TEXT + "\nPARTITION BY [part]\nCONSUME BY ANY",
        CORE_PARTS,
        frozenset({m(2, 4, 8), m(0, 4, 8)}),
        query(_CORE_Q1_WHERE, partition=(("part",),), consume="ANY"),
        source="CORE unit test consumption_policy.cpp #4 (output in one partition resets all)",
    ),
    Case(
        "core_partition_consume_partition",
        _CORE_Q1_TEXT + "\nPARTITION BY [part]\nCONSUME BY PARTITION",
        CORE_PARTS,
        frozenset({m(2, 4, 8), m(0, 4, 8), m(3, 5, 9), m(1, 5, 9)}),
        query(_CORE_Q1_WHERE, partition=(("part",),), consume="PARTITION"),
        source="CORE unit test consumption_policy.cpp #5",
    ),
    Case(
        "core_partition_no_consume",
        _CORE_Q1_TEXT + "\nPARTITION BY [part]",
        CORE_PARTS,
        frozenset(
            {m(0, 4, 8), m(0, 4, 12), m(2, 4, 8), m(2, 4, 12), m(0, 10, 12), m(2, 10, 12)}
            | {m(1, 5, 9), m(1, 5, 13), m(3, 5, 9), m(3, 5, 13), m(1, 11, 13), m(3, 11, 13)}
        ),
        query(_CORE_Q1_WHERE, partition=(("part",),)),
        source="derived: msft in {0,2}/{1,3}, intel in {4,10}/{5,11}, amzn in {8,12}/{9,13}",
    ),
    # --- CEL thesis §13 on its running stream --------------------------------
    Case(
        "thesis_1_phi1",
        "SELECT * FROM S\nWHERE (T AS x; H AS y)\n" + _ALPHA_TEXT,
        THESIS,
        frozenset({m(1, 2), m(1, 8), m(5, 8)}),
        query(filt(seq(as_(et("T"), "x"), as_(et("H"), "y")), _ALPHA_X, _ALPHA_Y)),
        source="CEL thesis §2 / spec §13 #1",
    ),
    Case(
        "thesis_2_phi1_lp",
        "SELECT * FROM S\nWHERE (T AS x FILTER x[value > 40 AND id = 0]); "
        "(H AS y FILTER y[value <= 25 AND id = 0])",
        THESIS,
        frozenset({m(1, 2), m(1, 8), m(5, 8)}),
        query(seq(filt(as_(et("T"), "x"), _ALPHA_X), filt(as_(et("H"), "y"), _ALPHA_Y))),
        source="CEL thesis §5.2 / spec §13 #2",
    ),
    Case(
        "thesis_3_phi2",
        "SELECT * FROM S\nWHERE ((T AS x; H AS y) OR (H AS y; T AS x))\n" + _ALPHA_TEXT,
        THESIS,
        frozenset({m(1, 2), m(2, 5), m(1, 8), m(5, 8)}),
        query(
            filt(
                alt(
                    seq(as_(et("T"), "x"), as_(et("H"), "y")),
                    seq(as_(et("H"), "y"), as_(et("T"), "x")),
                ),
                _ALPHA_X,
                _ALPHA_Y,
            )
        ),
        source="CEL thesis §2 / spec §13 #3",
    ),
    Case(
        "thesis_5_phi3",
        "SELECT * FROM S\nWHERE (H AS x; (T AS y FILTER y[id = 1])+; H AS z)\n" + _PHI3_TEXT_FILTER,
        THESIS,
        frozenset({m(3, 4, 6, 7), m(3, 4, 7), m(3, 6, 7)}),
        query(
            filt(
                seq(
                    as_(et("H"), "x"),
                    plus(filt(as_(et("T"), "y"), atom("y", cmp("id", "==", 1)))),
                    as_(et("H"), "z"),
                ),
                _PHI3_X,
                _PHI3_Z,
            )
        ),
        source="CEL thesis §2 / spec §13 #5",
    ),
    Case(
        "thesis_5_phi3_filter_outside_iteration",
        "SELECT * FROM S\nWHERE (H AS x; (T AS y)+; H AS z)\n"
        "FILTER x[value < 30 AND id = 1] AND y[id = 1] AND z[value > 60 AND id = 1]",
        THESIS,
        frozenset({m(3, 4, 6, 7), m(3, 4, 7), m(3, 6, 7)}),
        query(
            filt(
                seq(as_(et("H"), "x"), plus(as_(et("T"), "y")), as_(et("H"), "z")),
                _PHI3_X,
                atom("y", cmp("id", "==", 1)),
                _PHI3_Z,
            )
        ),
        source="derived: y holds every iterated T, and y[id = 1] must hold for all of them",
    ),
    Case(
        "thesis_17_phi6_lp",
        "SELECT * FROM S\nWHERE ((T AS x FILTER x[value >= 40]); T AS y) "
        "OR ((T AS x FILTER x[value < 40]); H AS y)",
        THESIS,
        frozenset({m(1, 4), m(1, 5), m(1, 6), m(4, 5), m(4, 6), m(5, 6), m(6, 7), m(6, 8)}),
        query(
            alt(
                seq(filt(as_(et("T"), "x"), atom("x", cmp("value", ">=", 40))), as_(et("T"), "y")),
                seq(filt(as_(et("T"), "x"), atom("x", cmp("value", "<", 40))), as_(et("H"), "y")),
            )
        ),
        source="CEL thesis §5.2 / spec §13 #17 (LP form)",
    ),
    # --- core-pycer-notes: semantics confirmed against CORE -----------------
    Case(
        "notes_partition_within_1_global_positions",
        "SELECT * FROM S WHERE SELL; BUY PARTITION BY [name] WITHIN 1 EVENTS",
        PART3,
        frozenset(),
        query(seq(et("SELL"), et("BUY")), partition=(("name",),), within=ast.EventsWindow(1)),
        source="core-pycer-notes: WITHIN counts global positions under PARTITION BY",
    ),
    Case(
        "notes_partition_within_2_global_positions",
        "SELECT * FROM S WHERE SELL; BUY PARTITION BY [name] WITHIN 2 EVENTS",
        PART3,
        frozenset({m(0, 2)}),
        query(seq(et("SELL"), et("BUY")), partition=(("name",),), within=ast.EventsWindow(2)),
        source="core-pycer-notes",
    ),
    Case(
        "notes_within_0_single_events_only",
        "SELECT * FROM S WHERE SELL OR (SELL; BUY) WITHIN 0 EVENTS",
        types("SELL", "BUY", "SELL"),
        frozenset({m(0), m(2)}),
        query(alt(et("SELL"), seq(et("SELL"), et("BUY"))), within=ast.EventsWindow(0)),
        source="core-pycer-notes: WITHIN 0 EVENTS allows single-event matches only",
    ),
    Case(
        "notes_or_same_event_printed_once",
        "SELECT * FROM S WHERE SELL AS a OR SELL",
        types("SELL", "BUY", "SELL"),
        frozenset({m(0), m(2)}),
        query(alt(as_(et("SELL"), "a"), et("SELL"))),
        source="core-pycer-notes: complex events form a set (CORE prints them twice)",
    ),
    Case(
        "notes_contiguous_iteration_right_of_seq",
        "SELECT * FROM S WHERE SELL; BUY:+ WITHIN 5 EVENTS",
        types("SELL", "BUY", "SELL", "BUY"),
        frozenset({m(0, 1), m(0, 3), m(2, 3)}),
        query(seq(et("SELL"), plus(et("BUY"), contiguous=True)), within=ast.EventsWindow(5)),
        source="core-pycer-notes: the paper's semantics (CORE also returns {0,1,3}, a bug)",
    ),
    Case(
        "notes_demo",
        "SELECT * FROM S WHERE SELL AS a; BUY AS b FILTER a[price > 100] WITHIN 10 EVENTS",
        DEMO,
        frozenset({m(0, 1), m(0, 3), m(4, 5), m(0, 5)}),
        query(
            filt(_SELL_A_SEQ_BUY_B, atom("a", cmp("price", ">", 100))), within=ast.EventsWindow(10)
        ),
        source="core-pycer-notes minimal example (CORE's printed output)",
    ),
    Case(
        "notes_demo_consume_any",
        "SELECT * FROM S WHERE SELL AS a; BUY AS b FILTER a[price > 100] WITHIN 10 EVENTS\n"
        "CONSUME BY ANY",
        DEMO,
        frozenset({m(0, 1), m(4, 5)}),
        query(
            filt(_SELL_A_SEQ_BUY_B, atom("a", cmp("price", ">", 100))),
            within=ast.EventsWindow(10),
            consume="ANY",
        ),
        source=(
            "derived with the consumption rule of CORE's unit tests: output at 1 consumes "
            "0..1, so [0,3] and [0,5] go. The notes' remark '4 matches became 3' does not "
            "fit this rule; it was probably another query"
        ),
    ),
    # --- projection ---------------------------------------------------------
    Case(
        "select_b_keeps_interval",
        "SELECT b FROM S WHERE SELL AS a; BUY AS b",
        types("SELL", "SELL", "BUY"),
        frozenset({ce(0, 2, 2), ce(1, 2, 2)}),
        query(_SELL_A_SEQ_BUY_B, select=("b",)),
        source="CORE paper §2 (projection keeps V(time)); core-pycer-notes",
    ),
    Case(
        "select_a_c_drops_middle",
        "SELECT a, c FROM S WHERE SELL AS a; BUY AS b; SELL AS c",
        types("SELL", "BUY", "SELL"),
        frozenset({ce(0, 2, 0, 2)}),
        query(
            seq(as_(et("SELL"), "a"), as_(et("BUY"), "b"), as_(et("SELL"), "c")), select=("a", "c")
        ),
        source="hand derivation",
    ),
    Case(
        "select_event_type_variable",
        "SELECT BUY FROM S WHERE SELL; BUY",
        types("SELL", "BUY"),
        frozenset({ce(0, 1, 1)}),
        query(seq(et("SELL"), et("BUY")), select=("BUY",)),
        source="CORE paper §2: event types are variables",
    ),
    Case(
        "select_none_collapses_to_intervals",
        "SELECT NONE FROM S WHERE SELL; BUY+",
        types("SELL", "BUY", "BUY"),
        frozenset({ce(0, 1), ce(0, 2)}),
        query(seq(et("SELL"), plus(et("BUY"))), select=()),
        source="hand derivation: {0,2} and {0,1,2} give the same empty complex event",
    ),
    # --- filters ------------------------------------------------------------
    Case(
        "vacuous_filter_on_other_branch",
        "SELECT * FROM S WHERE (SELL AS a OR BUY AS b) FILTER a[price > 100]",
        (stock("SELL", "X", 50), stock("BUY", "X", 10), stock("SELL", "X", 150)),
        frozenset({m(1), m(2)}),
        query(
            filt(alt(as_(et("SELL"), "a"), as_(et("BUY"), "b")), atom("a", cmp("price", ">", 100)))
        ),
        source="core-pycer-notes: X[P] holds vacuously when X is empty",
    ),
    Case(
        "filter_or",
        "SELECT * FROM S WHERE SELL AS a FILTER a[price > 100] OR a[price < 20]",
        (stock("SELL", "X", 50), stock("SELL", "X", 10), stock("SELL", "X", 150)),
        frozenset({m(1), m(2)}),
        query(
            ast.Filter(
                as_(et("SELL"), "a"),
                ast.FilterOr(atom("a", cmp("price", ">", 100)), atom("a", cmp("price", "<", 20))),
            )
        ),
        source="CORE paper footnote 1",
    ),
    Case(
        "filter_on_iteration_is_for_all",
        "SELECT * FROM S WHERE (SELL+ AS a) FILTER a[price > 100]",
        (stock("SELL", "X", 150), stock("SELL", "X", 50), stock("SELL", "X", 200)),
        frozenset({m(0), m(2), m(0, 2)}),
        query(filt(as_(plus(et("SELL")), "a"), atom("a", cmp("price", ">", 100)))),
        source="CORE paper §2: a set of tuples satisfies P when all of them do",
    ),
    Case(
        "like_is_full_match",
        "SELECT * FROM S WHERE SELL AS a FILTER a[name LIKE 'MS.*']",
        (stock("SELL", "MSFT"), stock("SELL", "XMSFT"), stock("SELL", "MS")),
        frozenset({m(0), m(2)}),
        query(filt(as_(et("SELL"), "a"), atom("a", ast.Like(ast.Attr("name"), "MS.*")))),
        source="project decision: LIKE is a full regex match (CORE searches)",
    ),
    Case(
        "in_set_and_not_in_set",
        "SELECT * FROM S WHERE (SELL AS a FILTER a[name IN {'MSFT', 'IBM'}]) "
        "OR (BUY AS b FILTER b[volume NOT IN {1, 2}])",
        (
            stock("SELL", "MSFT"),
            stock("SELL", "AMZN"),
            stock("SELL", "IBM"),
            stock("BUY", "IBM", 0, 1),
            stock("BUY", "IBM", 0, 3),
        ),
        frozenset({m(0), m(2), m(4)}),
        query(
            alt(
                filt(
                    as_(et("SELL"), "a"),
                    atom("a", ast.InSet(ast.Attr("name"), (ast.Const("MSFT"), ast.Const("IBM")))),
                ),
                filt(
                    as_(et("BUY"), "b"),
                    atom(
                        "b",
                        ast.InSet(ast.Attr("volume"), (ast.Const(1), ast.Const(2)), negated=True),
                    ),
                ),
            )
        ),
        source="hand derivation",
    ),
    Case(
        "in_range_inclusive",
        "SELECT * FROM S WHERE SELL AS a FILTER a[price IN RANGE(50, 100)]",
        tuple(stock("SELL", "X", p) for p in (49, 50, 100, 101)),
        frozenset({m(1), m(2)}),
        query(
            filt(
                as_(et("SELL"), "a"),
                atom("a", ast.InRange(ast.Attr("price"), ast.Const(50), ast.Const(100))),
            )
        ),
        source="core-pycer-notes: IN RANGE is inclusive",
    ),
    Case(
        "true_division",
        "SELECT * FROM S WHERE SELL AS a FILTER a[price / 2 = 50.5]",
        (stock("SELL", "X", 101), stock("SELL", "X", 100)),
        frozenset({m(0)}),
        query(
            filt(
                as_(et("SELL"), "a"),
                atom(
                    "a",
                    ast.Compare(
                        "==", ast.BinOp("/", ast.Attr("price"), ast.Const(2)), ast.Const(50.5)
                    ),
                ),
            )
        ),
        source="project decision: '/' is true division (CORE divides integers)",
    ),
    Case(
        "arithmetic_modulo_not",
        "SELECT * FROM S WHERE SELL AS a FILTER a[volume % 3 = 1 AND NOT price * 2 - volume > 100]",
        (
            stock("SELL", "X", 10, 4),  # 4 % 3 = 1, 20 - 4 = 16: match
            stock("SELL", "X", 60, 4),  # 120 - 4 = 116 > 100: no
            stock("SELL", "X", 10, 5),  # 5 % 3 = 2: no
            stock("SELL", "X", 52, 7),  # 7 % 3 = 1, 104 - 7 = 97: match
        ),
        frozenset({m(0), m(3)}),
        query(
            filt(
                as_(et("SELL"), "a"),
                atom(
                    "a",
                    ast.PAnd(
                        ast.Compare(
                            "==", ast.BinOp("%", ast.Attr("volume"), ast.Const(3)), ast.Const(1)
                        ),
                        ast.PNot(
                            ast.Compare(
                                ">",
                                ast.BinOp(
                                    "-",
                                    ast.BinOp("*", ast.Attr("price"), ast.Const(2)),
                                    ast.Attr("volume"),
                                ),
                                ast.Const(100),
                            )
                        ),
                    ),
                ),
            )
        ),
        source="hand derivation",
    ),
    # --- contiguity and iteration -----------------------------------------------
    Case(
        "contiguous_sequence",
        "SELECT * FROM S WHERE SELL : BUY",
        PART3,
        frozenset({m(0, 1)}),
        query(seq(et("SELL"), et("BUY"), contiguous=True)),
        source="hand derivation",
    ),
    Case(
        "contiguous_sequence_inside_partition",
        "SELECT * FROM S WHERE SELL : BUY PARTITION BY [name]",
        PART3,
        frozenset({m(0, 2)}),
        query(seq(et("SELL"), et("BUY"), contiguous=True), partition=(("name",),)),
        source="core-pycer-notes: ':' means adjacency in the partition's substream",
    ),
    Case(
        "contiguous_iteration",
        "SELECT * FROM S WHERE BUY:+",
        types("BUY", "BUY", "SELL", "BUY"),
        frozenset({m(0), m(1), m(0, 1), m(3)}),
        query(plus(et("BUY"), contiguous=True)),
        source="hand derivation",
    ),
    Case(
        "iteration_all_subsets",
        "SELECT * FROM S WHERE BUY+",
        types("BUY", "BUY", "SELL", "BUY"),
        frozenset({m(0), m(1), m(3), m(0, 1), m(0, 3), m(1, 3), m(0, 1, 3)}),
        query(plus(et("BUY"))),
        source="hand derivation (skip-till-any-match)",
    ),
    Case(
        "iterated_sequence",
        "SELECT * FROM S WHERE (SELL; BUY)+",
        types("SELL", "BUY", "SELL", "BUY"),
        frozenset({m(0, 1), m(0, 3), m(2, 3), m(0, 1, 2, 3)}),
        query(plus(seq(et("SELL"), et("BUY")))),
        source="hand derivation",
    ),
    # --- windows ------------------------------------------------------------------
    Case(
        "attribute_window_inclusive",
        "SELECT * FROM S WHERE SELL; BUY WITHIN 10 [ts]",
        (stock("SELL", "X", ts=0), stock("BUY", "X", ts=10), stock("BUY", "X", ts=11)),
        frozenset({m(0, 1)}),
        query(seq(et("SELL"), et("BUY")), within=ast.AttrWindow(10, "ts")),
        source="CORE paper's WITHIN is inclusive (CORE itself is exclusive here)",
    ),
]
