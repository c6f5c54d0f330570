"""Long fuzzing runs of kleene's query parser and compiler and of its file readers.

::

    .venv/bin/python tests/fuzz/run.py --cases 20000 --file-cases 3000 --seed 1
    .venv/bin/python tests/fuzz/run.py --what files --file-cases 500 --seed 7 --keep /tmp/fuzz-failures

Prints the tally (cases per kind and outcome, failures grouped by cause with one example each) and exits 1 when a
new failure was found.  Every child runs under a 3 GB address-space cap and a
timeout.  The results of the last long run are in docs/reliability.md
(``## Fuzzing``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_harness import MEMORY_BYTES, Tally, Worker  # noqa: E402
from fuzz_loops import fuzz_files, fuzz_queries  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--what", choices=("queries", "files", "all"), default="all")
    ap.add_argument("--cases", type=int, default=2000, help="query cases (default 2000)")
    ap.add_argument("--file-cases", type=int, default=300, help="file cases (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cli-share", type=float, default=0.25, help="share of file cases run by `kleene run`")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--memory", type=int, default=MEMORY_BYTES, help="address-space cap per child, bytes")
    ap.add_argument("--keep", type=Path, help="copy failing files here")
    ap.add_argument("--failures", type=Path, help="append every new failure here, one JSON line each")
    args = ap.parse_args(argv)

    start = time.monotonic()

    def progress(label: str, total: int) -> object:
        seen: set[str] = set()

        def show(i: int, tally: Tally) -> None:
            latest[label] = tally
            for sig, items in tally.failures.items():  # say each new cause as soon as it shows
                if sig not in seen:
                    seen.add(sig)
                    case, outcome = items[0]
                    if args.failures is not None:
                        with args.failures.open("a") as out:
                            out.write(json.dumps({"signature": sig, **asdict(case), **asdict(outcome)}) + "\n")
                    print(f"{label}: NEW FAILURE {sig}: {case.kind} {case.format} {list(case.damages)} "
                          f"{case.data[:500]!r}\n{outcome.traceback[-3000:] or outcome.message}",
                          file=sys.stderr, flush=True)
            if i % max(1, total // 20) == 0 or i == total:
                print(f"{label}: {i}/{total} cases, {tally.new_failures} new failures, "
                      f"{time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
        return show

    failures = 0
    latest: dict[str, Tally] = {}
    worker = Worker(timeout=args.timeout, memory=args.memory)
    try:
        if args.what in ("queries", "all"):
            t = fuzz_queries(args.seed, args.cases, worker, progress=progress("queries", args.cases))  # type: ignore[arg-type]
            print(f"== queries (seed {args.seed})\n{t.summary()}\n")
            latest.pop("queries", None)
            failures += t.new_failures
        if args.what in ("files", "all"):
            with tempfile.TemporaryDirectory(prefix="kleene-fuzz-") as tmp:
                t = fuzz_files(
                    args.seed, args.file_cases, Path(tmp), worker, cli_share=args.cli_share,
                    cli_timeout=args.timeout, keep=args.keep,
                    progress=progress("files", args.file_cases),  # type: ignore[arg-type]
                )
            print(f"== files (seed {args.seed})\n{t.summary()}\n")
            latest.pop("files", None)
            failures += t.new_failures
    except KeyboardInterrupt:  # Ctrl-C (SIGINT): report what ran so far
        for label, t in latest.items():
            print(f"== {label} (seed {args.seed}, interrupted)\n{t.summary()}\n")
            failures += t.new_failures
    finally:
        worker.close()
    print(f"worker restarts: {worker.restarts}; {time.monotonic() - start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
