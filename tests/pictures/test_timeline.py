"""Timelines: ``Query.plot`` (a matplotlib Figure) and ``kleene plot`` (a picture file).

The figure is inspected through its artists (the bars of complex events carry
``gid="complex-event"``, the event marks ``gid="events"``), against complex
events computed here by brute force from the query's meaning.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402
import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import kleene  # noqa: E402
from kleene.cli import main  # noqa: E402
from kleene.pictures.timeline import EVENTS_GID, SPAN_GID  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["MSFT", "INTC", "MSFT", "AAPL", "INTC", "MSFT", "AAPL", "MSFT", "INTC", "MSFT", "AAPL", "INTC"]
TYPES = ["SELL", "SELL", "BUY", "SELL", "BUY", "SELL", "BUY", "BUY", "SELL", "SELL", "STOP", "BUY"]
EVENTS = pa.table({
    "type": TYPES,
    "name": NAMES,
    "price": [float(10 * i) for i in range(len(TYPES))],
    "time": pa.array([1_700_000_000 + 5 * i for i in range(len(TYPES))], pa.int64()),
})
PAIRS = "SELECT * FROM S WHERE SELL as a; BUY as b PARTITION BY [name]"


def expected_pairs() -> list[tuple[int, int]]:
    """SELL then a later BUY of the same name: every such pair (skip-till-any-match)."""
    n = len(TYPES)
    return sorted(
        (i, j) for i in range(n) for j in range(i + 1, n)
        if TYPES[i] == "SELL" and TYPES[j] == "BUY" and NAMES[i] == NAMES[j]
    )


def spans(fig: Figure) -> list[tuple[float, float]]:
    ax = fig.axes[0]
    return sorted(
        (float(line.get_xdata()[0]), float(line.get_xdata()[-1]))
        for line in ax.get_lines() if line.get_gid() == SPAN_GID
    )


def marks(fig: Figure) -> dict[str, int]:
    ax = fig.axes[0]
    return {c.get_label(): len(c.get_offsets()) for c in ax.collections if c.get_gid() == EVENTS_GID}


def lanes(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_yticklabels()]


def test_one_bar_per_complex_event_one_lane_per_partition() -> None:
    q = kleene.compile(PAIRS)
    fig = q.plot(EVENTS)
    want = expected_pairs()
    assert len(want) == 7
    assert spans(fig) == [(float(i), float(j)) for i, j in want]
    assert sorted(lanes(fig)) == ["AAPL", "INTC", "MSFT"]
    assert marks(fig) == {"BUY": 5, "SELL": 6, "STOP": 1}
    assert fig.axes[0].get_xlabel() == "input position"
    title = fig.axes[0].get_title(loc="left")
    assert title.startswith("SELECT * FROM S\nWHERE SELL as a; BUY as b\nPARTITION BY [name]")
    assert "7 complex events in events 0-11 (12 events)" in title


def test_without_partition_one_lane() -> None:
    fig = kleene.compile("SELECT * FROM S WHERE STOP").plot(EVENTS)
    assert lanes(fig) == ["all events"] and spans(fig) == [(10.0, 10.0)]


def test_max_matches_cuts_the_stretch_at_the_last_complex_event() -> None:
    fig = kleene.compile(PAIRS).plot(EVENTS, max_matches=2)
    by_end = sorted(expected_pairs(), key=lambda p: (p[1], p[0]))[:2]
    assert spans(fig) == sorted((float(i), float(j)) for i, j in by_end)
    assert sum(marks(fig).values()) == by_end[-1][1] + 1  # events 0 .. the second one's end
    assert "stretch ended by 2 complex events (max_matches)" in fig.axes[0].get_title(loc="left")


def test_from_to_positions_and_max_events() -> None:
    q = kleene.compile(PAIRS)
    fig = q.plot(EVENTS, start=3, stop=8)
    inside = [(i, j) for i, j in expected_pairs() if i >= 3 and j <= 8]
    assert spans(fig) == [(float(i), float(j)) for i, j in inside] and inside
    assert sum(marks(fig).values()) == 6
    fig = q.plot(EVENTS, max_events=5)
    assert sum(marks(fig).values()) == 5
    assert spans(fig) == [(float(i), float(j)) for i, j in expected_pairs() if j <= 4]
    assert "stretch ended by 5 events (max_events)" in fig.axes[0].get_title(loc="left")


def test_time_axis_and_time_bounds() -> None:
    q = kleene.compile(PAIRS, time_column="time")
    fig = q.plot(EVENTS, start="2023-11-14T22:13:40Z")  # 1_700_000_020 = event 4
    assert fig.axes[0].get_xlabel() == "time (time)"
    assert type(fig.axes[0].xaxis.get_major_formatter()).__name__ == "ConciseDateFormatter"
    got = spans(fig)
    start_of = {1_700_000_000 + 5 * i: i for i in range(len(TYPES))}
    # The bars hold datetime64[ns] values: nanoseconds since the epoch.
    as_positions = sorted((start_of[round(a / 1e9)], start_of[round(b / 1e9)]) for a, b in got)
    assert as_positions == [(i, j) for i, j in expected_pairs() if i >= 4]
    with pytest.raises(kleene.KleeneError, match="time column"):
        kleene.compile(PAIRS).plot(EVENTS, start="2023-11-14T22:13:40Z")


def test_path_saves_the_figure(tmp_path: Path) -> None:
    fig = kleene.compile(PAIRS).plot(EVENTS, path=tmp_path / "t.svg")
    assert isinstance(fig, Figure)
    assert "<svg" in (tmp_path / "t.svg").read_text()[:500]


# ------------------------------------------------------------------- the CLI


def plot(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plot", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_writes_a_png_of_the_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "timeline.png"
    code, stdout, err = plot(
        capsys, str(ROOT / "examples" / "stock.ceql"), "--input", str(ROOT / "examples" / "stock.csv"),
        "--time-column", "time", "--output", str(out),
    )
    assert code == 0, err
    assert stdout == "" and "7 complex events in events 0-49 (50 events)" in err
    image = mpimg.imread(out)
    height, width = image.shape[:2]
    assert width >= 1200 and 300 <= height <= width
    assert image.std() > 0.05  # not a blank picture


def test_cli_svg_and_pdf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "e.csv"
    data.write_text("type,name,price\n" + "".join(f"{t},{n},1\n" for t, n in zip(TYPES, NAMES)))
    for name, head in (("t.svg", b"<?xml"), ("t.pdf", b"%PDF")):
        code, _, err = plot(capsys, PAIRS, "--input", str(data), "--output", str(tmp_path / name), "--to", "6")
        assert code == 0, err
        assert (tmp_path / name).read_bytes().startswith(head) and (tmp_path / name).stat().st_size > 2000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output", "t.txt"], "choose a file ending in .png, .svg, .pdf"),
        (["--output", "t.png", "--from", "2024-01-01T00:00:00Z"], "need --time-column"),
        (["--output", "t.png", "--max-events", "0"], "not a positive integer"),
    ],
)
def test_cli_usage_errors(args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "e.csv"
    data.write_text("type,name\nSELL,A\n")
    code, _, err = plot(capsys, PAIRS, "--input", str(data), *[str(tmp_path / a) if a.startswith("t.") else a for a in args])
    assert code == 2 and message in err
    assert not list(tmp_path.glob("t.*"))


def test_cli_bad_query_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "e.csv"
    data.write_text("type,name\nSELL,A\n")
    code, _, err = plot(capsys, "SELECT * WHERE SELL as a FILTER b[x > 1]", "--input", str(data), "-o", str(tmp_path / "t.png"))
    assert code == 2 and "^" in err
    code, _, err = plot(capsys, PAIRS, "--input", str(tmp_path / "missing.csv"), "-o", str(tmp_path / "t.png"))
    assert code == 3 and "missing.csv" in err


BLOCK_MATPLOTLIB = """
import sys
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError("No module named 'matplotlib'", name=name)
        return None
sys.meta_path.insert(0, Absent())
from kleene.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_matplotlib_the_message_names_the_extra(tmp_path: Path) -> None:
    data = tmp_path / "e.csv"
    data.write_text("type,name\nSELL,A\nBUY,A\n")
    out = tmp_path / "t.png"
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_MATPLOTLIB, "plot", PAIRS, "--input", str(data), "--output", str(out)],
        capture_output=True, text=True,
    )
    assert done.returncode == 1, done.stderr
    assert "pip install 'kleene[plot]'" in done.stderr and not out.exists()


def test_matplotlib_is_not_imported_by_kleene_nor_the_parser() -> None:
    code = (
        "import sys, kleene, kleene.cli; kleene.cli.build_parser(); "
        "kleene.compile('SELECT * WHERE A').explain(); "
        "print(sorted(m for m in ('matplotlib', 'kleene.pictures.timeline') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"



def test_cli_reads_standard_input(tmp_path: Path) -> None:
    out = tmp_path / "t.png"
    csv = "type,name\n" + "".join(f"{t},{n}\n" for t, n in zip(TYPES, NAMES))
    done = subprocess.run(
        [sys.executable, "-m", "kleene", "plot", PAIRS, "--input", "-", "--output", str(out)],
        input=csv, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "7 complex events in events 0-11" in done.stderr and out.stat().st_size > 5000


def test_cli_names_an_event_type_the_input_never_held(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "e.csv"
    data.write_text("type,name\nSELL,A\nBUY,A\n")
    code, _, err = plot(capsys, "SELECT * WHERE SELL as a; BYU as b", "--input", str(data), "-o", str(tmp_path / "t.png"))
    assert code == 0 and "0 complex events" in err
    assert "kleene: " in err and "'BYU'" in err and "BUY" in err


def test_cli_several_inputs_are_merged_by_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Several ``--input`` as in ``kleene run`` (issue 15 review): the sells and the buys in two
    files draw what the one file draws; named inputs are streams for FROM."""
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    whole, sells, buys = tmp_path / "all.csv", tmp_path / "sells.csv", tmp_path / "buys.csv"
    pacsv.write_csv(EVENTS, whole)
    is_sell = pc.equal(EVENTS.column("type"), "SELL")
    pacsv.write_csv(EVENTS.filter(is_sell), sells)
    pacsv.write_csv(EVENTS.filter(pc.invert(is_sell)), buys)
    common = ["--time-column", "time", "--output"]
    code, _, one = plot(capsys, PAIRS, "--input", str(whole), *common, str(tmp_path / "one.png"))
    assert code == 0, one
    code, _, two = plot(capsys, PAIRS, "--input", str(sells), "--input", str(buys), *common,
                        str(tmp_path / "two.png"))
    assert code == 0, two
    caption = f"{len(expected_pairs())} complex events in events 0-11 (12 events)"
    assert caption in one and one.replace("one.png", "two.png") == two
    assert (tmp_path / "two.png").stat().st_size > 5000
    for streams, found in (("s, b", len(expected_pairs())), ("s", 0)):  # the buys are stream b
        code, _, named = plot(capsys, f"SELECT * FROM {streams} WHERE SELL as a; BUY as b PARTITION BY [name]",
                              "--input", f"s={sells}", "--input", f"b={buys}", *common, str(tmp_path / "s.png"))
        assert code == 0, named
        assert f"({found} complex events in events 0-11 (12 events)" in named
    code, _, err = plot(capsys, PAIRS, "--input", str(sells), "--input", str(buys), "--output",
                        str(tmp_path / "t.png"))
    assert code == 2 and "several inputs are merged by time: give --time-column" in err
    assert not (tmp_path / "t.png").exists()
