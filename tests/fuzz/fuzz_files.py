"""Input files for fuzzing kleene's readers: valid seeds, and byte-level corruptions of them.

Seeds (:func:`write_seeds`) are small valid files of every input format
kleene reads (CSV, TSV, JSON Lines, a JSON array, Parquet with several row
groups and pages, compressed text), plus Arrow IPC files and streams, which
kleene reads through the Python API as a RecordBatchReader.  :func:`corrupt`
damages a seed's bytes: bit flips, random, inserted, deleted or duplicated
bytes, truncation, and format-aware damage (Parquet page headers and footer,
gzip members and trailers, JSON nesting, invalid UTF-8, quotes and
delimiters in text).  Every choice comes from a :class:`random.Random`.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import struct
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

QUERIES = (
    "SELECT * WHERE SELL as a ; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS",
    "SELECT * WHERE SELL as a ; BUY+ as b FILTER a[name = 'x'] AND b[volume > 1] WITHIN 5 [t]",
    "SELECT MAX a[name], b WHERE (SELL OR BUY) as a ; _ as b FILTER b[price < a.price] WITHIN 8 EVENTS",
)
"""Queries run over the fuzzed files: typed attributes, a time window, strings, registers."""


def table(rows: int = 60) -> pa.Table:
    rng = random.Random(7)
    return pa.table({
        "type": [rng.choice(("SELL", "BUY", "SELL", "BUY", "OTHER")) for _ in range(rows)],
        "price": [round(rng.uniform(0, 200), 2) for _ in range(rows)],
        "name": [rng.choice(("x", "y", "MSFT", "é,\"q\"")) for _ in range(rows)],
        "volume": [rng.randint(0, 5) for _ in range(rows)],
        "t": list(range(rows)),
    })


def write_seeds(folder: Path) -> dict[str, Path]:
    """One valid file per kind, named by kind (its extension tells kleene the format)."""
    folder.mkdir(parents=True, exist_ok=True)
    t = table()
    rows = t.to_pylist()
    seeds: dict[str, Path] = {}

    def put(kind: str, name: str, data: bytes) -> None:
        (folder / name).write_bytes(data)
        seeds[kind] = folder / name

    buf = io.BytesIO()
    pcsv.write_csv(t, buf)
    csv_bytes = buf.getvalue()
    put("csv", "seed.csv", csv_bytes)
    put("csv.gz", "seed.csv.gz", gzip.compress(csv_bytes, mtime=0))
    put("tsv", "seed.tsv", csv_bytes.replace(b",", b"\t"))
    jsonl = "".join(json.dumps(r) + "\n" for r in rows).encode()
    put("jsonl", "seed.jsonl", jsonl)
    put("jsonl.gz", "seed.jsonl.gz", gzip.compress(jsonl, mtime=0))
    put("json", "seed.json", json.dumps(rows).encode())
    for kind, opts in (
        ("parquet", {"compression": "snappy"}),
        ("parquet-plain", {"compression": "none", "use_dictionary": False}),
        ("parquet-gzip", {"compression": "gzip", "data_page_size": 64}),
    ):
        out = io.BytesIO()
        pq.write_table(t, out, row_group_size=20, **opts)  # type: ignore[arg-type]
        put(kind, f"seed-{kind}.parquet", out.getvalue())
    for kind in ("arrow-file", "arrow-stream"):
        sink = io.BytesIO()
        opener = pa.ipc.new_file if kind == "arrow-file" else pa.ipc.new_stream
        with opener(sink, t.schema) as w:
            for b in t.to_batches(max_chunksize=20):
                w.write_batch(b)
        put(kind, f"seed-{kind}.arrow", sink.getvalue())
    return seeds


# ----------------------------------------------------------- byte damages
Damage = Callable[[random.Random, bytes], bytes]


def _flip_bits(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


def _set_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        if b:
            b[rng.randrange(len(b))] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
    return bytes(b)


def _insert_bytes(rng: random.Random, data: bytes) -> bytes:
    i = rng.randint(0, len(data))
    return data[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))) + data[i:]


def _delete_range(rng: random.Random, data: bytes) -> bytes:
    i = rng.randint(0, len(data))
    return data[:i] + data[i + rng.randint(1, 256):]


def _duplicate_range(rng: random.Random, data: bytes) -> bytes:
    i = rng.randint(0, len(data))
    j = min(len(data), i + rng.randint(1, 512))
    return data[:j] + data[i:j] * rng.randint(1, 4) + data[j:]


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randint(0, max(0, len(data) - 1))]


def _tail_damage(rng: random.Random, data: bytes) -> bytes:
    """Damage in the last 64 bytes: the Parquet footer and its length, the gzip CRC and size,
    the Arrow file footer."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if b:
            b[len(b) - 1 - rng.randrange(min(64, len(b)))] = rng.randrange(256)
    return bytes(b)


def _footer_length(rng: random.Random, data: bytes) -> bytes:
    """A Parquet file whose footer length (the 4 bytes before the final PAR1) lies."""
    if len(data) < 8:
        return data
    n = rng.choice((0, 1, len(data) - 8, len(data), 2**31 - 1, 2**32 - 1, rng.randrange(2**32)))
    return data[:-8] + struct.pack("<I", n) + data[-4:]


def _head_damage(rng: random.Random, data: bytes) -> bytes:
    """Damage in the first 64 bytes: a Parquet page header, a gzip header, an IPC schema, a CSV header."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if b:
            b[rng.randrange(min(64, len(b)))] = rng.randrange(256)
    return bytes(b)


BYTE_DAMAGES: tuple[Damage, ...] = (
    _flip_bits, _set_bytes, _insert_bytes, _delete_range, _duplicate_range, _truncate,
    _tail_damage, _head_damage,
)


# ----------------------------------------------------------- text damages
TEXT_BITS = (
    b"\x00", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"\r\n", b'"', b"'",
    b",", b"\t", b"\n", b"\n\n", b"\\", b"{", b"}", b"[", b"]", b":", b"null", b"NaN", b"-",
    b"1e999", b"-0", b"99999999999999999999999", b"\xe2\x80\xa8", b"\xf0\x9f\x98\x80",
)


def _text_insert(rng: random.Random, data: bytes) -> bytes:
    for _ in range(rng.randint(1, 6)):
        i = rng.randint(0, len(data))
        data = data[:i] + rng.choice(TEXT_BITS) + data[i:]
    return data


def _swap_lines(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    if len(lines) > 2:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def _json_values(rng: random.Random, data: bytes) -> bytes:
    """A JSON Lines row whose value has another type, is huge, or is a nested structure."""
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    try:
        row = json.loads(lines[i])
    except ValueError:
        return data
    if not isinstance(row, dict) or not row:
        return data
    key = rng.choice(list(row))
    row[key] = rng.choice((
        None, True, "", "text", 1.5, -1, 2**63, 2**64, -(2**63) - 1, 1e308, [1, 2], {"x": 1}, [],
        {}, "\u0000", "\u2028", int("9" * 300), [[[[1]]]], {"a": {"b": [None]}},
    ))
    lines[i] = json.dumps(row).encode()
    return b"\n".join(lines)


def _json_nesting(rng: random.Random, data: bytes) -> bytes:
    """A value nested ``depth`` deep (issue 16: 10,000 crashed the process)."""
    depth = rng.choice((50, 100, 200, 500))
    return data + b'{"type": "SELL", "price": ' + b"[" * depth + b"1" + b"]" * depth + b"}\n"


def _csv_values(rng: random.Random, data: bytes) -> bytes:
    """A CSV cell of another type, a quote left open, a row with too many or too few cells."""
    lines = data.split(b"\n")
    i = rng.randrange(1, max(2, len(lines)))
    if i >= len(lines):
        return data
    cells = lines[i].split(b",")
    j = rng.randrange(len(cells))
    cells[j] = rng.choice((b"abc", b"", b'"', b'"a""b"', b"1e400", b"-", b"true", b"9" * 40, b"NaN", b"inf"))
    if rng.random() < 0.2:
        cells.append(b"extra")
    elif rng.random() < 0.2 and len(cells) > 1:
        cells.pop()
    lines[i] = b",".join(cells)
    return b"\n".join(lines)


def damages_for(kind: str) -> tuple[Damage, ...]:
    """The damages that make sense for a seed of ``kind`` (byte damages fit every kind)."""
    if kind in ("csv", "tsv"):
        return BYTE_DAMAGES + (_text_insert, _text_insert, _swap_lines, _csv_values, _csv_values)
    if kind in ("jsonl", "json"):
        return BYTE_DAMAGES + (_text_insert, _text_insert, _swap_lines, _json_values, _json_values, _json_nesting)
    if kind.startswith("parquet"):
        return BYTE_DAMAGES + (_footer_length, _tail_damage, _head_damage)
    return BYTE_DAMAGES


def corrupt(rng: random.Random, kind: str, data: bytes) -> tuple[bytes, list[str]]:
    """``data`` after 1-3 damages; also the damages' names (to say what a failing case did).

    A compressed seed is damaged either as compressed bytes or as its text,
    recompressed (so the damage reaches the reader, not only gzip)."""
    names: list[str] = []
    if kind.endswith(".gz") and rng.random() < 0.5:
        inner, names = corrupt(rng, kind[:-3], gzip.decompress(data))
        return gzip.compress(inner, mtime=0), ["(inside gzip)", *names]
    choices = damages_for(kind)
    for _ in range(rng.randint(1, 3)):
        damage = rng.choice(choices)
        data = damage(rng, data)
        names.append(damage.__name__.lstrip("_"))
    return data, names
