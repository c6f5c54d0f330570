"""Damaged and hostile input files (issue 16): each is kleene's own input error (exit 3) naming
the file (and the line and row where there is one), never a traceback or a crash.  The deep
JSON value crashed the process (SIGSEGV inside Arrow): it runs in a child process with a
memory cap."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import random
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kleene.cli import main
from kleene.io.nesting import MAX_JSON_DEPTH, too_deep
from kleene.io.readers import read_batches
from kleene.language.errors import DataError
from kleene_process import ROOT

QUERY = "SELECT * FROM S WHERE SELL AS s FILTER s[price > 1]"


def capped() -> None:
    """In the child: at most 3 GB of address space (a runaway allocation fails, not the machine)."""
    resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))


def run_child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kleene", "run", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        preexec_fn=capped,
    )


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["run", *args])
    out, err = capsys.readouterr()
    return code, out, err


def nested(depth: int) -> str:
    """A row whose ``x`` is ``depth - 1`` lists deep: ``depth`` levels with the row's object."""
    return '{"type": "SELL", "price": 2, "x": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


# ------------------------------------------------------------------------ nesting of JSON values
def test_the_issues_10000_deep_line_is_an_input_error_not_a_crash(tmp_path: Path) -> None:
    data = tmp_path / "deep.jsonl"
    data.write_text(nested(3) + "\n" + nested(10_001) + "\n")  # the 20 KB line of the issue
    done = run_child(QUERY, "--input", str(data))
    assert done.returncode == 3, done.stderr  # was -11 (SIGSEGV)
    assert done.stderr.strip() == (
        f"kleene: input error: line 2 of {str(data)!r} is nested 10001 levels deep, over kleene's "
        f"limit of {MAX_JSON_DEPTH} for JSON Lines (kleene.io.nesting.MAX_JSON_DEPTH) (row 1)"
    )


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 8_000])
def test_deep_values_are_input_errors(
    depth: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1,000-8,000 deep raised RecursionError in the writer; one level over the limit is refused."""
    data = tmp_path / "deep.jsonl"
    data.write_text(nested(2) + "\n\n" + nested(depth) + "\n")
    code, out, err = run(capsys, QUERY, "--input", str(data))
    assert code == 3 and out == ""
    assert f"line 3 of {str(data)!r} is nested {depth} levels deep" in err and "(row 1)" in err


def test_values_at_the_limit_are_read_and_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The deepest accepted value goes through the reader and the writer; brackets inside
    strings (with escaped quotes) are not nesting."""
    tricky = (
        '{"type": "SELL", "price": 3, "x": [1], "s": "' + "[{" * 80 + '\\"' + "]}" * 80 + '\\\\"}'
    )
    data = tmp_path / "ok.jsonl"
    data.write_text(nested(MAX_JSON_DEPTH) + "\n" + tricky + "\n")
    code, out, err = run(capsys, QUERY, "--input", str(data))
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["positions"] for line in lines] == [[0], [1]]
    assert lines[1]["events"][0]["s"] == json.loads(tricky)["s"]


def test_a_deep_json_array_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "deep.json"
    data.write_text("[" + nested(5_000) + "]")
    code, _, err = run(capsys, QUERY, "--input", str(data))
    assert code == 3 and "is nested" in err
    data.write_text("[" + nested(MAX_JSON_DEPTH + 1) + "]")
    code, _, err = run(capsys, QUERY, "--input", str(data))
    assert (
        code == 3 and f"line 1 of {str(data)!r} is nested {MAX_JSON_DEPTH + 1} levels deep" in err
    )


def test_the_depth_check_against_a_parser(tmp_path: Path) -> None:
    """``too_deep`` agrees with a depth computed from the parsed value on random lines
    (strings with brackets, quotes and backslashes; lines unbalanced by themselves)."""
    rng = random.Random(16)

    def depth_of(value: Any) -> int:
        if isinstance(value, dict):
            return 1 + max((depth_of(v) for v in value.values()), default=0)
        if isinstance(value, list):
            return 1 + max((depth_of(v) for v in value), default=0)
        return 0

    def text() -> str:
        return "".join(rng.choice('[]{}"\\ab') for _ in range(rng.randrange(6)))

    def value(levels: int) -> Any:
        """``levels`` containers deep along one spine, with strings and shallow siblings."""
        if levels == 0:
            return text()
        inner = [value(levels - 1), text()] if rng.random() < 0.5 else [[text()], value(levels - 1)]
        return inner if rng.random() < 0.5 else {"k": inner[0], text(): inner[1]}

    seen_over = 0
    for _ in range(300):
        rows = [{"type": "A", "v": value(rng.randrange(100))} for _ in range(rng.randrange(1, 5))]
        lines = [json.dumps(row) for row in rows]
        depths = [depth_of(row) for row in rows]
        found = too_deep("\n".join(lines).encode())
        over = [i for i, d in enumerate(depths) if d > MAX_JSON_DEPTH]
        assert found == ((over[0], depths[over[0]]) if over else None)
        seen_over += bool(over)
    assert 30 < seen_over < 270, seen_over  # both outcomes are exercised


# --------------------------------------------------------------------- compressed and corrupt files
CSV = "".join(
    ["type,price\n"] + [f"{'SELL' if i % 2 else 'BUY'},{i % 100}\n" for i in range(60_000)]
)
JSONL = "".join(
    json.dumps({"type": "SELL" if i % 2 else "BUY", "price": i % 100}) + "\n" for i in range(60_000)
)
COMPRESSORS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


@pytest.mark.parametrize("ext", sorted(COMPRESSORS))
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_truncated_compressed_input(
    ext: str, fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed = COMPRESSORS[ext]((CSV if fmt == "csv" else JSONL).encode())
    whole = tmp_path / f"whole.{fmt}{ext}"
    whole.write_bytes(packed)
    code, out, err = run(capsys, QUERY, "--input", str(whole))
    assert code == 0, err  # .csv.xz too (Arrow does not decompress .xz by itself)
    assert len(out.splitlines()) == 29_400
    cut = tmp_path / f"cut.{fmt}{ext}"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    code, out, err = run(capsys, QUERY, "--input", str(cut))
    assert code == 3 and out == "", err  # was a traceback or "kleene: ..." with exit 1
    assert err.startswith(f"kleene: input error: cannot read {str(cut)!r}")
    assert f"truncated or corrupt {ext} data" in err


def test_a_csv_header_that_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "latin1.csv"
    data.write_bytes(b"type,pr\xe9ce\nSELL,3\n")
    code, _, err = run(capsys, QUERY, "--input", str(data))
    assert code == 3 and f"the header of {str(data)!r} is not valid UTF-8: column 2 ('pr\ufffdce')" in err


def parquet_bytes(tmp_path: Path, compression: str) -> bytes:
    n = 4_000
    table = pa.table(
        {
            "type": ["SELL", "BUY"] * (n // 2),
            "price": [float(i) for i in range(n)],
            "name": [f"name{i % 37:02d}" for i in range(n)],
        }
    )
    path = tmp_path / "base.parquet"
    pq.write_table(table, path, row_group_size=1_000, compression=compression, use_dictionary=False)
    return path.read_bytes()


def test_invalid_utf8_in_a_parquet_string_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Arrow hands such bytes on unchecked: the writer failed with a UnicodeDecodeError."""
    data = bytearray(parquet_bytes(tmp_path, "none"))
    at = data.index(b"name05")
    data[at + 1] = 0xFF
    path = tmp_path / "bad.parquet"
    path.write_bytes(bytes(data))
    code, _, err = run(capsys, QUERY, "--input", str(path))
    assert code == 3
    assert (
        f"cannot read {str(path)!r} as Parquet (row group 0): column 'name' holds invalid UTF-8"
        in err
    )


def test_randomly_corrupted_parquet_files(tmp_path: Path) -> None:
    """100 seeded corruptions (1-8 bytes each) of a snappy file: each reads, or is a DataError
    (75 of 300 such corruptions were tracebacks before)."""
    base = parquet_bytes(tmp_path, "snappy")
    rng = random.Random(16)
    outcomes = {"read": 0, "error": 0}
    path = tmp_path / "c.parquet"
    for _ in range(100):
        data = bytearray(base)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data))
        try:
            for batch in read_batches(path):
                pa.Table.from_batches([batch]).to_pylist()  # every value, as the writer reads it
            outcomes["read"] += 1
        except DataError as err:
            assert str(path) in str(err)
            outcomes["error"] += 1
    assert outcomes["error"] >= 30, outcomes


def test_a_lone_surrogate_escape_is_a_bad_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``"\\ud800"`` decodes to a lone surrogate, which no UTF-8 text holds (a UnicodeEncodeError
    traceback before): a bad row like invalid bytes; a proper pair (an emoji) is text."""
    data = tmp_path / "surrogate.jsonl"
    data.write_text(
        '{"type": "SELL", "price": 2, "n": "\\ud800x"}\n{"type": "SELL", "price": 3, "n": "\\ud83d\\ude00"}\n'
    )
    code, out, err = run(capsys, QUERY, "--input", str(data))
    assert code == 3 and "bad input: invalid UTF-8 (row 0, column 'n')" in err
    quarantine = tmp_path / "q.jsonl"
    code, out, err = run(capsys, QUERY, "--input", str(data), "--quarantine", str(quarantine))
    assert code == 0 and "1 row set aside: 1 invalid UTF-8 in 'n'" in err
    assert [json.loads(line)["events"][0]["n"] for line in out.splitlines()] == ["\U0001f600"]
    assert json.loads(quarantine.read_text())["values"]["n"] == "\\xed\\xa0\\x80x"
