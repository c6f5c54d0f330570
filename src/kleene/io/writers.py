"""JSON Lines output of complex events.

Event attributes come out of Arrow and numpy as values that :mod:`json` does
not know (datetimes, numpy scalars, bytes, Decimals) or would write as invalid
JSON (``NaN``, ``Infinity``).  Every line kleene writes must parse with any
JSON reader, so values are converted here: datetimes and dates to ISO-8601
strings, NaN and infinities to ``null``, bytes to base64, numpy scalars and
arrays to Python numbers and lists, Decimals to strings (no precision lost).

The common case (plain Python values) is serialised by a single
``json.dumps`` call per line; only lines that fail it take the slower,
converting path.  Lines are buffered and written in blocks, never flushed per
event, because output speed matters when a query yields millions of events.

The bulk path (:meth:`JsonlWriter.write_batch`, :func:`json_lines`) writes a
whole :class:`~kleene.results.MatchBatch` at once and gives, byte for byte,
the lines of :meth:`JsonlWriter.write` on its complex events: each input row
is rendered as a JSON object once (:func:`json_rows`, column by column with
the encoders ``json.dumps`` itself uses), and the lines are assembled by
Arrow's string kernels (``take`` of the rendered rows, ``binary_join`` per
complex event), with no Python object per complex event.  Where it is built,
``kleene.io._jsonl`` (:mod:`kleene.native`) lays the rows and the lines out
instead, one pass each, with the same bytes.

Size: the JSON rendering of Arrow values and the three writers (JSON Lines, Parquet,
Arrow IPC) share the value rules and the buffer plumbing; one module keeps the output
formats consistent byte for byte.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.language.errors import KleeneError
from kleene.native import load
from kleene.results import partition_labels

if TYPE_CHECKING:
    from kleene.results import MatchBatch

_BUFFER_LINES = 512


class SupportsToDict(Protocol):
    """Anything that renders itself as a JSON-ready dict, like ``kleene.ComplexEvent``."""

    def to_dict(self) -> dict[str, Any]: ...


def _default(value: Any) -> Any:
    """``json.dumps`` hook for types it does not know (NaN is handled elsewhere)."""
    if isinstance(value, dt.datetime):
        if value != value:  # pandas.NaT is a datetime that is not equal to itself
            return None
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (bytes, bytearray, memoryview)):
        import base64  # only for bytes values (start-up time of every run)

        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return str(value)


def jsonable(value: Any) -> Any:
    """Return ``value`` converted (recursively) to plain JSON types.

    Non-finite floats become ``None``; mapping keys become strings.  Used on
    the slow path, and by the quarantine file, whose ``values`` come straight
    from input rows and may contain anything.
    """
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k if isinstance(k, str) else str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return jsonable(_default(value))


def dumps(obj: Any, *, ensure_ascii: bool = False) -> str:
    """Serialise ``obj`` as strict JSON (no NaN), converting exotic values."""
    try:
        return json.dumps(obj, default=_default, allow_nan=False, ensure_ascii=ensure_ascii)
    except (ValueError, TypeError):
        # NaN/Infinity somewhere, or a non-string key, or a circular/odd value:
        # convert everything explicitly and try again.
        return json.dumps(jsonable(obj), allow_nan=False, ensure_ascii=ensure_ascii)


def dumps_line(obj: Any, *, ensure_ascii: bool = False) -> str:
    """:func:`dumps` plus the newline of JSON Lines."""
    return dumps(obj, ensure_ascii=ensure_ascii) + "\n"


def _stdout_is_utf8() -> bool:
    encoding = getattr(sys.stdout, "encoding", None) or ""
    return encoding.lower().replace("-", "").replace("_", "") in {"utf8", "utf8sig"}


class JsonlWriter:
    """Writes one JSON object per line to a path, an open text stream, or stdout (``"-"``).

    Accepts ``ComplexEvent`` objects (anything with ``to_dict()``) or plain
    dicts.  ``count`` is the number of lines written so far.  A path is opened
    for writing (truncated) immediately, so an unwritable output fails before
    any work is done.  Stdout and streams passed in are flushed, not closed.
    ``written`` is called after each piece (a few MiB) the bulk path hands to the file
    (``kleene run`` starts the writeback of the file there, :meth:`kleene.cli.output.Output.written`).
    """

    def __init__(self, target: str | Path | IO[str] = "-", *, written: Callable[[], None] | None = None) -> None:
        self._owns = False
        self._written = written
        if isinstance(target, (str, Path)) and str(target) == "-":
            self._stream: IO[str] = sys.stdout
            # Non-ASCII text stays readable when stdout can carry UTF-8, and is
            # escaped (still valid JSON) when it cannot, instead of crashing.
            self._ascii = not _stdout_is_utf8()
        elif isinstance(target, (str, Path)):
            self._stream = open(target, "w", encoding="utf-8")  # noqa: SIM115
            self._owns = True
            self._ascii = False
        else:
            self._stream = target
            self._ascii = False
        self._buffer: list[str] = []
        self.count = 0
        self._behind: threading.Thread | None = None
        self._behind_error: BaseException | None = None
        self.laid_out_behind = 0
        """Batches whose lines were laid out and written by a thread (files this writer opened)."""

    def write(self, event: SupportsToDict | Mapping[str, Any]) -> None:
        """Queue one complex event (or dict) as a line."""
        self._settle()
        obj = event if isinstance(event, Mapping) else event.to_dict()
        self._buffer.append(dumps_line(obj, ensure_ascii=self._ascii))
        self.count += 1
        if len(self._buffer) >= _BUFFER_LINES:
            self._drain()

    def write_batch(self, batch: MatchBatch) -> None:
        """Write a batch of complex events with their events' data (the bulk path).

        The lines are those :meth:`write` gives for ``batch``'s complex events.
        """
        if len(batch):
            raw = self._raw()
            # The lines measured (and the rows rendered) while the previous batch may still
            # be written by its thread.
            lines = _compiled_lines(batch, self._ascii) if raw is not None and _jsonl is not None and not batch.merged else None
            self._drain()
            if raw is None:
                self._stream.write(json_lines(batch, ensure_ascii=self._ascii))
            elif lines is not None:
                self._stream.flush()
                # Piece by piece through one reused buffer (Lines.write_to), not one big text.
                write = self._piece_writer(raw)
                if self._owns:
                    self._write_behind(lambda: lines.write_to(write))
                else:
                    lines.write_to(write)
            else:
                self._stream.flush()
                self._piece_writer(raw)(json_bytes(batch, ensure_ascii=self._ascii))
            self.count += len(batch)

    def _write_behind(self, job: Callable[[], object]) -> None:
        """Run ``job`` (lay a batch's lines out and write them) in a thread, while the caller
        evaluates the next batch: the layout (``kleene.io._jsonl``) and the file's writes run
        without the GIL.  Only for a file this writer opened, where nothing else writes; the
        next call of this writer waits for it first and raises what it raised."""
        self._settle()

        def run() -> None:
            try:
                job()
            except BaseException as exc:  # noqa: BLE001 - raised again by _settle, in the caller
                self._behind_error = exc

        thread = threading.Thread(target=run, name="kleene-jsonl", daemon=False)
        # Kept only once started: a SIGTERM or Ctrl-C raised inside start() (its wait for the
        # thread) must not leave a thread that the abort's close would join before its start.
        thread.start()
        self._behind = thread
        self.laid_out_behind += 1

    def _settle(self) -> None:
        """Wait for the batch being written by :meth:`_write_behind`; raise its error."""
        behind, self._behind = self._behind, None
        if behind is not None:
            behind.join()
        error, self._behind_error = self._behind_error, None
        if error is not None:
            raise error

    def _piece_writer(self, raw: IO[bytes]) -> Callable[[memoryview], object]:
        """``raw.write``, followed by ``written`` when there is one."""
        written = self._written
        if written is None:
            return raw.write

        def write(piece: memoryview) -> None:
            raw.write(piece)
            written()

        return write

    def _raw(self) -> IO[bytes] | None:
        """The binary stream under the text stream, when bytes can go there as they are.

        The bytes are UTF-8 (ASCII when ``ensure_ascii``): a UTF-8 stream takes
        them unchanged, an ASCII-compatible one too when they are ASCII.
        """
        raw = getattr(self._stream, "buffer", None)
        encoding = (getattr(self._stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if raw is None or not hasattr(raw, "write"):
            return None
        if encoding == "utf8" or (self._ascii and encoding in ("ascii", "usascii", "latin1", "iso88591", "cp1252")):
            return raw
        return None

    def write_all(self, events: Iterable[SupportsToDict | Mapping[str, Any]]) -> int:
        """Write every event; return how many were written by this call."""
        before = self.count
        for event in events:
            self.write(event)
        return self.count - before

    def _drain(self) -> None:
        self._settle()
        if self._buffer:
            self._stream.write("".join(self._buffer))
            self._buffer.clear()

    def flush(self) -> None:
        self._drain()
        self._stream.flush()

    def close(self) -> None:
        """Write what is buffered; close the file if this writer opened it (also when writing
        failed: the error is raised, the file is not left open; closing again does nothing)."""
        if self._owns and self._stream.closed:
            return
        try:
            self.flush()
        finally:
            if self._owns and not self._stream.closed:
                self._stream.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def write_jsonl(events: Iterable[SupportsToDict | Mapping[str, Any]], target: str | Path | IO[str] = "-") -> int:
    """Write ``events`` as JSON Lines to ``target``; return the number written."""
    with JsonlWriter(target) as writer:
        return writer.write_all(events)


# ------------------------------------------------------------------ bulk path
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


def _compiled_lines(batch: MatchBatch, ensure_ascii: bool) -> Any:
    """The lines of an unmerged batch, measured by ``kleene.io._jsonl.Lines`` (the compiled twin
    of :func:`_line_array`)."""
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
    lines = _compiled_lines(batch, ensure_ascii)
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


class ArrowWriter:
    """Writes batches of complex events (:meth:`MatchBatch.to_arrow`) to a Parquet or Arrow IPC file.

    ``format`` is ``"parquet"`` or ``"arrow"`` (the Arrow IPC file format,
    also read as Feather v2).  The schema is that of the first batch; a later
    batch is cast to it (an error if it cannot be).  A run without complex
    events writes an empty file with columns ``start``, ``end`` and
    ``positions``.  ``count`` is the number of complex events written.
    """

    def __init__(self, target: str | Path, format: str = "parquet") -> None:  # noqa: A002
        if format not in ("parquet", "arrow"):
            raise ValueError(f"unknown output format {format!r} (parquet or arrow)")
        self.path = Path(target)
        self.format = format
        self.count = 0
        self._writer: Any = None
        self._schema: pa.Schema | None = None
        self.path.open("wb").close()  # fail early when the target is not writable

    def write_batch(self, batch: MatchBatch) -> None:
        if len(batch):
            self.write_arrow(batch.to_arrow())

    def write_arrow(self, rb: pa.RecordBatch) -> None:
        if self._writer is None:
            self._open(rb.schema)
        assert self._schema is not None
        if not rb.schema.equals(self._schema):
            # Only a cast that loses nothing (adds null fields, widens types):
            # Arrow's cast would silently drop struct fields the first batch lacked.
            problem = ""
            try:
                unified = pa.unify_schemas([self._schema, rb.schema], promote_options="permissive")
                if unified.equals(self._schema):
                    rb = rb.cast(self._schema)
                else:
                    problem = f"{rb.schema} does not fit {self._schema}"
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError) as exc:
                problem = str(exc)
            if problem:
                raise KleeneError(
                    f"complex events of different shapes cannot go in one {self.format} file "
                    "(several queries with different SELECT lists or PARTITION BY? write JSON "
                    f"Lines, or one file per query): {problem}"
                )
        self._writer.write_batch(rb)
        self.count += rb.num_rows

    def _open(self, schema: pa.Schema) -> None:
        self._schema = schema
        if self.format == "parquet":
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(self.path, schema)
        else:
            self._writer = pa.ipc.new_file(str(self.path), schema)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self._writer is None:
            empty = pa.schema(
                [("start", pa.int64()), ("end", pa.int64()), ("positions", pa.list_(pa.int64()))]
            )
            self._open(empty)
        self._writer.close()

    def __enter__(self) -> ArrowWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def output_format(target: str, requested: str | None = None) -> str:
    """``jsonl``, ``parquet`` or ``arrow``: ``requested``, else from the target's extension."""
    if requested:
        return requested
    suffix = Path(target).suffix.lower()
    if suffix == ".parquet":
        return "parquet"
    if suffix in (".arrow", ".feather", ".ipc"):
        return "arrow"
    return "jsonl"
