"""The driver process that tests/spark/test_spark_match_recognize_stream_kill.py kills with SIGKILL.

``python mr_stream_kill_driver.py CONFIG.json`` starts its own local SparkSession (its own JVM
and Python workers, in the process group the test created for it), runs the MATCH_RECOGNIZE
clauses of the config one after the other with
:func:`kleene.spark.recognize_stream.match_recognize_stream` and
:func:`~kleene.spark.recognize_stream.start_match_recognize_stream` (``available_now``, one
input file per micro-batch, one checkpoint per clause), and kills its whole process group with
SIGKILL at the config's kill point, as a crash would (no shutdown hook, no flush).  The kill
points are those of ``stream_kill_driver.py`` (CEQL): ``none``, ``before_write`` (the
``batch``-th sink call starts: the stateful operator has not run), ``between_writes`` (matches
written, late rows not: state committed, sink half written, commit log not), ``after_writes``
(before the commit log), ``timer`` (``delay`` seconds after the first batch started: inside a
task, a checkpoint, a state upload...).  The hooks wrap the sink in this process only.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kill_points import die, hook_sink_calls, kill_session, run_to_end

from kleene.spark import recognize_stream as mrs

SCHEMA = "id long, name string, price double, ts long"


def main(config_path: str) -> int:
    with open(config_path) as f:
        config = json.load(f)
    state = hook_sink_calls(mrs._Writer, config)
    write = mrs.write_batch

    def hooked_write(df: Any, path: str, output_format: str, **given: Any) -> None:
        write(df, path, output_format, **given)
        if state["between"] and "/out/" in path:
            die()

    mrs.write_batch = hooked_write
    spark = kill_session("kleene-mr-kill")
    base = config["base"]

    def start(name: str, clause: str) -> Any:
        src = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(f"{base}/in")
        res = mrs.match_recognize_stream(src, clause, watermark="10 seconds")
        return mrs.start_match_recognize_stream(
            res, f"{base}/{name}/out", checkpoint=f"{base}/{name}/ck",
            late_rows_path=f"{base}/{name}/late", available_now=True)

    return run_to_end((start(n, c) for n, c in config["clauses"].items()), state, spark)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
