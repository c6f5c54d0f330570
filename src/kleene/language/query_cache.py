"""Parsed queries kept on disk, so that running a query again needs neither lark nor its parser.

Parsing a short query takes ~5 ms, but the parser needs lark imported (~20 ms) and its tables
loaded (~10 ms, :mod:`kleene.language.parser_cache`): a third of a second is the whole budget
of a ``kleene run`` over 100,000 events, so :func:`parse` keeps each parsed
:class:`~kleene.language.ast.Program` (a pickle of frozen dataclasses, ~1.5 KB) under
``cache_dir()/queries``, named by the hash of the query text and of the parser's sources:
the grammar and every module of :mod:`kleene.language` (any change to them gives new names,
so a stale parse is never read).  Only a successful parse is kept: a query with an error is
parsed again each time, so its error and caret come from the parser.  The folder holds at
most :data:`MAX_ENTRIES` parses (the oldest are removed when it is full).

A cached parse is a pickle, loaded only from a file this user owns in a folder only this user
can write (:func:`kleene.language.parser_cache.private`), as the parser cache does; anything
wrong with the cache (missing, unreadable, not a Program) falls back to parsing.
``KLEENE_CACHE_DIR`` moves the cache (and a read-only one is simply not written).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
from pathlib import Path

from kleene.language import ast
from kleene.language.parser_cache import cache_dir, private

__all__ = ["MAX_ENTRIES", "cache_path", "parse"]

MAX_ENTRIES = 512
"""Parses kept at most; past it, the oldest half is removed when a new one is written."""


@functools.cache
def _sources_digest() -> bytes:
    """The hash of everything a parse depends on: the grammar and the language package's modules."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(f"{sys.version_info[:2]}\0{pickle.HIGHEST_PROTOCOL}".encode())
    for path in sorted([*here.glob("*.py"), here / "grammar.lark"]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.digest()


def cache_path(text: str) -> Path:
    """The file that holds (or would hold) the parse of ``text``."""
    key = hashlib.sha256(_sources_digest() + text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return cache_dir() / "queries" / f"{key}.pickle"


def parse(text: str) -> ast.Program:
    """:func:`kleene.language.parser.parse` of ``text``, from the cache when it was parsed before."""
    if not isinstance(text, str):
        from kleene.language.parser import parse as parse_text

        return parse_text(text)  # its TypeError
    try:
        path: Path | None = cache_path(text)
    except OSError:  # the parser's sources are not files (a zipped install): no cache
        path = None
    found = None if path is None else _load(path)
    if found is not None:
        return found
    from kleene.language.parser import parse as parse_text  # lark: only for a new query

    program = parse_text(text)
    if path is not None:
        _store(path, program)
    return program


def _load(path: Path) -> ast.Program | None:
    try:
        if not (private(path.parent) and private(path)):
            return None
        with path.open("rb") as f:
            program = pickle.load(f)
    except Exception:  # noqa: BLE001 - missing, unreadable or stale: parse it
        return None
    return program if isinstance(program, ast.Program) else None


def _store(path: Path, program: ast.Program) -> None:
    import tempfile  # only when a parse is written

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(path.parent):
            return
        _make_room(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".query-")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(program, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except (OSError, pickle.PicklingError, RecursionError):
        pass  # a read-only cache, or a tree too deep to pickle: parse it each time


def _make_room(folder: Path) -> None:
    """Remove the oldest half of the parses when the folder holds :data:`MAX_ENTRIES`."""
    entries = [e for e in os.scandir(folder) if e.name.endswith(".pickle")]
    if len(entries) < MAX_ENTRIES:
        return
    entries.sort(key=lambda e: e.stat().st_mtime_ns)
    for entry in entries[: len(entries) // 2]:
        try:
            os.unlink(entry.path)
        except OSError:
            pass
