"""The test cases of the SRT and RMA spec notes (SRT §7.2, RMA §10), written in CEQL.

Each :class:`CondCase` is a query, a stream and the expected *set* of complex
events ``(start, end, positions)``, positions 0-based (the SRT paper numbers
events from 1: its ``{1,4}`` is ``(0, 3)`` here).  The expected values come from
the spec notes; the ones the notes mark *derived* were re-derived by hand
(comments say how), none was produced by a program.  The same table runs on
the oracle (tests/registers/test_conditions.py) and on the engine.

How the SRT notation maps to CEQL:

* SRT concatenation ``·`` is strict contiguity: CEQL ``:`` / ``:+``.  A
  ``(⊤↑⊗)*`` between two terminals (skip-till-any-match, ``⟲``) is CEQL ``;``
  / ``+``.  Streaming ``⊤*·e`` is CEQL's default (a match may start anywhere).
* A register write ``↓r1`` on a terminal is a variable (``B as b``); a guard
  ``EqualId(~, r1)`` is a condition on the later variable (``s[id = b.id]``).
* The SRT window ``[1..w]`` (``max M − min M + 1 ≤ w``) is ``WITHIN w-1 EVENTS``;
  RMA's ``WINDOW w`` (``max M − min M < w``) is ``WITHIN w-1 EVENTS`` too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Event = dict[str, Any]
ComplexEvent = tuple[int, int, tuple[int, ...]]


@dataclass(frozen=True)
class CondCase:
    name: str
    query: str
    events: tuple[Event, ...]
    expected: frozenset[ComplexEvent]
    source: str = ""


def ce(*positions: int) -> ComplexEvent:
    return (min(positions), max(positions), tuple(sorted(positions)))


def stock(*rows: tuple[str, int, int, int]) -> tuple[Event, ...]:
    return tuple({"type": t, "id": i, "price": p, "volume": v} for t, i, p, v in rows)


def sensor(*rows: tuple[str, int, float]) -> tuple[Event, ...]:
    return tuple({"type": t, "id": i, "value": v} for t, i, v in rows)


def typed(types: str, **attrs: list[Any]) -> tuple[Event, ...]:
    out = []
    for k, t in enumerate(types.split()):
        e: Event = {"type": t}
        for name, values in attrs.items():
            e[name] = values[k]
        out.append(e)
    return tuple(out)


# SRT Table 1: 1:(B,1,22,300) 2:(B,1,24,225) 3:(B,2,32,1210) 4:(S,1,70,760) 5:(S,1,68,2000) 6:(B,2,33,95)
T1 = stock(
    ("B", 1, 22, 300), ("B", 1, 24, 225), ("B", 2, 32, 1210),
    ("S", 1, 70, 760), ("S", 1, 68, 2000), ("B", 2, 33, 95),
)
# SRT Table 4 (§8.1): B B B S B S, all id 1.
T4_TABLE = stock(
    ("B", 1, 10, 1), ("B", 1, 11, 1), ("B", 1, 12, 1),
    ("S", 1, 13, 1), ("B", 1, 14, 1), ("S", 1, 15, 1),
)
# RMA Table 1: 0:(T,1,22) 1:(T,1,24) 2:(T,2,32) 3:(H,1,70) 4:(H,1,68) 5:(T,2,33)
S1 = sensor(("T", 1, 22), ("T", 1, 24), ("T", 2, 32), ("H", 1, 70), ("H", 1, 68), ("T", 2, 33))
# RMA note's extra stream for φ4.
S2 = sensor(("T", 1, 55), ("T", 2, 20), ("T", 1, 30), ("H", 1, 70), ("T", 1, -45), ("T", 1, 10))

E1 = "SELECT * WHERE B as b ; S as s FILTER s[id = b.id]"
PHI1 = "SELECT * WHERE T as x ; H as y FILTER y[id = x.id]"
PHI4 = (
    "SELECT * WHERE ((T as x FILTER x[value < -40]) OR (T as x FILTER x[value > 50])) ; "
    "T as y FILTER y[id = x.id]"
)
# T8: SRT's (B↑•↓r1)+ · S(id = r1.id) compares S with the *last* B only (the
# register is overwritten).  In CEQL the last B gets a variable of its own:
# one or more contiguous B's whose last one is b.
T8 = "SELECT * WHERE ((B:+ : B as b) OR B as b) : S as s FILTER s[id = b.id]"
T8_NESTED = "SELECT * WHERE (((B:+ : B as b) OR B as b) : S as s FILTER s[id = b.id]):+"

CASES: tuple[CondCase, ...] = (
    # ---------------------------------------------------------------- SRT §7.2
    CondCase(
        "srt_t2_streaming_e1", E1, T1,
        frozenset({ce(0, 3), ce(1, 3), ce(0, 4), ce(1, 4)}),
        "SRT T2 (derived; checked: event 3 has id 2, the S at 4 and 5 have id 1)",
    ),
    CondCase(
        "srt_t1_prefix_4", E1, T1[:4], frozenset({ce(0, 3), ce(1, 3)}),
        "SRT T1/T2: S1..4 gives {1,4} (and {2,4} streaming)",
    ),
    CondCase("srt_t1_prefix_3", E1, T1[:3], frozenset(), "SRT T1: S1..3 is not in Lang(e1)"),
    CondCase(
        "srt_t3_window_4", E1 + " WITHIN 3 EVENTS", T1,
        frozenset({ce(0, 3), ce(1, 3), ce(1, 4)}),
        "SRT T3 (paper Ex. 40 + derived: {1,5} spans 5 > 4 events)",
    ),
    CondCase(
        "srt_t4_contiguous", "SELECT * WHERE A : B", typed("A B C A B C"),
        frozenset({ce(0, 1), ce(3, 4)}), "SRT T4 (paper §4.3)",
    ),
    CondCase(
        "srt_t5_a1_b2", "SELECT * WHERE A as x ; B as y FILTER y[id = x.id]",
        typed("A B", id=[1, 2]), frozenset(), "SRT T5 (paper Fig 13)",
    ),
    CondCase(
        "srt_t5_a1_a3_b2", "SELECT * WHERE A as x ; B as y FILTER y[id = x.id]",
        typed("A A B", id=[1, 3, 2]), frozenset(), "SRT T5 (paper Fig 13)",
    ),
    CondCase(
        "srt_t5_a2_a3_b2", "SELECT * WHERE A as x ; B as y FILTER y[id = x.id]",
        typed("A A B", id=[2, 3, 2]), frozenset({ce(0, 2)}), "SRT T5 (paper Fig 13)",
    ),
    CondCase(
        "srt_t5_a2_a2_b2", "SELECT * WHERE A as x ; B as y FILTER y[id = x.id]",
        typed("A A B", id=[2, 2, 2]), frozenset({ce(0, 2), ce(1, 2)}),
        "SRT T5 (derived: both a's have id 2)",
    ),
    CondCase(
        "srt_t6_same_type_xyx",
        "SELECT * WHERE (X OR Y OR Z) as a ; (X OR Y OR Z) as b FILTER b[kind = a.kind]",
        typed("X Y X", kind=["X", "Y", "X"]), frozenset({ce(0, 2)}),
        "SRT T6 (paper Fig 12; the type is repeated in `kind`)",
    ),
    CondCase(
        "srt_t6_same_type_xyz",
        "SELECT * WHERE (X OR Y OR Z) as a ; (X OR Y OR Z) as b FILTER b[kind = a.kind]",
        typed("X Y Z", kind=["X", "Y", "Z"]), frozenset(), "SRT T6 (paper Fig 12)",
    ),
    CondCase(
        "srt_t7_any_match", "SELECT * WHERE A ; B", typed("A A B"),
        frozenset({ce(0, 2), ce(1, 2)}), "SRT T7 (derived from Def 44)",
    ),
    CondCase(
        "srt_t7_strict", "SELECT * WHERE A : B", typed("A A B"),
        frozenset({ce(1, 2)}), "SRT T7 (derived)",
    ),
    CondCase(
        "srt_t8_last_write_wins", T8, stock(("B", 1, 1, 1), ("B", 2, 1, 1), ("S", 2, 1, 1)),
        frozenset({ce(0, 1, 2), ce(1, 2)}),
        "SRT T8 (derived: only the last B, id 2, is compared; {1,3} is not contiguous)",
    ),
    CondCase(
        "srt_t8_table4", T8, T4_TABLE,
        frozenset({ce(0, 1, 2, 3), ce(1, 2, 3), ce(2, 3), ce(4, 5)}),
        "SRT T8 (derived: contiguous runs of B's ending right before an S)",
    ),
    CondCase(
        "srt_t8_table4_nested", T8_NESTED, T4_TABLE,
        frozenset({
            ce(0, 1, 2, 3), ce(1, 2, 3), ce(2, 3),
            ce(0, 1, 2, 3, 4, 5), ce(1, 2, 3, 4, 5), ce(2, 3, 4, 5), ce(4, 5),
        }),
        "SRT T8 nested e' (derived: an outer iteration continues right after an S)",
    ),
    CondCase(
        "srt_t10_window_below_walk",
        "SELECT * WHERE A as a ; B ; C as c FILTER c[id = a.id] WITHIN 1 EVENTS",
        typed("A B C A B C A B C", id=[1] * 9), frozenset(),
        "SRT T10 (paper A.7: seq3[1..2] never matches)",
    ),
    CondCase(
        "srt_t11_gaps_between_iterations",
        "SELECT * WHERE A as a ; B+ ; C as c FILTER c[id = a.id]",
        typed("A B B B C", id=[1] * 5),
        frozenset({ce(0, *x, 4) for x in [(1,), (2,), (3,), (1, 2), (1, 3), (2, 3), (1, 2, 3)]}),
        "SRT T11 (derived: every non-empty subset of the B's, 7 matches)",
    ),
    CondCase(
        "srt_t11_contiguous_iterations",
        "SELECT * WHERE A as a ; B:+ ; C as c FILTER c[id = a.id]",
        typed("A B B B C", id=[1] * 5),
        frozenset({ce(0, *x, 4) for x in [(1,), (2,), (3,), (1, 2), (2, 3), (1, 2, 3)]}),
        "SRT T11 (derived: contiguous iterations lose {1,2,4,5})",
    ),
    CondCase(
        "srt_t12_kill_on_accept",
        "SELECT * WHERE A as a ; (B as b)+ FILTER b[id = a.id]",
        typed("A B B", id=[1, 1, 1]),
        frozenset({ce(0, 1), ce(0, 2), ce(0, 1, 2)}),
        "SRT T12 (derived: a run that accepts must go on, {1,2,3} is a match)",
    ),
    CondCase(
        "srt_t14_example28",
        "SELECT * WHERE ((B as b FILTER b[price < 10]) OR (B as b FILTER b[price > 500])) : "
        "S as s FILTER s[id = b.id]",
        stock(("B", 1, 5, 0), ("S", 1, 0, 0), ("B", 2, 600, 0),
              ("S", 3, 0, 0), ("B", 3, 600, 0), ("S", 3, 0, 0)),
        frozenset({ce(0, 1), ce(4, 5)}),
        "SRT T14 (derived: ids 2 and 3 differ at k=4)",
    ),
    CondCase(
        "srt_t14_table1",
        "SELECT * WHERE ((B as b FILTER b[price < 10]) OR (B as b FILTER b[price > 500])) : "
        "S as s FILTER s[id = b.id]",
        T1, frozenset(), "SRT T14 (derived: every price is between 22 and 70)",
    ),
    CondCase(
        "srt_t15_guard_before_write",
        "SELECT * WHERE E as x : E as y FILTER y[price > x.price]",
        typed("E E E", price=[22, 24, 20]), frozenset({ce(0, 1)}),
        "SRT T15 (derived: 24 > 22; 20 > 24 fails)",
    ),
    CondCase(
        "srt_t15_prev_form",
        "SELECT * WHERE (E : E) as p FILTER p[price > prev(p).price]",
        typed("E E E", price=[22, 24, 20]), frozenset({ce(0, 1)}),
        "SRT T15 with prev(): the guard reads the register before the write",
    ),
    CondCase(
        "rising_prices_prev",
        "SELECT * WHERE E:+ as p FILTER p[price > prev(p).price]",
        typed("E E E E", price=[1, 3, 2, 5]),
        frozenset({ce(0), ce(1), ce(2), ce(3), ce(0, 1), ce(2, 3)}),
        "derived: contiguous strictly rising runs (a single event rises vacuously)",
    ),
    CondCase(
        "rising_prices_prev_gaps",
        "SELECT * WHERE SELL as s ; (BUY+ as b FILTER b[price > prev(b).price])",
        stock(("SELL", 1, 9, 0), ("BUY", 1, 3, 0), ("BUY", 1, 2, 0), ("BUY", 1, 4, 0)),
        frozenset({ce(0, 1), ce(0, 2), ce(0, 3), ce(0, 1, 3), ce(0, 2, 3)}),
        "derived: increasing subsequences of the BUY prices 3, 2, 4",
    ),
    CondCase(
        "not_between_related_events",
        "SELECT * WHERE T as x ; NOT(H) ; T as y FILTER y[id = x.id]",
        S1, frozenset(),
        "derived: the T's of id 1 (0, 1) have nothing between them, the T's of id 2 (2, 5) only H's",
    ),
    CondCase(
        "not_between_related_events_s2",
        "SELECT * WHERE T as x ; NOT(H) ; T as y FILTER y[id = x.id]",
        S2,
        frozenset({ce(0, 1, 2), ce(0, 1, 4), ce(0, 2, 4), ce(0, 1, 5), ce(0, 2, 5), ce(0, 4, 5),
                   ce(2, 4, 5)}),
        "derived: x, y T's of id 1 with a non-H event between them (the H at 3 cannot be it)",
    ),
    CondCase(
        "prev_unary_conjuncts_hold_on_every_event",
        "SELECT * WHERE E:+ as p FILTER p[price > 1 AND price > prev(p).price]",
        typed("E E E", price=[1, 3, 5]),
        frozenset({ce(1), ce(2), ce(1, 2)}),
        "decision (docs/semantics.md): only the conjunct reading prev(p) holds for the first "
        "event; price > 1 rules out every match containing event 0",
    ),
    # ----------------------------------------- AND / ALL (kleene's decisions, docs/semantics.md)
    CondCase(
        "all_with_condition_inside",
        "SELECT * WHERE (SELL as s ; BUY as b FILTER b[price < s.price]) ALL NEWS as n",
        stock(("SELL", 1, 10, 0), ("NEWS", 1, 0, 0), ("BUY", 1, 9, 0), ("BUY", 1, 11, 0)),
        frozenset({ce(0, 1, 2)}),
        "derived: the left side matches {0,2} only (11 < 10 fails), the NEWS at 1 falls inside it",
    ),
    CondCase(
        "and_with_conditions_on_both_sides",
        "SELECT * WHERE (SELL as s ; BUY+ as b FILTER b[price < s.price]) AND "
        "(SELL ; BUY as l FILTER l[volume > 100])",
        stock(("SELL", 1, 10, 0), ("BUY", 1, 9, 50), ("BUY", 1, 8, 200), ("BUY", 1, 12, 300)),
        frozenset({ce(0, 2)}),
        "derived: left {0,1}, {0,2}, {0,1,2}; right {0,2}, {0,3}; AND needs the same events",
    ),
    CondCase(
        "all_sides_have_registers_of_their_own",
        "SELECT * WHERE (A as a ; B as b FILTER b[v > a.v]) ALL (A as a ; C as c FILTER c[v < a.v])",
        typed("A A B C", v=[1, 5, 3, 4]),
        frozenset({ce(0, 1, 2, 3)}),
        "derived: left {0,2} (3 > 1), right {1,3} (4 < 5); the right side's a (at 1) comes "
        "between the left side's a and b, which must still read the left side's a",
    ),
    CondCase(
        "all_shares_an_event",
        "SELECT * WHERE (A as a ; B as b FILTER b[v > a.v]) ALL B as x",
        typed("A B", v=[1, 2]),
        frozenset({ce(0, 1)}),
        "derived: both sides take the B at 1 (ALL's matches may overlap)",
    ),
    CondCase(
        "condition_around_all_on_one_side",
        "SELECT * WHERE SELL as s ; (BUY as b ALL NEWS as n) FILTER b[price < s.price]",
        stock(("SELL", 1, 10, 0), ("BUY", 1, 12, 0), ("NEWS", 1, 0, 0), ("BUY", 1, 9, 0)),
        frozenset({ce(0, 2, 3)}),
        "derived: s is bound before the ALL; only the BUY at 3 is cheaper",
    ),
    CondCase(
        "unless_with_condition_on_the_left",
        "SELECT * WHERE (SELL as s ; BUY as b FILTER b[price < s.price]) UNLESS NEWS",
        stock(("SELL", 1, 10, 0), ("BUY", 1, 9, 0), ("NEWS", 1, 0, 0), ("BUY", 1, 8, 0)),
        frozenset({ce(0, 1)}),
        "derived: left {0,1} and {0,3}; the NEWS at 2 lies inside [0,3]",
    ),
    CondCase(
        "unless_with_condition_on_the_right",
        "SELECT * WHERE (SELL as s ; BUY as b FILTER b[price < s.price]) UNLESS "
        "(BUY as x ; BUY as y FILTER y[price > x.price])",
        stock(("SELL", 1, 10, 0), ("BUY", 1, 5, 0), ("BUY", 1, 7, 0), ("BUY", 1, 6, 0)),
        frozenset({ce(0, 1)}),
        "derived: left {0,1}, {0,2}, {0,3}; the rise {1,2} (5 -> 7) lies inside [0,2] and "
        "[0,3]; {1,3} too; nothing fits in [0,1]",
    ),
    CondCase(
        "unless_bounds_are_inclusive",
        "SELECT * WHERE (A as a ; B as b FILTER b[v > a.v]) UNLESS B",
        typed("A B", v=[1, 2]),
        frozenset(),
        "derived: the B at 1 is itself a match of the right side inside [0,1] (spec §11 #6)",
    ),
    # ---------------------------------------------------------------- RMA §10
    CondCase(
        "rma_1_no_filter", "SELECT * WHERE T as x ; H as y", S1,
        frozenset({ce(0, 3), ce(0, 4), ce(1, 3), ce(1, 4), ce(2, 3), ce(2, 4)}),
        "RMA #1 (stated in the paper)",
    ),
    CondCase(
        "rma_2_phi1", PHI1, S1, frozenset({ce(0, 3), ce(0, 4), ce(1, 3), ce(1, 4)}),
        "RMA #2 (paper, with its erratum: {2,4} goes too, ids 2 and 1)",
    ),
    CondCase("rma_3_phi1_prefix", PHI1, S1[:4], frozenset({ce(0, 3), ce(1, 3)}), "RMA #3"),
    CondCase("rma_6_window_2", PHI1 + " WITHIN 1 EVENTS", S1, frozenset(), "RMA #6 (derived)"),
    CondCase(
        "rma_7_window_3", PHI1 + " WITHIN 2 EVENTS", S1, frozenset({ce(1, 3)}),
        "RMA #7 (derived: {1,3} spans 3; {2,3} has different ids)",
    ),
    CondCase(
        "rma_8_window_4", PHI1 + " WITHIN 3 EVENTS", S1,
        frozenset({ce(0, 3), ce(1, 3), ce(1, 4)}), "RMA #8 (derived)",
    ),
    CondCase(
        "rma_9_window_5", PHI1 + " WITHIN 4 EVENTS", S1,
        frozenset({ce(0, 3), ce(0, 4), ce(1, 3), ce(1, 4)}), "RMA #9 (derived)",
    ),
    CondCase("rma_10_phi4_s1", PHI4, S1, frozenset(), "RMA #10 (no T below -40 or above 50)"),
    CondCase(
        "rma_phi4_s2", PHI4, S2, frozenset({ce(0, 2), ce(0, 4), ce(0, 5), ce(4, 5)}),
        "RMA note's S2 (derived: x is 0 or 4; y a later T with id 1; both x branches share b's register)",
    ),
    CondCase(
        "rma_theorem13_m_runs", PHI1,
        sensor(*([("T", 1, 0.0)] * 7), ("H", 1, 0.0)),
        frozenset({ce(i, 7) for i in range(7)}),
        "RMA Theorem 13 stress test: m T's then an H give m matches (truly multi-run)",
    ),
)

REJECTED: tuple[tuple[str, str, str], ...] = (
    # (name, query, a fragment of the expected error message)
    (
        "rma_5_phi3_unbounded",
        "SELECT * WHERE (T as x FILTER x[id = y.id])+ ; H as y",
        # read where y is bound (issue 18), where x's several events come before y
        "'x' is bound to several events, so the condition cannot be moved onto 'y'",
    ),
    (
        "srt_t8_iterated_register",
        "SELECT * WHERE (B as b)+ : S as s FILTER s[id = b.id]",
        "bound to several events",
    ),
    (  # x binds several events: the condition cannot be moved onto y (issue 18)
        "later_variable_iterated",
        "SELECT * WHERE (T as x)+ ; H as y FILTER x[id = y.id]",
        "cannot be moved onto 'y'",
    ),
    ("unknown_variable", "SELECT * WHERE T as x ; H as y FILTER y[id = z.id]", "unknown variable"),
    ("one_side_of_or", "SELECT * WHERE (T as x OR H) ; H as y FILTER y[id = x.id]", "every match"),
    ("prev_of_other", "SELECT * WHERE T as x ; H as y FILTER y[id = prev(x).id]", "prev(x)"),
    ("unknown_function", "SELECT * WHERE T as x ; H as y FILTER y[id = last(x).id]", "unknown function"),
    ("same_event", "SELECT * WHERE (T as x) as y FILTER y[id = x.id]", "not bound yet"),
    (
        "across_all",
        # one event each is evaluated on the second to arrive (issue 18); several are not
        "SELECT * WHERE (T as x ALL (H as y)+) FILTER y[id = x.id]",
        "different sides of ALL",
    ),
    (
        "across_and",
        "SELECT * WHERE (T as x ; H) AND (T ; (H as y)+) FILTER y[id = x.id]",
        "different sides of AND",
    ),
)
