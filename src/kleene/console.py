"""The ``kleene`` process: the installed script and ``python -m kleene`` run :func:`main` here.

:func:`kleene.cli.main` is the command as a function (tests and programs call it in their own
process); this module is the process around it, and does what only a whole process may:

* ``OPENBLAS_NUM_THREADS=1`` unless set: numpy's OpenBLAS otherwise starts a thread per core
  when numpy is imported (~20 ms of CPU, more under load) and kleene does no linear algebra.
  Set before anything imports numpy: ``import kleene`` imports nothing (:mod:`kleene`'s names
  are loaded on first use), so this module runs first.
* The garbage collector is paused while the libraries are imported and their objects are then
  frozen (:func:`gc.freeze`: they live as long as the process, so the collections of the run
  never walk them again; unfrozen, the first collections after the imports took ~60 ms).  Once
  the command has returned and every output is closed, every object is frozen again: the
  interpreter's exit then skips the final collections over the hundreds of thousands of
  objects of pyarrow, numpy and kleene (~50 ms of every run), and still flushes the standard
  streams and runs ``atexit`` as usual.  The exit code is unchanged.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``kleene`` command as a process; returns its exit code."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    collecting = gc.isenabled()
    gc.disable()
    try:
        from kleene.cli import main as command
    finally:
        gc.freeze()  # the modules' objects, never collected: no collection walks them again
        if collecting:
            gc.enable()
    code = command(argv)
    gc.freeze()  # the run is over: nothing left to collect that the exit would not free
    return code
