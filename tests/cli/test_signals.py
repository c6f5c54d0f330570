"""SIGTERM and SIGINT in the middle of a ``kleene run --output FILE`` (issue 16): the temporary
output is removed, nothing is left under the final name, and the exit status is the shell's
(143, 130).  A real process and a real signal, sent once the temporary file has grown."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kleene_process import ROOT


@pytest.mark.parametrize(
    ("signum", "status", "said"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")],
)
def test_a_signal_removes_the_temporary_output(
    tmp_path: Path, signum: int, status: int, said: str
) -> None:
    data = tmp_path / "events.csv"
    with data.open("w") as f:
        f.write("type,price\n")
        f.writelines(f"{'SELL' if i % 2 else 'BUY'},{i % 100}\n" for i in range(400_000))
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kleene",
            "run",
            "SELECT * FROM S WHERE SELL AS s FILTER s[price > 50]",
            "--input",
            str(data),
            "--output",
            str(out),
            "--batch-size",
            "1000",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(p.stat().st_size > 0 for p in tmp_path.glob(".out.jsonl.*.tmp")):
            assert proc.poll() is None, "the run ended before it was signalled"
            assert time.monotonic() < deadline, "no temporary output after 60 s"
            time.sleep(0.05)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status, err
    assert f"kleene: {said}" in err
    assert "Traceback" not in err
    assert list(tmp_path.glob(".out.jsonl.*")) == []
    assert not out.exists()
