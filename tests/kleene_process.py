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


CAP = 3_000_000_000
"""Address space of a victim process (bytes): a limit that fails cannot swap the machine."""


def capped_run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``kleene run ARGS`` in a process whose address space is capped at :data:`CAP`."""
    code = (
        f"import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({CAP}, {CAP})); "
        "from kleene.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "run", *args], capture_output=True, text=True,
        timeout=timeout, cwd=ROOT,
    )
