"""The compiled twins of kleene's hot loops, and the switch that turns them off.

A few inner loops, where profiling showed the interpreter itself to be the cost, have a Cython
twin built by ``setup.py`` at install time (``kleene.runtime._step``: Algorithm 1's step;
``kleene.runtime._loop``: the engine's per-event loop around it; ``kleene.runtime._walk``: the tECS walk; ``kleene.runtime._last``: LAST's selection; ``kleene.runtime._nxt``: reading NEXT's match; ``kleene.io._jsonl``: the layout of JSON Lines;
``kleene.runtime._mr_scan``: MATCH_RECOGNIZE's fast-path search; ``kleene.registers._vectortree``:
the counting aggregates' tree).  Each
twin does exactly what its pure-Python original does, and the original stays the readable
reference: the tests run both and compare them.  When a twin was not built (no C compiler where kleene was
installed) or ``KLEENE_PURE_PYTHON=1`` is set, the original runs.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

PURE_PYTHON = os.environ.get("KLEENE_PURE_PYTHON", "").strip() not in ("", "0")
"""True when ``KLEENE_PURE_PYTHON`` asks for the pure-Python originals only."""

TWINS = (
    "kleene.runtime._step",
    "kleene.runtime._loop",
    "kleene.runtime._walk",
    "kleene.runtime._last",
    "kleene.runtime._nxt",
    "kleene.io._jsonl",
    "kleene.runtime._mr_scan",
    "kleene.registers._vectortree",
)
"""Every compiled twin setup.py builds."""


def load(name: str) -> ModuleType | None:
    """The compiled module ``name``, or None (not built, or pure Python asked for)."""
    if PURE_PYTHON:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def compiled() -> dict[str, bool]:
    """Which twins are in use (module name -> True when compiled code runs)."""
    return {name: load(name) is not None for name in TWINS}
