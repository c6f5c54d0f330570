"""SELECT NEXT on its own evaluator (runtime/nxt.py) against the oracle, and its paper cases."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings

from against_oracle import SUPPORTED_CEL, Case, aimed, check_against_oracle
from generators import cases
from kleene.language import ast
from kleene.runtime import nxt


@aimed("NEXT")
@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(full_cel=SUPPORTED_CEL, strategy="NEXT"))
def test_next_equals_oracle(case: Case) -> None:
    query, events, times = case
    query = replace(query, select=ast.Select("NEXT", None))
    check_against_oracle((query, events, times), aim_at=["NEXT"])


@aimed()
@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))  # 3,000 on shorter streams
@given(cases(full_cel=SUPPORTED_CEL, strategy="NEXT"))
def test_next_with_chains_cut_at_every_step(case: Case) -> None:
    """Cutting the chains below the window at every event never cuts a match short.

    (What NEXT changes is measured by test_next_equals_oracle; here only skips are counted.)
    """
    query, events, times = case
    query = replace(query, select=ast.Select("NEXT", None))
    saved = nxt.SWEEP_STEPS
    nxt.SWEEP_STEPS = 1
    try:
        check_against_oracle((query, events, times), aim_at=[])
    finally:
        nxt.SWEEP_STEPS = saved
