"""Where ``kleene run`` writes complex events: stdout, or a file written under a temporary name
and renamed over OUT only when the run succeeds (a failed run never leaves a truncated result
that looks complete).

Renaming the temporary file over an existing OUT makes Linux's ext4 (delayed allocation) send
the whole new file towards the disk first, so that a crash leaves the old file or the new one,
never an empty one: ~20 ms for the 28 MB of JSON Lines of 94,275 complex events, at the very
end of the run.  :meth:`Output.written` starts that work for what is written so far, in a
thread, while the next batches are computed (:func:`start_writeback`).
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from kleene.cli.common import UsageError
from kleene.io.writers import ArrowWriter, JsonlWriter


class Output:
    """The sink (JSON Lines, Parquet or Arrow); a file is written under a temporary name and
    renamed on success."""

    def __init__(self, target: str, fmt: str = "jsonl") -> None:
        self.final: Path | None = None
        self.temp: Path | None = None
        self._flusher: threading.Thread | None = None
        self._starting = threading.Lock()  # written() is called by the JSON Lines writer's thread too
        self.writebacks = 0
        """Writebacks started by :meth:`written` that the kernel accepted."""
        self.writer: JsonlWriter | ArrowWriter
        if target == "-":
            if fmt != "jsonl":
                raise UsageError(f"--output-format {fmt} writes a file: give --output FILE")
            self.writer = JsonlWriter("-")
            return
        self.final = Path(target)
        try:
            fd, name = tempfile.mkstemp(prefix=f".{self.final.name}.", suffix=".tmp", dir=self.final.parent)
        except OSError as exc:
            raise OSError(f"cannot write {target!r}: {exc.strerror or exc}") from exc
        os.close(fd)
        self.temp = Path(name)
        self.writer = (
            JsonlWriter(self.temp, written=self.written) if fmt == "jsonl" else ArrowWriter(self.temp, fmt)
        )

    def written(self) -> None:
        """Start sending what the file holds so far to the disk (in a thread; a no-op for
        standard output, where the previous one still runs, or off Linux).  Called by the JSON
        Lines writer after each piece of a few MiB, and after each batch."""
        with self._starting:
            if self.temp is None or (self._flusher is not None and self._flusher.is_alive()):
                return
            start = start_writeback()
            if start is None:
                return
            path = self.temp

            def run() -> None:
                if start(path):
                    self.writebacks += 1

            flusher = threading.Thread(target=run, name="kleene-writeback", daemon=True)
            flusher.start()
            self._flusher = flusher

    def _wait(self) -> None:
        with self._starting:
            flusher, self._flusher = self._flusher, None
        if flusher is not None and flusher.ident is not None:
            flusher.join()

    def commit(self) -> None:
        self.writer.close()  # first: the writer's last pieces may start a writeback
        self._wait()
        if self.temp is not None and self.final is not None:
            # mkstemp makes the file private (0600); give it the usual permissions.
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(self.temp, 0o666 & ~mask)
            os.replace(self.temp, self.final)
            self.temp = None

    def abort(self) -> None:
        try:
            self.writer.close()
        except OSError:
            pass
        self._wait()
        if self.temp is not None:
            self.temp.unlink(missing_ok=True)


@functools.cache
def start_writeback() -> Callable[[Path], bool] | None:
    """A function that starts the writeback of a file's dirty pages without waiting for the disk
    (Linux's ``sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)``) and says whether the kernel
    accepted; None where there is no such call."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # loaded already: numpy imports it

    try:
        sync_file_range = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    sync_file_range.restype = ctypes.c_int
    write = 2  # SYNC_FILE_RANGE_WRITE

    def start(path: Path) -> bool:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return False
        try:
            return bool(sync_file_range(fd, 0, 0, write) == 0)
        finally:
            os.close(fd)

    return start

