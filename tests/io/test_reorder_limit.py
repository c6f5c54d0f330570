"""``max_held``: the rows ``--max-delay`` holds back at once are bounded by an explicit limit.

Issue 16: ``--max-delay "1000 days"`` over 5 M events held every row until the end of the input,
then ended in the CLI's out-of-memory message, and in Python in a LimitError blaming "input
position 0".  Now the buffer stops when it holds more than ``max_held`` rows, naming the limit,
how to raise it and the input row where it tripped.  The victim runs in a subprocess whose
address space is capped (3 GB), on a generated input, with a low limit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import kleene
from kleene import LimitError
from kleene.io.badrows import BadRowPolicy
from kleene.io.reorder import ReorderBuffer
from kleene.limits import DEFAULT_MAX_HELD, Limits
from kleene_process import capped_run as capped

QUERY = "SELECT * FROM S WHERE SELL as a ; BUY as b WITHIN 5 EVENTS"


def write_stream(path: Path, n: int) -> None:
    """``n`` SELL/BUY rows, one second apart, nearly in time order (a swap every 10 rows)."""
    times = np.arange(n)
    times[5::10], times[6::10] = times[6::10].copy(), times[5::10].copy()
    types = np.where(np.arange(n) % 3 == 0, "SELL", "BUY")
    path.write_text("type,t\n" + "".join(f"{ty},{t}\n" for ty, t in zip(types, times)))


def test_the_buffer_stops_past_max_held_at_the_row_that_passed_it() -> None:
    limits = Limits(max_held=2_500)
    buffer = ReorderBuffer("t", "s", 10**18, "1000 days", limits=limits)
    set_aside = BadRowPolicy("error").handle  # never called: no row is late or unreadable
    with pytest.raises(LimitError) as caught:
        for k in range(100):
            batch = pa.record_batch({"t": np.arange(k * 1000, (k + 1) * 1000)})
            assert buffer.push(batch, final=False, set_aside=set_aside) == []  # nothing released
    err = caught.value
    assert (err.limit, err.value) == ("max_held", 2_500) and k == 2
    assert "holding back 3,000 rows for max_delay = 1000 days (--max-delay)" in str(err)
    assert "max_held = 2,500 rows by input row 2999" in str(err)
    assert "--max-held N (max_held=N in Python)" in str(err)


def test_rows_released_behind_the_watermark_do_not_count() -> None:
    """A short delay over a long nearly ordered input holds a few rows: far below the limit."""
    buffer = ReorderBuffer("t", "s", 2 * 10**9, "2 seconds", limits=Limits(max_held=10))
    set_aside = BadRowPolicy("error").handle
    released = 0
    for k in range(50):
        batch = pa.record_batch({"t": np.arange(k * 1000, (k + 1) * 1000)})
        released += sum(len(part) for part, _ in buffer.push(batch, final=False, set_aside=set_aside))
        assert buffer.pending is not None and buffer.pending.num_rows <= 10
    assert released + buffer.pending.num_rows == 50_000


def test_max_held_is_an_option_with_a_default() -> None:
    assert kleene.InputOptions().limits.max_held == DEFAULT_MAX_HELD == 1_000_000
    assert kleene.InputOptions(max_held=7).limits.max_held == 7
    with pytest.raises(kleene.KleeneError, match="max_held must be a positive integer"):
        kleene.InputOptions(max_held=0)


def test_python_names_max_held_and_the_row(tmp_path: Path) -> None:
    data = tmp_path / "s.csv"
    write_stream(data, 3_000)
    q = kleene.compile(QUERY, time_column="t", max_delay="1000 days", max_held=1_000)
    with pytest.raises(LimitError, match=r"max_held = 1,000 rows by input row \d+") as caught:
        list(q.matches(str(data)))
    assert caught.value.limit == "max_held"
    fine = kleene.compile(QUERY, time_column="t", max_delay="1000 days", max_held=3_000)
    assert list(fine.matches(str(data))) == list(
        kleene.compile(QUERY, time_column="t", max_delay="3 seconds").matches(str(data))
    )


def test_the_issues_long_delay_stops_with_the_limit_in_a_capped_process(tmp_path: Path) -> None:
    """The issue's case, small: a delay longer than the input holds every row; past a low
    --max-held the CLI exits 2 naming the limit and the row, without an output or traceback."""
    data = tmp_path / "s.csv"
    write_stream(data, 200_000)
    out = tmp_path / "o.jsonl"
    done = capped(
        QUERY, "--input", str(data), "--time-column", "t", "--max-delay", "1000 days",
        "--max-held", "50000", "--no-progress", "--output", str(out),
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "kleene: limit reached: holding back" in done.stderr
    assert "passed the limit max_held = 50,000 rows by input row" in done.stderr
    assert "--max-held N" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
    row = int(done.stderr.split("by input row ")[1].split(":")[0])
    assert 50_000 <= row < 200_000


def test_a_limit_passed_while_held_rows_are_evaluated_says_so(tmp_path: Path) -> None:
    """Rows released at the end of the input used to be blamed on "input position 0" alone."""
    data = tmp_path / "s.csv"
    write_stream(data, 3_000)
    q = kleene.compile(QUERY, time_column="t", sort=True, max_memory="1MB")  # below any process
    with pytest.raises(LimitError) as caught:
        list(q.matches(str(data)))
    assert caught.value.limit == "max_memory"
    assert "at input position 0 (evaluating 3,000 rows held back)" in str(caught.value)
