"""kleene and CORE side by side on the CORE paper's workloads: one command, one run, same data.

    python -m benchmarks.suite [--events 200000] [--runs 3] [--format parquet|csv]
                               [--protocol paper|all] [--workloads S3 "P'" sweep Q core ...]
                               [--cpu 1] [--out benchmarks/results] [--no-verify] [--no-plots]

(``make bench-core`` creates both virtual environments and runs it.)  For each workload
(:mod:`benchmarks.workloads`) the two engines run on the same generated file
(:mod:`benchmarks.datasets`), alternating (kleene, CORE, kleene, CORE, ...), each run in a
fresh subprocess (:mod:`benchmarks.runner`) pinned to one CPU.  Reported per workload:

* events/s of each engine, the median of ``--runs`` runs, end to end from the file (kleene: read
  + evaluate + enumerate; CORE: read + build PyEvents + evaluate + get its output text);
* the complex events each engine found; with ``--verify`` (default) one more untimed run per
  engine dumps the complex events and the *sets* are compared too.  A disagreement is shrunk
  to a minimal stream (:mod:`benchmarks.shrink`) and printed with both outputs;
* peak memory (VmHWM) of each engine's run, the median over runs;
* the ratio kleene/CORE of throughput.

Writes ``results.json``, ``results.md`` (the table) and, when matplotlib is installed (the
``bench`` extra), ``throughput_n.png``, ``throughput_window.png`` and ``queries.png`` in the
shape of the paper's Figures 7, 8 and 9, under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks import datasets
from benchmarks.workloads import PROTOCOLS, Workload, select

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORE_PYTHON = ROOT / ".venv-core" / "bin" / "python"
DEFAULT_OUT = ROOT / "benchmarks" / "results"


@dataclass
class EngineResult:
    """The runs of one engine on one workload."""

    seconds: list[float] = field(default_factory=list)
    complex_events: list[int] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)
    events: int = 0
    distinct: int | None = None  # distinct complex events in the verification run
    phases: list[dict[str, float]] = field(default_factory=list)  # CORE: read / build / send / get_output
    error: str | None = None

    @property
    def throughput(self) -> float | None:
        return self.events / statistics.median(self.seconds) if self.seconds else None

    @property
    def count(self) -> int | None:
        return self.complex_events[0] if self.complex_events else None

    @property
    def memory(self) -> float | None:
        return statistics.median(self.peak_mib) if self.peak_mib else None


@dataclass
class Row:
    workload: str
    dataset: str
    family: str
    n: int
    factor: int
    kleene: EngineResult
    core: EngineResult
    agree: bool | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        k, c = self.kleene.throughput, self.core.throughput
        return k / c if k and c else None


_LO_UP = 'ip link set lo up && exec "$0" "$@"'


def private_network() -> list[str]:
    """A command prefix that runs CORE in its own network namespace, or [] where that fails.

    CORE's offline server binds localhost TCP ports 6000, 6001, ... and fails with "Address
    already in use" when another CORE process (another benchmark, a test) holds them.  In a
    private network namespace (``unshare -rn``, with loopback brought up) every CORE process
    has its own localhost, so runs never collide.
    """
    if not (shutil.which("unshare") and shutil.which("ip")):
        return []
    prefix = ["unshare", "-rn", "sh", "-c", _LO_UP]
    try:
        ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return prefix if ok else []


class Runner:
    """Starts one engine run in a fresh subprocess and reads its JSON line."""

    def __init__(self, core_python: Path, cpu: int, scratch: Path, timeout: float) -> None:
        self.core_python = core_python
        self.cpu = cpu
        self.scratch = scratch.resolve()  # children run with the scratch dir as cwd
        self.timeout = timeout
        self.core_prefix = private_network()
        self.scratch.mkdir(parents=True, exist_ok=True)

    def run(self, engine: str, query: str, data: Path, dump: Path | None = None) -> dict[str, object]:
        qfile = self.scratch / f"query.{engine}.ceql"
        qfile.write_text(query)
        python = [sys.executable] if engine == "kleene" else [*self.core_prefix, str(self.core_python)]
        cmd = [*python, "-m", "benchmarks.runner", "--engine", engine, "--query-file", str(qfile),
               "--input", str(data.resolve()), "--cpu", str(self.cpu)]
        if dump is not None:
            cmd += ["--dump", str(dump.resolve())]
        # The benchmarks package from this checkout; a PYTHONPATH already set
        # (e.g. another checkout's src, to benchmark it without installing) comes after.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        # CORE writes logs/logfile.log into its working directory: keep it in the scratch dir.
        proc = subprocess.run(cmd, cwd=self.scratch, env=env, capture_output=True, text=True, timeout=self.timeout)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{") and '"engine"' in ln]
        if proc.returncode != 0 or not lines:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]  # the exception
            raise RuntimeError(f"{engine} failed (exit {proc.returncode}): " + " | ".join(tail))
        return dict(json.loads(lines[-1]))


def read_dump(path: Path) -> set[tuple[int, ...]]:
    return {tuple(int(x) for x in line.split()) for line in path.read_text().splitlines() if line}


_LIMIT = re.compile(r"\bLIMIT\s+(\d+)\s*$", re.IGNORECASE)


def limit_of(query: str) -> int | None:
    m = _LIMIT.search(query.strip())
    return int(m.group(1)) if m else None


def compare(kleene_ces: set[tuple[int, ...]], core_ces: set[tuple[int, ...]], limit: int | None) -> str:
    """'' when the two sets of complex events agree, else a short description of the difference.

    Under ``LIMIT n`` each engine outputs *some* n of the complex events of a triggering event
    (position ``end``) that has more than n: which ones is each engine's enumeration order, so
    for such ends only the number (n) must agree; every other end must agree exactly.
    """
    def by_end(ces: set[tuple[int, ...]]) -> dict[int, set[tuple[int, ...]]]:
        out: dict[int, set[tuple[int, ...]]] = {}
        for ce in ces:
            out.setdefault(ce[1], set()).add(ce)
        return out

    k, c = by_end(kleene_ces), by_end(core_ces)
    only_k: list[tuple[int, ...]] = []
    only_c: list[tuple[int, ...]] = []
    capped = 0
    for end in sorted(set(k) | set(c)):
        a, b = k.get(end, set()), c.get(end, set())
        if a == b:
            continue
        if limit is not None and len(a) == len(b) == limit:
            capped += 1
            continue
        only_k += sorted(a - b)
        only_c += sorted(b - a)
    if not only_k and not only_c:
        return ""
    return f"sets differ: only kleene {only_k[:3]} ({len(only_k)}), only CORE {only_c[:3]} ({len(only_c)}); "


def measure(w: Workload, data: Path, runner: Runner, runs: int, protocol: str, verify: bool) -> Row:
    row = Row(w.name, w.dataset, w.family, w.n, w.factor, EngineResult(), EngineResult())
    queries = {"kleene": w.query(protocol), "core": w.core_text(protocol)}
    results = {"kleene": row.kleene, "core": row.core}
    for r in range(runs):
        order = ("kleene", "core") if r % 2 == 0 else ("core", "kleene")
        for engine in order:
            res = results[engine]
            if res.error:
                continue
            try:
                out = runner.run(engine, queries[engine], data)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                res.error = str(exc)[:300]
                continue
            res.seconds.append(float(out["seconds"]))  # type: ignore[arg-type]
            res.complex_events.append(int(out["complex_events"]))  # type: ignore[call-overload]
            res.peak_mib.append(float(out["peak_mib"]))  # type: ignore[arg-type]
            res.events = int(out["events"])  # type: ignore[call-overload]
            if out.get("phases"):
                res.phases.append(dict(out["phases"]))  # type: ignore[call-overload]
    for engine, res in results.items():
        if len(set(res.complex_events)) > 1:
            row.note += f"{engine} runs disagree among themselves {sorted(set(res.complex_events))}; "
    if row.kleene.error or row.core.error:
        row.note += "; ".join(f"{e}: {r.error}" for e, r in results.items() if r.error)
        return row
    row.agree = row.kleene.count == row.core.count
    if verify:
        dumps = {e: runner.scratch / f"{w.name}.{e}.ces".replace("'", "p") for e in results}
        try:
            for engine in results:
                out = runner.run(engine, queries[engine], data, dump=dumps[engine])
                results[engine].distinct = int(out["distinct_complex_events"])  # type: ignore[call-overload]
            sets = {e: read_dump(p) for e, p in dumps.items()}
            problem = compare(sets["kleene"], sets["core"], limit_of(queries["kleene"]))
            if problem:
                row.agree = False
                row.note += problem
            if row.core.count != row.core.distinct:
                row.note += f"CORE printed {row.core.count} lines for {row.core.distinct} distinct complex events; "
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            row.note += f"verification failed: {str(exc)[:200]}; "
        finally:
            for p in dumps.values():
                p.unlink(missing_ok=True)
    return row


def fmt_rate(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def fmt_count(res: EngineResult) -> str:
    if res.error:
        return "error"
    return "—" if res.count is None else f"{res.count:,}"


def phase_split(res: EngineResult) -> str:
    """CORE's median time split in percent: read the file, build PyEvents, send_events, get_output."""
    if not res.phases:
        return "—"
    keys = ("read", "build", "send", "get_output")
    med = [statistics.median(p.get(k, 0.0) for p in res.phases) for k in keys]
    total = sum(med) or 1.0
    return " / ".join(f"{100 * m / total:.0f}%" for m in med)


def engine_only(res: EngineResult) -> float | None:
    """CORE's events/s counting only send_events() and get_output(): its C++ side, without the
    Python work of reading the file and building PyEvents (for reference, not the comparison)."""
    if not res.phases:
        return None
    seconds = statistics.median(p.get("send", 0.0) + p.get("get_output", 0.0) for p in res.phases)
    return res.events / seconds if seconds > 0 else None


def markdown(rows: list[Row]) -> str:
    head = (
        "| workload | dataset | events | kleene ev/s | CORE ev/s | kleene/CORE | complex events kleene | "
        "complex events CORE | agree | kleene peak MiB | CORE peak MiB | CORE read / build PyEvents / send / get_output | CORE ev/s engine only |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|:-:|---:|---:|---|---:|\n"
    )
    lines = []
    for r in rows:
        ratio = "—" if r.ratio is None else f"{r.ratio:.2f}"
        agree = {True: "yes", False: "**NO**", None: "—"}[r.agree]
        mem = lambda x: "—" if x is None else f"{x:,.0f}"  # noqa: E731
        lines.append(
            f"| `{r.workload}` | {r.dataset} | {max(r.kleene.events, r.core.events):,} | {fmt_rate(r.kleene.throughput)} | "
            f"{fmt_rate(r.core.throughput)} | {ratio} | {fmt_count(r.kleene)} | {fmt_count(r.core)} | {agree} | "
            f"{mem(r.kleene.memory)} | {mem(r.core.memory)} | {phase_split(r.core)} | {fmt_rate(engine_only(r.core))} |"
        )
    notes = [f"- `{r.workload}`: {r.note.strip('; ')}" for r in rows if r.note]
    return head + "\n".join(lines) + ("\n\nNotes:\n" + "\n".join(notes) if notes else "") + "\n"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    return f"{cpu}, {os.cpu_count()} CPUs, load average {load}; Python {platform.python_version()} (kleene)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events per dataset (default 1,000,000, the paper's prefixes)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per engine and workload; the median is reported")
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet", help="input file format (both engines)")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="paper",
                        help="paper: CONSUME BY ANY + LIMIT 1000 as in the paper's §5; all: query texts as printed")
    parser.add_argument("--workloads", nargs="*", help="names, datasets, families or globs (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1, help="pin every run to this CPU (-1: no pinning)")
    parser.add_argument("--core-python", type=Path, default=DEFAULT_CORE_PYTHON)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per engine run")
    parser.add_argument("--no-verify", dest="verify", action="store_false", help="compare counts only, not sets")
    parser.add_argument("--no-shrink", dest="shrink", action="store_false", help="do not shrink disagreements")
    parser.add_argument("--no-plots", dest="plots", action="store_false")
    args = parser.parse_args(argv)
    if not args.core_python.exists():
        print(f"CORE's interpreter {args.core_python} is missing: run `make venv-core` first", file=sys.stderr)
        return 2

    chosen = select(args.workloads)
    args.out.mkdir(parents=True, exist_ok=True)
    runner = Runner(args.core_python, args.cpu, args.out / "scratch", args.timeout)
    files: dict[str, Path] = {}
    for ds in dict.fromkeys(w.dataset for w in chosen):
        files[ds] = datasets.write(ds, args.events, args.seed, formats=(args.format,))[args.format]
    print(f"# kleene vs CORE: {len(chosen)} workloads, {args.events:,} events per dataset, {args.format}, "
          f"protocol {args.protocol}, median of {args.runs} runs, CPU {args.cpu}", flush=True)
    print(f"# {machine()}", flush=True)
    rows: list[Row] = []
    started = time.perf_counter()
    for w in chosen:
        row = measure(w, files[w.dataset], runner, args.runs, args.protocol, args.verify)
        rows.append(row)
        print(
            f"{w.name:7s} kleene {fmt_rate(row.kleene.throughput):>11s} ev/s  CORE {fmt_rate(row.core.throughput):>11s} ev/s  "
            f"ratio {'—' if row.ratio is None else f'{row.ratio:6.2f}'}  CEs {fmt_count(row.kleene)} / {fmt_count(row.core)}"
            f"{'' if row.agree is not False else '  DISAGREE'}  {row.note}",
            flush=True,
        )
        if row.agree is False and args.shrink:
            from benchmarks.shrink import shrink_and_report

            report = shrink_and_report(w, args.protocol, files[w.dataset], runner)
            row.note += " minimal example: see shrink report; "
            print(report, flush=True)
            (args.out / f"disagreement_{w.name.replace(chr(39), 'p')}.md").write_text(report)
    elapsed = time.perf_counter() - started
    table = markdown(rows)
    header = (
        f"kleene vs CORE, {args.events:,} events per dataset ({args.format}), protocol `{args.protocol}`, "
        f"median of {args.runs} runs, every run a fresh process pinned to CPU {args.cpu}; {machine()}; "
        f"wall time {elapsed / 60:.1f} min.\n\n"
    )
    (args.out / "results.md").write_text(header + table)
    (args.out / "results.json").write_text(json.dumps(
        {"events": args.events, "format": args.format, "protocol": args.protocol, "runs": args.runs,
         "machine": machine(), "rows": [dict(asdict(r), ratio=r.ratio,
                                             kleene_eps=r.kleene.throughput, core_eps=r.core.throughput) for r in rows]},
        indent=1))
    print("\n" + header + table)
    if args.plots:
        try:
            from benchmarks.plots import plot_all
        except ImportError as exc:  # matplotlib is an optional dependency (the bench extra)
            print(f"no plots: {exc} (pip install -e '.[bench]')", file=sys.stderr)
        else:
            for p in plot_all(rows, args.out, title=f"{args.events:,} events, protocol {args.protocol}"):
                print(f"plot: {p}")
    return 1 if any(r.agree is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
