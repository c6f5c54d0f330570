"""What a `kleene run` process loads and does at start and exit (issue 18, start-up).

Each run is a fresh interpreter (``python -m kleene``, as the installed script runs
:func:`kleene.console.main`) that writes, at exit, its ``sys.modules``, its environment's
``OPENBLAS_NUM_THREADS`` and the number of frozen objects.  The second run of a query finds
its parse in the cache (:mod:`kleene.language.query_cache`), so lark and the parser stay
unloaded; the first run of the same query loads them (so the check can fail).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAIR = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] AND b[price < a.price] WITHIN 3 EVENTS"
LAZY = (
    "lark", "kleene.language.parser", "kleene.language.limits", "kleene.registers.unrolling", "numpy.ma",
    "kleene.runtime.engine", "kleene.automata.determinize", "kleene.registers.merged", "re2", "gzip",
    "kleene.cli.explain", "kleene.cli.plot", "kleene.cli.sql", "kleene.cli.stream",
    "kleene.io.jsonl_reader", "kleene.io.parquet_reader", "kleene.registers.products",
)
"""Not loaded by `kleene run` of a query parsed before (the pair query: the register engine).
``numpy.ma``: ``pa.array`` of a numpy array imports it (~9 ms), the pair join's ``take`` does not
(``kleene.registers.pairs.indices``).  CORE's tECS engine (``kleene.runtime.engine`` and the
modules under it) and the register runtimes other than the one that runs are not imported; nor
are re2 (LIKE) and gzip (`.gz` inputs), nor the modules of the other sub-commands, nor the
readers of the other formats (JSON Lines, Parquet) and the AND/ALL product of the register
construction."""

RECORD = """
import atexit, gc, json, os, runpy, sys

def record(path=sys.argv[1]):
    with open(path, "w") as f:
        json.dump({"modules": sorted(sys.modules), "blas": os.environ.get("OPENBLAS_NUM_THREADS"),
                   "frozen": gc.get_freeze_count()}, f)

atexit.register(record)
sys.argv = ["kleene", *sys.argv[2:]]
runpy.run_module("kleene", run_name="__main__", alter_sys=True)
"""


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict]:
    report = tmp_path / "report.json"
    full = {
        **os.environ,
        "KLEENE_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **(env or {}),
    }
    full.pop("OPENBLAS_NUM_THREADS", None) if env is None or "OPENBLAS_NUM_THREADS" not in env else None
    proc = subprocess.run(
        [sys.executable, "-c", RECORD, str(report), *args], capture_output=True, text=True, env=full, timeout=120
    )
    return proc, json.loads(report.read_text())


def loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.fixture
def events(tmp_path: Path) -> Path:
    path = tmp_path / "e.csv"
    path.write_text("type,price\nSELL,120\nBUY,40\nSELL,90\nBUY,130\nBUY,41\n")
    return path


def test_a_query_run_again_loads_neither_lark_nor_the_parser(events: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    first, report = run(tmp_path, "run", PAIR, "--input", str(events), "--output", str(out))
    assert first.returncode == 0, first.stderr
    assert "lark" in report["modules"] and "kleene.language.parser" in report["modules"]
    lines = out.read_text()
    again, report = run(tmp_path, "run", PAIR, "--input", str(events), "--output", str(out))
    assert again.returncode == 0, again.stderr
    assert out.read_text() == lines
    assert [json.loads(line)["positions"] for line in lines.splitlines()] == [[0, 1]]
    assert "kleene.registers.runtime" in report["modules"]  # the register engine ran
    assert loaded(report["modules"], LAZY) == []


STOCK = (
    '"type","id","name","price","volume","time"\n'
    '"BUY",0,"MSFT",187.3469651129599,5472,1700000000013\n'
    '"SELL",1,"AAPL",2.5e+16,548,1700000000028\n'
    '"BUY",2,"INTC",1e-05,77,1700000000031\n'
    '"SELL",3,"AAPL",134.764052400317766,12,1700000000049\n'
    '"BUY",4,"MSFT",101.0,9,1700000000052\n'
)


@pytest.mark.parametrize("rows", [1, 5])
def test_the_pair_query_runs_without_pyarrow_compute(tmp_path: Path, rows: int) -> None:
    """``pyarrow.compute`` (~27 ms to import) is not loaded by the pair query's run on stock
    events (floats written in both notations, strings, integers): its kernels are called through
    :mod:`kleene.kernels`; one row takes other paths (a single event's type looked up without
    kernels)."""
    events = tmp_path / "stock.csv"
    events.write_text("".join(STOCK.splitlines(keepends=True)[: rows + 1]))
    out = tmp_path / "out.jsonl"
    proc, report = run(tmp_path, "run", PAIR, "--input", str(events), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "kleene.registers.pairs" in report["modules"]  # the pair join ran
    assert loaded(report["modules"], ("pyarrow.compute",)) == []
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["positions"] for line in lines] == ([[1, 2], [3, 4], [1, 4]] if rows > 1 else [])
    prices = [float(row.split(",")[3]) for row in STOCK.splitlines()[1:]]
    assert [[e["price"] for e in line["events"]] for line in lines] == [
        [prices[p] for p in line["positions"]] for line in lines
    ]
    assert '"price": 2.5e+16' in out.read_text() or rows == 1  # repr's notation, not Arrow's


def test_a_selective_query_runs_without_pyarrow_compute(tmp_path: Path) -> None:
    """CORE's selective stock query (tECS engine): its few events' rows are taken out of the
    stored ones (``EventRows.rendered``) through :mod:`kleene.kernels` too."""
    events = tmp_path / "stock.csv"
    filler = "".join(f'"BUY",{i},"MSFT",50.5,1,{1700000000000 + i}\n' for i in range(40))
    events.write_text(STOCK.splitlines(keepends=True)[0] + filler + '"SELL",40,"AAPL",250.25,3,1700000000040\n'
                      '"BUY",41,"INTC",0.5,4,1700000000041\n')
    query = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 199] AND b[price < 1] WITHIN 3 EVENTS"
    out = tmp_path / "out.jsonl"
    proc, report = run(tmp_path, "run", query, "--input", str(events), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "kleene.runtime.engine" in report["modules"]  # CORE's engine ran
    assert loaded(report["modules"], ("pyarrow.compute",)) == []
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(line["positions"], [e["price"] for e in line["events"]]) for line in lines] == [([40, 41], [250.25, 0.5])]


def test_the_process_runs_blas_on_one_thread_and_freezes_before_exit(events: Path, tmp_path: Path) -> None:
    proc, report = run(tmp_path, "run", PAIR, "--input", str(events))
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 1  # stdout flushed at exit
    assert report["blas"] == "1"
    assert report["frozen"] > 10_000  # pyarrow's, numpy's and kleene's objects
    proc, report = run(tmp_path, "run", PAIR, "--input", str(events), env={"OPENBLAS_NUM_THREADS": "3"})
    assert proc.returncode == 0 and report["blas"] == "3"  # the user's setting is kept


FINALIZED = """
import atexit, runpy, sys, threading, time
from pathlib import Path

marker, linger = Path(sys.argv[1]), sys.argv[2] == "linger"
atexit.register(lambda: marker.write_text("ran"))
if linger:  # a thread that is not a daemon, alive when the command returns
    def wait():
        deadline = time.monotonic() + 120
        while "kleene.registers.pairs" not in sys.modules and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(1.0)  # the query compiled: its run on 5 events ends well before this
    threading.Thread(target=wait).start()
sys.argv = ["kleene", *sys.argv[3:]]
runpy.run_module("kleene", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("linger", [False, True], ids=["fast", "thread-alive"])
def test_the_process_ends_without_the_interpreters_finalization(events: Path, tmp_path: Path, linger: bool) -> None:
    """kleene.console.leave: the atexit functions run and stdout is flushed, then the process
    ends without tearing its modules down (``python -v`` prints no ``# cleanup`` line, which
    the interpreter's finalization prints); with a thread that is not a daemon still alive,
    the interpreter's own exit runs as before."""
    marker, out = tmp_path / "marker", tmp_path / "out.jsonl"
    env = {**os.environ, "KLEENE_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    mode = "linger" if linger else "fast"
    for output in (["--output", str(out)], [])[: 1 if linger else 2]:  # to a file, then to stdout
        marker.unlink(missing_ok=True)
        proc = subprocess.run(
            [sys.executable, "-v", "-c", FINALIZED, str(marker), mode, "run", PAIR, "--input", str(events),
             *output],
            capture_output=True, text=True, env=env, timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert marker.read_text() == "ran"  # the atexit functions ran
        assert ("# cleanup[" in proc.stderr) == linger
        lines = proc.stdout if not output else out.read_text()
        assert [json.loads(line)["positions"] for line in lines.splitlines()] == [[0, 1]]
    bad = subprocess.run(
        [sys.executable, "-v", "-c", FINALIZED, str(marker), "fast", "run", "SELECT * FROM S WHERE SELL as a; ; BUY",
         "--input", str(events)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert bad.returncode == 2 and "query error" in bad.stderr and "# cleanup[" not in bad.stderr


def test_exit_codes_and_messages_are_the_commands(events: Path, tmp_path: Path) -> None:
    bad, _ = run(tmp_path, "run", "SELECT * FROM S WHERE SELL as a; ; BUY", "--input", str(events))
    assert bad.returncode == 2 and "query error" in bad.stderr and "^" in bad.stderr
    missing, _ = run(tmp_path, "run", PAIR, "--input", str(tmp_path / "nope.csv"))
    assert missing.returncode == 3 and "input error" in missing.stderr and "nope.csv" in missing.stderr
    # The file is read while the query compiles: the query's error still comes first.
    both, _ = run(tmp_path, "run", "SELECT * FROM S WHERE SELL as a; ; BUY", "--input", str(tmp_path / "nope.csv"))
    assert both.returncode == 2 and "query error" in both.stderr and "nope.csv" not in both.stderr


def test_the_installed_script_is_the_process_wrapper() -> None:
    (script,) = entry_points(group="console_scripts", name="kleene")
    assert script.value == "kleene.console:main"


def test_the_command_line_is_parsed_before_the_engine_is_imported(tmp_path: Path) -> None:
    """`kleene run` starts reading its file (kleene.io.prefetch) before it imports the engine,
    so that the file is read while the engine's modules load: the parser of the command line
    needs neither."""
    script = (
        "import json, sys\n"
        "from kleene.cli import build_parser\n"
        "build_parser().parse_args(['run', 'SELECT * WHERE A', '--input', 'x.csv'])\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    modules = json.loads(proc.stdout)
    assert "kleene.cli.run" in modules and "kleene.io.prefetch" in modules
    engine = ("kleene.api", "kleene.planning", "kleene.session", "kleene.evaluable", "kleene.registers")
    assert loaded(modules, engine) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")
def test_the_output_is_sent_towards_the_disk_while_the_run_goes_on(tmp_path: Path) -> None:
    """kleene.cli.output: after each batch the kernel is asked (and accepts) to start writing
    the temporary file out, so the rename over an existing OUT finds little left to do."""
    from kleene.cli.output import Output, start_writeback

    final = tmp_path / "out.jsonl"
    final.write_text("the previous run's\n")
    output = Output(str(final))
    assert output.temp is not None and start_writeback() is not None
    for k in range(3):
        output.writer.write({"batch": k, "text": "x" * 100_000})
        output.writer.flush()
        output.written()
        output._wait()  # one at a time here, so that each is counted
    output.commit()
    assert output.writebacks == 3
    lines = [json.loads(line) for line in final.read_text().splitlines()]
    assert [line["batch"] for line in lines] == [0, 1, 2]
    assert start_writeback()(final) and not start_writeback()(tmp_path / "missing")
    to_stdout = Output("-")
    to_stdout.written()
    assert to_stdout.writebacks == 0 and to_stdout._flusher is None


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_the_jsonl_writer_says_when_it_handed_bytes_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: bool
) -> None:
    """JsonlWriter(written=...) is called after the pieces of the bulk path (kleene run starts
    the writeback there), and the lines are those written without it."""
    import pyarrow as pa

    import kleene
    from kleene.io import jsonl_bulk, writers

    if pure:
        monkeypatch.setattr(jsonl_bulk, "_jsonl", None)
    events = pa.table({"type": ["SELL", "BUY", "SELL", "BUY"] * 500, "price": [120.0, 40.0, 150.0, 99.5] * 500})
    query = kleene.compile(PAIR)
    calls: list[int] = []
    with_hook, without = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    hooked = writers.JsonlWriter(with_hook, written=lambda: calls.append(1))
    plain = writers.JsonlWriter(without)
    for found in query.match_batches(events, events=True):
        hooked.write_batch(found)
        plain.write_batch(found)
    hooked.close()
    plain.close()
    assert with_hook.read_bytes() == without.read_bytes() and hooked.count > 1000
    assert len(calls) >= 1
