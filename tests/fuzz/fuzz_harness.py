"""Run fuzz cases in capped child processes and sort the outcomes: fine or a failure.

Two ways in, as a user meets kleene:

* :class:`Worker`: a long-lived child (:mod:`fuzz_worker`) for the Python API,
  thousands of cases per interpreter start.  A case that kills it (a signal),
  hangs past the timeout or exhausts its capped memory costs only that worker:
  the case is recorded and a new worker starts.
* :func:`run_cli`: ``kleene run`` as its own process, so that a segfault shows
  as a negative return code, and exit code and stderr are checked as a script
  would: 0, or 2/3 with a ``kleene`` message and no traceback.

Every child runs under ``RLIMIT_AS`` (:data:`MEMORY_BYTES`) and a timeout, so
a memory explosion ends in that child, never on the machine.  There is no
allow-list: every outcome that is not fine is a failure.
"""

from __future__ import annotations

import json
import os
import re
import resource
import select
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MEMORY_BYTES = 3_000_000_000
"""Address-space cap of every child (the project's rule for probes that may grow)."""
STARTUP_SECONDS = 120


def _cap_memory(limit: int) -> Callable[[], None]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return cap


@dataclass
class Outcome:
    """What one case did.  ``status``: ``ok``, ``kleene`` (kleene's own error), ``foreign``
    (pyarrow refused an Arrow file before kleene saw it), ``exception`` (another exception,
    or a traceback or wrong exit code of the CLI), ``crash`` (killed by a signal) or ``hang``."""

    status: str
    type: str = ""
    message: str = ""
    traceback: str = ""
    returncode: int | None = None

    @property
    def fine(self) -> bool:
        return self.status in ("ok", "kleene", "foreign")

    def signature(self) -> str:
        """A short key that groups failures with the same cause."""
        if self.status == "crash":
            return f"crash (signal {-(self.returncode or 0)})"
        if self.status == "hang":
            return "hang"
        frame = ""
        for m in re.finditer(r'File "([^"]+)", line (\d+), in (\w+)', self.traceback):
            if "/kleene/" in m.group(1):
                frame = f" at {Path(m.group(1)).name}:{m.group(2)} {m.group(3)}"
        return f"{self.type}{frame}"


@dataclass(frozen=True)
class Case:
    """One fuzz input: ``kind`` (``query``, ``api``, ``cli``, ``ipc``), the input's ``format``
    (``query`` or a seed kind), what was done to it, and the data (query text or file path)."""

    kind: str
    format: str
    damages: tuple[str, ...]
    data: str


LIMITS = "limits: parses, then compilation or run hangs or runs out of memory"
"""The type :func:`fuzz_loops.fuzz_queries` gives a hang, crash or MemoryError of a text that parses."""


# ------------------------------------------------------------------ worker
class Worker:
    """A :mod:`fuzz_worker` child, restarted after a crash or a hang."""

    def __init__(self, timeout: float = 10.0, memory: int = MEMORY_BYTES) -> None:
        self.timeout = timeout
        self.memory = memory
        self.proc: subprocess.Popen[str] | None = None
        self.restarts = 0

    def _start(self) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(HERE)}
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "fuzz_worker.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, cwd=ROOT, env=env, preexec_fn=_cap_memory(self.memory),
        )
        assert proc.stdout is not None
        # wait for its imports (slow on a loaded machine) before any case's timeout starts
        ready, _, _ = select.select([proc.stdout], [], [], STARTUP_SECONDS)
        if not ready or json.loads(proc.stdout.readline() or "{}").get("status") != "ready":
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            raise RuntimeError(f"the fuzz worker did not start in {STARTUP_SECONDS} s")
        return proc

    def ask(self, request: dict[str, Any]) -> Outcome:
        """The worker's answer; a hang is confirmed once with 4 times the timeout (a loaded
        machine, not the case, can make a case slow)."""
        outcome = self._ask(request, self.timeout)
        if outcome.status == "hang":
            outcome = self._ask(request, 4 * self.timeout)
        return outcome

    def _ask(self, request: dict[str, Any], timeout: float) -> Outcome:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            return self._dead(proc)
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            self._kill(proc)
            return Outcome("hang", message=f"no answer in {timeout:g} s")
        line = proc.stdout.readline()
        if not line:
            return self._dead(proc)
        res = json.loads(line)
        return Outcome(res["status"], res.get("type", ""), res.get("message", ""), res.get("traceback", ""))

    def _dead(self, proc: subprocess.Popen[str]) -> Outcome:
        rc = proc.wait()
        self.proc = None
        self.restarts += 1
        return Outcome("crash", message=f"worker ended with {rc}", returncode=rc)

    def _kill(self, proc: subprocess.Popen[str]) -> None:
        os.kill(proc.pid, signal.SIGKILL)  # our own child, by its id
        proc.wait()
        self.proc = None
        self.restarts += 1

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill(self.proc)
        self.proc = None


# --------------------------------------------------------------------- CLI
def run_cli(args: Sequence[str], timeout: float = 30.0, memory: int = MEMORY_BYTES) -> Outcome:
    """``kleene run ARGS`` in its own capped process, judged by exit code and stderr.
    A hang is confirmed once with 4 times the timeout, as in :meth:`Worker.ask`."""
    for wait in (timeout, 4 * timeout):
        try:
            done = subprocess.run(
                [sys.executable, "-m", "kleene", "run", *args, "--no-progress"],
                capture_output=True, timeout=wait, cwd=ROOT, preexec_fn=_cap_memory(memory),
            )
        except subprocess.TimeoutExpired:
            continue
        return judge_cli(done.returncode, done.stderr.decode("utf-8", "replace"))
    return Outcome("hang", message=f"no exit in {4 * timeout:g} s")


def judge_cli(rc: int, stderr: str) -> Outcome:
    if rc < 0:
        return Outcome("crash", message=stderr[-2000:], returncode=rc)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if "Traceback (most recent call last)" in stderr:
        last = lines[-1] if lines else ""
        return Outcome("exception", last.split(":")[0], last, stderr[-6000:], rc)
    if rc == 0:
        return Outcome("ok", returncode=rc)
    said = any(ln.startswith("kleene") for ln in lines)
    if rc in (2, 3) and said:
        return Outcome("kleene", message=stderr[-2000:], returncode=rc)
    return Outcome("exception", f"exit {rc}", stderr[-2000:], stderr[-6000:], rc)


# ------------------------------------------------------------------ report
@dataclass
class Tally:
    """Counts per (case kind, status), and the failures by signature."""

    cases: Counter[str] = field(default_factory=Counter)
    failures: dict[str, list[tuple[Case, Outcome]]] = field(default_factory=dict)

    def add(self, case: Case, outcome: Outcome) -> None:
        self.cases[f"{case.kind} {outcome.status}"] += 1
        if outcome.fine:
            return
        self.failures.setdefault(outcome.signature(), []).append((case, outcome))

    @property
    def total(self) -> int:
        return sum(self.cases.values())

    @property
    def new_failures(self) -> int:
        return sum(len(v) for v in self.failures.values())

    def summary(self) -> str:
        out = [f"cases: {self.total}"]
        out += [f"  {k}: {v}" for k, v in sorted(self.cases.items())]
        out.append(f"new failures: {self.new_failures}")
        for sig, items in sorted(self.failures.items()):
            case, outcome = items[0]
            data = case.data if len(case.data) < 300 else case.data[:300] + "..."
            out.append(f"  {sig}: {len(items)}, e.g. {case.kind} {case.format} {list(case.damages)}")
            out.append(f"    input: {data!r}")
            out.append(f"    {outcome.type}: {outcome.message[:300]!r}")
        return "\n".join(out)
