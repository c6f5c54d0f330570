"""The sinks of complex events: JSON Lines (:class:`JsonlWriter`), Parquet and Arrow IPC
(:class:`ArrowWriter`), with one contract: ``write_batch`` of a
:class:`~kleene.results.MatchBatch`, ``flush``, ``close``, ``count``.

Lines are buffered and written in blocks, never flushed per event, because
output speed matters when a query yields millions of events.  One complex
event at a time (:meth:`JsonlWriter.write`) is rendered by :mod:`kleene.io.json_text`,
whose value rules make every line parse with any JSON reader; a whole batch
(:meth:`JsonlWriter.write_batch`) is laid out by :mod:`kleene.io.jsonl_bulk`, with
the same bytes.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from kleene.io.json_text import dumps_line
from kleene.io.jsonl_bulk import compiled_lines, json_bytes, json_lines
from kleene.language.errors import KleeneError

if TYPE_CHECKING:
    from kleene.results import MatchBatch

_BUFFER_LINES = 512


class SupportsToDict(Protocol):
    """Anything that renders itself as a JSON-ready dict, like ``kleene.ComplexEvent``."""

    def to_dict(self) -> dict[str, Any]: ...


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
            lines = compiled_lines(batch, self._ascii) if raw is not None and not batch.merged else None
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
