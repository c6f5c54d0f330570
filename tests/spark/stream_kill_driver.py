"""The driver process that tests/spark/test_spark_stream_kill.py kills with SIGKILL.

``python stream_kill_driver.py CONFIG.json`` starts its own local SparkSession (its own JVM and
Python workers, all in the process group the test created for it), runs the queries of the
config, one after the other, with :func:`kleene.spark.stream.detect_stream` and :func:`~kleene.spark.stream.start_stream`
(``available_now``, one input file per micro-batch, one checkpoint per query), and kills its
whole process group with SIGKILL at the kill point the config names, as a crash of the machine
would: no shutdown hook, no ``finally``, no flush.

Kill points (``kill``):

* ``none``: run to the end (the final, clean run);
* ``before_write``: when the foreachBatch sink of the ``batch``-th micro-batch (counted over
  all queries of this run) starts: offsets are logged, the stateful operator has not run;
* ``between_writes``: after the batch's complex events are written and before its late rows
  are: the state store has committed (the first write computed the stateful batch), the sink
  is half written, the commit log not;
* ``after_writes``: after both writes, before Spark writes the commit log;
* ``timer``: at ``delay`` seconds after the first micro-batch started, wherever the driver,
  the JVM or a Python worker then is (inside a task, during a checkpoint or state upload...).

The hooks wrap the sink writer in this process only; nothing in kleene reads them.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kill_points import die, hook_sink_calls, kill_session, run_to_end

from kleene.spark import stream as kstream

SCHEMA = "id long, name string, type string, price double, ts long"


def main(config_path: str) -> int:
    with open(config_path) as f:
        config = json.load(f)
    state = hook_sink_calls(kstream._BatchWriter, config)
    write = kstream._BatchWriter._write

    def hooked_write(self: Any, df: Any, path: str) -> None:
        write(self, df, path)
        if state["between"] and not path.startswith(self.late):
            die()

    kstream._BatchWriter._write = hooked_write  # type: ignore[method-assign]
    spark = kill_session("kleene-kill")
    base = config["base"]

    def start(name: str, text: str) -> Any:
        src = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(f"{base}/in")
        res = kstream.detect_stream(src, text, time_column="ts", id_column="id", watermark="10 seconds")
        return kstream.start_stream(
            res, f"{base}/{name}/out", checkpoint=f"{base}/{name}/ck",
            late_events_path=f"{base}/{name}/late", available_now=True,
        )

    return run_to_end((start(n, t) for n, t in config["queries"].items()), state, spark)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
