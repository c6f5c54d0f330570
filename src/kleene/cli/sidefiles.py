"""The files a command writes besides its results (``--quarantine``, ``--spark-log``) and its
``--output``, checked against the inputs before anything is opened.

A side file that is an input (or the output) would be destroyed or interleaved with other
data: ``--quarantine events.csv --input events.csv`` used to empty the input, and
``--quarantine f --output f`` lost the quarantined rows when the results were renamed over
them.  So each file a run writes must be distinct from every input and from every other
file it writes (the same file under another name, through a link or a hard link, counts as
the same), and a side file must not be a symbolic link: kleene writes the file named, never
the one a link points to.  A violation is a usage error (exit 2) naming both options.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from kleene.cli.common import STDIN, UsageError


def same_file(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name one file: the same inode when both exist (links and hard
    links included), else the same resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_written_files(
    inputs: Sequence[str],
    written: Sequence[tuple[str, str | None]],
) -> None:
    """Refuse a run whose written files clash with its inputs or with one another.

    ``inputs``: the input paths (``-`` for standard input is skipped).
    ``written``: ``(option, path)`` pairs such as ``("--output", "out.jsonl")``; a path of
    None or ``-`` (stdout) is skipped.  Every option but ``--output`` is a side file, which
    must not be a symbolic link either (``--output`` is written under a temporary name and
    renamed over the link, which never writes through it).
    """
    named = [(option, path) for option, path in written if path is not None and path != STDIN]
    for option, path in named:
        if option != "--output" and os.path.islink(path):
            raise UsageError(
                f"{option} {path!r} is a symbolic link: kleene writes side files only to the "
                "file named, never through a link (name the file itself)"
            )
        for source in inputs:
            if source != STDIN and same_file(path, source):
                raise UsageError(
                    f"{option} {path!r} is the input file {source!r}: writing it would destroy "
                    "the input (name another file)"
                )
    for i, (first, path) in enumerate(named):
        for second, other in named[i + 1 :]:
            if same_file(path, other):
                raise UsageError(
                    f"{first} {path!r} and {second} {other!r} are the same file: each would "
                    "overwrite the other (name two files)"
                )
