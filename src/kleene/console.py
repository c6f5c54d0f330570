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
* Then the process ends without the interpreter's finalization (:func:`leave`): the ``atexit``
  functions run, the standard streams are flushed, and :func:`os._exit` ends the process, instead
  of tearing down some 800 modules and freeing their objects one by one (15-25 ms of every run,
  even with the objects frozen).  The command has closed its outputs by then (the output file is
  renamed into place only once closed).  Where that could lose something, the interpreter's own
  exit runs as before: another thread that is not a daemon still runs (Python waits for it),
  pyspark was loaded (the JVM's shutdown), or ``atexit`` cannot be run ahead (not CPython).
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``kleene`` command as a process; returns its exit code (or ends the process with it,
    :func:`leave`)."""
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
    return leave(code)


def leave(code: int) -> int:
    """End the process with ``code`` as the interpreter would, without its finalization.

    Returns ``code`` (for ``sys.exit``) only where the interpreter's own exit must run: a thread
    that is not a daemon is alive, pyspark is loaded, ``atexit._run_exitfuncs`` is missing, or
    flushing a standard stream fails (the interpreter then reports it, exit status 120).
    """
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if run_exitfuncs is None or any(t.is_alive() for t in others) or "pyspark" in sys.modules:
        return code
    run_exitfuncs()  # as at exit (they run once: the interpreter's exit would find none left)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return code
    os._exit(code)
