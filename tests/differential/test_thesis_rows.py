"""The CEL thesis's §13 rows not covered elsewhere (#14 as written, #15, #16, #24), on engine and oracle.

The other rows are in ``tests/paper_cases.py`` (#1, #2, #3, #5, #17) and
``tests/differential/test_oracle_cel.py`` (``THESIS_TABLE``: #4, #6-#13, #18-#21).
The expected outputs are the thesis's (spec §13, from the text or derived by
hand there), never the oracle's.  Where kleene answers otherwise on purpose,
the test pins kleene's answer and the thesis's next to it, and
docs/semantics.md ("Safe formulas and filters across `+`") says why.
"""

from __future__ import annotations

import pytest

import kleene
from kleene.language.parser import parse_query
from kleene.reference.oracle import evaluate, evaluate_pattern
from kleene.reference.semantics import safety_violations
from paper_cases import THESIS, ComplexEvent, m


def engine(text: str) -> set[ComplexEvent]:
    q = kleene.compile(text)
    got = [(c.start, c.end, c.positions) for c in q.matches([dict(e) for e in THESIS])]
    assert len(got) == len(set(got))
    return set(got)


def oracle(text: str) -> set[ComplexEvent]:
    return evaluate(parse_query(text), THESIS)


# ---------------------------------------------------------------- #14: φ4

PHI4_EXPECTED = {m(3, 4, 6, 7), m(3, 4, 7), m(3, 6, 7)}
"""Spec §13 #14: φ4 = [H AS x; (T AS y FILTER y.id = x.id)+; H AS z]
FILTER (x.hum < 30 ∧ z.hum > 60 ∧ x.id = z.id) on the running stream."""

PHI4_AS_WRITTEN = (
    "SELECT * FROM S WHERE (H AS x ; (T AS y FILTER y[id = x.id])+ ; H AS z) "
    "FILTER x[value < 30] AND z[value > 60 AND id = x.id]"
)
PHI4_KLEENE = (
    "SELECT * FROM S WHERE (H AS x ; (T AS y)+ ; H AS z) "
    "FILTER y[id = x.id] AND x[value < 30] AND z[value > 60 AND id = x.id]"
)


def test_14_phi4_as_written_gives_the_thesis_result() -> None:
    """The thesis lets a FILTER inside ``+`` read ``x`` bound outside it (φ4 is well-formed,
    §5.1), passing the enclosing valuation down.  kleene evaluates the condition at the
    nearest pattern binding ``x`` (issue 18: the oracle defers it there; the engine lifts it,
    kleene.language.scopes): the thesis's 3 complex events on both."""
    assert kleene.compile(PHI4_AS_WRITTEN).engine == "registers"
    assert engine(PHI4_AS_WRITTEN) == PHI4_EXPECTED
    assert oracle(PHI4_AS_WRITTEN) == PHI4_EXPECTED


PHI6_AS_WRITTEN = (
    "SELECT * FROM S WHERE T AS x ; ((T AS y FILTER x[value >= 40]) OR (H AS y FILTER x[value < 40]))"
)
PHI6_EXPECTED = {m(1, 4), m(1, 5), m(1, 6), m(4, 5), m(4, 6), m(5, 6), m(6, 7), m(6, 8)}
"""Spec §13 #17 (derived there): φ6, a condition on the outer ``x`` choosing the branch."""


def test_17_phi6_outside_lp_normal_form_gives_the_thesis_result() -> None:
    """φ6 is not in LP normal form (a FILTER on ``x`` inside the OR); the thesis rewrites it
    (Thm 5.3), kleene evaluates ``x[...]`` where ``x`` is bound, per branch."""
    assert engine(PHI6_AS_WRITTEN) == PHI6_EXPECTED
    assert oracle(PHI6_AS_WRITTEN) == PHI6_EXPECTED
    lp = (
        "SELECT * FROM S WHERE ((T AS x FILTER x[value >= 40]) ; T AS y) "
        "OR ((T AS x FILTER x[value < 40]) ; H AS y)"
    )
    assert engine(lp) == oracle(lp) == PHI6_EXPECTED


def test_14_phi4_with_the_condition_on_the_whole_iteration_gives_the_thesis_result() -> None:
    """``y[id = x.id]`` on the sequence: every event of ``y`` (every iterated T) has x's id."""
    assert kleene.compile(PHI4_KLEENE).engine == "registers"
    assert engine(PHI4_KLEENE) == PHI4_EXPECTED
    assert oracle(PHI4_KLEENE) == PHI4_EXPECTED


# ------------------------------------------------------- #15: φ5, not well-formed

PHI5 = "SELECT * FROM S WHERE (H AS x) FILTER y[value <= 30]"


def test_15_phi5_not_well_formed_is_rejected() -> None:
    """Spec §13 #15: y is never bound, so the parser must reject φ5 (thesis §5.1)."""
    with pytest.raises(kleene.QueryError) as info:
        kleene.compile(PHI5)
    assert "y" in str(info.value)
    assert (info.value.line, info.value.column) == (1, PHI5.index("y[") + 1)


# ------------------------------------------------------------ #16: ψ, unsafe

PSI = "SELECT * FROM S WHERE T AS x ; T AS x"
T_PAIRS = {m(1, 4), m(1, 5), m(1, 6), m(4, 5), m(4, 6), m(5, 6)}
"""The pairs of T events of the running stream (T at 1, 4, 5 and 6)."""


def test_16_psi_is_unsafe_by_the_thesis_definition() -> None:
    (node, shared), = safety_violations(parse_query(PSI).where)
    assert shared == {"x"}


def test_16_psi_gives_every_pair_of_t_events_with_x_bound_to_both() -> None:
    """The thesis: ⟦ψ⟧(S) = ∅, "x cannot be assigned to two different positions" (ν(x) is
    one position).  kleene follows CORE, where a variable holds a *set* of positions
    (CORE §2, valuations): ψ is every pair of T events, x bound to both."""
    assert engine(PSI) == T_PAIRS
    assert oracle(PSI) == T_PAIRS
    assert engine("SELECT x FROM S WHERE T AS x ; T AS x") == T_PAIRS  # x holds both events
    assert engine("SELECT * FROM S WHERE T AS x ; T AS y") == T_PAIRS  # the safe renaming


def test_16_psi_has_no_valuation_of_the_thesis_kind() -> None:
    """The thesis's ∅ is kleene's result restricted to the thesis's valuations: in every
    valuation of ψ, x holds two positions, so none binds x to one position as ν does."""
    vals = evaluate_pattern(parse_query(PSI).where, THESIS)
    assert {(v.start, v.end) for v in vals} == {(s, e) for s, e, _ in T_PAIRS}
    assert {len(v.get("x")) for v in vals} == {2}
    assert [v for v in vals if len(v.get("x")) == 1] == []


# ------------------------------------------------------ #24: compiled φ'1

PHI1_LP = (
    "(T AS x FILTER x[value > 40 AND id = 0]) ; (H AS y FILTER y[value <= 25 AND id = 0])"
)


def test_24_compiled_phi1_lp_has_three_states_and_runs_as_algorithms_1_and_2() -> None:
    """Spec §13 #24: the thesis's Thm 7.1 automaton of φ'1 has 4 states (7 transitions after
    ε-removal); Algorithm 1 on it gives #1, Algorithm 2 (NXT) gives #7.  kleene compiles with
    CORE's appendix A construction: no skip loop on the initial state (a run may start at
    every event) and no state of its own for the end of the left operand of ``;`` (its
    marked transition enters the right operand's skip-looping start), so 3 states and 3
    transitions; both are linear in the formula (φ'1 is safe and in LP form)."""
    everything = kleene.compile(f"SELECT * FROM S WHERE {PHI1_LP}")
    cea = everything.plan.cea
    assert cea is not None and everything.engine == "tecs"
    assert (cea.num_states, len(cea.transitions)) == (3, 3)
    assert "complex event automaton, 3 states, 3 transitions" in everything.explain()
    skip_loops = [t for t in cea.transitions if t.source == t.target and not t.marked]
    assert len(skip_loops) == 1 and skip_loops[0].source != cea.initial
    algorithm_1 = {m(1, 2), m(1, 8), m(5, 8)}  # #1
    algorithm_2 = {m(1, 2), m(1, 8)}  # #7, the valuation-free NXT
    assert engine(f"SELECT * FROM S WHERE {PHI1_LP}") == algorithm_1
    assert oracle(f"SELECT * FROM S WHERE {PHI1_LP}") == algorithm_1
    assert engine(f"SELECT NEXT * FROM S WHERE {PHI1_LP}") == algorithm_2
    assert oracle(f"SELECT NEXT * FROM S WHERE {PHI1_LP}") == algorithm_2
