"""The kill points the streaming SIGKILL drivers share (``stream_kill_driver.py`` for CEQL,
``mr_stream_kill_driver.py`` for MATCH_RECOGNIZE): a whole-process-group SIGKILL, as a crash
would be (no shutdown hook, no flush), placed around the ``foreachBatch`` sink's calls.

Imported by the drivers, which run as scripts from this folder.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any


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
