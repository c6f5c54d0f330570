"""The worked examples of the papers (tests/paper_cases.py), run on the real engine."""

from __future__ import annotations

import pyarrow as pa
import pytest

import kleene
from paper_cases import CASES, Case


def run_engine(case: Case) -> set[tuple[int, int, tuple[int, ...]]]:
    events = [dict(e) for e in case.events]
    kwargs = {}
    if case.times is not None:
        for e, t in zip(events, case.times):
            e["__time"] = t
        kwargs = {"time_column": "__time", "time_unit": "ns"}
    q = kleene.compile(case.query, **kwargs)  # type: ignore[arg-type]
    got = [(m.start, m.end, m.positions) for m in q.matches(pa.Table.from_pylist(events))]
    assert len(got) == len(set(got)), "a complex event was output twice"
    return set(got)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_paper_case_on_engine(case: Case) -> None:
    assert run_engine(case) == set(case.expected)
