"""What the ``kleene`` commands share: exit codes, usage errors, reading QUERY and ``--input``,
the bad-row policy from the command line.

Nothing here imports Spark or pandas.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import IO, Any

import pyarrow as pa

from kleene.io.badrows import BadRowPolicy
from kleene.io.readers import detect_format
from kleene.language.errors import UnseenNameWarning

EXIT_OK, EXIT_OTHER, EXIT_QUERY, EXIT_DATA, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_TERMINATED = 143
"""SIGTERM: 128 + 15, as a shell reports a process the signal killed."""

STDIN = "-"
"""``--input -`` and ``QUERY -``: standard input."""


class UsageError(Exception):
    """A problem with the command line itself (exit code 2, like argparse's own errors)."""


def load_query(arg: str, stdin: IO[str] | None = None) -> str:
    """QUERY is CEQL text, ``-`` (read stdin), or the path of a file holding the query.

    A word ending in ``.ceql`` that names no file is an error rather than
    query text: it is a typo in a path far more often than a query.
    """
    if arg == STDIN:
        return (stdin or sys.stdin).read()
    if is_query_file(arg):
        try:
            return Path(arg).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read query file {arg!r}: {exc}") from exc
    if _could_be_path(arg) and Path(arg).suffix.lower() == ".ceql":
        raise UsageError(f"query file {arg!r} does not exist")
    return arg


def is_query_file(arg: str) -> bool:
    """Whether QUERY names a file (rather than being CEQL text or ``-``)."""
    if arg == STDIN or not _could_be_path(arg):
        return False
    try:
        return Path(arg).is_file()
    except OSError:
        return False


def _could_be_path(arg: str) -> bool:
    """Query text with a newline, or longer than any path, is never looked up as a file."""
    return "\n" not in arg and len(arg) < 4096


def parse_inputs(values: Sequence[str]) -> list[tuple[str | None, str]]:
    """``--input`` values: ``FILE`` or ``STREAM=FILE`` (an existing file named ``a=b`` is a file)."""
    out: list[tuple[str | None, str]] = []
    for value in values:
        name, sep, path = value.partition("=")
        if sep and name and not Path(value).exists():
            if not name.isidentifier():
                raise UsageError(f"--input {value!r}: {name!r} is not a stream name")
            out.append((name, path))
        else:
            out.append((None, value))
    names = [n for n, _ in out if n is not None]
    if len(names) != len(set(names)):
        raise UsageError("--input: a stream name is given twice")
    return out


@contextlib.contextmanager
def spooled_stdin(
    inputs: list[tuple[str | None, str]], fmt: str | None, stdin: IO[bytes] | None = None
) -> Iterator[list[tuple[str | None, str]]]:
    """``inputs`` with ``-`` replaced by standard input copied into a temporary file.

    A file because the readers need one: Parquet reads its footer first, and
    a CSV or JSON Lines column whose type changes late is read again.  The
    copy is as large as the input (on the temporary folder's disk, not in
    memory) and is removed when the run ends.  Its format is ``--format``,
    else CSV.
    """
    if sum(path == STDIN for _, path in inputs) > 1:
        raise UsageError("--input -: standard input can be given once")
    if all(path != STDIN for _, path in inputs):
        yield inputs
        return
    import shutil  # only when standard input is read: every other run's start skips them
    import tempfile

    fmt = "csv" if fmt is None else detect_format(STDIN, fmt)  # csv, jsonl or parquet
    with tempfile.TemporaryDirectory(prefix="kleene-stdin-") as folder:
        target = Path(folder) / f"stdin.{fmt}"
        with target.open("wb") as out:
            shutil.copyfileobj(stdin or sys.stdin.buffer, out, 1 << 20)
        yield [(name, str(target) if path == STDIN else path) for name, path in inputs]


def bad_row_policy(on_bad_row: Sequence[str] | None, quarantine: str | None) -> BadRowPolicy:
    """Build the policy from ``--on-bad-row MODE [FILE]`` and ``--quarantine FILE``."""
    words = list(on_bad_row or [])
    if len(words) > 2:
        raise UsageError("--on-bad-row takes a mode and, for quarantine, a file")
    mode = words[0] if words else ("quarantine" if quarantine else "error")
    if mode not in ("error", "skip", "quarantine"):
        raise UsageError(f"--on-bad-row: unknown mode {mode!r} (choose error, skip or quarantine)")
    target = words[1] if len(words) == 2 else None
    if target is not None and mode != "quarantine":
        raise UsageError(f"--on-bad-row {mode} takes no file")
    if target is not None and quarantine is not None and target != quarantine:
        raise UsageError("two different quarantine files given")
    target = target or quarantine
    if mode == "quarantine" and target is None:
        raise UsageError("--on-bad-row quarantine needs a file: --on-bad-row quarantine FILE")
    if mode != "quarantine" and quarantine is not None:
        raise UsageError(f"--quarantine given, but --on-bad-row is {mode}")
    # Deferred: the file is created only when the run starts (open_quarantine), never
    # for a query that does not compile or an input that does not exist.
    return BadRowPolicy(mode, target, deferred=True)


def open_quarantine(policy: BadRowPolicy) -> None:
    """Create the quarantine file as the run starts (a usage error if it cannot be written)."""
    try:
        policy.open()
    except OSError as exc:
        raise UsageError(f"cannot write the quarantine file: {exc}") from exc


class _PandasAbsent:
    """A meta path finder under which ``import pandas`` fails as if pandas were not installed."""

    def find_spec(self, name: str, path: object = None, target: ModuleType | None = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas is not used by this command", name=name)
        return None


def skip_pandas_probe() -> None:
    """Keep pyarrow from importing pandas (0.2-0.5 s) in a command that never holds a DataFrame.

    When pandas is installed (kleene's ``spark`` extra brings it), pyarrow
    imports it at its first conversion of a Python list, only to ask whether
    the list is a pandas object.  That first question is asked here with
    pandas out of reach: pyarrow then answers "no" to such questions without
    importing pandas, and still imports it for a conversion that needs it
    (``to_pandas``, ``from_pandas``).  A no-op once pandas is imported.
    """
    if "pandas" in sys.modules:
        return
    finder = _PandasAbsent()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([])
    finally:
        sys.meta_path.remove(finder)


def new_spark_log(command: str) -> str:
    """A new file for Spark's and its Python workers' log lines: stderr stays kleene's."""
    fd, name = tempfile.mkstemp(prefix=f"kleene-{command}-", suffix=".log")
    os.close(fd)
    return name


def warnings_to_log(path: str) -> Any:
    """A ``warnings.showwarning`` that appends the warning to the log file."""

    def show(message: Any, category: Any, filename: str, lineno: int, *_: Any) -> None:
        with open(path, "a", encoding="utf-8") as log:
            log.write(warnings.formatwarning(message, category, filename, lineno))

    return show


def unseen_messages(caught: Sequence[warnings.WarningMessage]) -> list[str]:
    """The messages of the :class:`UnseenNameWarning` among ``caught`` (said as ``kleene: ...``
    by the command); any other warning is shown as Python would have shown it."""
    unseen = []
    for w in caught:
        if issubclass(w.category, UnseenNameWarning):
            unseen.append(str(w.message))
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return unseen
