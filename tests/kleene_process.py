"""``kleene run ...`` in a process of its own, as a user runs it: exit code, stdout and stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def kleene_run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kleene", "run", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
