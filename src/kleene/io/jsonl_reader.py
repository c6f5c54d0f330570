"""JSON Lines files (and a ``.json`` file holding one array of objects) as Arrow record batches
of one schema, with errors that name the line.

Lines are read in chunks of ``batch_size``; a chunk is parsed by Arrow's JSON reader when it
can, and by :mod:`json` line by line when Arrow cannot (mixed types, NaN, a malformed line,
which is then located exactly).  A first pass settles one schema (numbers widen to float, other
mixes to strings); its tables are kept while they are small (below
:data:`kleene.io.textfiles.BUFFER_BYTES`), else a second pass parses again straight into the
settled schema.  A ``.json`` file holding one JSON array of objects is loaded whole.
:mod:`kleene.io.readers` picks this reader by the file's extension.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from kleene.io import textfiles
from kleene.io.nesting import MAX_JSON_DEPTH, too_deep
from kleene.io.textfiles import open_text_source, rebatch
from kleene.io.utf8 import INVALID_UTF8, fix_row, is_valid
from kleene.language.errors import DataError


def read_jsonl(
    path: Path, batch_size: int, wanted: frozenset[str] | None, null_values: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """The rows of ``path`` as batches of at most ``batch_size`` rows: strings equal to one of
    ``null_values`` made nulls, then only the ``wanted`` columns (all when None) kept."""
    batches = _read_jsonl(path, batch_size)
    if null_values:
        batches = _nulled(batches, list(null_values))
    return batches if wanted is None else _select(batches, wanted)


Chunk = list[tuple[int, bytes]]  # (1-based line number, line) for the non-blank lines


def _line_chunks(path: Path, chunk_rows: int) -> Iterator[Chunk]:
    """Non-blank lines of a JSON Lines file in chunks, with their line numbers.

    A file whose first character is ``[`` is one JSON array: it is loaded
    whole and each element becomes a "line" numbered by its 1-based index.
    """
    with open_text_source(path) as f:
        head = f.read(4096)
        if head.lstrip()[:1] == b"[":
            yield from _array_chunks(path, head + f.read(), chunk_rows)
            return
        f.seek(0)
        chunk: Chunk = []
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            chunk.append((number, line.rstrip(b"\r\n")))
            if len(chunk) >= chunk_rows:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def _array_chunks(path: Path, data: bytes, chunk_rows: int) -> Iterator[Chunk]:
    try:
        items = json.loads(data)
    except RecursionError as exc:
        raise DataError(
            f"{str(path)!r} is nested too deep to read (kleene's limit for JSON values: "
            f"{MAX_JSON_DEPTH} levels)"
        ) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" on line {line}" if line else ""
        raise DataError(f"malformed JSON{where} of {str(path)!r}: {exc}") from exc
    if not isinstance(items, list):
        raise DataError(f"{str(path)!r} is neither JSON Lines nor a JSON array of objects")
    for start in range(0, len(items), chunk_rows):
        yield [
            (k + 1, json.dumps(item).encode()) for k, item in enumerate(items[start : start + chunk_rows], start=start)
        ]


def _parse_chunk_arrow(chunk: Chunk) -> pa.Table | None:
    """The chunk parsed by Arrow's JSON reader, or None if Arrow cannot (the slow path can)."""
    import pyarrow.json as pjson  # lazy: only JSON inputs pay its start-up cost

    data = b"\n".join(line for _, line in chunk)
    try:
        table = pjson.read_json(
            io.BytesIO(data),
            read_options=pjson.ReadOptions(block_size=len(data) + 1, use_threads=True),
        )
    except pa.ArrowException:
        return None
    if table.num_rows != len(chunk):
        return None
    return table


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _parse_chunk_python(chunk: Chunk, first_row: int, path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for offset, (number, line) in enumerate(chunk):
        invalid = False
        try:
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:  # a bad row (kleene.io.utf8), unless the JSON is bad too
                text = line.decode("utf-8", "surrogateescape")
                invalid = True
            value = json.loads(text)
            # A "\ud800" escape decodes to a lone surrogate, which no UTF-8 text holds: a bad
            # row like invalid bytes (it made Arrow's conversion fail with a traceback).
            invalid = invalid or (_SURROGATE_ESCAPE.search(text) is not None)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(
                f"malformed JSON on line {number} of {str(path)!r}: {exc}",
                row=first_row + offset,
            ) from exc
        if not isinstance(value, dict):
            raise DataError(
                f"line {number} of {str(path)!r} is a JSON {type(value).__name__}, not an object",
                row=first_row + offset,
            )
        rows.append(fix_row(value) if invalid else value)
    return rows


def _python_type(values: list[Any]) -> pa.DataType:
    """The Arrow type for one column of Python values; mixed kinds give strings."""
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.null()
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {int}:
        if all(-(1 << 63) <= v < (1 << 63) for v in values if v is not None):
            return pa.int64()
        return pa.float64()
    if kinds <= {int, float}:
        return pa.float64()
    if kinds == {str}:
        return pa.string()
    if kinds <= {dict} or kinds <= {list}:
        try:
            return pa.array(values).type
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return pa.string()
    return pa.string()


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def _column(values: list[Any], typ: pa.DataType) -> pa.Array:
    if pa.types.is_string(typ):
        return pa.array([_as_text(v) for v in values], pa.string())
    if pa.types.is_floating(typ):
        return pa.array([None if v is None else float(v) for v in values], typ)
    if pa.types.is_timestamp(typ):
        # Arrow parsed these from ISO strings in other chunks: parse the same way.
        return pa.array([_as_text(v) for v in values], pa.string()).cast(typ)
    return pa.array(values, typ)


def _table_from_rows(rows: list[dict[str, Any]], schema: pa.Schema | None) -> pa.Table:
    names: dict[str, None] = dict.fromkeys(schema.names) if schema is not None else {}
    for row in rows:
        for key in row:
            names.setdefault(key, None)
    arrays, fields = [], []
    for name in names:
        values = [row.get(name) for row in rows]
        typ = schema.field(name).type if schema is not None and name in schema.names else _python_type(values)
        arrays.append(_column(values, typ))
        fields.append(pa.field(name, typ))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _unify_types(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if a == b:
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    numeric = (pa.types.is_integer, pa.types.is_floating)
    if any(f(a) for f in numeric) and any(f(b) for f in numeric):
        return pa.float64()
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b) and a.tz == b.tz:
        return pa.timestamp("ns", tz=a.tz)
    return pa.string()


def _unify(schema: pa.Schema | None, other: pa.Schema) -> pa.Schema:
    if schema is None:
        return other
    fields = {f.name: f.type for f in schema}
    for f in other:
        fields[f.name] = _unify_types(fields[f.name], f.type) if f.name in fields else f.type
    return pa.schema([pa.field(n, t) for n, t in fields.items()])


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table | None:
    """``table`` cast to ``schema`` (missing columns null), or None if that would lose text."""
    arrays = []
    for field in schema:
        if field.name not in table.column_names:
            arrays.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table.column(field.name)
        if column.type != field.type:
            if pa.types.is_string(field.type) and not pa.types.is_null(column.type):
                # Casting a parsed number or timestamp back to text would not give
                # the original text; let the Python path render it instead.
                return None
            try:
                column = column.cast(field.type)
            except pa.ArrowException:
                return None
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=schema)


def _parse_chunk(chunk: Chunk, first_row: int, path: Path, schema: pa.Schema | None) -> pa.Table:
    """One chunk as a table (of ``schema`` when given): Arrow if possible, else Python.

    Arrow's JSON reader would replace invalid UTF-8 with U+FFFD, silently: a
    chunk holding some goes the Python way, which marks those rows (kleene.io.utf8).
    """
    data = b"\n".join(line for _, line in chunk)
    deep = too_deep(data)
    if deep is not None:
        index, depth = deep
        raise DataError(
            f"line {chunk[index][0]} of {str(path)!r} is nested {depth} levels deep, over "
            f"kleene's limit of {MAX_JSON_DEPTH} for JSON Lines (kleene.io.nesting.MAX_JSON_DEPTH)",
            row=first_row + index,
        )
    valid = is_valid(data)
    table = _parse_chunk_arrow(chunk) if valid else None
    if table is not None:
        if schema is None:
            return table
        conformed = _conform(table, schema)
        if conformed is not None:
            return conformed
    rows = _parse_chunk_python(chunk, first_row, path)
    table = _table_from_rows(rows, schema)
    return table if schema is None else table.select(schema.names)


def _read_jsonl(path: Path, batch_size: int) -> Iterator[pa.RecordBatch]:
    schema: pa.Schema | None = None
    kept: list[pa.Table] | None = []
    size = 0
    row = 0
    try:
        for chunk in _line_chunks(path, batch_size):
            table = _parse_chunk(chunk, row, path, None)
            row += len(chunk)
            schema = _unify(schema, table.schema)
            if kept is not None:
                kept.append(table)
                size += table.nbytes
                if size > textfiles.BUFFER_BYTES:
                    kept = None
    except OSError as exc:
        raise DataError(f"cannot read {str(path)!r}: {exc}") from exc
    if schema is None:
        return
    if kept is not None:
        conformed = [_conform(t, schema) for t in kept]
        if all(t is not None for t in conformed):
            for t in conformed:
                assert t is not None
                yield from rebatch(iter(t.to_batches()), batch_size)
            return
    # Second pass: parse again, now straight into the settled schema.
    row = 0
    for chunk in _line_chunks(path, batch_size):
        table = _parse_chunk(chunk, row, path, schema)
        row += len(chunk)
        yield from rebatch(iter(table.combine_chunks().to_batches()), batch_size)


def _nulled(batches: Iterator[pa.RecordBatch], tokens: list[str]) -> Iterator[pa.RecordBatch]:
    """JSON Lines strings equal to a null token become nulls (in every batch: one schema)."""
    import pyarrow.compute as pc

    value_set = pa.array(tokens, pa.string())
    for batch in batches:
        for i, field in enumerate(batch.schema):
            if pa.types.is_string(field.type) and field.name != INVALID_UTF8:
                column = batch.column(i)
                nulled = pc.if_else(pc.is_in(column, value_set=value_set), None, column)
                batch = batch.set_column(i, field, nulled)
        yield batch


def _select(batches: Iterator[pa.RecordBatch], wanted: frozenset[str]) -> Iterator[pa.RecordBatch]:
    wanted = wanted | {INVALID_UTF8}
    for batch in batches:
        yield batch.select([n for n in batch.schema.names if n in wanted])
