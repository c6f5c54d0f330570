"""A local SparkSession configured the way kleene's Spark pipeline needs it.

Why each setting (see ``docs/spark.md``):

* ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON``: without them the executors
  start ``python3`` from the PATH (often the system Python, without pyarrow or
  kleene) unless the venv is *activated*; every Arrow UDF then fails with
  ``No module named 'pyarrow'``.  We default them to this interpreter.
* ``SPARK_LOCAL_IP=127.0.0.1``: silences the loopback-hostname warning and
  avoids binding to an external interface for a purely local job.
* ``quick_jit=True`` (local masters; ``kleene run --engine spark`` on a small
  input): the JIT compiles with C1 only (:data:`QUICK_JIT`), which shortens
  one short job in a fresh JVM and slows repeated ones.  A given
  ``spark.driver.extraJavaOptions`` replaces it.
* UI off, few shuffle partitions: start-up and per-job overhead dominate on a
  laptop; 200 shuffle partitions would mostly be empty tasks.
* Arrow enabled: ``mapInArrow`` needs nothing else, but ``toPandas`` and
  ``createDataFrame`` from pandas are much faster with it.
* RocksDB state store: ``transformWithStateInPandas`` (the streaming path)
  refuses the default HDFS-backed store.
* The engine package must be importable on the executors.  Locally the
  workers use this interpreter, where kleene is installed, so nothing is
  shipped; :func:`ensure_importable` checks it with a one-task job.  On a
  cluster install kleene on every node or ship a wheel (``--py-files``,
  ``spark.archives`` with a packed venv).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
QUICK_JIT = "-XX:TieredStopAtLevel=1"
"""The JVM option of ``local_session(quick_jit=True)``: the JIT compiles with C1 only.

For one short job in a fresh JVM (``kleene run --engine spark`` on a small
file) C2's compiling costs more CPU than its faster code saves: on the
flights (336,776 rows) a cold run took 20 CPU-seconds instead of 32, the
session start 7 instead of 13.  Warm, C1's code is slower (about 3x the CPU
per repeated run there), so a session that runs more than one such job, or a
large one, should keep the default (docs/benchmarks.md)."""


def configure_environment() -> None:
    """Point the Python workers at this interpreter unless the user chose one."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def session_settings(master: str = "local[*]", *, quick_jit: bool = False, **conf: Any) -> dict[str, Any]:
    """The Spark settings :func:`local_session` starts a session with (arguments as it takes them)."""
    configure_environment()
    settings: dict[str, Any] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.sql.session.timeZone": "UTC",
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        "spark.pyspark.driver.python": os.environ["PYSPARK_DRIVER_PYTHON"],
    }
    for key, value in conf.items():
        settings[key.replace("__", ".")] = value
    if quick_jit and master.startswith("local"):
        settings.setdefault(DRIVER_JAVA_OPTIONS, QUICK_JIT)
    return settings


def local_session(
    master: str = "local[*]",
    app_name: str = "kleene",
    *,
    log_file: str | None = None,
    quick_jit: bool = False,
    **conf: Any,
) -> SparkSession:
    """Build (or reuse) a SparkSession for kleene jobs.

    Extra keyword arguments are Spark settings; dots are written as ``__``
    or passed through a dict: ``local_session(**{"spark.driver.memory": "4g"})``.
    They override the defaults (:func:`session_settings`).  ``quick_jit``:
    start the JVM of a local master with C1 only (:data:`QUICK_JIT`), for one
    short job; a given ``spark.driver.extraJavaOptions`` replaces it.  ``log_file``: the JVM's output (Spark's
    log4j lines, and the Python workers', which the JVM starts) and py4j's
    log go to that file instead of this process's stderr (see
    :func:`output_to`); it only applies when this call starts the JVM.
    """
    settings = session_settings(master, quick_jit=quick_jit, **conf)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, str(value))
    if log_file is None or SparkSession.getActiveSession() is not None:
        spark = builder.getOrCreate()
    else:
        handler = logging.FileHandler(log_file)
        py4j = logging.getLogger("py4j")
        py4j.addHandler(handler)
        py4j.propagate = False
        with output_to(log_file):
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


@contextmanager
def output_to(path: str) -> Iterator[None]:
    """Point this process's stdout and stderr (the file descriptors) at ``path`` for a while.

    PySpark starts the JVM as a child process that inherits descriptors 1
    and 2, and the JVM starts the Python workers the same way: whatever is
    launched inside this block writes to ``path`` for the rest of its life,
    while this process gets its own stdout and stderr back at the end.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = os.dup(1), os.dup(2)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (target, *saved):
            os.close(fd)


def active_session() -> SparkSession | None:
    """The SparkSession already running in this process (a notebook's, the tests'), if any."""
    return SparkSession.getActiveSession()


def ensure_importable(spark: SparkSession) -> None:
    """Fail early, with a clear message, if the executors cannot import kleene.

    Otherwise the first task fails deep inside a pickled closure with a
    ``ModuleNotFoundError`` that does not say which interpreter was used.
    """

    def probe(_: Any) -> Any:
        import kleene  # noqa: F401

        yield sys.executable

    try:
        spark.sparkContext.parallelize([0], 1).mapPartitions(probe).collect()
    except Exception as exc:  # noqa: BLE001 - re-raised with advice
        raise RuntimeError(
            "the Spark executors cannot import kleene: install it on every node, or ship a "
            "wheel (spark.submit.pyFiles / spark.archives), and set PYSPARK_PYTHON to an "
            f"interpreter that has it ({exc})"
        ) from exc
