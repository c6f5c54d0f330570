"""The on-disk cache of kleene's LALR parsers (CEQL's and MATCH_RECOGNIZE's).

Building a grammar's LALR tables takes ~0.15 s, ten times longer than loading
them, and every new process (each ``kleene run``, each Spark worker) would pay
it before its first query.  So a built parser is saved under :func:`cache_dir`,
in a file named by the hash of the grammar, the options and the lark version
(a changed grammar gets a new file), written to a temporary file and renamed
(concurrent processes never read half a file).  Any problem with the cache
falls back to building the parser.

A saved parser is a pickle, so loading one runs whatever it holds: only a
file that this user owns in a folder only this user can write is loaded (the
folder is created private), never one others could plant.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lark import Lark


def cache_dir() -> Path:
    """Where built parsers are kept: ``$KLEENE_CACHE_DIR``, else ``$XDG_CACHE_HOME/kleene``."""
    explicit = os.environ.get("KLEENE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kleene"


LALR_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "contextual",
    "propagate_positions": True,
    "maybe_placeholders": False,
}
"""Both grammars: LALR(1) with the contextual lexer, positions on every node for carets."""


def cached_lark(package: str, grammar_file: str, name: str, options: dict[str, Any] = LALR_OPTIONS) -> Lark:
    """The parser of ``package``'s ``grammar_file`` with ``options``, cached as ``name-<hash>.lark``."""
    from importlib import resources

    import lark  # here: a parse found in kleene.language.query_cache needs no lark
    from lark import Lark

    grammar = resources.files(package).joinpath(grammar_file).read_text("utf-8")
    key = hashlib.sha256(
        f"{grammar}\0{sorted(options.items())}\0{lark.__version__}".encode()
    ).hexdigest()[:24]
    path = cache_dir() / f"{name}-{key}.lark"
    try:
        if private(path.parent) and private(path):
            with path.open("rb") as f:
                return Lark.load(f)
    except Exception:  # noqa: BLE001 - missing, unreadable or stale: build it
        pass
    parser = Lark(grammar, **options)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        import tempfile  # only when the cache is written, not on every start

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{name}-")
        try:
            with os.fdopen(fd, "wb") as f:
                parser.save(f)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass  # a read-only home: build it in every process
    return parser


def private(path: Path) -> bool:
    """True when ``path`` belongs to this user and nobody else may write it."""
    st = path.stat()
    return st.st_uid == os.getuid() and not st.st_mode & 0o022
