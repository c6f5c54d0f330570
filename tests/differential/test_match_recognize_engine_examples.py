"""Every worked example of the spec note (E1-E17) and every other fact of the reference's
tests, run through the engine and the public API instead of the reference evaluator.

The test functions are those of ``test_match_recognize_reference.py``; an autouse
fixture replaces the ``match_recognize`` they call with :func:`kleene.match_recognize`
(the linear-time engine), so each published input/output pair checks the engine.
Left out: the tests of the reference's own machinery (step budget, deep stack, the
docs snippets that call the reference by name).
"""

from __future__ import annotations

from typing import Any

import pytest
import test_match_recognize_reference as reference_tests
from test_match_recognize_reference import *  # noqa: F403 - the tests, re-collected here

import kleene

REFERENCE_ONLY = (
    "test_runaway_backtracking_hits_the_step_budget",
    "test_long_matches_run_on_a_deep_stack_and_too_long_ones_are_an_error",
    "test_small_inputs_fall_back_to_the_deep_stack_when_the_search_nests_deeply",
    "test_the_readme_and_docs_examples_run",
)
for _name in REFERENCE_ONLY:
    globals().pop(_name, None)


def engine(source: Any, query: Any, **_: Any) -> Any:
    return kleene.match_recognize(source, query)


@pytest.fixture(autouse=True)
def _through_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reference_tests, "match_recognize", engine)


def test_the_examples_are_collected_here() -> None:
    names = [n for n in globals() if n.startswith("test_e")]
    assert len(names) >= 25
    assert reference_tests.match_recognize is engine
