"""The kill points the streaming SIGKILL drivers share (``stream_kill_driver.py`` for CEQL,
``mr_stream_kill_driver.py`` for MATCH_RECOGNIZE): a whole-process-group SIGKILL, as a crash
would be (no shutdown hook, no flush), placed around the ``foreachBatch`` sink's calls.

Imported by the drivers, which run as scripts from this folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kleene.spark import local_session


def die() -> None:
    """Kill this driver, its JVM and its Python workers at once."""
    sys.stderr.flush()
    os.killpg(os.getpgrp(), signal.SIGKILL)


def hook_sink_calls(writer_cls: type, config: dict[str, Any]) -> dict[str, Any]:
    """Wrap ``writer_cls.__call__`` (the sink, in this process only) for ``config["kill"]``.

    ``before_write`` / ``after_writes``: die as the ``batch``-th sink call starts / ends;
    ``timer``: ``delay`` seconds after the first call started; ``between_writes``: the returned
    state's ``between`` is true during the ``batch``-th call, for the driver's write hook to
    die after the first output write.  The state also counts the calls (``batches``).
    """
    kill: str = config["kill"]
    state: dict[str, Any] = {"batches": 0, "timer": None, "between": False}
    lock = threading.Lock()
    writer_call = writer_cls.__call__  # type: ignore[operator]

    def start_timer() -> None:
        with lock:
            if kill == "timer" and state["timer"] is None:
                state["timer"] = threading.Timer(float(config["delay"]), die)
                state["timer"].daemon = True
                state["timer"].start()

    def hooked_call(self: Any, df: Any, batch_id: int) -> None:
        start_timer()
        with lock:
            state["batches"] += 1
            mine = state["batches"] == int(config.get("batch", -1))
        if mine and kill == "before_write":
            die()
        state["between"] = mine and kill == "between_writes"
        writer_call(self, df, batch_id)
        if mine and kill == "after_writes":
            die()

    writer_cls.__call__ = hooked_call  # type: ignore[operator]
    return state


def kill_session(app_name: str) -> Any:
    """The drivers' SparkSession.  C1 only (quick_jit): each run is short, and a test starts
    three JVMs or more; C2's compilations cost more CPU than they save on a few thousand rows
    (docs/reliability.md)."""
    return local_session(
        "local[2]", app_name=app_name, quick_jit=True,
        **{"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
    )


def run_to_end(queries: Iterable[Any], state: dict[str, Any], spark: Any) -> int:
    """Await each started query in turn (``queries`` starts the next one only when asked: one at
    a time, since each micro-batch starts Python workers, which on a loaded machine miss Spark's
    connect-back timeout when five start at once); 1 if one failed, else 0 once all ended."""
    for q in queries:
        q.awaitTermination()
        if q.exception() is not None:
            print(q.exception(), file=sys.stderr)
            return 1
    print(f"done after {state['batches']} sink calls", file=sys.stderr)
    time.sleep(0.1)
    spark.stop()
    return 0


def run_driver(driver: Path, base: Path, config: dict[str, Any], kill: dict[str, Any], log: Path) -> int:
    """Run ``driver`` on ``config`` and ``kill`` (written to ``base/config.json``) in a process
    group of its own, its output appended to ``log``; its exit status (negative: the signal)."""
    path = base / "config.json"
    path.write_text(json.dumps({**config, **kill}))
    with open(log, "a") as out:
        out.write(f"\n=== {kill}\n")
        out.flush()
        proc = subprocess.Popen([sys.executable, str(driver), str(path)], stdout=out, stderr=out,
                                start_new_session=True)
        try:
            return proc.wait(timeout=900)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this test created
            proc.wait()
            raise


def run_schedule(run: Callable[[dict[str, Any]], int], schedule: list[dict[str, Any]], log: Path) -> int:
    """Run the driver once per kill of ``schedule`` (each ends killed or done), then once to the
    end without a kill, which must succeed; the number of runs a kill ended."""
    killed = 0
    for kill in schedule:
        code = run(kill)
        assert code in (-signal.SIGKILL, 0), f"driver exit {code}; see {log}"
        killed += code == -signal.SIGKILL
    assert run({"kill": "none"}) == 0, log.read_text()[-3000:]
    return killed
