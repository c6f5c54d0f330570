"""The bulk path of JSON Lines: a whole :class:`~kleene.results.MatchBatch` laid out at once.

:func:`json_bytes` and :func:`json_lines` give, byte for byte, the lines that
:meth:`kleene.io.writers.JsonlWriter.write` gives for the batch's complex events: each input row
is rendered as a JSON object once (:func:`json_rows`, column by column with
the encoders ``json.dumps`` itself uses), and the lines are assembled by
Arrow's string kernels (``take`` of the rendered rows, ``binary_join`` per
complex event), with no Python object per complex event.  Where it is built,
``kleene.io._jsonl`` (:mod:`kleene.native`) lays the rows and the lines out
instead, one pass each, with the same bytes (:func:`compiled_lines`, which
:class:`~kleene.io.writers.JsonlWriter` writes piece by piece).
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.io.json_text import dumps
from kleene.native import load
from kleene.results import partition_labels

if TYPE_CHECKING:
    from kleene.results import MatchBatch

def json_values(arr: pa.Array | pa.ChunkedArray, *, ensure_ascii: bool = False) -> pa.Array:
    """Each value of ``arr`` as JSON text, exactly as :func:`dumps` renders it in a dict.

    Integers, booleans and nulls are cast by Arrow; floats go through
    ``float.__repr__`` and strings through the encoder of :mod:`json` (both
    C functions mapped over the column); any other type through :func:`dumps`
    per value.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = pc.cast(arr, t.value_type)
        t = arr.type
    if pa.types.is_null(t):
        return pa.array(["null"] * len(arr), pa.string())
    if pa.types.is_integer(t):
        return pc.fill_null(pc.cast(arr, pa.string()), "null")
    if pa.types.is_boolean(t):
        return pc.fill_null(pc.if_else(arr, "true", "false"), "null")
    if pa.types.is_floating(t):
        return _json_floats(arr if t == pa.float64() else pc.cast(arr, pa.float64()))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        # Few distinct values in most event data (names, types): encode each once.
        encoded = pc.dictionary_encode(arr)
        encode = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
        texts = pa.array(list(map(encode, encoded.dictionary.to_pylist())), pa.string())
        return pc.fill_null(pc.take(texts, encoded.indices), "null")
    return pa.array([dumps(v, ensure_ascii=ensure_ascii) for v in arr.to_pylist()], pa.string())


def _json_floats(arr: pa.Array) -> pa.Array:
    """float64 values as ``float.__repr__`` writes them; NaN, infinities and nulls as null.

    Arrow's cast writes the same shortest digits as ``repr`` but not the same
    notation everywhere (``1`` for ``1.0``, ``1e+15``, ``0.00001``).  Where
    ``repr`` is positional (``1e-4 <= |x| < 1e16``, or 0) and Arrow's text is
    too, adding ``.0`` to a text without a point gives ``repr``; the other
    values (scientific notation either way) go through ``repr`` itself.
    """
    finite = pc.fill_null(pc.is_finite(arr), False)
    texts = pc.cast(arr, pa.string())
    size = pc.abs(arr)
    positional = pc.or_(
        pc.and_(pc.greater_equal(size, 1e-4), pc.less(size, 1e16)), pc.equal(size, 0.0)
    )
    arrow_positional = pc.invert(pc.match_substring(texts, "e"))
    fast = pc.fill_null(pc.and_(finite, pc.and_(positional, arrow_positional)), False)
    pointless = pc.and_(fast, pc.invert(pc.match_substring(texts, ".")))
    if pc.any(pointless).as_py():  # whole numbers (most float columns have none)
        texts = pc.if_else(pointless, pc.binary_join_element_wise(texts, ".0", ""), texts)
    slow = pc.and_(finite, pc.invert(fast))
    if pc.any(slow).as_py():
        index = np.flatnonzero(slow.to_numpy(zero_copy_only=False))
        values = pc.take(arr, pa.array(index)).to_pylist()
        fixed = texts.to_pylist()
        for i, v in zip(index.tolist(), values):
            fixed[i] = float.__repr__(v)
        texts = pa.array(fixed, pa.string())
    if pc.all(finite).as_py():  # no NaN, infinity or null to write as null
        return texts
    return pc.if_else(finite, texts, "null")


def json_rows(batch: pa.RecordBatch | pa.Table, *, ensure_ascii: bool = False) -> pa.Array:
    """Each row of ``batch`` as a JSON object (``dumps`` of its dict), column by column."""
    n = batch.num_rows
    if batch.num_columns == 0:
        return pa.array(["{}"] * n, pa.string())
    values = _rendered_columns(batch, ensure_ascii)
    parts: list[Any] = []
    for i, name in enumerate(batch.schema.names):
        key = dumps(name, ensure_ascii=ensure_ascii)
        parts.append(("{" if i == 0 else ", ") + key + ": ")
        parts.append(values[i])
    parts.append("}")
    if _jsonl is None:
        return _concat(parts, n)
    # The compiled twin of _concat: one pass, no intermediate per pair of pieces.
    columns = [_text_buffers(p) for p in parts[1::2]]
    text, row_offsets = _jsonl.join(
        [c.encode() for c in parts[0::2]], [o for o, _ in columns], [d for _, d in columns]
    )
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(row_offsets), pa.py_buffer(text))


PARALLEL_ROWS = 16_384
"""From this many rows on, :func:`json_rows` renders the floating-point columns in a thread."""


def _rendered_columns(batch: pa.RecordBatch | pa.Table, ensure_ascii: bool) -> list[pa.Array]:
    """:func:`json_values` of every column of ``batch``.

    Floating-point columns cost the most (Arrow's cast to text, then the checks of
    :func:`_json_floats`; about half of a stock event's row): on a large batch with other
    columns they are rendered in a thread while this one renders the rest.  Arrow's kernels
    run without the GIL, so the two share the machine's cores; the values are the same.
    """
    columns = [batch.column(i) for i in range(batch.num_columns)]
    floats = [i for i, c in enumerate(columns) if pa.types.is_floating(c.type)]
    out: list[Any] = [None] * len(columns)
    if batch.num_rows < PARALLEL_ROWS or not floats or len(floats) == len(columns):
        floats = []
    error: list[BaseException] = []

    def render_floats() -> None:
        try:
            for i in floats:
                out[i] = json_values(columns[i], ensure_ascii=ensure_ascii)
        except BaseException as exc:  # noqa: BLE001 - raised below, in the caller
            error.append(exc)

    helper = threading.Thread(target=render_floats, name="kleene-json-floats") if floats else None
    if helper is not None:
        helper.start()
    try:
        for i, column in enumerate(columns):
            if i not in floats:
                out[i] = json_values(column, ensure_ascii=ensure_ascii)
    finally:
        if helper is not None:
            helper.join()
    if error:
        raise error[0]
    return out


def _text_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string array's int64 offsets (one per value, and the end) and UTF-8 bytes, for the
    compiled twins (no copy of the bytes)."""
    arr = pc.cast(arr, pa.large_string())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = arr.buffers()[2]
    return offsets, np.zeros(0, np.uint8) if data is None else np.frombuffer(data, dtype=np.uint8)


def _concat(parts: list[Any], n: int) -> pa.Array:
    """Element-wise concatenation of string arrays and constant strings."""
    if not any(isinstance(p, (pa.Array, pa.ChunkedArray)) for p in parts):
        return pa.array(["".join(parts)] * n, pa.string())
    out = pc.binary_join_element_wise(*parts, "")
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _join_lists(offsets: np.ndarray, values: pa.Array, sep: str) -> pa.Array:
    lists = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values)
    return pc.binary_join(lists, sep)


def _rendered_rows(batch: pa.RecordBatch, ensure_ascii: bool) -> tuple[pa.Array, pa.Array]:
    """The rows as JSON objects, and the same after ``", "``.

    large_string: the lines of one batch may pass 2 GiB.
    """
    rows = pc.cast(json_rows(batch, ensure_ascii=ensure_ascii), pa.large_string())
    large = pa.large_string()
    return rows, pc.binary_join_element_wise(pa.scalar(", ", large), rows, pa.scalar("", large))


Texts = tuple[list[str], "np.ndarray | None"]
"""Distinct texts and each line's index into them (None: the first text for every line)."""


def _heads_and_tails(batch: MatchBatch, ensure_ascii: bool) -> tuple[Texts, Texts]:
    """What comes before ``start`` in each line, and after its last event.

    Heads: ``{"start": `` or, with several queries, ``{"query": NAME, "start": ``.  Tails:
    ``]}`` and a newline or, under PARTITION BY, ``], "partition": {"ATTR": VALUE, ...}}`` and a
    newline: the key as an object named by the PARTITION BY attributes, as Parquet's struct
    (:meth:`kleene.ComplexEvent.to_dict`).
    """
    if batch.query is None:
        heads: Texts = (['{"start": '], None)
    else:
        names = {q: i for i, q in enumerate(dict.fromkeys(batch.query))}
        heads = (
            ['{"query": ' + dumps(q, ensure_ascii=ensure_ascii) + ', "start": ' for q in names],
            np.array([names[q] for q in batch.query], dtype=np.int64),
        )
    if batch.partition is None:
        return heads, (["]}\n"], None)
    texts: list[str] = []
    seen: dict[Any, int] = {}
    index = []
    keys: list[Any] = batch.partition
    for key in keys:
        # Keyed with the values' types too: 1, 1.0 and True are equal keys
        # of a dict but render differently.
        tagged = None if key is None else (key, tuple(map(type, key)))
        i = seen.get(tagged)
        if i is None:
            i = seen[tagged] = len(texts)
            texts.append(
                "]}\n" if key is None
                else '], "partition": '
                + dumps(
                    dict(zip(partition_labels(batch.partition_names, len(key)), key)),
                    ensure_ascii=ensure_ascii,
                )
                + "}\n"
            )
        index.append(i)
    return heads, (texts, np.array(index, dtype=np.int64))


def _line_array(batch: MatchBatch, ensure_ascii: bool) -> pa.Array:
    """One JSON line (with its newline) per complex event of an unmerged batch (large_string).

    A line is ``head, event_1, event_2, ..., event_k, tail``: the head (query,
    start, end, positions) and the tail (partition) are small per-line
    strings; the events are the rendered input rows (``", "`` in front from
    the second on).  All pieces go into one array and a single ``take`` lays
    the lines out, so the bulk of the text (the events) is copied once.
    ``kleene.io._jsonl`` is the compiled twin (:func:`_compiled_line_array`).
    """
    n = len(batch)
    events = batch.events
    if events is None:
        raise ValueError("this batch has no events' data: ask for it with events=True")
    (head_texts, head_of), (tail_texts, tail_of) = _heads_and_tails(batch, ensure_ascii)
    heads: Any = head_texts[0] if head_of is None else pc.take(pa.array(head_texts), pa.array(head_of))
    parts: list[Any] = [
        heads,
        pc.cast(pa.array(batch.start), pa.string()),
        ', "end": ',
        pc.cast(pa.array(batch.end), pa.string()),
        ', "positions": [',
        _join_lists(batch.offsets, pc.cast(pa.array(batch.positions), pa.string()), ", "),
        '], "events": [',
    ]
    heads = _concat(parts, n)
    tails = pa.array(tail_texts, pa.string())
    if tail_of is not None:
        tails = pc.take(tails, pa.array(tail_of))
    # Each stored input row rendered once (kept with its stored batch), as is
    # and after ", " (the events after the first of a line).
    (rendered, separated), rows = events.rendered(
        ("json", ensure_ascii), lambda b: _rendered_rows(b, ensure_ascii), batch.positions
    )
    m = len(rendered)
    source = pa.concat_arrays(
        [pc.cast(heads, pa.large_string()), pc.cast(tails, pa.large_string()), rendered, separated]
    )
    # Piece indices: line i takes items offsets[i] + 2i .. offsets[i + 1] + 2i + 1.
    lengths = np.diff(batch.offsets)
    starts = batch.offsets[:-1] + 2 * np.arange(n, dtype=np.int64)
    total = int(batch.offsets[-1]) + 2 * n
    index = np.empty(total, dtype=np.int64)
    index[starts] = np.arange(n, dtype=np.int64)
    ends = starts + lengths + 1
    index[ends] = n + (np.arange(n, dtype=np.int64) if len(tails) == n else 0)
    slots = np.ones(total, dtype=bool)
    slots[starts] = False
    slots[ends] = False
    first = np.zeros(len(rows), dtype=bool)
    first[batch.offsets[:-1][lengths > 0]] = True
    index[slots] = len(tails) + n + rows + np.where(first, 0, m)
    text = pc.take(source, pa.array(index))
    item_offsets = np.frombuffer(text.buffers()[1], dtype=np.int64)[text.offset : text.offset + total + 1]
    line_offsets = item_offsets[np.append(starts, total)]
    return pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(np.ascontiguousarray(line_offsets)), text.buffers()[2]
    )


def compiled_lines(batch: MatchBatch, ensure_ascii: bool) -> Any:
    """The lines of an unmerged batch, measured by ``kleene.io._jsonl.Lines`` (the compiled twin
    of :func:`_line_array`); None where that twin is not built (:mod:`kleene.native`)."""
    if _jsonl is None:
        return None
    events = batch.events
    if events is None:
        raise ValueError("this batch has no events' data: ask for it with events=True")
    (head_texts, head_of), (tail_texts, tail_of) = _heads_and_tails(batch, ensure_ascii)
    (rendered,), rows = events.rendered(
        ("json rows", ensure_ascii),
        lambda b: (json_rows(b, ensure_ascii=ensure_ascii),),
        batch.positions,
    )
    row_offsets, data = _text_buffers(rendered)

    def ints(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.int64)

    assert _jsonl is not None
    return _jsonl.Lines(
        ints(batch.start), ints(batch.end), ints(batch.offsets), ints(batch.positions),
        ints(rows), ints(row_offsets), data,
        [t.encode() for t in head_texts], head_of,
        [t.encode() for t in tail_texts], tail_of,
    )


def _compiled_line_array(batch: MatchBatch, ensure_ascii: bool) -> pa.Array:
    """:func:`_line_array` by ``kleene.io._jsonl``: the same lines, laid out in one pass."""
    lines = compiled_lines(batch, ensure_ascii)
    assert lines is not None
    return pa.LargeStringArray.from_buffers(
        len(batch), pa.py_buffer(lines.line_offsets), pa.py_buffer(lines.text())
    )


_jsonl = load("kleene.io._jsonl")
"""The compiled twin of the row join and of the line layout, when it is built (:mod:`kleene.native`)."""


def json_bytes(batch: MatchBatch, *, ensure_ascii: bool = False) -> memoryview:
    """The JSON Lines of a batch of complex events (with events' data), UTF-8, without a copy."""
    if not len(batch):
        return memoryview(b"")
    lay_out = _line_array if _jsonl is None else _compiled_line_array
    lines = batch.render(lambda b: lay_out(b, ensure_ascii))
    if lines.type != pa.large_string():
        lines = pc.cast(lines, pa.large_string())
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)
    lo, hi = int(offsets[lines.offset]), int(offsets[lines.offset + len(lines)])
    return memoryview(lines.buffers()[2])[lo:hi]


def json_lines(batch: MatchBatch, *, ensure_ascii: bool = False) -> str:
    """The JSON Lines of a batch of complex events (with events' data), as one string."""
    return bytes(json_bytes(batch, ensure_ascii=ensure_ascii)).decode("utf-8")
