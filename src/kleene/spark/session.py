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
* ``class_archive=True`` (local masters; ``kleene run --engine spark``): the
  JVM maps the classes it loads from an AppCDS archive (:func:`class_archive`)
  built by the first such run into kleene's cache, instead of reading and
  verifying some 10,000 classes from Spark's jars at every start.
* UI off, few shuffle partitions: start-up and per-job overhead dominate on a
  laptop; 200 shuffle partitions would mostly be empty tasks.
* Arrow enabled: ``mapInArrow`` needs nothing else, but ``toPandas`` and
  ``createDataFrame`` from pandas are much faster with it.
* RocksDB state store: ``transformWithStateInPandas`` (the streaming path)
  refuses the default HDFS-backed store.  With changelog checkpointing
  (:data:`CHANGELOG`) a micro-batch's commit writes the changed keys only, not
  a zipped snapshot of every RocksDB file (snapshots are taken in the
  background); on a restart the last snapshot plus the changelogs give the
  same state.  Measured: the commit 420 → 270 ms per micro-batch (medians)
  (docs/benchmarks.md, "MATCH_RECOGNIZE in Structured Streaming").
* The engine package must be importable on the executors.  Locally the
  workers use this interpreter, where kleene is installed, so nothing is
  shipped; :func:`ensure_importable` checks it with a one-task job.  On a
  cluster install kleene on every node or ship a wheel (``--py-files``,
  ``spark.archives`` with a packed venv).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
"""RocksDB changelog checkpointing, on in :func:`session_settings` (an existing checkpoint
keeps its state when it is turned on)."""

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
QUICK_JIT = "-XX:TieredStopAtLevel=1"
"""The JVM option of ``local_session(quick_jit=True)``: the JIT compiles with C1 only.

For one short job in a fresh JVM (``kleene run --engine spark`` on a small
file) C2's compiling costs more CPU than its faster code saves: on the
flights (336,776 rows) a cold run took 20 CPU-seconds instead of 32, the
session start 7 instead of 13.  Warm, C1's code is slower (about 3x the CPU
per repeated run there), so a session that runs more than one such job, or a
large one, should keep the default (docs/benchmarks.md)."""


CACHE_ENV = "KLEENE_CACHE_DIR"
"""Where kleene keeps what it builds once (the JVM class archive): this variable, else
``<venv>/var/cache/kleene`` when the environment is writable, else ``~/.cache/kleene``."""


def cache_dir() -> Path:
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    if os.access(sys.prefix, os.W_OK):
        return Path(sys.prefix) / "var" / "cache" / "kleene"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kleene"


def class_archive(java_options: str = "") -> Path:
    """The AppCDS archive of Spark's classes for a JVM started with ``java_options``.

    A dynamic archive (JDK 13+: ``-XX:ArchiveClassesAtExit`` once, then
    ``-XX:SharedArchiveFile``) holds the classes a run loaded, already parsed
    and verified; mapping it instead of reading Spark's jars cut the CPU time
    of a cold ``kleene run --engine spark`` on the flights by a third
    (docs/benchmarks.md, "Spark").  Its name hashes what it depends on: the
    JVM binary, PySpark's version and jars, and the JVM options.  A stale or
    damaged archive is not fatal: the JVM then loads classes as usual.
    """
    import pyspark

    home = Path(pyspark.__file__).parent
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    digest = hashlib.sha256()
    for part in (pyspark.__version__, java_options, str(sys.version_info[:2])):
        digest.update(part.encode() + b"\0")
    if java is not None:
        real = Path(java).resolve()
        stat = real.stat()
        digest.update(f"{real}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    jars = home / "jars"
    if jars.is_dir():
        for jar in sorted(jars.iterdir()):
            digest.update(f"{jar.name}:{jar.stat().st_size}\0".encode())
    return cache_dir() / f"spark-classes-{digest.hexdigest()[:16]}.jsa"


DUMP_OPTION = "-XX:ArchiveClassesAtExit="
"""The JVM writes the classes it loaded to this file when it exits (see :func:`stop_session`)."""


def archive_option(java_options: str) -> str:
    """``-XX:SharedArchiveFile`` when the archive exists, else the option that builds it at exit
    (into a file of this process's own, renamed into place once complete)."""
    path = class_archive(java_options)
    if path.is_file():
        return f"-XX:SharedArchiveFile={path}"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"{DUMP_OPTION}{path}.{os.getpid()}.tmp"


def configure_environment() -> None:
    """Point the Python workers at this interpreter unless the user chose one."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def session_settings(
    master: str = "local[*]", *, quick_jit: bool = False, class_archive: bool = False, **conf: Any
) -> dict[str, Any]:
    """The Spark settings :func:`local_session` starts a session with (arguments as it takes them)."""
    configure_environment()
    settings: dict[str, Any] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        CHANGELOG: "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        "spark.pyspark.driver.python": os.environ["PYSPARK_DRIVER_PYTHON"],
    }
    for key, value in conf.items():
        settings[key.replace("__", ".")] = value
    if master.startswith("local") and DRIVER_JAVA_OPTIONS not in settings:
        options = QUICK_JIT if quick_jit else ""
        if class_archive:
            options = f"{options} {archive_option(options)}".strip()
        if options:
            settings[DRIVER_JAVA_OPTIONS] = options
    return settings


def local_session(
    master: str = "local[*]",
    app_name: str = "kleene",
    *,
    log_file: str | None = None,
    quick_jit: bool = False,
    class_archive: bool = False,
    **conf: Any,
) -> SparkSession:
    """Build (or reuse) a SparkSession for kleene jobs.

    Extra keyword arguments are Spark settings; dots are written as ``__``
    or passed through a dict: ``local_session(**{"spark.driver.memory": "4g"})``.
    They override the defaults (:func:`session_settings`).  ``quick_jit``:
    start the JVM of a local master with C1 only (:data:`QUICK_JIT`), for one
    short job; ``class_archive``: start it from the class archive of
    :func:`class_archive`, built by the first such session's JVM when it exits
    (stop it with :func:`stop_session` for that); a given
    ``spark.driver.extraJavaOptions`` replaces both.  ``log_file``: the JVM's output (Spark's
    log4j lines, and the Python workers', which the JVM starts) and py4j's
    log go to that file instead of this process's stderr (see
    :func:`output_to`); it only applies when this call starts the JVM.
    """
    settings = session_settings(master, quick_jit=quick_jit, class_archive=class_archive, **conf)
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


def stop_session(spark: SparkSession, timeout: float = 300.0) -> Path | None:
    """Stop ``spark``; if its JVM was started to build the class archive, end the JVM too.

    The JVM writes the archive when it exits, and PySpark's JVM exits only
    when this process's end closes its standard input: done here instead,
    the archive is complete when this returns and is renamed into place (a
    concurrent run never maps half a file).  Returns the archive built, if any.
    """
    from pyspark import SparkContext

    jvm = spark.sparkContext._jvm
    assert jvm is not None
    arguments = [str(a) for a in jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()]
    dumps = [a[len(DUMP_OPTION):] for a in arguments if a.startswith(DUMP_OPTION)]
    spark.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if not dumps or proc is None or proc.stdin is None:
        return None
    proc.stdin.close()  # the gateway server exits on end of input (System.exit: the dump)
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        SparkContext._gateway = None  # a later session in this process starts a new JVM
        SparkContext._jvm = None
    tmp = Path(dumps[0])
    final = Path(re.sub(r"\.\d+\.tmp$", "", str(tmp)))
    if code == 0 and tmp.is_file() and tmp.stat().st_size > 0:
        tmp.replace(final)
        return final
    tmp.unlink(missing_ok=True)
    return None


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
