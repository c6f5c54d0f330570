"""The engine against the brute-force oracle on random queries and streams.

Every generated case is a random query (all implemented constructs: `;`,
`:`, OR, `+`, `:+`, AS, FILTER with unary predicates, projection, PARTITION
BY, windows, CONSUME BY, LIMIT) rendered to CEQL text, and a random stream of
up to 30 events.  The engine must output exactly the oracle's set of complex
events, each once.  Hypothesis draws new cases on every run (no fixed seed),
so the suite explores more of the space over time.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from against_oracle import (
    SUPPORTED_CEL,
    Case,
    aimed,
    check_against_oracle,
    check_push_and_batches,
)
from generators import STREAM_KEY, cases


# LIMIT changed the result in 159 of 439 cases (36%) at the last run, since a LIMIT is no longer
# drawn for NEXT and LAST (which keep one match per end: 25% before); the others 49-75%.
@aimed("WITHIN", "PARTITION BY", "CONSUME BY", "LIMIT")
@settings(
    # 2,000 before the cases grew to 30-40 events (issue 16); 600 before the LIMIT cases got
    # planted streams, which cost more (seed 1, side by side: 57.2 s CPU on main, 85.8 s at 600).
    max_examples=400,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(cases())
def test_engine_equals_oracle(case: Case) -> None:
    check_against_oracle(case)


# Every feature asserted at a third, beyond sampling noise (share_bounds).  The stream is drawn
# from the query (generators.planted_streams: two or three matches of the pattern planted in it),
# so that a strategy, UNLESS or LIMIT has matches to choose from; see docs/reliability.md for the
# shares on seeds 1-3.
@aimed("STRICT", "NEXT", "LAST", "MAX", "UNLESS", "WITHIN", "PARTITION BY", "CONSUME BY", "LIMIT")
@settings(
    # 2,000 before the cases grew to 30-40 events (issue 16), 1,200 before the streams were
    # planted: a planted case costs about 1.5 times a random one (test_engine_equals_oracle's
    # CPU time), so 800 keep the time about flat (estimated, not measured side by side).
    max_examples=800,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(cases(full_cel=SUPPORTED_CEL, planted=True))
def test_engine_equals_oracle_whole_language(case: Case) -> None:
    """800 cases per run over the whole language: every operator and strategy.

    Prints (``pytest -s``) and asserts how often each strategy, UNLESS, the window, PARTITION BY
    CONSUME BY and LIMIT changed the result (tests/against_oracle.py, ``aimed``).
    """
    check_against_oracle(case)


# 400 cases (300 before): each of the nine features measured on 20 cases at least (STRICT on 17
# of 300 in one probe).
@aimed("STRICT", "NEXT", "LAST", "MAX", "UNLESS", "WITHIN", "PARTITION BY", "CONSUME BY", "LIMIT")
@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(cases(full_cel=SUPPORTED_CEL, with_streams=True, planted=True))
def test_engine_equals_oracle_several_streams(case: Case) -> None:
    """Events of three named streams; FROM lists some of them; atoms may be qualified ``S>E``."""
    check_against_oracle(case, stream_key=STREAM_KEY)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_one_event_and_batch_apis_agree(case: Case) -> None:
    """push(event), push_batch(...) in uneven slices and run(table) give the same output."""
    check_push_and_batches(case, [1, 4, 9, 17])
