"""The ``kleene`` command line: arguments, exit codes, output, bad-row handling.

Tests that evaluate a query need the engine (``kleene.compile``); they are
skipped only while it is absent, so they run as soon as it lands.  The rest
(argument handling, query loading, the progress bar) run regardless.
Expected complex events are computed here by brute force from the query's
meaning, independently of the engine.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kleene.cli import main
from kleene.cli.common import UsageError, bad_row_policy, load_query
from kleene.cli.progress import Progress

ROOT = Path(__file__).resolve().parents[2]
PAIRS = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 3 EVENTS"

EVENTS: list[dict[str, Any]] = [
    {"type": "SELL", "name": "MSFT", "price": 120.0, "volume": 10},
    {"type": "BUY", "name": "INTC", "price": 40.0, "volume": 20},
    {"type": "BUY", "name": "MSFT", "price": 99.0, "volume": 30},
    {"type": "SELL", "name": "AAPL", "price": 90.0, "volume": 40},
    {"type": "SELL", "name": "GOOG", "price": 150.5, "volume": 50},
    {"type": "BUY", "name": "AMZN", "price": 10.0, "volume": 60},
    {"type": "SELL", "name": "MSFT", "price": 101.0, "volume": 70},
    {"type": "BUY", "name": "INTC", "price": 41.0, "volume": 80},
    {"type": "BUY", "name": "INTC", "price": 42.0, "volume": 90},
    {"type": "BUY", "name": "INTC", "price": 43.0, "volume": 100},
    {"type": "BUY", "name": "INTC", "price": 44.0, "volume": 110},
]


def expected_pairs(events: list[dict[str, Any]], window: int = 3) -> list[tuple[int, int]]:
    """SELL a; BUY b with a.price > 100 and end - start <= window, in end order."""
    out = []
    for j, b in enumerate(events):
        for i in range(max(0, j - window), j):
            a = events[i]
            if a["type"] == "SELL" and a["price"] is not None and a["price"] > 100 and b["type"] == "BUY":
                out.append((i, j))
    return sorted(out, key=lambda p: (p[1], p[0]))


def write_csv(path: Path, events: list[dict[str, Any]]) -> Path:
    cols = list(events[0])
    lines = [",".join(cols)] + [",".join("" if e[c] is None else str(e[c]) for c in cols) for e in events]
    path.write_text("\n".join(lines) + "\n")
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]], str]:
    code = main(list(args))
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines() if line.strip()]
    return code, lines, captured.err


def pairs_of(lines: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Positions of the output lines, checked to come in end order.

    Complex events with the same end may come in any (deterministic) order,
    so they are sorted here before comparing with the brute-force answer.
    """
    ends = [line["end"] for line in lines]
    assert ends == sorted(ends), "output must be in end-position order"
    for line in lines:
        assert (line["start"], line["end"]) == (min(line["positions"]), max(line["positions"]))
    found = [(line["positions"][0], line["positions"][-1]) for line in lines]
    assert all(len(line["positions"]) == 2 for line in lines)
    return sorted(found, key=lambda p: (p[1], p[0]))


# ------------------------------------------------------------- no engine needed
class TestArguments:
    def test_version_and_help(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["--version"]) == 0
        assert "kleene" in capsys.readouterr().out
        assert main(["run", "--help"]) == 0
        assert "--on-bad-row" in capsys.readouterr().out

    def test_no_command(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main([]) == 2
        assert "run" in capsys.readouterr().err

    def test_missing_input_argument_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["run", PAIRS]) == 2
        assert "--input" in capsys.readouterr().err

    def test_missing_query_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        data = write_csv(tmp_path / "e.csv", EVENTS)
        assert main(["run", str(tmp_path / "nope.ceql"), "--input", str(data)]) == 2
        assert "does not exist" in capsys.readouterr().err

    def test_bad_row_options(self, tmp_path: Path) -> None:
        assert bad_row_policy(None, None).mode == "error"
        assert bad_row_policy(["skip"], None).mode == "skip"
        q = tmp_path / "q.jsonl"
        with bad_row_policy(["quarantine", str(q)], None) as policy:
            assert policy.mode == "quarantine"
        with bad_row_policy(None, str(q)) as policy:  # --quarantine FILE implies the mode
            assert policy.mode == "quarantine"
        for words, file in ((["quarantine"], None), (["skip", "x"], None), (["drop"], None), (["skip"], str(q))):
            with pytest.raises(UsageError):
                bad_row_policy(words, file)

    def test_quarantine_without_file_exits_2(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        data = write_csv(tmp_path / "e.csv", EVENTS)
        assert main(["run", PAIRS, "--input", str(data), "--on-bad-row", "quarantine"]) == 2
        assert "needs a file" in capsys.readouterr().err

    def test_load_query(self, tmp_path: Path) -> None:
        assert load_query(PAIRS) == PAIRS
        f = tmp_path / "q.ceql"
        f.write_text("-- comment\n" + PAIRS)
        assert load_query(str(f)).endswith(PAIRS)
        assert load_query("-", stdin=io.StringIO(PAIRS)) == PAIRS
        with pytest.raises(UsageError):
            load_query(str(tmp_path / "missing.ceql"))


class TestProgress:
    """The bar is tqdm's, written to any stream: a StringIO stands for the terminal."""

    def test_silent_before_delay(self) -> None:
        out = io.StringIO()
        p = Progress(out, total=lambda: 100, events=lambda: 0, delay=60.0)
        list(p.track([pa.record_batch({"a": [1, 2]})]))
        p.close()
        assert out.getvalue() == "" and p.rows == 2
        assert not p.shown

    def test_draws_rows_rate_events_and_eta(self) -> None:
        out = io.StringIO()
        p = Progress(out, total=lambda: 4_000, events=lambda: 7, delay=0.0, interval=0.0)
        p.started -= 2.0  # the run began two seconds ago
        list(p.track([pa.record_batch({"a": list(range(1_000))})] * 2))
        frames = out.getvalue().split("\r")
        assert "50%|" in frames[-1] and "2,000/4,000 rows" in frames[-1]
        rate = re.search(r"([\d.]+)(k?) rows/s", frames[-1])
        assert rate is not None  # about 1,000 rows/s: 2,000 rows in 2 s
        assert 500 <= float(rate.group(1)) * (1000 if rate.group(2) else 1) <= 1_000
        assert "7 complex events" in frames[-1]
        eta = re.search(r"ETA (\d\d):(\d\d)", frames[-1])
        assert eta is not None  # 2,000 rows left at ~1,000 rows/s: about 2 s
        assert 1 <= int(eta.group(1)) * 60 + int(eta.group(2)) <= 4
        p.close()
        assert out.getvalue().endswith("\n")

    def test_unknown_total_has_no_eta(self) -> None:
        out = io.StringIO()
        p = Progress(out, total=lambda: None, events=lambda: 3, delay=0.0, interval=0.0)
        p.advance(1_234)
        p.close()
        assert "1,234 rows" in out.getvalue() and "3 complex events" in out.getvalue()
        assert "ETA" not in out.getvalue() and "%" not in out.getvalue()

    def test_total_failure_does_not_break_the_bar(self) -> None:
        def boom() -> int | None:
            raise OSError("gone")

        out = io.StringIO()
        p = Progress(out, total=boom, events=lambda: 0, delay=0.0, interval=0.0)
        p.advance(5)
        p.close()
        assert "5 rows" in out.getvalue() and "%" not in out.getvalue()

    def test_clear_erases_the_bar(self) -> None:
        out = io.StringIO()
        p = Progress(out, total=lambda: 10, events=lambda: 0, delay=0.0, interval=0.0)
        p.advance(5)
        p.clear()
        assert out.getvalue().endswith("\r") and "\n" not in out.getvalue()
        assert not p.shown

    def test_large_counts_are_short(self) -> None:
        out = io.StringIO()
        p = Progress(out, total=lambda: 2_400_000, events=lambda: 85_956, delay=0.0, interval=0.0)
        p.advance(1_200_000)
        p.close()
        last = out.getvalue().split("\r")[-1]
        assert "50%|" in last and "1.20M/2.40M rows" in last and "85,956 complex events" in last

    def test_two_bars_in_one_process_each_draw_one_line(self) -> None:
        for _ in range(2):  # tqdm would stack a second bar under a first one still open
            out = io.StringIO()
            p = Progress(out, total=lambda: 10, events=lambda: 0, delay=0.0, interval=0.0)
            p.advance(5)
            assert "\n" not in out.getvalue() and "\x1b[A" not in out.getvalue()

    @pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
    @pytest.mark.parametrize("columns", [80, 0])
    def test_on_a_real_terminal(self, columns: int) -> None:
        """A pseudo-terminal of 80 columns (or one that reports no width, as a new pty does)."""
        import fcntl
        import pty
        import struct
        import termios

        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        with open(slave, "w", encoding="utf-8", closefd=True) as terminal:
            assert terminal.isatty()
            p = Progress(terminal, total=lambda: 2_400_000, events=lambda: 85_956, delay=0.0, interval=0.0)
            p.started -= 3.0
            p.advance(1_200_000)
            p.close()
        data = b""
        while chunk := os.read(master, 65536):
            data += chunk
            if data.endswith(b"\n"):
                break
        os.close(master)
        last = data.decode("utf-8").rstrip("\r\n").split("\r")[-1]
        assert "1.20M/2.40M rows" in last and "85,956 complex events" in last and "ETA 00:0" in last
        assert len(last) <= (columns or 100)

    def test_tqdm_is_imported_only_when_the_bar_appears(self) -> None:
        code = (
            "import io, sys; from kleene.cli.progress import Progress; "
            "p = Progress(io.StringIO(), total=lambda: 9, events=lambda: 0, delay=60.0); "
            "p.advance(3); p.close(); print('tqdm' in sys.modules)"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert done.stdout.strip() == "False"


# ------------------------------------------------------------- with the engine
class TestRun:
    def test_end_to_end_csv(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        data = write_csv(tmp_path / "e.csv", EVENTS)
        code, lines, err = run_cli(capsys, "run", PAIRS, "--input", str(data))
        assert code == 0, err
        assert err == ""  # stderr is not a terminal here: no progress bar, nothing else
        want = expected_pairs(EVENTS)
        assert pairs_of(lines) == want and want
        first = lines[0]
        assert first["events"] == [EVENTS[k] for k in first["positions"]]
        assert "partition" not in first

    def test_output_is_in_end_order(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        data = write_csv(tmp_path / "e.csv", EVENTS)
        _, lines, _ = run_cli(capsys, "run", PAIRS, "--input", str(data))
        ends = [line["end"] for line in lines]
        assert ends == sorted(ends)

    def test_same_results_from_every_format(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        csv_file = write_csv(tmp_path / "e.csv", EVENTS)
        jsonl_file = tmp_path / "e.jsonl"
        jsonl_file.write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
        parquet_file = tmp_path / "e.parquet"
        pq.write_table(pa.Table.from_pylist(EVENTS), parquet_file)
        other = tmp_path / "events.data"
        other.write_text(jsonl_file.read_text())
        results = []
        for args in ([str(csv_file)], [str(jsonl_file)], [str(parquet_file)], [str(other), "--format", "jsonl"]):
            code, lines, err = run_cli(capsys, "run", PAIRS, "--batch-size", "3", "--input", *args)
            assert code == 0, err
            results.append(lines)
        assert all(r == results[0] for r in results)

    def test_output_file_and_query_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        data = write_csv(tmp_path / "e.csv", EVENTS)
        query = tmp_path / "q.ceql"
        query.write_text("-- pairs\n" + PAIRS + "\n")
        out = tmp_path / "out.jsonl"
        code, lines, err = run_cli(capsys, "run", str(query), "--input", str(data), "--output", str(out))
        assert code == 0, err and lines == []
        written = [json.loads(line) for line in out.read_text().splitlines()]
        assert pairs_of(written) == expected_pairs(EVENTS)
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]

    def test_progress_bar_on_a_terminal(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import kleene.cli.run as run_module

        class EagerProgress(Progress):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **{**kwargs, "delay": 0.0, "interval": 0.0})

        monkeypatch.setattr(run_module, "is_tty", lambda stream: stream is sys.stderr)
        monkeypatch.setattr(run_module, "Progress", EagerProgress)
        data = write_csv(tmp_path / "e.csv", EVENTS)
        code, lines, err = run_cli(capsys, "run", PAIRS, "--input", str(data), "--batch-size", "4")
        assert code == 0
        n = len(EVENTS)
        assert "100%|" in err and f"{n}/{n} rows" in err and "ETA" in err and "complex events" in err
        assert pairs_of(lines) == expected_pairs(EVENTS)
        code, _, err = run_cli(capsys, "run", PAIRS, "--input", str(data), "--no-progress")
        assert code == 0 and err == ""

    def test_demo_example(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, lines, err = run_cli(
            capsys,
            "run",
            str(ROOT / "examples" / "stock.ceql"),
            "--input",
            str(ROOT / "examples" / "stock.csv"),
            "--time-column",
            "time",
        )
        assert code == 0, err
        assert pairs_of(lines) == [(0, 2), (0, 3), (0, 4), (12, 13), (17, 20), (28, 30), (31, 36)]
        assert lines[0]["events"][0]["name"] == "MSFT" and lines[0]["events"][1]["name"] == "INTC"

    def test_numeric_time_column_with_unit(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        events = [
            {"type": "SELL", "price": 150.0, "time": 0},
            {"type": "BUY", "price": 1.0, "time": 1500},  # 1.5 s later: inside 2 seconds
            {"type": "BUY", "price": 1.0, "time": 2500},  # 2.5 s later: outside
        ]
        data = write_csv(tmp_path / "t.csv", events)
        query = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 2 seconds"
        code, lines, err = run_cli(capsys, "run", query, "--input", str(data), "--time-column", "time", "--time-unit", "ms")
        assert code == 0, err
        assert pairs_of(lines) == [(0, 1)]


class TestExitCodes:
    def test_syntax_error_exits_2_with_caret(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        data = write_csv(tmp_path / "e.csv", EVENTS)
        code, lines, err = run_cli(capsys, "run", "SELECT * FROM S WHERE SELL as a;; BUY", "--input", str(data))
        assert code == 2 and lines == []
        assert "^" in err and "line 1" in err

    def test_unknown_attribute_exits_2(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        data = write_csv(tmp_path / "e.csv", EVENTS)
        query = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[colour = 'red']"
        code, _, err = run_cli(capsys, "run", query, "--input", str(data))
        assert code == 2 and "colour" in err

    def test_malformed_input_exits_3(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        data = tmp_path / "bad.jsonl"
        data.write_text(json.dumps(EVENTS[0]) + "\n{not json\n")
        out = tmp_path / "out.jsonl"
        code, _, err = run_cli(capsys, "run", PAIRS, "--input", str(data), "--output", str(out))
        assert code == 3 and "line 2" in err
        assert not out.exists()  # a failed run leaves no output that looks complete

    def test_missing_input_file_exits_3(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        code, _, err = run_cli(capsys, "run", PAIRS, "--input", str(tmp_path / "none.csv"))
        assert code == 3 and "does not exist" in err


def _with_null_price() -> tuple[list[dict[str, Any]], int]:
    events = [dict(e) for e in EVENTS]
    bad = 6  # a SELL: the predicate a[price > 100] reads its price
    events[bad]["price"] = None
    return events, bad


class TestBadRows:
    def test_null_value_stops_the_run_by_default(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        events, bad = _with_null_price()
        data = write_csv(tmp_path / "e.csv", events)
        code, _, err = run_cli(capsys, "run", PAIRS, "--input", str(data))
        assert code == 3
        assert f"row {bad}" in err and "'price'" in err

    def test_skip_counts_and_keeps_positions(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        events, bad = _with_null_price()
        data = write_csv(tmp_path / "e.csv", events)
        code, lines, err = run_cli(capsys, "run", PAIRS, "--input", str(data), "--on-bad-row", "skip")
        assert code == 0, err
        assert "1 row set aside" in err and "'price'" in err
        # The skipped row keeps its number: the other rows' positions do not shift.
        kept = [e if k != bad else {**e, "type": "SKIPPED"} for k, e in enumerate(events)]
        want = [p for p in expected_pairs(kept, window=3) if bad not in p]
        assert pairs_of(lines) == want

    def test_quarantine_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        events, bad = _with_null_price()
        data = write_csv(tmp_path / "e.csv", events)
        qfile = tmp_path / "bad.jsonl"
        code, _, err = run_cli(capsys, "run", PAIRS, "--input", str(data), "--on-bad-row", "quarantine", str(qfile))
        assert code == 0, err
        assert "1 row set aside" in err and str(qfile) in err
        records = [json.loads(line) for line in qfile.read_text().splitlines()]
        assert len(records) == 1
        assert records[0]["row"] == bad and records[0]["column"] == "price"
        assert records[0]["reason"]
        assert records[0]["values"]["name"] == events[bad]["name"]

    def test_quarantine_option_form(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        events, bad = _with_null_price()
        data = write_csv(tmp_path / "e.csv", events)
        qfile = tmp_path / "q.jsonl"
        code, _, err = run_cli(capsys, "run", PAIRS, "--input", str(data), "--quarantine", str(qfile))
        assert code == 0, err
        assert json.loads(qfile.read_text().splitlines()[0])["row"] == bad


def test_python_dash_m_kleene(tmp_path: Path) -> None:
    data = write_csv(tmp_path / "e.csv", EVENTS)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-m", "kleene", "run", PAIRS, "--input", str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert pairs_of(lines) == expected_pairs(EVENTS)
    bad = subprocess.run(
        [sys.executable, "-m", "kleene", "run", "SELECT FROM", "--input", str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 2 and "^" in bad.stderr


def test_input_dash_reads_standard_input(tmp_path: Path) -> None:
    """``--input -``: the events come from standard input (CSV, or --format), with the same
    complex events as the file; the query and the events cannot both be standard input."""
    data = write_csv(tmp_path / "e.csv", EVENTS)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def kleene(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "kleene", "run", *args], input=stdin, capture_output=True,
            env=env, timeout=60,
        )

    proc = kleene(PAIRS, "--input", "-", stdin=data.read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert pairs_of([json.loads(line) for line in proc.stdout.splitlines()]) == expected_pairs(EVENTS)
    jsonl = "".join(json.dumps(e) + "\n" for e in EVENTS).encode()
    proc = kleene(PAIRS, "--input", "-", "--format", "jsonl", stdin=jsonl)
    assert proc.returncode == 0, proc.stderr
    assert pairs_of([json.loads(line) for line in proc.stdout.splitlines()]) == expected_pairs(EVENTS)
    both = kleene("-", "--input", "-", stdin=PAIRS.encode())
    assert both.returncode == 2 and b"not both" in both.stderr
