"""NEXT's match reading: the compiled twin (kleene.runtime._nxt) against the Python original.

On the iteration pattern whose NEXT matches hold every ``B`` of the window (groups of starts
merge, so the walks switch chains at recorded moves), with and without PARTITION BY, under
windows short and long: both give the same complex events, in the same order.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

import kleene
from kleene import native
from kleene.runtime import nxt

_nxt = native.load("kleene.runtime._nxt")


@pytest.mark.skipif(_nxt is None, reason="the compiled twins are not built here")
@pytest.mark.parametrize("window", [3, 40, 400])
@pytest.mark.parametrize("partition", ["", " PARTITION BY [k]"])
def test_twin_reads_the_matches_python_reads(window: int, partition: str) -> None:
    rng = random.Random(window)
    rows = [{"type": rng.choice("ABCD"), "v": rng.randrange(10), "k": rng.randrange(3)} for _ in range(3_000)]
    table = pa.Table.from_pylist(rows)
    text = (f"SELECT NEXT * FROM S WHERE A as a ; B+ as b ; C as c FILTER a[v > 2] AND c[v < 8]"
            f"{partition} WITHIN {window} EVENTS")
    found = {}
    for name, walk in (("python", nxt.PURE_WALK_MATCH), ("compiled", _nxt.walk_match)):  # type: ignore[union-attr]
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(nxt, "WALK_MATCH", walk)
            found[name] = [(m.start, m.end, m.positions) for m in kleene.compile(text).matches(table.to_batches(500))]  # type: ignore[union-attr]
    assert found["python"] == found["compiled"]
    assert len(found["python"]) > 10
    assert max(len(p) for _, _, p in found["python"]) >= min(window, 10)  # long matches were read


@pytest.mark.skipif(_nxt is None, reason="the compiled twins are not built here")
def test_twin_refuses_what_is_not_a_chain() -> None:
    with pytest.raises(TypeError):
        _nxt.walk_match([], (1, 0, None), 2)  # type: ignore[union-attr]
    assert _nxt.walk_match([], [1, 0, [0, 0, None]], 2) == nxt.PURE_WALK_MATCH([], [1, 0, [0, 0, None]], 2) == (0, 1, 2)  # type: ignore[union-attr]
