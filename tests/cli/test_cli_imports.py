"""What the ``kleene`` command imports: Spark and pandas only for the Spark commands.

Each test runs a fresh interpreter, since the test process itself has
imported pandas and PySpark long before.  Building the parser, ``kleene run``
and ``kleene explain`` must leave ``pyspark``, ``pandas`` and ``kleene.spark``
unimported.  Without PySpark (or pandas) installed, the Spark commands stop
with exit code 1 and name the extra to install, and ``kleene run`` still
works.  "Not installed" is made real in the subprocess by a ``sys.meta_path``
finder that fails the import, as Python does for a missing package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUERY = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 3 EVENTS"
HEAVY = ("pyspark", "pandas", "kleene.spark", "matplotlib", "tqdm", "kleene.pictures")
"""Never imported by the parser, `kleene run` (no bar when stderr is not a terminal) or a
plain `kleene explain`: the pictures and the progress bar import theirs when they are made."""


def python(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120)


def heavy_modules(names: set[str] | list[str]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY))


# ``python -m kleene ARGS`` (runpy, as -m does), writing sys.modules at exit to a file.
AS_MAIN = """
import atexit, json, runpy, sys

def record(path=sys.argv[1]):
    with open(path, "w") as f:
        json.dump(sorted(sys.modules), f)

atexit.register(record)
sys.argv = ["kleene", *sys.argv[2:]]
runpy.run_module("kleene", run_name="__main__", alter_sys=True)
"""


def as_main(modules: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    proc = python("-c", AS_MAIN, str(modules), *args)
    return proc, json.loads(modules.read_text())


@pytest.fixture
def events(tmp_path: Path) -> Path:
    path = tmp_path / "e.csv"
    path.write_text("type,price\nSELL,120\nBUY,40\nSELL,90\nBUY,41\n")
    return path


def test_run_and_explain_import_no_spark_nor_pandas(events: Path, tmp_path: Path) -> None:
    run, modules = as_main(tmp_path / "run.json", "run", QUERY, "--input", str(events))
    assert run.returncode == 0, run.stderr
    assert [json.loads(line)["positions"] for line in run.stdout.splitlines()] == [[0, 1], [0, 3]]
    assert "kleene.cli.run" in modules and "pyarrow" in modules  # the list is sys.modules
    assert heavy_modules(modules) == []
    assert not {"pyarrow.parquet", "pyarrow.json"} & set(modules)  # a CSV run reads neither format
    explain, modules = as_main(tmp_path / "explain.json", "explain", QUERY)
    assert explain.returncode == 0, explain.stderr
    assert "engine: tecs" in explain.stdout
    assert heavy_modules(modules) == []


def test_main_in_process_imports_no_spark_nor_pandas(events: Path, tmp_path: Path) -> None:
    """``main`` called as a library, every output format, then what is in ``sys.modules``."""
    script = f"""
import json, sys
from kleene.cli import build_parser, main
build_parser()
after_parser = sorted(sys.modules)
codes = [main(["run", {QUERY!r}, "--input", {str(events)!r}, "-o", {str(tmp_path / "o.jsonl")!r}]),
         main(["run", {QUERY!r}, "--input", {str(events)!r}, "-o", {str(tmp_path / "o.parquet")!r}]),
         main(["run", {QUERY!r}, "--input", {str(events)!r}, "-o", {str(tmp_path / "o.arrow")!r}]),
         main(["explain", {QUERY!r}])]
print(json.dumps({{"codes": codes, "after_parser": after_parser, "after_runs": sorted(sys.modules)}}))
"""
    proc = python("-c", script)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["codes"] == [0, 0, 0, 0]
    assert heavy_modules(report["after_parser"]) == []
    assert heavy_modules(report["after_runs"]) == []
    assert (tmp_path / "o.parquet").exists() and (tmp_path / "o.arrow").exists()


# Runs in a fresh interpreter: makes BLOCKED impossible to import, then runs each command
# with stderr captured, and prints every command's exit code and messages as JSON.
WITHOUT = """
import contextlib, io, json, sys

BLOCKED = sys.argv[1]


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name == BLOCKED or name.startswith(BLOCKED + "."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
from kleene.cli import main

report = {}
for name, command in json.loads(sys.argv[2]).items():
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(command)
    report[name] = [code, err.getvalue()]
try:
    import kleene.spark
    report["import"] = None
except ImportError as exc:
    report["import"] = [type(exc).__name__, str(exc)]
report["modules"] = sorted(sys.modules)
print(json.dumps(report))
"""


@pytest.mark.parametrize("missing", ["pyspark", "pandas"])
def test_spark_commands_without_the_spark_extra(missing: str, events: Path, tmp_path: Path) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "a.jsonl").write_text('{"type": "SELL", "price": 120, "ts": 1}\n')
    out = tmp_path / "out.jsonl"
    commands = {
        "stream": [
            "stream", "SELECT * FROM S WHERE SELL as a; BUY as b WITHIN 10 seconds",
            "--input-dir", str(inp), "--output-dir", str(tmp_path / "o"),
            "--checkpoint", str(tmp_path / "ck"), "--time-column", "ts", "--available-now",
        ],
        "run on spark": ["run", QUERY, "--input", str(events), "--engine", "spark", "-o", str(tmp_path / "s.jsonl")],
        "run": ["run", QUERY, "--input", str(events), "-o", str(out)],
    }
    proc = python("-c", WITHOUT, missing, json.dumps(commands))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    for name in ("stream", "run on spark"):
        code, err = report[name]
        assert code == 1, (name, err)
        assert "pip install 'kleene[spark]'" in err and missing in err, (name, err)
        assert "Traceback" not in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "s.jsonl").exists()
    code, err = report["run"]
    assert code == 0 and err == ""
    assert [json.loads(line)["positions"] for line in out.read_text().splitlines()] == [[0, 1], [0, 3]]
    kind, message = report["import"]
    assert kind == "MissingDependencyError" and "kleene[spark]" in message
    assert missing not in report["modules"]
