"""The compiled twins (kleene/native.py) against their pure-Python originals.

The end-to-end comparisons are in test_bulk_output.py (every test there runs with the twins and
with the originals, and checks both against the readable path).  Here: that the twins are built
where a C compiler is, the walk on random engine-made tECS nodes with every window bound and
limit, deep paths and many branches (the scratch space grows), Algorithm 1's step on random
queries and streams, and the JSON Lines layout's edge cases (negative numbers, bad indices
rejected, not read out of bounds).
"""

from __future__ import annotations

import shutil
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kleene
from against_oracle import SUPPORTED_CEL, Case, compile_case, pieces, prepared
from generators import cases
from kleene import native
from kleene.io import jsonl_bulk
from kleene.io.writers import JsonlWriter
from kleene.runtime import engine, enumeration, evaluator
from kleene.runtime.enumeration import Columns
from kleene.runtime.evaluator import Evaluator
from kleene.runtime.tecs import BOTTOM, OUTPUT, UNION

_step = native.load("kleene.runtime._step")
_walk = native.load("kleene.runtime._walk")
_jsonl = native.load("kleene.io._jsonl")
needs_twins = pytest.mark.skipif(
    _step is None or _walk is None or _jsonl is None, reason="the compiled twins are not built here"
)


def test_twins_are_built_where_a_compiler_is() -> None:
    """`pip install -e .` builds them (setup.py); a silent fallback would hide a slow install."""
    if native.PURE_PYTHON or not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("pure Python asked for, or no C compiler")
    assert native.compiled() == dict.fromkeys(native.TWINS, True)
    assert Columns.add_node is not enumeration.PURE_ADD_NODE
    assert Evaluator.step is not evaluator.PURE_STEP
    assert engine.LOOP is not None
    assert jsonl_bulk._jsonl is not None


def both_walks(node: Any, tau: int | float, limit: int) -> None:
    got = []
    for walk in (enumeration.walk, _walk.walk):  # type: ignore[union-attr]
        cols = (array("q"), array("q"), array("q"))
        count = walk(node, tau, limit, *cols)
        got.append((count, *(c.tolist() for c in cols)))
    assert got[0] == got[1]


@needs_twins
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(full_cel=SUPPORTED_CEL), st.integers(1, 5))
def test_walk_twin_on_engine_nodes(case: Case, limit: int) -> None:
    """Every node the engine enumerates, walked by both with its own bound and with others."""
    calls: list[tuple[Any, Any]] = []
    real = Columns.add_node

    def spy(cols: Columns, node: Any, tau: Any, *rest: Any) -> int:
        calls.append((node, tau))
        return real(cols, node, tau, *rest)

    ast_query, table, _ = prepared(case)
    query = compile_case(ast_query)
    Columns.add_node = spy  # type: ignore[method-assign]
    try:
        for _ in query.match_batches(table):
            pass
    finally:
        Columns.add_node = real  # type: ignore[method-assign]
    for node, tau in calls:
        for bound in (tau, float(tau) - 0.5, tau + 1):
            if node[1] >= bound:
                both_walks(node, bound, limit)
                both_walks(node, bound, 1 << 62)


@needs_twins
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(full_cel=SUPPORTED_CEL), st.lists(st.integers(0, 40), max_size=3))
def test_step_twin_gives_the_same_complex_events(case: Case, cuts: list[int]) -> None:
    """Algorithm 1 with the compiled step and with the pure one: the same complex events in the
    same order (the readable path, which creates its own engine each run)."""
    ast_query, table, _ = prepared(case)
    query = compile_case(ast_query)
    compiled = list(query.matches(pieces(table, cuts)))
    Evaluator.step = evaluator.PURE_STEP  # type: ignore[method-assign]
    try:
        pure = list(query.matches(pieces(table, cuts)))
    finally:
        Evaluator.step = _step.step  # type: ignore[union-attr, method-assign]
    assert compiled == pure


@needs_twins
def test_walk_twin_grows_its_scratch_space() -> None:
    """Paths and pending branches longer than the first allocation (64)."""
    _walk._release()  # type: ignore[union-attr]
    node: Any = (BOTTOM, 0, 0)
    for pos in range(1, 300):
        node = (OUTPUT, 0, pos, node)
    both_walks(node, 0, 1 << 62)
    # 200 runs started at 200, 199, ..., 1: a union list of 200 entries, merged.
    runs = [(OUTPUT, t, t, (BOTTOM, t, t)) for t in range(200, 0, -1)]
    merged: Any = runs[-1]
    for r in reversed(runs[:-1]):
        merged = [UNION, r[1], r, merged]
    both_walks(merged, 0, 1 << 62)
    both_walks(merged, 150, 1 << 62)
    both_walks(merged, 150.5, 7)
    both_walks((OUTPUT, 1 << 40, -5, (BOTTOM, 1 << 40, -(1 << 40))), -(1 << 62), 3)


@needs_twins
def test_walk_twin_rejects_what_is_not_a_node() -> None:
    with pytest.raises(TypeError):
        _walk.walk((OUTPUT, 0, 1, {"not": "a node"}), 0, 5, array("q"), array("q"), array("q"))  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        _walk.walk((BOTTOM, 0, 1), 0, 5, array("i"), array("q"), array("q"))  # type: ignore[union-attr]
    with pytest.raises(IndexError):  # an output node without its child
        _walk.walk((OUTPUT, 0, 1), 0, 5, array("q"), array("q"), array("q"))  # type: ignore[union-attr]


def ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


@needs_twins
def test_lines_twin_formats_and_checks() -> None:
    rows = [b'{"a": 1}', b'{"a": "\xc3\xa9"}', b""]
    row_offsets = np.cumsum([0, *map(len, rows)]).astype(np.int64)
    data = np.frombuffer(b"".join(rows), dtype=np.uint8)
    lines = _jsonl.Lines(  # type: ignore[union-attr]
        ints(-12, 0, 9), ints(-1, 10**18, -(2**63)), ints(0, 2, 2, 3), ints(-7, 0, 5),
        ints(0, 1, 2), row_offsets, data, [b"{H ", b"{G "], ints(0, 1, 0), [b"]}\n"], None,
    )
    text = lines.text()
    assert lines.line_offsets.tolist()[0] == 0 and lines.line_offsets[-1] == len(text)
    assert text.decode().splitlines(keepends=True) == [
        '{H -12, "end": -1, "positions": [-7, 0], "events": [{"a": 1}, {"a": "é"}]}\n',
        '{G 0, "end": 1000000000000000000, "positions": [], "events": []}\n',
        '{H 9, "end": -9223372036854775808, "positions": [5], "events": []}\n',
    ]
    # Written in pieces of whole lines (a line longer than a piece goes alone): the same bytes.
    for chunk in (1, 70, 150, 1 << 20):
        parts: list[bytes] = []
        assert lines.write_to(lambda view, parts=parts: parts.append(bytes(view)), chunk) == len(text)
        assert b"".join(parts) == text
        assert all(p.endswith(b"\n") for p in parts)
    bad = dict(heads=[b"{"], head_of=None, tails=[b"}"], tail_of=None)
    with pytest.raises(IndexError):  # a row that is not there
        _jsonl.Lines(ints(0), ints(0), ints(0, 1), ints(0), ints(3), row_offsets, data, **bad)  # type: ignore[union-attr]
    with pytest.raises(IndexError):  # a head that is not there
        _jsonl.Lines(ints(0), ints(0), ints(0, 0), ints(), ints(), row_offsets, data,  # type: ignore[union-attr]
                     [b"{"], ints(1), [b"}"], None)
    with pytest.raises(ValueError):  # offsets past the positions
        _jsonl.Lines(ints(0), ints(0), ints(0, 2), ints(0), ints(0), row_offsets, data, **bad)  # type: ignore[union-attr]
    with pytest.raises(ValueError):  # offsets that go back
        _jsonl.Lines(ints(0, 0), ints(0, 0), ints(0, 2, 1), ints(0, 0), ints(0, 0), row_offsets, data, **bad)  # type: ignore[union-attr]
    with pytest.raises(ValueError):  # rows past their data
        _jsonl.Lines(ints(0), ints(0), ints(0, 1), ints(0), ints(0), ints(0, 99), data, **bad)  # type: ignore[union-attr]


@needs_twins
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.text(max_size=4))), max_size=30),
       st.lists(st.text(max_size=3), min_size=3, max_size=3))
def test_join_twin_is_the_element_wise_join(values: list[tuple[str, str | None]], constants: list[str]) -> None:
    left = pa.array([a for a, _ in values], pa.string())
    right = pa.array([b or "" for _, b in values], pa.string())
    if len(values) > 2:  # arrays that start inside their buffers
        left, right = left.slice(1), right.slice(1)
    buffers = [jsonl_bulk._text_buffers(t) for t in (left, right)]
    got, offsets = _jsonl.join(  # type: ignore[union-attr]
        [c.encode() for c in constants], [o for o, _ in buffers], [d for _, d in buffers]
    )
    expected = jsonl_bulk._concat([constants[0], left, constants[1], right, constants[2]], len(left))
    joined = pa.LargeStringArray.from_buffers(len(left), pa.py_buffer(offsets), pa.py_buffer(got))
    assert joined.to_pylist() == expected.to_pylist()


def test_pure_python_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "PURE_PYTHON", True)
    assert native.load("kleene.runtime._walk") is None
    assert native.compiled() == dict.fromkeys(native.TWINS, False)
    monkeypatch.setattr(native, "PURE_PYTHON", False)
    assert native.load("kleene.no_such_module") is None


def test_compiled_and_pure_give_the_same_jsonl(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One query through both twins and both originals, into a file (Lines.write_to on the
    compiled side) and as one text: the same bytes."""
    rows = [{"type": t, "x": i * 0.5, "s": "ü" * (i % 3), "k": i // 2 % 3} for i, t in enumerate("ABAB" * 50)]
    batches = [pa.RecordBatch.from_pylist(rows[i : i + 64]) for i in range(0, len(rows), 64)]
    q = kleene.compile("SELECT * FROM S WHERE A as a; B as b PARTITION BY [k] WITHIN 12 EVENTS")

    def lines(name: str) -> tuple[bytes, bytes]:
        with JsonlWriter(tmp_path / name) as writer:
            for b in q.match_batches(batches, events=True):
                writer.write_batch(b)
        text = b"".join(bytes(jsonl_bulk.json_bytes(b)) for b in q.match_batches(batches, events=True))
        return (tmp_path / name).read_bytes(), text

    compiled = lines("compiled.jsonl")
    monkeypatch.setattr(Columns, "add_node", enumeration.PURE_ADD_NODE)
    monkeypatch.setattr(jsonl_bulk, "_jsonl", None)
    assert lines("pure.jsonl") == compiled
    assert compiled[0] == compiled[1]
    assert compiled[0].count(b"\n") == len(list(q.matches(batches))) > 0
