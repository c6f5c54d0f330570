"""The fuzzing worker: a child process that runs cases sent by :mod:`fuzz_harness`, one per line.

It reads one JSON request per line on stdin and answers one JSON line on
stdout, so that thousands of cases share one interpreter start while a crash
(a signal), a hang or a memory explosion of one case kills only this process:
the parent sees it as a dead pipe or a timeout, notes the case and starts a
new worker.  The parent caps this process's address space (RLIMIT_AS).

Requests (``op``):

* ``compile``: ``text`` through :func:`kleene.compile`; with ``run``, the
  compiled query also runs over :data:`EVENTS`.
* ``parse``: ``text`` through the parser only (to tell a slow parser from a
  compilation or a run that grows, issue 16 item 5).
* ``selftest``: a crash, a hang, a memory explosion or a stray exception on
  purpose, so that the harness's tests see it notice each.
* ``file``: the query ``query`` over the file ``path`` (the Python API reads
  it with kleene's readers).
* ``ipc``: an Arrow IPC file (``mode`` ``file``) or stream (``stream``) opened
  with pyarrow and validated batch by batch (:func:`_validated`), then handed
  to kleene as a RecordBatchReader.

Answers: ``status`` is ``ok``, ``kleene`` (one of kleene's own errors, whose
shape is checked: a QueryError must carry a line, a column and a caret),
``foreign`` (pyarrow refused an Arrow IPC file: opening, reading or validating it) or
``exception`` (anything else: a bug), with the type, message and traceback.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

import kleene

EVENTS: list[dict[str, Any]] = [
    {"type": t, "price": p, "name": n, "volume": v, "t": i, "stream": "S"}
    for i, (t, p, n, v) in enumerate([
        ("SELL", 150.0, "x", 1), ("BUY", 10.0, "y", 2), ("A", 1.0, "x", 3), ("B", 2.0, "MSFT", 1),
        ("C", 3.0, "y", 2), ("SELL", 120.0, "it's", 3), ("BUY", 11.0, "x", 1), ("A", 5.0, "y", 2),
        ("B", 4.0, "x", 3), ("C", 0.5, "MSFT", 1), ("A", 7.0, "y", 2), ("BUY", 99.0, "x", 3),
    ])
]
"""A small stream with every type, attribute and stream the query generator names."""


def query_error_shape(err: kleene.QueryError, text: str) -> str | None:
    """What is wrong with a QueryError's position and caret, or None when it is right."""
    line, column = err.line, err.column
    if not (isinstance(line, int) and isinstance(column, int) and line >= 1 and column >= 1):
        return f"bad position line={line!r} column={column!r}"
    lines = text.split("\n")  # lines as the parser counts them
    rendered = str(err)
    if f"(line {line}, column {column})" not in rendered:
        return "the message does not show line and column"
    if line > len(lines):
        return f"line {line} is past the end of a {len(lines)}-line text"
    if line <= len(lines):
        if "^" not in rendered.split("\n")[-1]:
            return "no caret under the offending line"
        if column > len(lines[line - 1]) + 1:
            return f"column {column} is past the end of line {line} ({len(lines[line - 1])} characters)"
    return None


def answer(exc: BaseException | None, text: str = "") -> dict[str, Any]:
    if exc is None:
        return {"status": "ok"}
    out: dict[str, Any] = {
        "type": type(exc).__name__,
        "message": str(exc)[:2000],
        "traceback": "".join(traceback.format_exception(exc))[-6000:],
    }
    if isinstance(exc, kleene.QueryError):
        wrong = query_error_shape(exc, text)
        if wrong is not None:
            return {**out, "status": "exception", "type": "QueryError shape", "message": wrong}
    if isinstance(exc, kleene.KleeneError):
        return {**out, "status": "kleene"}
    return {**out, "status": "exception"}


class Foreign(Exception):
    """pyarrow refused the Arrow IPC data (opening, reading or validating it): not kleene's error."""


def _validated(path: str, mode: str) -> pa.RecordBatchReader:
    """The batches of an Arrow IPC file or stream, each checked with ``validate(full=True)``
    and its field names with ``schema.names`` (not UTF-8: UnicodeDecodeError, which validate()
    does not check), as a careful user hands untrusted Arrow data to any library: pyarrow's IPC reader does not
    check offsets or UTF-8 (a corrupt file can give arrays that crash whoever reads them),
    and kleene has no Arrow file reader of its own that could."""
    try:
        if mode == "file":
            f = pa.ipc.open_file(path)
            schema, batches = f.schema, (f.get_batch(i) for i in range(f.num_record_batches))
        else:
            s = pa.ipc.open_stream(path)
            schema, batches = s.schema, iter(s)
        schema.names  # noqa: B018 - field names that are not UTF-8 raise here; validate() does not check them
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise Foreign() from exc

    def checked() -> Iterator[pa.RecordBatch]:
        while True:
            try:
                batch = next(batches, None)
                if batch is None:
                    return
                batch.validate(full=True)
                batch.schema.names  # noqa: B018 - as above
            except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
                raise Foreign() from exc
            yield batch

    return pa.RecordBatchReader.from_batches(schema, checked())


def run_case(req: dict[str, Any]) -> dict[str, Any]:
    op = req["op"]
    if op == "compile":
        text = req["text"]
        try:
            q = kleene.compile(text)
            if req.get("run"):
                n = sum(1 for _ in q.run(EVENTS))
                return {"status": "ok", "matches": n}
        except BaseException as exc:  # noqa: BLE001 - classifying every exception is the point
            return answer(exc, text)
        return {"status": "ok"}
    if op == "parse":
        from kleene.language.parser import parse

        try:
            parse(req["text"])
        except BaseException as exc:  # noqa: BLE001
            return answer(exc, req["text"])
        return {"status": "ok"}
    if op == "file":
        try:
            n = sum(1 for _ in kleene.compile(req["query"]).run(req["path"]))
        except BaseException as exc:  # noqa: BLE001
            return answer(exc, req["query"])
        return {"status": "ok", "matches": n}
    if op == "ipc":
        try:
            reader = _validated(req["path"], req["mode"])
            n = sum(1 for _ in kleene.compile(req["query"]).run(reader))
        except Foreign as exc:
            return {**answer(exc.__cause__), "status": "foreign"}
        except BaseException as exc:  # noqa: BLE001
            return answer(exc, req["query"])
        return {"status": "ok", "matches": n}
    if op == "selftest":  # the harness's own tests: a crash, a hang, a stray exception
        if req["do"] == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if req["do"] == "hang":
            time.sleep(3600)
        if req["do"] == "grow":
            try:
                hoard = bytearray(1 << 36)  # 64 GB at once: refused under RLIMIT_AS
            except MemoryError as exc:
                return answer(exc)
            return {"status": "ok", "size": len(hoard)}
        return answer(ValueError("a stray exception"))
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    warnings.simplefilter("ignore")  # UnseenNameWarning and friends: not failures
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    sys.stdout.write('{"status": "ready"}\n')  # imports done: the per-case timeout starts now
    sys.stdout.flush()
    for line in sys.stdin:
        req = json.loads(line)
        try:
            res = run_case(req)
        except BaseException as exc:  # noqa: BLE001 - a bug of the worker itself: still answer
            res = {**answer(exc), "status": "exception", "type": "worker: " + type(exc).__name__}
        sys.stdout.write(json.dumps(res) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
