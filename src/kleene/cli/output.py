"""Where ``kleene run`` writes complex events: stdout, or a file written under a temporary name
and renamed over OUT only when the run succeeds (a failed run never leaves a truncated result
that looks complete)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kleene.cli.common import UsageError
from kleene.io.writers import ArrowWriter, JsonlWriter


class Output:
    """The sink (JSON Lines, Parquet or Arrow); a file is written under a temporary name and
    renamed on success."""

    def __init__(self, target: str, fmt: str = "jsonl") -> None:
        self.final: Path | None = None
        self.temp: Path | None = None
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
        self.writer = JsonlWriter(self.temp) if fmt == "jsonl" else ArrowWriter(self.temp, fmt)

    def commit(self) -> None:
        self.writer.close()
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
        if self.temp is not None:
            self.temp.unlink(missing_ok=True)
